"""Checked by mypy (tests/test_typing.py), never run. Each ``type: ignore[code]``
marks a line that must fail with that code: warn_unused_ignores turns a line
that stopped failing into an error."""

from __future__ import annotations

from typing import assert_type

from vllm_sp_base import (
    SequenceParallelDefaults,
    SequenceParallelLayer,
    SequenceParallelModel,
    use_sequence_parallel,
)
from vllm_sp_base._gates import Layout


class Model(SequenceParallelDefaults):
    def __init__(self) -> None:
        self.use_sequence_parallel = True  # an __init__ may still set it


class NoFlags:
    hidden_size: int = 8


def needs_model(model: SequenceParallelModel) -> bool:
    return model.use_sequence_parallel


def needs_layer(layer: SequenceParallelLayer) -> bool:
    return layer.use_sequence_parallel and layer.use_sequence_parallel_moe


# What must type-check.
assert_type(Model.use_sequence_parallel, bool)  # readable on the class, unlike vLLM's today
assert_type(Model().use_sequence_parallel_moe, bool)
needs_model(Model())
needs_layer(Model())
assert_type(use_sequence_parallel(Layout(tensor_parallel_size=2)), bool)

# What must fail.
Model().use_sequence_parallel = 1  # type: ignore[assignment]
Model().use_sequence_parallel_moe = "yes"  # type: ignore[assignment]
needs_model(NoFlags())  # type: ignore[arg-type]
needs_layer(NoFlags())  # type: ignore[arg-type]
use_sequence_parallel(NoFlags())  # type: ignore[arg-type]
Layout(tensor_parallel_size="2")  # type: ignore[arg-type]
