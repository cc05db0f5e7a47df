"""``vllm-sp-base explain``: why SP-MoE and model-level SP are on or off."""

from __future__ import annotations

import argparse
from typing import Any

from vllm_sp_base._gates import (
    Condition,
    Layout,
    UnknownBackendError,
    effective_backend,
    model_sequence_parallel_conditions,
    sequence_parallel_moe_conditions,
)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _backend(text: str) -> str:
    try:
        effective_backend(text)
    except UnknownBackendError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Same flags and defaults as ``vllm serve``; a pasted ``vllm serve MODEL ...``
    # line is accepted: what does not bear on the gates is named and ignored.
    parser.add_argument("command_line", nargs="*", metavar="WORD",
                        help="the rest of a pasted `vllm serve MODEL ...` line (ignored, said so)")
    parser.add_argument("--tensor-parallel-size", "-tp", type=_positive, default=1,
                        help="tensor-parallel size (default 1)")
    parser.add_argument("--data-parallel-size", "-dp", type=_positive, default=1,
                        help="data-parallel size (default 1): SP-MoE needs more than 1")
    parser.add_argument("--pipeline-parallel-size", "-pp", type=_positive, default=1,
                        help="pipeline-parallel size (default 1): model-level SP needs exactly 1")
    parser.add_argument("--enable-expert-parallel", "-ep", action=argparse.BooleanOptionalAction,
                        default=False, help="expert parallelism for MoE layers (default off)")
    parser.add_argument("--all2all-backend", type=_backend, default="allgather_reducescatter",
                        help="MoE all2all backend as vllm serve takes it; removed ones are "
                             "remapped as vLLM does (default allgather_reducescatter)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def layout_from(args: argparse.Namespace) -> Layout:
    return Layout(
        tensor_parallel_size=args.tensor_parallel_size,
        data_parallel_size=args.data_parallel_size,
        pipeline_parallel_size=args.pipeline_parallel_size,
        enable_expert_parallel=args.enable_expert_parallel,
        all2all_backend=args.all2all_backend,
    )


def report(layout: Layout) -> dict[str, Any]:
    moe = sequence_parallel_moe_conditions(layout)
    model = model_sequence_parallel_conditions(layout)
    return {
        "layout": {
            "tensor_parallel_size": layout.tensor_parallel_size,
            "data_parallel_size": layout.data_parallel_size,
            "pipeline_parallel_size": layout.pipeline_parallel_size,
            "enable_expert_parallel": layout.enable_expert_parallel,
            "all2all_backend": layout.all2all_backend,
            "effective_all2all_backend": effective_backend(layout.all2all_backend),
        },
        "sequence_parallel_moe": all(c.value for c in moe),
        "sequence_parallel": all(c.value for c in model),
        "conditions": {
            "sequence_parallel_moe": [_condition(c) for c in moe],
            "sequence_parallel": [_condition(c) for c in model],
        },
    }


def _condition(c: Condition) -> dict[str, Any]:
    return {"name": c.name, "expression": c.expression, "value": c.value, "why": c.why}


def _verdict(title: str, conditions: list[dict[str, Any]], on: bool) -> list[str]:
    lines = [f"{title}: {'ON' if on else 'off'}"]
    for c in conditions:
        mark = "yes" if c["value"] else "NO "
        lines.append(f"  [{mark}] {c['expression']}")
    failing = [c for c in conditions if not c["value"]]
    if failing:
        lines.append(f"  off because {failing[0]['expression']} is false: {failing[0]['why']}")
    return lines


def render(result: dict[str, Any]) -> str:
    layout = result["layout"]
    head = (
        f"layout: TP={layout['tensor_parallel_size']} DP={layout['data_parallel_size']} "
        f"PP={layout['pipeline_parallel_size']} expert_parallel={layout['enable_expert_parallel']} "
        f"all2all_backend={layout['all2all_backend']}"
    )
    if layout["effective_all2all_backend"] != layout["all2all_backend"]:
        head += (f" ({layout['all2all_backend']} was removed: vLLM uses "
                 f"{layout['effective_all2all_backend']})")
    conditions = result["conditions"]
    lines = [head]
    lines += _verdict("SP-MoE (ParallelConfig.use_sequence_parallel_moe)",
                      conditions["sequence_parallel_moe"], result["sequence_parallel_moe"])
    lines += _verdict("model-level SP (use_sequence_parallel)",
                      conditions["sequence_parallel"], result["sequence_parallel"])
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    ignored = [*args.command_line, *getattr(args, "unknown", [])]
    result = report(layout_from(args))
    if ignored:
        result["ignored"] = ignored
    if args.json:
        import json  # the command line builds this parser for every command: keep its start light

        print(json.dumps(result, indent=2))
    else:
        print(render(result))
        if ignored:
            print(f"ignored (not about the gates): {' '.join(ignored)}")
    return 0
