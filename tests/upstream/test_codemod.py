"""The libcst rewrite of one file: each change, and where it must not happen."""

from __future__ import annotations

import textwrap

import pytest

from vllm_sp_base._upstream._codemod import rewrite
from vllm_sp_base._upstream._plan import FileEdits
from vllm_sp_base._upstream._redundant import Redundant

IMPORT = "from vllm.models.common.sequence_parallel_defaults import SequenceParallelDefaults\n"


def _rewrite(source: str, **edits: object) -> tuple[str, dict[str, int]]:
    done = rewrite(textwrap.dedent(source), FileEdits(**edits))  # type: ignore[arg-type]
    return done.source, dict(done.done)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("class Layer(nn.Module):\n    pass\n",
         "class Layer(SequenceParallelDefaults, nn.Module):\n    pass\n"),
        ("class Layer:\n    pass\n", "class Layer(SequenceParallelDefaults):\n    pass\n"),
        ("class Layer(\n    A,\n    B,\n):\n    pass\n",
         "class Layer(\n    SequenceParallelDefaults,\n    A,\n    B,\n):\n    pass\n"),
    ],
    ids=["one-base", "no-base", "multi-line-bases"],
)
def test_mixin_goes_first_in_the_bases(before: str, after: str) -> None:
    source, done = _rewrite(before, mixin={"Layer": 1})
    assert source == IMPORT + "\n\n" + after  # isort: two blank lines before a class
    assert done == {"mixin": 1, "import": 1}


def test_import_joins_the_vllm_imports_in_isort_order() -> None:
    source, _ = _rewrite(
        '''\
        """Doc."""
        import torch

        from vllm.config import VllmConfig
        from vllm.models.deepseek_v32.attention import Attention

        from .local import helper


        class Layer(torch.nn.Module):
            pass
        ''',
        mixin={"Layer": 9},
    )
    lines = source.splitlines()
    assert lines[3:6] == [
        "from vllm.config import VllmConfig",
        IMPORT.strip(),
        "from vllm.models.deepseek_v32.attention import Attention",
    ]


def test_a_class_that_has_the_mixin_and_its_import_is_left_alone() -> None:
    before = IMPORT + "class Layer(SequenceParallelDefaults, nn.Module):\n    pass\n"
    assert _rewrite(before, mixin={"Layer": 2}) == (before, {})


def test_a_module_binding_the_name_otherwise_is_reported_not_changed() -> None:
    before = "from elsewhere import SequenceParallelDefaults\nclass Layer:\n    pass\n"
    done = rewrite(before, FileEdits(mixin={"Layer": 2}))
    assert done.source == before and "already bound" in done.problems[0]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("x = (\n    pc.use_sequence_parallel_moe\n    and pc.pipeline_parallel_size == 1\n)\n",
         "x = pc.use_sequence_parallel\n"),
        ("x = pc.pipeline_parallel_size == 1 and pc.use_sequence_parallel_moe and y\n",
         "x = pc.use_sequence_parallel and y\n"),
        ("return_ = (\n    a.b.use_sequence_parallel_moe\n    and a.b.pipeline_parallel_size == 1\n"
         "    and is_moe  # why\n)\n",
         "return_ = (\n    a.b.use_sequence_parallel\n    and is_moe  # why\n)\n"),
    ],
    ids=["whole-expression", "reversed-with-more", "kept-comment"],
)
def test_rederivation_becomes_the_config_gate(before: str, after: str) -> None:
    assert _rewrite(before) == (after, {"rederivation": 1})


@pytest.mark.parametrize(
    "source",
    [
        "x = a.use_sequence_parallel_moe and b.pipeline_parallel_size == 1\n",  # two configs
        "x = a.use_sequence_parallel_moe or a.pipeline_parallel_size == 1\n",
        "x = a.use_sequence_parallel_moe and a.pipeline_parallel_size == 2\n",
        "class C:\n    @property\n    def use_sequence_parallel(self):\n"
        "        return self.use_sequence_parallel_moe and self.pipeline_parallel_size == 1\n",
    ],
    ids=["different-receivers", "or", "pp-2", "the-gate-itself"],
)
def test_what_is_not_a_rederivation_stays(source: str) -> None:
    assert _rewrite(source) == (source, {})


CONFIG = '''\
class ParallelConfig:
    @property
    def use_sequence_parallel_moe(self) -> bool:
        return self.data_parallel_size > 1

    @property
    def use_all2all(self) -> bool:
        return True
'''


def test_gate_property_goes_after_the_moe_gate_once() -> None:
    source, done = _rewrite(CONFIG, gate=3)
    assert done == {"gate": 1}
    names = [line.strip() for line in source.splitlines() if line.strip().startswith("def ")]
    assert names[:3] == [
        "def use_sequence_parallel_moe(self) -> bool:",
        "def use_sequence_parallel(self) -> bool:",
        "def use_all2all(self) -> bool:",
    ]
    assert "        return self.use_sequence_parallel_moe and self.pipeline_parallel_size == 1\n" in source
    assert _rewrite(source, gate=3) == (source, {})


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


def test_the_contract_module_is_rendered_from_the_single_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from vllm_sp_base._contract import SEQUENCE_PARALLEL_DEFAULTS
    from vllm_sp_base._upstream._contract_module import render

    monkeypatch.setitem(SEQUENCE_PARALLEL_DEFAULTS, "use_context_parallel", True)
    namespace: dict[str, object] = {}
    exec(compile(render(), "contract", "exec"), namespace)  # our own generated code
    mixin = namespace["SequenceParallelDefaults"]
    assert {flag: getattr(mixin, flag) for flag in SEQUENCE_PARALLEL_DEFAULTS} == {
        "use_sequence_parallel": False,
        "use_sequence_parallel_moe": False,
        "use_context_parallel": True,
    }
    assert mixin.__doc__ is not None and "AttributeError" in mixin.__doc__
