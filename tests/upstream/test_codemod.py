"""The libcst rewrite of one file: each change, and where it must not happen."""

from __future__ import annotations

import textwrap

import pytest

from vllm_sp_base._upstream.plan._edits import Default, FileEdits, Redundant
from vllm_sp_base._upstream.rewrite._codemod import rewrite


def _rewrite(source: str, **edits: object) -> tuple[str, dict[str, int]]:
    done = rewrite(textwrap.dedent(source), FileEdits(**edits))  # type: ignore[arg-type]
    return done.source, dict(done.done)


def _defaults(*flags: str) -> dict[str, Default]:
    return {"Layer": Default(1, flags, "test")}


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("class Layer(nn.Module):\n    def forward(self):\n        pass\n",
         "class Layer(nn.Module):\n    use_sequence_parallel: bool = False\n\n"
         "    def forward(self):\n        pass\n"),
        ('class Layer(nn.Module):\n    """Doc."""\n\n    def forward(self):\n        pass\n',
         'class Layer(nn.Module):\n    """Doc."""\n\n    use_sequence_parallel: bool = False\n\n'
         "    def forward(self):\n        pass\n"),
        ("class Layer(nn.Module):\n    fall_back = False\n\n    def forward(self):\n        pass\n",
         "class Layer(nn.Module):\n    fall_back = False\n    use_sequence_parallel: bool = False\n\n"
         "    def forward(self):\n        pass\n"),
        ("class Layer(nn.Module):\n    # why forward\n    def forward(self):\n        pass\n",
         "class Layer(nn.Module):\n    use_sequence_parallel: bool = False\n    # why forward\n"
         "    def forward(self):\n        pass\n"),
    ],
    ids=["first-line", "after-docstring", "after-class-attributes", "comment-stays-with-method"],
)
def test_the_default_opens_the_class_body(before: str, after: str) -> None:
    source, done = _rewrite(before, defaults=_defaults("use_sequence_parallel"))
    assert source == after
    assert done == {"default": 1}


def test_each_flag_the_class_reads_gets_a_line_and_python_reads_them() -> None:
    """Python's own lookup: the class value is found, an instance value wins."""
    import torch

    source, _ = _rewrite("class Layer(nn.Module):\n    def forward(self):\n        pass\n",
                         defaults=_defaults("use_sequence_parallel", "use_sequence_parallel_moe"))
    namespace: dict[str, object] = {"nn": torch.nn}
    exec(source, namespace)
    layer = namespace["Layer"]
    assert isinstance(layer, type)
    instance = layer.__new__(layer)
    torch.nn.Module.__init__(instance)  # a subclass that skips the __init__
    assert instance.use_sequence_parallel is False and instance.use_sequence_parallel_moe is False
    instance.use_sequence_parallel = True
    assert instance.use_sequence_parallel is True and layer.use_sequence_parallel is False


def test_a_flag_the_class_already_binds_is_left_alone() -> None:
    before = "class Layer(nn.Module):\n    use_sequence_parallel = True\n"
    source, done = _rewrite(before, defaults=_defaults("use_sequence_parallel"))
    assert source == before and done == {}


def test_a_body_on_the_class_line_is_said_not_changed() -> None:
    done = rewrite("class Layer(nn.Module): pass\n",
                   FileEdits(defaults=_defaults("use_sequence_parallel")))
    assert done.source == "class Layer(nn.Module): pass\n"
    assert done.problems == ["Layer: its body is on the class line; left as it is"]


def test_crlf_stays_crlf() -> None:
    source = "class Layer(nn.Module):\r\n    def forward(self):\r\n        pass\r\n"
    done = rewrite(source, FileEdits(defaults=_defaults("use_sequence_parallel")))
    assert "use_sequence_parallel: bool = False\r\n" in done.source
    assert "\n" not in done.source.replace("\r\n", "")


def test_only_the_planned_false_assignments_go() -> None:
    before = '''\
    class Note(Parent):
        def __init__(self):
            nn.Module.__init__(self)
            self.use_sequence_parallel = False
            self.use_sequence_parallel_moe = False
            if x:
                self.use_sequence_parallel = False
    '''
    source, done = _rewrite(before, redundant=[Redundant("Note", "use_sequence_parallel_moe", 5)])
    assert done == {"redundant": 1}
    assert "use_sequence_parallel_moe" not in source
    assert source.count("self.use_sequence_parallel = False") == 2


def test_source_that_does_not_parse_raises_for_the_caller_to_report() -> None:
    import libcst

    with pytest.raises(libcst.ParserSyntaxError):
        rewrite("class (:\n", FileEdits())
