"""The sequence-parallel gates, decided in one place.

vLLM decides SP-MoE in ``ParallelConfig.use_sequence_parallel_moe`` and then
re-derives the model-level flag by hand in many model files. Both live here,
over the :class:`ParallelLayout` protocol, so vLLM's real ``ParallelConfig``
can be passed as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from vllm_sp_base._protocols import ParallelLayout

#: Every ``all2all_backend`` value vLLM 0.33.0's ``ParallelConfig`` accepts.
ALL2ALL_BACKENDS: Final = frozenset(
    {
        "naive",
        "pplx",
        "deepep_high_throughput",
        "deepep_low_latency",
        "deepep_v2",
        "mori_high_throughput",
        "mori_low_latency",
        "moonep",
        "nixl_ep",
        "allgather_reducescatter",
        "flashinfer_all2allv",
        "flashinfer_nvlink_two_sided",
        "flashinfer_nvlink_one_sided",
        "passthrough",
    }
)

#: Removed backends that ``ParallelConfig`` silently maps to another one.
REMOVED_ALL2ALL_BACKENDS: Final[dict[str, str]] = {
    "naive": "allgather_reducescatter",
    "pplx": "allgather_reducescatter",
}

#: Backends that can shard MoE input across the TP group (SP-MoE).
SEQUENCE_PARALLEL_MOE_BACKENDS: Final = frozenset(
    {
        "allgather_reducescatter",
        "deepep_high_throughput",
        "deepep_low_latency",
        "deepep_v2",
        "flashinfer_nvlink_one_sided",
        "passthrough",
        "mori_high_throughput",
        "mori_low_latency",
        "nixl_ep",
    }
)

#: The seed's measurement (vLLM PR #48849): SP-MoE buffers at DP=1, for nothing.
DP1_SP_MOE_WASTE_GIB: Final = 5.6


class UnknownBackendError(ValueError):
    """An ``all2all_backend`` that vLLM does not accept."""


def effective_backend(backend: str) -> str:
    """The backend ``ParallelConfig`` actually keeps for ``backend``."""
    if backend not in ALL2ALL_BACKENDS:
        known = ", ".join(sorted(ALL2ALL_BACKENDS))
        raise UnknownBackendError(
            f"unknown all2all backend {backend!r}; vLLM 0.33.0 accepts: {known}"
        )
    return REMOVED_ALL2ALL_BACKENDS.get(backend, backend)


@dataclass(frozen=True)
class Condition:
    """One term of a gate, with its value and why it matters."""

    name: str
    expression: str
    value: bool
    why: str


def sequence_parallel_moe_conditions(layout: ParallelLayout) -> tuple[Condition, ...]:
    backend = effective_backend(layout.all2all_backend)
    return (
        Condition(
            "all2all_backend",
            f"all2all_backend={backend!r} in SP-MoE backends",
            backend in SEQUENCE_PARALLEL_MOE_BACKENDS,
            "only these backends can dispatch a token shard per TP rank",
        ),
        Condition(
            "expert_parallel",
            f"enable_expert_parallel={layout.enable_expert_parallel}",
            bool(layout.enable_expert_parallel),
            "without expert parallelism there is no all2all to shard",
        ),
        Condition(
            "tensor_parallel",
            f"tensor_parallel_size={layout.tensor_parallel_size} > 1",
            layout.tensor_parallel_size > 1,
            "with TP=1 there are no replicated tokens to shard",
        ),
        Condition(
            "data_parallel",
            f"data_parallel_size={layout.data_parallel_size} > 1",
            layout.data_parallel_size > 1,
            "at DP=1 no tokens are duplicated across DP ranks, so SP-MoE would "
            f"only allocate buffers (~{DP1_SP_MOE_WASTE_GIB} GiB in vLLM PR #48849)",
        ),
    )


def use_sequence_parallel_moe(layout: ParallelLayout) -> bool:
    """SP-MoE: listed backend, expert parallel, TP>1 and DP>1."""
    return all(c.value for c in sequence_parallel_moe_conditions(layout))


def model_sequence_parallel_conditions(layout: ParallelLayout) -> tuple[Condition, ...]:
    return (
        Condition(
            "sequence_parallel_moe",
            "use_sequence_parallel_moe",
            use_sequence_parallel_moe(layout),
            "model-level SP shards the residual stream for SP-MoE",
        ),
        Condition(
            "pipeline_parallel",
            f"pipeline_parallel_size={layout.pipeline_parallel_size} == 1",
            layout.pipeline_parallel_size == 1,
            "SP is not supported with pipeline parallelism",
        ),
    )


def use_sequence_parallel(layout: ParallelLayout) -> bool:
    """Model-level SP: SP-MoE and PP==1 (what vLLM model files re-derive by hand)."""
    return all(c.value for c in model_sequence_parallel_conditions(layout))


@dataclass(frozen=True)
class Layout:
    """A parallel layout with ``vllm serve``'s defaults; satisfies ParallelLayout."""

    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    enable_expert_parallel: bool = False
    all2all_backend: str = "allgather_reducescatter"

    def __post_init__(self) -> None:
        effective_backend(self.all2all_backend)
        for name in ("tensor_parallel_size", "data_parallel_size", "pipeline_parallel_size"):
            size = getattr(self, name)
            if size < 1:
                raise ValueError(f"{name} must be a positive integer, got {size}")
