"""Protocols for code that reads or decides the sequence-parallel flags."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class SequenceParallelModel(Protocol):
    """A model whose ``forward`` branches on model-level sequence parallelism."""

    use_sequence_parallel: bool


@runtime_checkable
class SequenceParallelLayer(Protocol):
    """A decoder layer: model-level SP plus the MoE sequence-parallel flag."""

    use_sequence_parallel: bool
    use_sequence_parallel_moe: bool


class ParallelLayout(Protocol):
    """The ``ParallelConfig`` fields the gates read.

    Read-only properties, so vLLM's ``ParallelConfig`` (whose
    ``all2all_backend`` is a ``Literal``) satisfies it as well as a plain layout.
    """

    @property
    def all2all_backend(self) -> str: ...

    @property
    def enable_expert_parallel(self) -> bool: ...

    @property
    def tensor_parallel_size(self) -> int: ...

    @property
    def data_parallel_size(self) -> int: ...

    @property
    def pipeline_parallel_size(self) -> int: ...


class ModuleTree(Protocol):
    """What ``verify_sequence_parallel`` needs of a ``torch.nn.Module``."""

    def named_modules(self) -> Iterator[tuple[str, Any]]: ...
