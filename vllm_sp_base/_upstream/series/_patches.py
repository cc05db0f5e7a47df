"""The patch as a series ``git am`` applies in order, two pull requests that
each stand alone (vLLM squash-merges): 1, the gate in ``ParallelConfig`` and
the re-derivations it replaces, with a test at each site; 2, the class-level
defaults on the classes a custom-``__init__`` subclass is written against.

Each commit message follows vLLM 0.33.0's pull-request template (Overview,
Claims, Validation, Details), says what was run, where and with what result
(``checks/_validated.py``), and carries the attribution trailer vLLM's
``AGENTS.md`` asks of tool-written changes. The author and ``Signed-off-by:``
are a placeholder unless ``--author`` names one; vLLM's DCO check needs the
real one.
"""

from __future__ import annotations

import difflib
import email.utils
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from vllm_sp_base import __version__
from vllm_sp_base._upstream._names import CONTRACT_PATH, MIXIN, MODEL_GATE, MOE_GATE, PIPELINE_SIZE
from vllm_sp_base._upstream.checks import _validated
from vllm_sp_base._upstream.rewrite._vllm_tests import (
    DEFAULTS_TEST_PATH,
    GATE_TEST_PATH,
    defaults_test_count,
    gate_test_count,
)
from vllm_sp_base._upstream.series._build import FileChange, Upstream

PLACEHOLDER_AUTHOR: Final = "Your Name <you@example.com>"
#: The trailer vLLM's AGENTS.md asks of tool-written changes.
ATTRIBUTION: Final = f"Co-authored-by: vllm-sp-base {__version__}"
_NO_NEWLINE = "\\ No newline at end of file\n"
_NOTE = re.compile(r"(\d+): (\w+) inherits \w+: (.*)")


@dataclass
class Patch:
    title: str
    body: str
    files: list[tuple[str, str | None, str | None]] = field(default_factory=list)  # path, before, after

    def diff(self) -> str:
        return diff(self.files)


def diff(files: Iterable[tuple[str, str | None, str | None]]) -> str:
    """A ``git apply``-able diff of (path, before, after); None: no such file."""
    out: list[str] = []
    for path, before, after in files:
        out.append(f"diff --git a/{path} b/{path}\n")
        if before is None:
            out += ["new file mode 100644\n", "--- /dev/null\n", f"+++ b/{path}\n"]
        elif after is None:
            out += ["deleted file mode 100644\n", f"--- a/{path}\n", "+++ /dev/null\n"]
        else:
            out += [f"--- a/{path}\n", f"+++ b/{path}\n"]
        hunks = difflib.unified_diff(lines_of(before or ""), lines_of(after or ""), n=3)
        for line in list(hunks)[2:]:  # the ---/+++ pair is written above
            out.append(line if line.endswith("\n") else line + "\n" + _NO_NEWLINE)
    return "".join(out)


def lines_of(text: str) -> list[str]:
    """``text``'s lines as git counts them, each with its ending: only ``\n``
    ends one (``str.splitlines`` also splits at form feeds and other
    separators, a line git would not see; a CR before the ``\n`` stays)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def _bullets(lines: Iterable[str]) -> str:
    return "".join(
        textwrap.fill(line, 72, initial_indent="- ", subsequent_indent="  ",
                      break_long_words=False, break_on_hyphens=False) + "\n"
        for line in lines
    )


def _prose(*paragraphs: str) -> str:
    """Paragraphs filled to git's 72 columns, a blank line between them."""
    return "\n".join(
        textwrap.fill(p, 72, break_long_words=False, break_on_hyphens=False) + "\n"
        for p in paragraphs
    )


def _section(title: str, *parts: str) -> str:
    return f"## {title}\n\n" + "\n".join(parts)


def _validation(result: Upstream, tests: str, passed: int, hooks: Iterable[str], gpu: str) -> str:
    """What was run, where, with what result; the rest (GPU) is the submitter's."""
    version = _validated.tree_version(result.root)
    hook_list = ", ".join(hooks)
    where = f"vLLM {_validated.VLLM_VERSION} with this change, {_validated.WHERE}:"
    run = (f"\n    pytest {tests}\n    -> {passed} passed; on {_validated.VLLM_VERSION} as released "
           "every one of them fails\n")
    hooks_run = _prose(f"vLLM's pre-commit hooks on the changed files ({hook_list}): all passed.")
    text = _prose(where) + run + "\n" + hooks_run
    if version != _validated.VLLM_VERSION:
        text += "\n" + _prose(f"Generated for vLLM {version or '(version unknown)'}: the commands above "
                              "were run on 0.33.0, not on this tree.")
    return text + "\n" + _prose(gpu)


def _details_end() -> str:
    return _prose(
        "AI assistance was used: the change was written by vllm-sp-base "
        f"{__version__}, a codemod developed with AI assistance, from this tree's "
        "source; as vLLM's AGENTS.md asks, the submitter reviews every changed line "
        "and runs the tests above before opening the PR.",
    )


