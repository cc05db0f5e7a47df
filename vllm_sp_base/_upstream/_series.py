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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from vllm_sp_base import __version__
from vllm_sp_base._upstream._apply import FileChange, Upstream
from vllm_sp_base._upstream._contract_module import CONTRACT_PATH, MIXIN
from vllm_sp_base._upstream._plan import MODEL_GATE, MOE_GATE, PIPELINE_SIZE
from vllm_sp_base._upstream._vllm_tests import DEFAULTS_TEST_PATH, GATE_TEST_PATH

PLACEHOLDER_AUTHOR: Final = "Your Name <you@example.com>"
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
    return "".join(f"- {line}\n" for line in lines)


def _first(result: Upstream, changes: list[FileChange]) -> Patch:
    sites = [
        f"{c.path}:{note.split(':', 1)[0]}"
        for c in changes for note in c.notes if " -> " in note
    ]
    left = [f"{path}:{line}: {why}" for path, line, why in result.left]
    body = (
        f"Model files re-derive the model-level sequence-parallel flag by hand, as\n"
        f"`parallel_config.{MOE_GATE} and\n"
        f"parallel_config.{PIPELINE_SIZE} == 1`. Every copy has to follow a change\n"
        f"to the gate: when `data_parallel_size > 1` was dropped from\n"
        f"`{MOE_GATE}`, SP-MoE allocated ~5.6 GiB of buffers at DP=1 for\n"
        f"nothing (#48849).\n\n"
        f"This adds the gate once, as `ParallelConfig.{MODEL_GATE}` next\n"
        f"to `{MOE_GATE}`, and replaces the re-derivations that read a\n"
        f"ParallelConfig, with their operands next to each other:\n\n{_bullets(sites)}"
    )
    if left:
        body += f"\nLeft as they are (the rewrite could not be shown to keep the value):\n\n{_bullets(left)}"
    body += (
        f"\nThe name is not `use_sequence_parallel`: DeepSeek V4/V4.1, Step5 and\n"
        f"MuseSpark set a `self.use_sequence_parallel` of their own from other\n"
        f"conditions, and a config property of that name would disagree with them.\n\n"
        f"Test Plan:\n\n    pytest {GATE_TEST_PATH}\n"
    )
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
    body = (
        "A subclass that writes its own `__init__` and calls `nn.Module.__init__(self)`\n"
        "inherits its parent's `forward` but never sets the flags the parent's\n"
        "`__init__` sets, so it fails late, at KV-cache profiling:\n"
        "`AttributeError: 'Dots3NoteModel' object has no attribute\n"
        "'use_sequence_parallel'` (#52172 set the flags by hand in each `__init__`).\n\n"
        f"This adds `{CONTRACT_PATH}` with `{MIXIN}`,\n"
        "class-level `use_sequence_parallel = False` and\n"
        "`use_sequence_parallel_moe = False`, and gives it to the classes whose\n"
        f"hierarchy has a subclass that skips their `__init__`:\n\n{_bullets(classes)}\n"
        "The mixin goes after `nn.Module` in the bases and has no `__init__`. An\n"
        "instance whose `__init__` runs still sets its flags exactly as today; only\n"
        "one whose `__init__` never decided reads the class value, `False`: the\n"
        "path without sequence parallelism, instead of an AttributeError.\n"
    )
    body += (f"\nRemoves the `= False` lines the defaults make redundant:\n\n{_bullets(removed)}"
             if removed else "\nThe explicit `= False` lines added by #52172 are kept.\n")
    body += f"\nTest Plan:\n\n    pytest {DEFAULTS_TEST_PATH}\n"
    files: list[tuple[str, str | None, str | None]] = [
        (c.path, c.middle, c.after) for c in changes if c.after != c.middle
    ]
    return Patch("[Model] Class-level defaults for the sequence-parallel flags", body, files)


def series(result: Upstream) -> list[Patch]:
    """The patches of ``result``, in order; one with no file is left out."""
    patches = [_first(result, result.files), _second(result.files)]
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
