"""The series as ``git am`` applies it: one pull request (vLLM squash-merges),
its message in vLLM 0.33.0's pull-request template (Overview, Claims,
Validation, Details, the checklist) with the attribution trailer its
``AGENTS.md`` asks of tool-written changes.

Every statement of fact in the message comes from this run: the classes and
lines from the plan and the diff, the CI step from the tree's Buildkite
pipeline, the test outcome with and without the change from running it, the
hooks' outcome from running them. What was not run is said as not run.
"""

from __future__ import annotations

import difflib
import email.utils
import hashlib
import os
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from vllm_sp_base import __version__
from vllm_sp_base._upstream._names import TEST_PATH
from vllm_sp_base._upstream.checks._hooks import HookRun
from vllm_sp_base._upstream.checks._test_run import TestRun
from vllm_sp_base._upstream.series._build import Upstream

#: The trailer vLLM's AGENTS.md asks of tool-written changes, in the form
#: GitHub shows as a co-author (a name and an address).
ATTRIBUTION: Final = "Co-authored-by: vllm-sp-base <vllm-sp-base@users.noreply.github.com>"
_NO_NEWLINE = "\\ No newline at end of file\n"
_VERSION = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*version\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)
#: vLLM 0.33.0's pull-request checklist; the tool ticks only what it knows.
_CHECKLIST: Final = """\
<details>
<summary> Pull Request Checklist </summary>

- [ ] I used vLLM's `/pr-checklist` skill. (Mandatory for agents, optional for humans).
- [x] AI assistance was used during the creation of this PR.

- [ ] **Design Fit:** Minimizes impact on core components, reuses existing functionality, and justifies added complexity.
- [ ] **Testing and Validation:** Validates the change and ensures any added tests are meaningful and reliable, with CI coverage or documented CI resource constraints and validation performed outside CI.
- [ ] **Code Quality and Style:** Keeps code and comments clear and concise, and updates relevant documentation and examples.
- [ ] **Pull Request Contents:** Includes a brief summary and relevant links, supports claims with evidence, explains root causes and implementation trade-offs, and follows the contributing guide.
</details>
"""


@dataclass
class Evidence:
    """What was run on the series, for its message to state."""

    test: TestRun | None = None
    test_not_run: str | None = None  # why the test was not run
    hooks: HookRun | None = None  # None: not asked for


@dataclass
class Patch:
    title: str
    body: str
    files: list[tuple[str, str | None, str | None]] = field(default_factory=list)  # path, before, after

    def diff(self) -> str:
        return diff(self.files)


def blob_id(text: str | None) -> str:
    """git's object id of ``text`` as a file (all zeros: no file)."""
    if text is None:
        return "0" * 40
    data = text.encode("utf-8", "surrogateescape")
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def diff(files: Iterable[tuple[str, str | None, str | None]]) -> str:
    """A ``git apply``-able diff of (path, before, after); None: no such file.
    With ``index`` lines, so ``git am -3`` can fall back to a three-way merge."""
    out: list[str] = []
    for path, before, after in files:
        out.append(f"diff --git a/{path} b/{path}\n")
        index = f"index {blob_id(before)}..{blob_id(after)}"
        if before is None:
            out += ["new file mode 100644\n", f"{index}\n", "--- /dev/null\n", f"+++ b/{path}\n"]
        elif after is None:
            out += ["deleted file mode 100644\n", f"{index}\n", f"--- a/{path}\n", "+++ /dev/null\n"]
        else:
            out += [f"{index} 100644\n", f"--- a/{path}\n", f"+++ b/{path}\n"]
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


def _and(names: list[str]) -> str:
    return " and ".join(", ".join(names).rsplit(", ", 1)) if names else ""


def tree_version(root: str) -> str | None:
    """The vLLM version of the tree under ``root`` (its ``vllm/_version.py``), if known."""
    try:
        with open(os.path.join(root, "vllm", "_version.py"), encoding="utf-8") as handle:
            found = _VERSION.search(handle.read())
    except (OSError, UnicodeDecodeError):
        return None
    return found.group(1) if found else None


