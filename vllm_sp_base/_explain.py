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
from vllm_sp_base._serve_options import VLLM_SERVE_OPTIONS


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


#: vLLM 0.33.0's options that set the gates' inputs, as ``explain`` spells
#: them (``tests/test_explain.py`` checks them against vLLM's parser).
_GATE_OPTIONS = frozenset({
    "--tensor-parallel-size", "-tp", "--data-parallel-size", "-dp", "--pipeline-parallel-size",
    "-pp", "--enable-expert-parallel", "-ep", "--disable-expert-parallel",
    "--no-enable-expert-parallel", "--all2all-backend",
})
#: Words of an option's name that make it look like one of the gates' inputs.
_PARALLEL_WORDS = frozenset({"parallel", "tensor", "pipeline", "expert", "all2all", "tp", "dp",
                             "pp", "ep", "sp", "sequence"})
#: ``--tp-size``, ``--enable-ep``: the flags an abbreviation in a name stands for.
_ABBREVIATED = {"tp": ("-tp", "--tensor-parallel-size"), "dp": ("-dp", "--data-parallel-size"),
                "pp": ("-pp", "--pipeline-parallel-size"), "ep": ("-ep", "--enable-expert-parallel")}
#: ``-tp8``: a short flag with its value glued on (vLLM refuses it too).
_GLUED = re.compile(r"-{1,2}(tp|dp|pp)=?\d+")
#: ``SPB001``, ``spb``: a rule's code, which ``vllm-sp-base rule`` documents.
_RULE_CODE = re.compile(r"spb\d*", re.IGNORECASE)
_RULE = "SPB001"
_GATE_FLAGS = "-tp, -dp, -pp, -ep/--disable-expert-parallel and --all2all-backend"


#: Dashes an editor puts where "-" or "--" was typed: en, em, figure, minus, small, fullwidth.
_TYPOGRAPHIC_DASHES = frozenset("\u2013\u2014\u2012\u2212\ufe63\uff0d\u2010\u2011")


class ExplainInputError(ValueError):
    """A word ``explain`` cannot take: the message is the one line said."""


def split_words(words: Sequence[str]) -> list[str]:
    """A pasted line quoted as one argument is split as a shell would, a
    backslash before a line break joining the lines as a shell does."""
    split: list[str] = []
    for word in words:
        if any(c.isspace() for c in word):
            try:
                split += shlex.split(re.sub(r"\\\r?\n", "", word))
            except ValueError as error:
                raise ExplainInputError(f"cannot split {word!r} as a shell would: {error}") from None
        else:
            split.append(word)
    return split