def _first(result: Upstream, changes: list[FileChange], sites_tested: int) -> Patch:
    sites = [
        f"{c.path}:{note.split(':', 1)[0]}"
        for c in changes for note in c.notes if " -> " in note
    ]
    stand_ins = [f"{c.path}:{note}" for c in changes for note in c.notes if "stand-in" in note]
    left = [f"{path}:{line}: {why}" for path, line, why in result.left if line]
    overview = _section("Overview", _prose(
        "Model files re-derive model-level sequence parallelism by hand as "
        f"`parallel_config.{MOE_GATE} and parallel_config.{PIPELINE_SIZE} == 1`. "
        f"This adds it once, as `ParallelConfig.{MODEL_GATE}` next to `{MOE_GATE}`, "
        "and reads it at each copy.",
    ))
    claims = [
        ("Same value at every rewritten site for a real `ParallelConfig`: the property "
        "is the expression it replaces, and a site is rewritten only where its receiver "
        "is a `ParallelConfig` and the two operands are next to each other in their `and` "
        f"chain ({len(sites)} sites)."),
        ("The PP restriction lives in one place, as the SP-MoE conditions already do in "
        f"`{MOE_GATE}`: lifting it, or adding a condition, is one change."),
        "One behaviour change, for tests only: a bare `MagicMock` standing in for "
        "`parallel_config` gave `False` (`MagicMock() == 1` is false) and now answers a "
        "truthy mock, which turns SP on. "
        + ("Stand-ins in tests that import a rewritten module are given the property "
           "with the value the old expression had." if stand_ins else
           "No test in this tree hands such a stand-in to a rewritten site."),
    ]
    validation = _section("Validation", _validation(
        result, GATE_TEST_PATH, gate_test_count(sites_tested), _validated.HOOKS,
        "Not run, and the submitter's: a DeepSeek-V3.2 or Qwen3-Next serve with "
        "EP, TP > 1 and DP > 1 on GPUs, before and after, to confirm the same "
        "sharding (the value is the same by construction; this checks nothing "
        "else moved).",
    ))
    details = [
        ("The test checks the gate on the layouts that tell its two conditions apart, "
        "and that each rewritten layer reads it: the property is made to raise, and "
        "building the layer from a stand-in config with a real `ParallelConfig` must "
        "reach it (the rest of each `__init__` needs a GPU)."),
        ("The name is not `use_sequence_parallel`: DeepSeek V4/V4.1, Step5 and MuseSpark "
        "set a `self.use_sequence_parallel` of their own from other conditions, and a "
        "config property of that name would disagree with them. The `TODO(wentao)` about "
        "PP stays next to a visible PP condition."),
        (f"Where the condition was last narrowed (`data_parallel_size > 1` dropped from "
        f"`{MOE_GATE}`, #48849), SP-MoE allocated ~5.6 GiB at DP=1 for nothing; this "
        "does not claim it would have prevented that."),
    ]
    text = (overview + "\n" + _section("Claims", _bullets(claims)) + "\n" + validation + "\n"
            + _section("Details", _prose(*details) + "\n" + "Rewritten sites:\n\n" + _bullets(sites)))
    if stand_ins:
        text += "\n" + _prose("Test stand-ins given the property:") + "\n" + _bullets(stand_ins)
    if left:
        text += "\n" + _prose("Left as they are:") + "\n" + _bullets(left)
    if result.untested:
        text += "\n" + _prose("Rewritten, but not reached by the test (the submitter's to cover):")
        text += "\n" + _bullets(f"{path}:{line}" for path, line, _ in result.untested)
    text += "\n" + _details_end()
    files: list[tuple[str, str | None, str | None]] = [
        (c.path, c.before, c.middle) for c in changes if c.middle != c.before
    ]
    return Patch(f"[Config] Add ParallelConfig.{MODEL_GATE}", text, files)


