"""The differential gate check: the contract's gates against vLLM's real
``ParallelConfig`` and the expression its model code assigns."""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
from collections.abc import Callable
from typing import Any

from vllm_sp_base import ALL2ALL_BACKENDS, Layout, use_sequence_parallel, use_sequence_parallel_moe

COMBINATIONS = list(
    itertools.product(sorted(ALL2ALL_BACKENDS), (False, True), (1, 2, 8), (1, 2, 4), (1, 2))
)


def mismatches(parallel_config: type, model_flag: Callable[[Any], bool]) -> list[tuple[Any, ...]]:
    """Every layout where our gates disagree with ``parallel_config`` and ``model_flag``."""
    found = []
    for backend, ep, tp, dp, pp in COMBINATIONS:
        real = parallel_config(
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
        if use_sequence_parallel_moe(real) != real.use_sequence_parallel_moe or got != want:
            found.append((backend, ep, tp, dp, pp, got, want))
    return found


def model_flag_expression(layer: type) -> Callable[[Any], bool]:
    """The expression ``layer.__init__`` assigns to ``self.use_sequence_parallel``,
    read from vLLM's own source, as a function of ``parallel_config``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(layer.__init__)))  # type: ignore[misc]
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Attribute)
            and node.targets[0].attr == "use_sequence_parallel"
        ):
            code = compile(ast.Expression(node.value), "<vllm>", "eval")
            return lambda cfg: bool(eval(code, {"parallel_config": cfg}))
    raise AssertionError(f"{layer.__name__}.__init__ no longer sets use_sequence_parallel")