def _title(result: Upstream) -> str:
    classes = sorted({cls for _, cls, _ in result.defaults})
    flags = sorted({flag for _, _, d in result.defaults for flag in d.flags})
    what = f"{flags[0]} default" if len(flags) == 1 else "sequence-parallel defaults"
    prefix = os.path.commonprefix(classes)
    named = (f"{prefix} classes" if len(classes) > 1 and len(prefix) >= 4
             else _and(classes) if len(classes) <= 2 else f"{len(classes)} classes")
    return f"[Model] Class-level {what} for {named}"


def _validation(result: Upstream, evidence: Evidence) -> str:
    parts: list[str] = []
    run = evidence.test
    version = tree_version(result.root) or "version unknown"
    if run is not None:
        where = f"vllm-sp-base {__version__} ran the test file on this tree (vLLM {version}){run.where}:"
        block = f"\n    {run.command}\n\n    without this change: {run.before.counts}\n"
        if run.before.failure:
            block += f"        {run.before.failure}\n"
        block += f"    with it: {run.after.counts}\n"
        if run.after.failure:
            block += f"        {run.after.failure}\n"
        parts.append(_prose(where) + block)
    else:
        parts.append(_prose(f"Not run by vllm-sp-base ({evidence.test_not_run}): `pytest {TEST_PATH}` "
                            "with and without this change."))
    wiring = result.wiring
    if wiring is not None and wiring.covering():
        step = wiring.covering()[0]
        parts.append(_prose(f"CI: `{TEST_PATH}` is run by the Buildkite step {step.describe()}, whose "
                            "`source_file_dependencies` cover " + _and([f"`{s}`" for s in result.sources()])
                            + " (through " + _and([f"`{e}`" for e in step.entries]) + ")."))
    elif wiring is not None and wiring.steps:
        step = wiring.steps[0]
        parts.append(_prose(f"CI: `{TEST_PATH}` is run by {step.describe()}, but its "
                            "`source_file_dependencies` do not cover "
                            + _and([f"`{s}`" for s in step.uncovered]) + "."))
    elif wiring is not None and wiring.problem:
        parts.append(_prose(f"CI: the Buildkite pipeline could not be read ({wiring.problem})."))
    else:
        parts.append(_prose(f"CI: no Buildkite step of this tree was found to run `{TEST_PATH}`."))
    hooks = evidence.hooks
    changed = " ".join(path for path, _, _ in _files(result))
    if hooks is None:
        parts.append(_prose(f"vLLM's pre-commit hooks were not run by vllm-sp-base on this change "
                            f"(`pre-commit run --files {changed}`)."))
    elif hooks.problem:
        parts.append(_prose(f"vLLM's pre-commit hooks could not be run: {hooks.problem}."))
    else:
        ran = [h for h in hooks.outcomes if h not in hooks.no_files]
        passed = [h for h in ran if hooks.outcomes[h] == "Passed"]
        text = (f"vLLM's pre-commit hooks, run by vllm-sp-base on the changed files with "
                f"{hooks.config} (`pre-commit run --files {changed}`): {len(passed)} of {len(ran)} "
                f"passed ({', '.join(passed)})")
        if hooks.failed():
            text += f"; failed: {', '.join(hooks.failed())}"
        text += "; no file was modified." if not hooks.modified else (
            f"; modified: {', '.join(hooks.modified)}.")
        parts.append(_prose(text))
    parts.append(_prose(
        "Not run: loading a model whose classes skip these `__init__`s (Dots3 NOTE) on GPUs. "
        + ("The parents' `__init__` is unchanged, and the subclasses' loses only the removed "
           "`= False` line" if result.removed else "The classes' own `__init__` is unchanged")
        + "; the class-level default is read only where the parent's `__init__` does not run."
    ))
    return "\n".join(parts)