def _second(result: Upstream, changes: list[FileChange]) -> Patch:
    given = [(m.group(2), c.path, m.group(3))
             for c in changes for note in c.notes if (m := _NOTE.fullmatch(note))]
    classes = [f"`{name}` ({path}): {why}" for name, path, why in given]
    names = " and ".join(", ".join(f"`{name}`" for name, _, _ in given).rsplit(", ", 1))
    removed = [f"{c.path}:{note}" for c in changes for note in c.notes if "removed self." in note]
    overview = _section("Overview", _prose(
        "A subclass that writes its own `__init__` and calls `nn.Module.__init__(self)` "
        "inherits its parent's `forward` but never sets the sequence-parallel flags the "
        "parent's `__init__` sets, and fails late, at KV-cache profiling: "
        "`AttributeError: 'Dots3NoteModel' object has no attribute "
        "'use_sequence_parallel'` (#52172 set them by hand in each `__init__`). This "
        "gives the classes such subclasses are written against class-level defaults.",
    ))
    claims = [
        (f"{names} read `False` for "
        "`use_sequence_parallel` and `use_sequence_parallel_moe` when a subclass's "
        "`__init__` skips theirs, instead of raising AttributeError."),
        ("No change for an instance whose `__init__` runs: it sets the flags exactly as "
        "today, and an instance value wins over the class default."),
        ("The `= False` lines the defaults make redundant are removed." if removed else
         "The explicit `= False` lines #52172 added are kept."),
    ]
    validation = _section("Validation", _validation(
        result, DEFAULTS_TEST_PATH, defaults_test_count(len(classes)), _validated.HOOKS,
        "Not run, and the submitter's: loading Dots3 NOTE and DeepSeek-V3.2 on GPUs "
        "(the classes' own `__init__` is unchanged; the defaults are read only where "
        "it does not run).",
    ))
    details = _prose(
        f"`{CONTRACT_PATH}` holds `{MIXIN}`: annotated class attributes "
        "`use_sequence_parallel = False` and `use_sequence_parallel_moe = False`, no "
        "`__init__`. It goes after `nn.Module` in the bases, as vLLM writes "
        "`nn.Module, SupportsX`; no base provides the flags at class level, so its "
        "value is the one found. The test is wired into the CPU job that runs "
        "`models/deepseek_v32/test_sequence_parallel.py`.",
        "Trade-off: a module that never decides takes the path without sequence "
        "parallelism instead of crashing. Inside a model that shards its hidden "
        "states that would be wrong without an error; no such module exists in this "
        "tree (the Dots3 NOTE classes set both flags to False themselves).",
        "Why these classes:",
    ) + "\n" + _bullets(classes)
    if removed:
        details += "\n" + _prose("Removed:") + "\n" + _bullets(removed)
    comments = [f"{c.path}: {note.removeprefix('comment: ')}"
                for c in changes for note in c.notes if note.startswith("comment: ")]
    if comments:
        details += "\n" + _prose("Comments that the new base makes untrue, reworded:") + "\n" + _bullets(comments)
    text = (overview + "\n" + _section("Claims", _bullets(claims)) + "\n" + validation + "\n"
            + _section("Details", details) + "\n" + _details_end())
    files: list[tuple[str, str | None, str | None]] = [
        (c.path, c.middle, c.after) for c in changes if c.after != c.middle
    ]
    return Patch("[Model] Class-level defaults for the sequence-parallel flags", text, files)


def series(result: Upstream) -> list[Patch]:
    """The patches of ``result``, in order; one with no file is left out."""
    tested = len(result.sites) - len(result.untested)
    patches = [_first(result, result.files, tested), _second(result, result.files)]
    return [patch for patch in patches if patch.files]


def _diffstat(files: list[tuple[str, str | None, str | None]], text: str) -> str:
    counts: dict[str, list[int]] = {path: [0, 0] for path, _, _ in files}
    current = None
    for line in lines_of(text):
        if line.startswith("diff --git a/"):
            current = line.rstrip("\n").split(" b/", 1)[1]
        elif current and line.startswith("+") and not line.startswith("+++"):
            counts[current][0] += 1
        elif current and line.startswith("-") and not line.startswith("---"):
            counts[current][1] += 1
    width = max(len(path) for path in counts)
    lines = [f" {path:<{width}} | {a + r} {'+' * min(a, 40)}{'-' * min(r, 40)}"
             for path, (a, r) in counts.items()]
    added = sum(a for a, _ in counts.values())
    removed = sum(r for _, r in counts.values())
    lines.append(f" {len(counts)} files changed, {added} insertions(+), {removed} deletions(-)")
    lines += [f" create mode 100644 {path}" for path, before, _ in files if before is None]
    return "\n".join(lines) + "\n"


def mbox(patch: Patch, number: int, total: int, author: str, date: str | None = None) -> str:
    """``patch`` as ``git format-patch`` writes it."""
    text = patch.diff()
    return (
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        f"From: {author}\n"
        f"Date: {date or email.utils.formatdate()}\n"
        f"Subject: [PATCH {number}/{total}] {patch.title}\n\n"
        f"{patch.body}\n{ATTRIBUTION}\nSigned-off-by: {author}\n"
        f"---\n{_diffstat(patch.files, text)}\n{text}-- \nvllm-sp-base {__version__}\n\n"
    )


def file_name(number: int, title: str) -> str:
    """``git format-patch``'s name: the number, then the title's words joined by -."""
    words = re.sub(r"[^A-Za-z0-9._]+", "-", re.sub(r"^\[[^]]*\]\s*", "", title)).strip("-.")
    return f"{number:04d}-{words[:52].rstrip('-.')}.patch"
