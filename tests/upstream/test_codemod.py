"""The libcst rewrite of one file: each change, and where it must not happen."""

from __future__ import annotations

import textwrap

import pytest

from vllm_sp_base._upstream.plan._edits import FileEdits, Redundant
from vllm_sp_base._upstream.rewrite._codemod import rewrite

IMPORT = "from vllm.models.common.sequence_parallel_defaults import SequenceParallelDefaults\n"


def _rewrite(source: str, **edits: object) -> tuple[str, dict[str, int]]:
    done = rewrite(textwrap.dedent(source), FileEdits(**edits))  # type: ignore[arg-type]
    return done.source, dict(done.done)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("class Layer(nn.Module):\n    pass\n",
         "class Layer(nn.Module, SequenceParallelDefaults):\n    pass\n"),
        ("class Layer(nn.Module, SupportsPP):\n    pass\n",
         "class Layer(nn.Module, SequenceParallelDefaults, SupportsPP):\n    pass\n"),
        ("class Layer(Parent, SupportsPP):\n    pass\n",
         "class Layer(Parent, SequenceParallelDefaults, SupportsPP):\n    pass\n"),
        ("class Layer:\n    pass\n", "class Layer(SequenceParallelDefaults):\n    pass\n"),
        ("class Layer(\n    A,\n    torch.nn.Module,\n):\n    pass\n",
         "class Layer(\n    A,\n    torch.nn.Module,\n    SequenceParallelDefaults,\n):\n    pass\n"),
    ],
    ids=["one-base", "module-then-interface", "parent-then-interface", "no-base", "multi-line-bases"],
)
def test_mixin_goes_after_nn_module_or_the_first_base(before: str, after: str) -> None:
    source, done = _rewrite(before, mixin={"Layer": 1})
    assert source == IMPORT + "\n\n" + after  # isort: two blank lines before a class
    assert done == {"mixin": 1, "import": 1}


def test_the_mixin_after_nn_module_still_gives_the_default() -> None:
    """Python's MRO, not ours: the class value is found, the instance one wins."""
    import torch

    namespace: dict[str, object] = {"nn": torch.nn}
    source, _ = _rewrite("class Layer(nn.Module, Interface):\n    pass\n", mixin={"Layer": 1})
    mixin_source = "class SequenceParallelDefaults:\n    use_sequence_parallel = False\n"
    exec(mixin_source + "class Interface:\n    pass\n" + source.replace(IMPORT, ""), namespace)
    layer = namespace["Layer"]
    assert isinstance(layer, type)
    assert [c.__name__ for c in layer.__mro__] == [
        "Layer", "Module", "SequenceParallelDefaults", "Interface", "object"]
    instance = layer()
    assert instance.use_sequence_parallel is False
    instance.use_sequence_parallel = True
    assert instance.use_sequence_parallel is True and layer().use_sequence_parallel is False


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
    before = IMPORT + "class Layer(nn.Module, SequenceParallelDefaults):\n    pass\n"
    assert _rewrite(before, mixin={"Layer": 2}) == (before, {})


def test_a_module_binding_the_name_otherwise_is_reported_not_changed() -> None:
    before = "from elsewhere import SequenceParallelDefaults\nclass Layer:\n    pass\n"
    done = rewrite(before, FileEdits(mixin={"Layer": 2}))
    assert done.source == before and "already bound" in done.problems[0]


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
        "def use_sequence_parallel_moe_without_pp(self) -> bool:",
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
    from vllm_sp_base._upstream.rewrite._contract_module import render

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


def test_a_comment_the_mixin_makes_untrue_is_reworded_with_it() -> None:
    before = """\
        class DeepseekV32DecoderLayer(torch.nn.Module):
            pass


        class Model:
            def set_moe_parameters(self):
                # keyed on the MoE block (DeepseekV32DecoderLayer is a plain nn.Module).
                pass
        """
    source, done = _rewrite(before, mixin={"DeepseekV32DecoderLayer": 1})
    assert "# keyed on the MoE block (DeepseekV32DecoderLayer is not a DeepseekV2DecoderLayer)." in source
    assert done["comment"] == 1
    # Without the mixin (the first patch, or a second run) the comment is as it was.
    assert _rewrite(before)[0] == textwrap.dedent(before)
