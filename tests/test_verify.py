from __future__ import annotations

from torch import nn

from vllm_sp_base import SequenceParallelDefaults, verify_sequence_parallel


class Layer(SequenceParallelDefaults, nn.Module):
    def __init__(self, sp: object = False) -> None:
        nn.Module.__init__(self)
        self.use_sequence_parallel = sp  # type: ignore[assignment]

    def forward(self) -> bool:
        return self.use_sequence_parallel


class Model(SequenceParallelDefaults, nn.Module):
    def __init__(self, sp: bool, layers: list[nn.Module]) -> None:
        nn.Module.__init__(self)
        self.use_sequence_parallel = sp
        self.layers = nn.ModuleList(layers)


class ReaderWithoutDefault(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self) -> bool:
        return bool(self.use_sequence_parallel)


def test_consistent_model_has_no_problem() -> None:
    assert verify_sequence_parallel(Model(True, [Layer(True), Layer(True)])) == []
    assert verify_sequence_parallel(Model(False, [Layer(), nn.Linear(2, 2)])) == []


def test_layer_disagreeing_with_its_model_is_named() -> None:
    (problem,) = verify_sequence_parallel(Model(True, [Layer(True), Layer(False)]))
    assert (problem.path, problem.problem) == ("layers.1", "disagrees")
    assert "False here but True on <root>" in str(problem)


def test_missing_and_non_bool_flags_are_named() -> None:
    model = Model(False, [Layer(None), ReaderWithoutDefault()])
    problems = {(p.path, p.attribute, p.problem) for p in verify_sequence_parallel(model)}
    assert problems == {
        ("layers.0", "use_sequence_parallel", "not_bool"),
        ("layers.1", "use_sequence_parallel", "missing"),
    }
