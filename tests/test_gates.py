"""Differential test: our gates against vLLM 0.33.0's real ParallelConfig."""

from __future__ import annotations

import itertools
import typing
from collections.abc import Callable
from typing import Any

import pytest
from gate_cases import COMBINATIONS, mismatches, model_flag_expression

from vllm_sp_base import (
    ALL2ALL_BACKENDS,
    Layout,
    UnknownBackendError,
    use_sequence_parallel,
    use_sequence_parallel_moe,
)

parallel = pytest.importorskip("vllm.config.parallel")
ParallelConfig = parallel.ParallelConfig


def _vllm_model_flag_expression() -> Callable[[Any], bool]:
    from vllm.models.deepseek_v32.nvidia.model import DeepseekV32DecoderLayer

    return model_flag_expression(DeepseekV32DecoderLayer)


def test_backend_set_is_exactly_what_vllm_accepts() -> None:
    assert ALL2ALL_BACKENDS == frozenset(typing.get_args(parallel.All2AllBackend))


def test_every_combination_matches_real_parallel_config() -> None:
    assert len(COMBINATIONS) == 14 * 2 * 3 * 3 * 2
    assert mismatches(ParallelConfig, _vllm_model_flag_expression()) == []


@pytest.mark.parametrize("backend", sorted(ALL2ALL_BACKENDS))
@pytest.mark.parametrize("tp", [1, 2, 8, 64])
def test_dp1_never_enables_sp_moe(backend: str, tp: int) -> None:
    for ep, pp in itertools.product((False, True), (1, 2)):
        layout = Layout(tp, 1, pp, ep, backend)
        assert use_sequence_parallel_moe(layout) is False
        assert use_sequence_parallel(layout) is False


def test_sp_moe_needs_every_condition() -> None:
    on = Layout(2, 2, 1, True, "deepep_low_latency")
    assert use_sequence_parallel_moe(on) and use_sequence_parallel(on)
    assert not use_sequence_parallel(Layout(2, 2, 2, True, "deepep_low_latency"))
    assert not use_sequence_parallel_moe(Layout(2, 2, 1, True, "moonep"))
    assert not use_sequence_parallel_moe(Layout(2, 2, 1, False, "deepep_low_latency"))
    assert not use_sequence_parallel_moe(Layout(1, 2, 1, True, "deepep_low_latency"))


def test_removed_backends_follow_vllms_fallback() -> None:
    assert use_sequence_parallel_moe(Layout(2, 2, 1, True, "naive"))


def test_unknown_backend_and_bad_sizes_are_rejected() -> None:
    with pytest.raises(UnknownBackendError, match="'nccl'"):
        Layout(all2all_backend="nccl")
    with pytest.raises(ValueError, match="tensor_parallel_size"):
        Layout(tensor_parallel_size=0)