def _files(result: Upstream) -> list[tuple[str, str | None, str | None]]:
    return [(c.path, c.before, c.after) for c in result.files if c.after != c.before]


def _details(result: Upstream) -> str:
    classes = [(cls, d) for _, cls, d in result.defaults]
    needed = [f"`{cls}`: {d.why}" for cls, d in classes]
    files = sorted({path for path, _, _ in result.defaults})
    flagged = sorted({flag for _, d in classes for flag in d.flags})
    readers = result.readers
    per_flag = "; ".join(f"{sum(f in r.flags for r in readers)} read `self.{f}`" for f in flagged)
    kinds = {kind: sum(r.kind == kind for r in readers) for kind in ("class-level", "given", "init")}
    inherit = kinds["given"] - len(classes)
    paragraphs = [
        (f"Why class attributes: in this tree {len(readers)} classes read `self.use_sequence_parallel` "
         f"or `self.use_sequence_parallel_moe` in a method other than `__init__` ({per_flag}). "
         f"{kinds['class-level']} already define what they read at class level (a class attribute "
         f"or a property). Of the other {len(readers) - kinds['class-level']}, {len(classes)} "
         f"{'has' if len(classes) == 1 else 'have'} a subclass whose own `__init__` skips theirs "
         f"(below), in {len(files)} file{'s' if len(files) != 1 else ''}"
         + (f", and {inherit} more inherit from {'it' if len(classes) == 1 else 'them'}" if inherit else "")
         + f". For the other {kinds['init']}, no subclass in the tree skips the `__init__` that sets "
         f"the flag. So each of the {len(classes)} gets one annotated line, "
         f"`{flagged[0]}: bool = False`, for the flag it reads; a shared mixin or interface would "
         f"add a module for {len(classes)} class{'es' if len(classes) != 1 else ''}."),
        ("Why `False`: it is the value #52172 gave the subclasses by hand. A subclass that skips "
         "the `__init__` also skips what it configures from the flag"
         + (" (" + "; ".join(f"`{cls}.__init__` builds `{b}`" for cls, d in classes
                             for b in d.builds) + ")" if any(d.builds for _, d in classes) else "")
         + ". The trade-off: a subclass whose own modules run sequence-parallel (configured from "
         "`parallel_config`, not from this flag) and that forgets the flag takes the path without "
         "sequence parallelism, a wrong result with TP > 1 where it raises `AttributeError` "
         "today. Whether the subclasses here are such a case with sequence-parallel MoE on was "
         "not checked: it needs several GPUs."),
    ]
    text = _prose(*paragraphs) + "\n" + _bullets(needed)
    if result.removed:
        text += "\n" + _prose(
            "The `= False` lines #52172 added to the subclasses go: the class default gives them the "
            "same value, so the default lives in the class that reads it:"
        ) + "\n" + _bullets([f"`{r.cls}`: `self.{r.flag} = False` ({path}:{r.line})"
                              for path, r in result.removed])
    else:
        text += "\n" + _prose(
            "The `self.use_sequence_parallel = False` lines #52172 added to the subclasses stay: "
            "this change does not depend on removing them."
        )
    gates = result.gates
    if gates:
        same = sum(g.rederives for g in gates)
        text += "\n" + _prose(
            f"Not changed: the tree's {len(gates)} hand-written sequence-parallel gates (a "
            f"`pipeline_parallel_size == 1` in a sequence-parallel condition; {same} re-derive "
            f"`use_sequence_parallel_moe and pipeline_parallel_size == 1`, {len(gates) - same} spell "
            "out conditions of their own). This fix does not need them folded into one property."
        )
    text += "\n" + _prose(
        "Not a duplicate of #52172: that PR set the flag in the Dots3 NOTE subclasses; this "
        + ("moves it into their parents as a default" if result.removed else "gives their parents the default")
        + ", so the next subclass written the same way does not crash at KV-cache profiling.",
        "AI assistance was used: this change and its description were generated by "
        f"vllm-sp-base {__version__}, a codemod developed with AI assistance, from this tree's "
        "source, and the commands under Validation were run by it. The unticked boxes below, the "
        "`/pr-checklist` skill included, are the submitter's, with a review of every changed line "
        "(AGENTS.md).",
    )
    return text


