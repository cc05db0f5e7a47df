from __future__ import annotations

from vllm_sp_base import SEQUENCE_PARALLEL_DEFAULTS, SequenceParallelDefaults


class Base(SequenceParallelDefaults):
    def __init__(self) -> None:
        self.use_sequence_parallel = True

    def forward(self) -> str:
        return "sp" if self.use_sequence_parallel else "plain"


class CustomInit(Base):
    def __init__(self) -> None:  # skips Base.__init__ on purpose
        pass


def test_defaults_are_false_and_the_single_source() -> None:
    assert SEQUENCE_PARALLEL_DEFAULTS == {
        "use_sequence_parallel": False,
        "use_sequence_parallel_moe": False,
    }
    for flag, default in SEQUENCE_PARALLEL_DEFAULTS.items():
        assert vars(SequenceParallelDefaults)[flag] is default


def test_custom_init_subclass_reads_the_default() -> None:
    obj = CustomInit()
    assert obj.forward() == "plain"
    assert "use_sequence_parallel" not in vars(obj)


def test_init_may_still_set_the_flag_per_instance() -> None:
    assert Base().forward() == "sp"
    assert SequenceParallelDefaults.use_sequence_parallel is False


def test_flags_are_instance_variables_not_classvars() -> None:
    annotations = SequenceParallelDefaults.__annotations__
    assert annotations == {"use_sequence_parallel": "bool", "use_sequence_parallel_moe": "bool"}