def sort_words(parser: argparse.ArgumentParser,
               words: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """``words`` (a pasted ``vllm serve`` line, or flags) as (what ``parser``
    reads, what is ignored, in its order, notes to print). Each word is read as
    vLLM 0.33.0's parser reads it, a unique prefix of an option (which vLLM
    allows) as that option. A word that looks like a parallelism flag and is
    none of vLLM's, one that vLLM finds ambiguous between a gate's flag and
    another, a rule code, or ``--config FILE`` (read by vLLM, not here) is an
    error: ignored, it would give a confident verdict for the wrong layout."""
    takes_value = {option: action.nargs != 0 for action in parser._actions
                   for option in action.option_strings}
    ours: list[str] = []
    ignored: list[str] = []
    notes: list[str] = []
    words = split_words(words)
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if _RULE_CODE.fullmatch(word):
            raise ExplainInputError(_rule_code(word))
        if word[:1] in _TYPOGRAPHIC_DASHES:
            # A flag pasted from a document or a chat whose editor turned "--" into a dash:
            # vllm serve reads it as a value, so the layout would not be the one meant.
            bare = word.lstrip("".join(_TYPOGRAPHIC_DASHES) + "-")
            flag = bare.partition("=")[0]
            # "–tp" was "-tp" (a one-dash short flag), "—tensor-parallel-size" "--...".
            fixed = ("-" if f"-{flag}" in takes_value and f"--{flag}" not in takes_value else "--") + bare
            raise ExplainInputError(f"{word}: starts with {word[0]!r} (U+{ord(word[0]):04X}), not '-': "
                                    f"vllm serve does not read it as a flag; did you mean {fixed}?")
        name, equals, value = word.partition("=")
        if name.startswith("--"):
            name = name.replace("_", "-")  # vLLM reads --tensor_parallel_size too
        if name == "--config":
            if not equals:
                given = words[index] if index < len(words) else "FILE"
                raise ExplainInputError(
                    f"--config {given}: vllm serve reads options from that file, explain does not: "
                    f"give its parallel settings as flags instead ({_GATE_FLAGS}; "
                    "`tensor-parallel-size: 4` in the file is -tp 4)")
            notes.append(f"{word}: vllm serve 0.33.0 reads a config file only after --config as a "
                         "word of its own: this line reads none")
        if name not in takes_value and name.strip("-") and word.startswith("-") and not _is_number(word):
            name = _as_vllm_reads(word, name)
        if name in takes_value:
            ours.append(name + equals + value)
            if takes_value[name] and not equals and index < len(words):
                ours.append(words[index])
                index += 1
            continue
        if word.startswith("-") and not _is_number(word) and name not in VLLM_SERVE_OPTIONS:
            _refuse_lookalike(word, name, list(takes_value))
        ignored.append(word)
    return ours, ignored, notes


def _rule_code(word: str) -> str:
    if word.upper() == _RULE:
        return (f"{word}: a rule's code: `vllm-sp-base rule {_RULE}` explains the rule "
                "(explain reads a vllm serve layout)")
    return (f"{word}: not a vllm serve word, nor a rule (the one rule is {_RULE}: "
            f"`vllm-sp-base rule {_RULE}`)")


def _as_vllm_reads(word: str, name: str) -> str:
    """The option ``word`` stands for as vLLM's parser reads it: ``name``
    itself, or the one option it is a prefix of (argparse's abbreviations:
    ``--tensor-parallel 4`` is ``--tensor-parallel-size 4`` there). A prefix
    of several is refused by vLLM; refused here when one of them is a gate's."""
    if name in VLLM_SERVE_OPTIONS:
        return name
    prefix = name if name.startswith("--") else word  # argparse: a short flag's whole word
    matches = sorted((o for o in VLLM_SERVE_OPTIONS if o.startswith(prefix)),
                     key=lambda o: (o not in _GATE_OPTIONS, o))
    if len(matches) == 1:
        return matches[0]
    if _GATE_OPTIONS.intersection(matches):
        shown = ", ".join(matches[:4]) + (f" and {len(matches) - 4} more" if len(matches) > 4 else "")
        raise ExplainInputError(f"{word}: vllm serve refuses it as ambiguous (it could be {shown})")
    return name


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
    if parts & {"sp", "sequence"}:
        raise ExplainInputError(
            f"{word}: vllm serve has no such flag (it refuses it): sequence parallelism is not "
            f"set by a flag, it follows from {_GATE_FLAGS}, which explain reads")
    bare = name.lstrip("-").lower()
    same = [o for o in options if o.lstrip("-") == bare]  # --tp for -tp, -TP for -tp
    abbreviated = [flag for part in sorted(parts & set(_ABBREVIATED)) for flag in _ABBREVIATED[part]]
    if parts & {"disable", "no"} and "-ep" in abbreviated:
        abbreviated = ["--disable-expert-parallel"]
    close = same or abbreviated or difflib.get_close_matches(name, options, n=2, cutoff=0.6)
    near = f"; did you mean {' or '.join(close)}?" if close else ""
    raise ExplainInputError(
        f"{word}: looks like a parallelism flag but is not one vllm serve takes{near} (the gates "
        f"read {_GATE_FLAGS})")


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
    notes: list[str] = getattr(args, "notes", [])
    result = report(layout_from(args))
    if ignored:
        result["ignored"] = ignored
    if notes:
        result["notes"] = notes
    if args.json:
        import json  # the command line builds this parser for every command: keep its start light

        print(json.dumps(result, indent=2))
    else:
        print(render(result))
        if ignored:
            print(f"ignored (not about the gates): {' '.join(ignored)}")
        for note in notes:
            print(f"note: {note}")
    return 0
