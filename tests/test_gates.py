"""Differential test: our gates against vLLM 0.33.0's real ParallelConfig."""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
import typing
from collections.abc import Callable
from typing import Any

import pytest

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
    """The expression ``DeepseekV32DecoderLayer.__init__`` assigns to
    ``self.use_sequence_parallel``, read from vLLM's own source."""
    from vllm.models.deepseek_v32.nvidia.model import DeepseekV32DecoderLayer

    tree = ast.parse(textwrap.dedent(inspect.getsource(DeepseekV32DecoderLayer.__init__)))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Attribute)
            and node.targets[0].attr == "use_sequence_parallel"
        ):
            code = compile(ast.Expression(node.value), "<vllm>", "eval")
            return lambda cfg: bool(eval(code, {"parallel_config": cfg}))
    raise AssertionError("DeepseekV32DecoderLayer.__init__ no longer sets use_sequence_parallel")


def test_backend_set_is_exactly_what_vllm_accepts() -> None:
    assert ALL2ALL_BACKENDS == frozenset(typing.get_args(parallel.All2AllBackend))


COMBINATIONS = list(
    itertools.product(sorted(ALL2ALL_BACKENDS), (False, True), (1, 2, 8), (1, 2, 4), (1, 2))
)


def test_every_combination_matches_real_parallel_config() -> None:
    model_flag = _vllm_model_flag_expression()
    mismatches = []
    for backend, ep, tp, dp, pp in COMBINATIONS:
        real = ParallelConfig(
            all2all_backend=backend,
            enable_expert_parallel=ep,
            tensor_parallel_size=tp,
            data_parallel_size=dp,
            pipeline_parallel_size=pp,
        )
        ours = Layout(tp, dp, pp, ep, backend)
        got = (use_sequence_parallel_moe(ours), use_sequence_parallel(ours))
        want = (real.use_sequence_parallel_moe, model_flag(real))
        # The real config is a valid layout for the gates too.
        assert use_sequence_parallel_moe(real) == real.use_sequence_parallel_moe
        if got != want:
            mismatches.append((backend, ep, tp, dp, pp, got, want))
    assert not mismatches
    assert len(COMBINATIONS) == 14 * 2 * 3 * 3 * 2


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
