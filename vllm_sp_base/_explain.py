"""``vllm-sp-base explain``: why SP-MoE and model-level SP are on or off."""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
from collections.abc import Sequence
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


#: vLLM 0.33.0's own options that look like parallelism flags but do not bear
#: on the gates (``tests/test_explain.py`` checks the list against vLLM's real
#: parser): a pasted ``vllm serve`` line may hold them; they are ignored, said.
VLLM_OTHER_PARALLEL_OPTIONS = frozenset({
    "--data-parallel-address", "--data-parallel-backend", "--data-parallel-external-lb",
    "--data-parallel-hybrid-lb", "--data-parallel-multi-port-external-lb", "--data-parallel-rank",
    "--data-parallel-rpc-port", "--data-parallel-size-local", "--data-parallel-start-rank",
    "--decode-context-parallel-size", "--disable-elastic-ep", "--disable-ep-weight-filter",
    "--disable-eplb", "--disable-hc-sp", "--disable-nccl-for-dp-synchronization",
    "--disable-return-routed-experts", "--disable-shm-tensor-arena", "--dp-sync-interval",
    "--elastic-ep-max-dp-size", "--enable-elastic-ep", "--enable-ep-weight-filter", "--enable-eplb",
    "--enable-hc-sp", "--enable-nccl-for-dp-synchronization", "--enable-return-routed-experts",
    "--enable-shm-tensor-arena", "--eplb-config", "--expert-placement-strategy",
    "--max-parallel-loading-workers", "--mm-encoder-tp-mode", "--mm-tensor-ipc",
    "--no-data-parallel-external-lb", "--no-data-parallel-hybrid-lb",
    "--prefill-context-parallel-size", "-pcp", "-dcp", "-dpa", "-dpb", "-dpe", "-dph", "-dpl",
    "-dpm", "-dpn", "-dpp", "-dpr",
})
#: Words of an option's name that make it look like one of the gates' inputs.
_PARALLEL_WORDS = frozenset({"parallel", "tensor", "pipeline", "expert", "all2all", "tp", "dp",
                             "pp", "ep"})
#: ``-tp8``: a short flag with its value glued on (vLLM refuses it too).
_GLUED = re.compile(r"-{1,2}(tp|dp|pp)=?\d+")


class ExplainInputError(ValueError):
    """A word ``explain`` cannot take: the message is the one line said."""


def split_words(words: Sequence[str]) -> list[str]:
    """A pasted line quoted as one argument is split as a shell would."""
    split: list[str] = []
    for word in words:
        if any(c.isspace() for c in word):
            try:
                split += shlex.split(word)
            except ValueError as error:
                raise ExplainInputError(f"cannot split {word!r} as a shell would: {error}") from None
        else:
            split.append(word)
    return split


def sort_words(parser: argparse.ArgumentParser, words: Sequence[str]) -> tuple[list[str], list[str]]:
    """``words`` (a pasted ``vllm serve`` line, or flags) as (what ``parser``
    reads, what is ignored, in its order). A word that looks like a
    parallelism flag and is none of ours nor vLLM's is an error with the flag
    it may mean: ignored, it would give a confident verdict for the wrong
    layout."""
    takes_value = {option: action.nargs != 0 for action in parser._actions
                   for option in action.option_strings}
    ours: list[str] = []
    ignored: list[str] = []
    words = split_words(words)
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        name, equals, value = word.partition("=")
        if name.startswith("--"):
            name = name.replace("_", "-")  # vLLM reads --tensor_parallel_size too
        if name in takes_value:
            ours.append(name + equals + value)
            if takes_value[name] and not equals and index < len(words):
                ours.append(words[index])
                index += 1
            continue
        if word.startswith("-") and not _is_number(word) and name not in VLLM_OTHER_PARALLEL_OPTIONS:
            _refuse_lookalike(word, name, list(takes_value))
        ignored.append(word)
    return ours, ignored


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _refuse_lookalike(word: str, name: str, options: list[str]) -> None:
    parts = set(name.lstrip("-").lower().split("-"))
    glued = _GLUED.fullmatch(word)
    if glued:
        raise ExplainInputError(f"{word}: did you mean -{glued.group(1)} {word.lstrip('-')[2:].lstrip('=')}?")
    if not parts & _PARALLEL_WORDS and not difflib.get_close_matches(name, options, n=1, cutoff=0.8):
        return
    bare = name.lstrip("-")
    same = [o for o in options if o.lstrip("-") == bare]  # --tp for -tp, -tensor-parallel-size
    close = same or difflib.get_close_matches(name, options, n=2, cutoff=0.6)
    near = f"; did you mean {' or '.join(close)}?" if close else ""
    raise ExplainInputError(
        f"{word}: looks like a parallelism flag but is not one vllm serve takes{near} (the gates "
        f"read -tp, -dp, -pp, -ep/--disable-expert-parallel and --all2all-backend)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Same flags and defaults as ``vllm serve``; a pasted ``vllm serve MODEL ...``
    # line is accepted: what does not bear on the gates is named and ignored.
    parser.add_argument("command_line", nargs="*", metavar="WORD",
                        help="the rest of a pasted `vllm serve MODEL ...` line, as words or as "
                             "one quoted argument (ignored, said so in order); a word that looks "
                             "like a parallelism flag and is not one is an error")
    parser.add_argument("--tensor-parallel-size", "-tp", type=_positive, default=1,
                        help="tensor-parallel size (default 1)")
    parser.add_argument("--data-parallel-size", "-dp", type=_positive, default=1,
                        help="data-parallel size (default 1): SP-MoE needs more than 1")
    parser.add_argument("--pipeline-parallel-size", "-pp", type=_positive, default=1,
                        help="pipeline-parallel size (default 1): model-level SP needs exactly 1")
    parser.add_argument("--enable-expert-parallel", "-ep", action=argparse.BooleanOptionalAction,
                        default=False, help="expert parallelism for MoE layers (default off)")
    parser.add_argument("--disable-expert-parallel", dest="enable_expert_parallel",
                        action="store_false", help="as vllm serve spells --no-enable-expert-parallel")
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
    ignored: list[str] = getattr(args, "ignored", args.command_line)
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