def _overview(result: Upstream) -> str:
    classes = [f"`{cls}`" for _, cls, _ in result.defaults]
    skipping = sorted({d.why.split(" ", 1)[0] for _, _, d in result.defaults if " does not run " in d.why})
    flags = sorted({flag for _, _, d in result.defaults for flag in d.flags})
    who = (f"{_and([f'`{s}`' for s in skipping])} skip the `__init__` of {_and(classes)}"
           if skipping else f"A subclass that skips the `__init__` of {_and(classes)}")
    return _prose(
        f"{who} (calling `nn.Module.__init__(self)`) but inherit their `forward`, which reads "
        f"{_and([f'`self.{f}`' for f in flags])}. That crashed at KV-cache profiling with "
        "`AttributeError: 'Dots3NoteModel' object has no attribute 'use_sequence_parallel'` "
        "until #52172 set the flag to `False` in each subclass, so nothing crashes in this tree "
        "today. "
        + ("This moves that `False` into the parents as a class-level default: the subclasses "
           "read the same value without a line of their own, and "
           if result.removed else "This gives the parents a class-level default, so that ")
        + "the next subclass written this way takes the path without sequence parallelism "
        "instead of needing the same fix.",
    )


def _claims(result: Upstream, evidence: Evidence) -> list[str]:
    classes = " or ".join([f"`{cls}`" for _, cls, _ in result.defaults])
    shown = evidence.test is not None and evidence.test.shows_the_fix()
    return [
        f"A subclass of {classes} whose `__init__` skips theirs runs the inherited `forward` on "
        "the path without sequence parallelism instead of raising `AttributeError`"
        + (" (the added test, which fails without this change)." if shown else "."),
        "No change where their `__init__` runs: it assigns the instance attribute as before, "
        "and an instance attribute wins over a class attribute"
        + (f" ({_and([f'`{t}`' for t in result.cited])}, which "
           f"set{'s' if len(result.cited) == 1 else ''} it to `True` on an instance, "
           f"pass{'es' if len(result.cited) == 1 else ''} with this change)."
           if shown and result.cited else "."),
    ] + ([
        "No change for " + _and(sorted({f"`{r.cls}`" for _, r in result.removed})) + ": each "
        "removed line set `False`, the value the class-level default now gives."
    ] if result.removed else [])


def series(result: Upstream, evidence: Evidence | None = None) -> list[Patch]:
    """The patches of ``result``: one, or none where nothing changes."""
    files = _files(result)
    if not files or not result.defaults:
        return []
    evidence = evidence or Evidence(test_not_run="not asked")
    text = (_section("Overview", _overview(result)) + "\n"
            + _section("Claims", _bullets(_claims(result, evidence))) + "\n"
            + _section("Validation", _validation(result, evidence)) + "\n"
            + _section("Details", _details(result)) + "\n" + _CHECKLIST)
    return [Patch(_title(result), text, files)]


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
        f"Subject: [PATCH{'' if total == 1 else f' {number}/{total}'}] {patch.title}\n\n"
        f"{patch.body}\n{ATTRIBUTION}\nSigned-off-by: {author}\n"
        f"---\n{_diffstat(patch.files, text)}\n{text}-- \nvllm-sp-base {__version__}\n\n"
    )


def file_name(number: int, title: str) -> str:
    """``git format-patch``'s name: the number, then the title's words joined by -."""
    words = re.sub(r"[^A-Za-z0-9._]+", "-", re.sub(r"^\[[^]]*\]\s*", "", title)).strip("-.")
    return f"{number:04d}-{words[:52].rstrip('-.')}.patch"
