"""The patch as a series ``git am`` applies in order, each with a commit message
in vLLM's style: 1, the gate in ``ParallelConfig`` and the re-derivations it
replaces; 2, the contract module and the classes given the mixin.

The author and ``Signed-off-by:`` are a placeholder unless ``--author`` names
one; vLLM's DCO check needs the real one.
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
from vllm_sp_base._upstream._apply import FileChange, Upstream
from vllm_sp_base._upstream._contract_module import CONTRACT_PATH, MIXIN
from vllm_sp_base._upstream._load_check import CHECK_FUNCTION, CHECK_PATH, CHECK_TEST_PATH
from vllm_sp_base._upstream._plan import MODEL_GATE, MOE_GATE, PIPELINE_SIZE
from vllm_sp_base._upstream._vllm_tests import DEFAULTS_TEST_PATH, GATE_TEST_PATH

PLACEHOLDER_AUTHOR: Final = "Your Name <you@example.com>"
#: vLLM's PR template asks for it; the numbers are the submitter's to give.
_TEST_RESULT: Final = "\nTest Result:\n\n    (passed on CPU against the patched tree; fill in yours)\n"
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
        old = (before or "").splitlines(keepends=True)
        hunks = difflib.unified_diff(old, (after or "").splitlines(keepends=True), n=3)
        for line in list(hunks)[2:]:  # the ---/+++ pair is written above
            out.append(line if line.endswith("\n") else line + "\n" + _NO_NEWLINE)
    return "".join(out)


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


def _first(result: Upstream, changes: list[FileChange]) -> Patch:
    sites = [
        f"{c.path}:{note.split(':', 1)[0]}"
        for c in changes for note in c.notes if " -> " in note
    ]
    stand_ins = [f"{c.path}:{note}" for c in changes for note in c.notes if "stand-in" in note]
    left = [f"{path}:{line}: {why}" for path, line, why in result.left]
    body = _prose(
        "Model files repeat the condition for model-level sequence parallelism by "
        f"hand, as `parallel_config.{MOE_GATE} and "
        f"parallel_config.{PIPELINE_SIZE} == 1`. The SP-MoE conditions already live "
        f"in one place, `{MOE_GATE}` (where dropping `data_parallel_size > 1` once "
        "cost ~5.6 GiB at DP=1, #48849); the PP condition does not, so lifting the "
        "restriction, or adding another, means finding every copy.",
        f"This adds it once, as `ParallelConfig.{MODEL_GATE}` next to "
        f"`{MOE_GATE}`, and uses it at each copy (same value, same evaluation):",
    ) + "\n" + _bullets(sites)
    if stand_ins:
        body += "\n" + _prose("Test stand-ins that feed these sites get the new attribute:")
        body += "\n" + _bullets(stand_ins)
    if left:
        body += "\n" + _prose("Left as they are (the rewrite could not be shown to keep the value):")
        body += "\n" + _bullets(left)
    body += "\n" + _prose(
        "The name is not `use_sequence_parallel`: DeepSeek V4/V4.1, Step5 and MuseSpark "
        "set a `self.use_sequence_parallel` of their own from other conditions, and a "
        "config property of that name would disagree with them.",
        "Test Plan:",
    ) + f"\n    pytest {GATE_TEST_PATH}\n" + _TEST_RESULT
    files: list[tuple[str, str | None, str | None]] = [
        (c.path, c.before, c.middle) for c in changes if c.middle != c.before
    ]
    return Patch(f"[Config] Add ParallelConfig.{MODEL_GATE}", body, files)


def _second(changes: list[FileChange]) -> Patch:
    classes = [
        f"`{m.group(2)}` ({c.path}): {m.group(3)}"
        for c in changes for note in c.notes if (m := _NOTE.fullmatch(note))
    ]
    removed = [f"{c.path}:{note}" for c in changes for note in c.notes if "removed self." in note]
    body = _prose(
        "A subclass that writes its own `__init__` and calls `nn.Module.__init__(self)` "
        "inherits its parent's `forward` but never sets the flags the parent's "
        "`__init__` sets, so it fails late, at KV-cache profiling: `AttributeError: "
        "'Dots3NoteModel' object has no attribute 'use_sequence_parallel'` (#52172 set "
        "the flags by hand in each `__init__`).",
        f"This adds `{CONTRACT_PATH}` with `{MIXIN}` (class-level "
        "`use_sequence_parallel = False` and `use_sequence_parallel_moe = False`) and "
        "gives it to these classes:",
    ) + "\n" + _bullets(classes) + "\n" + _prose(
        "The mixin goes after `nn.Module` in the bases and has no `__init__`. An instance "
        "whose `__init__` runs still sets its flags exactly as today; only one whose "
        "`__init__` never decided reads the class value, `False`: the path without "
        "sequence parallelism, instead of an AttributeError.",
    )
    if removed:
        body += "\n" + _prose("Removes the `= False` lines the defaults make redundant:")
        body += "\n" + _bullets(removed)
    else:
        body += "\n" + _prose("The explicit `= False` lines added by #52172 are kept.")
    body += "\n" + _prose("Test Plan:") + f"\n    pytest {DEFAULTS_TEST_PATH}\n" + _TEST_RESULT
    files: list[tuple[str, str | None, str | None]] = [
        (c.path, c.middle, c.after_second()) for c in changes if c.after_second() != c.middle
    ]
    return Patch("[Model] Class-level defaults for the sequence-parallel flags", body, files)


def _third(changes: list[FileChange]) -> Patch:
    body = _prose(
        "With class-level defaults, a module whose `__init__` never decided takes the "
        "path without sequence parallelism instead of raising. Inside a model that "
        "shards its hidden states for SP, that path gives wrong results without an "
        "error.",
        f"This adds `{CHECK_PATH}` with `{CHECK_FUNCTION}(model)`: one walk over "
        "`named_modules()` after the model is created, raising a ValueError that names "
        "the module when it reads the class default while the nearest module around it "
        "that set the flag itself set True. A module that sets the flag, to either "
        "value, is never questioned, so no model that loads today is refused. "
        "`BaseModelLoader.create_model` calls it once the model is built; loaders that "
        "build the model themselves (tensorizer, the weight-cache IPC loader) do not "
        "run it yet. Needs the previous patch (it imports the mixin).",
        "Test Plan:",
    ) + f"\n    pytest {CHECK_TEST_PATH}\n" + _TEST_RESULT
    files: list[tuple[str, str | None, str | None]] = [
        (c.path, c.after_second(), c.after) for c in changes if c.after_second() != c.after
    ]
    return Patch("[Model] Check the sequence-parallel defaults at load time", body, files)


def series(result: Upstream) -> list[Patch]:
    """The patches of ``result``, in order; one with no file is left out."""
    patches = [_first(result, result.files), _second(result.files), _third(result.files)]
    return [patch for patch in patches if patch.files]


def _diffstat(files: list[tuple[str, str | None, str | None]], text: str) -> str:
    counts: dict[str, list[int]] = {path: [0, 0] for path, _, _ in files}
    current = None
    for line in text.splitlines():
        if line.startswith("diff --git a/"):
            current = line.split(" b/", 1)[1]
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
        f"{patch.body}\nSigned-off-by: {author}\n"
        f"---\n{_diffstat(patch.files, text)}\n{text}-- \nvllm-sp-base {__version__}\n\n"
    )


def file_name(number: int, title: str) -> str:
    """``git format-patch``'s name: the number, then the title's words joined by -."""
    words = re.sub(r"[^A-Za-z0-9._]+", "-", re.sub(r"^\[[^]]*\]\s*", "", title)).strip("-.")
    return f"{number:04d}-{words[:52].rstrip('-.')}.patch"
