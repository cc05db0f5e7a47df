"""Turn a plan into new file contents, each change described, nothing written."""

from __future__ import annotations

import multiprocessing as mp
import os
import re
from collections import Counter
from dataclasses import dataclass, field, replace

import libcst as cst

from vllm_sp_base._plugin import ANCHORS
from vllm_sp_base._upstream._names import (
    CONFIG_CLASS,
    CONTRACT_PATH,
    MIXIN,
    MODEL_GATE,
    MOE_GATE,
    PIPELINE_SIZE,
)
from vllm_sp_base._upstream.plan._edits import FileEdits
from vllm_sp_base._upstream.plan._plan import analyse
from vllm_sp_base._upstream.rewrite._ci_wiring import ANCHOR_TEST, CI_PATH, wire
from vllm_sp_base._upstream.rewrite._codemod import NotKept, Rewrite, rewrite
from vllm_sp_base._upstream.rewrite._contract_module import render
from vllm_sp_base._upstream.rewrite._site_calls import SITE_CALLS, SiteCall, enclosing
from vllm_sp_base._upstream.rewrite._stand_ins import candidates, update
from vllm_sp_base._upstream.rewrite._vllm_tests import (
    DEFAULTS_TEST_PATH,
    GATE_TEST_PATH,
    defaults_test,
    gate_test,
)

#: How each kind of change is counted in the summary, in this order.
COUNTED = {
    "mixin": "classes given the mixin",
    "rederivation": "re-derivations replaced",
    "redundant": "redundant assignments removed",
    "gate": "gate added",
    "module": "contract module written",
    "test": "vLLM test files written",
    "stand-in": "test stand-ins updated",
    "ci": "test files wired into Buildkite",
}


@dataclass
class FileChange:
    path: str  # relative to the tree's root, with "/"
    before: str | None  # None: a new file
    after: str
    notes: list[str] = field(default_factory=list)  # "LINE: what changed"
    middle: str | None = None  # after the first patch of the series (None: not there yet)
    generated: str | None = None  # the count a generated file adds to ("test", "module", ...)


@dataclass
class Upstream:
    root: str
    files: list[FileChange] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, reason): said, written
    # Nothing is written while either holds one: (path, reason).
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # cannot be read, parsed, kept
    unmade: list[tuple[str, str]] = field(default_factory=list)  # a planned change not made
    missing: list[str] = field(default_factory=list)
    left: list[tuple[str, int, str]] = field(default_factory=list)  # (path, line, why not replaced)
    sites: list[tuple[str, int, str]] = field(default_factory=list)  # (path, line, text) rewritten
    untested: list[tuple[str, int, str]] = field(default_factory=list)  # (path, line, why) no site test


def _notes(edits: FileEdits) -> list[tuple[int, str]]:
    notes = [(line, f"{cls} inherits {MIXIN}: {edits.why[cls]}" if cls in edits.why
              else f"{cls} inherits {MIXIN}") for cls, line in edits.mixin.items()]
    notes += [(r.line, f"{r.cls}: removed self.{r.flag} = False (inherited default)")
              for r in edits.redundant]
    notes += [(s.line, (f"{s.receiver}.{MOE_GATE} and {s.receiver}.{PIPELINE_SIZE} == 1 -> "
                        f"{s.receiver}.{MODEL_GATE}")) for s in edits.rederivations]
    if edits.gate is not None:
        notes.append((edits.gate, f"{CONFIG_CLASS}.{MODEL_GATE} added after {MOE_GATE}"))
    return sorted(notes)


def _expected(edits: FileEdits) -> Counter[str]:
    return Counter(
        mixin=len(edits.mixin),
        redundant=len(edits.redundant),
        rederivation=len(edits.rederivations),
        gate=int(edits.gate is not None),
    )


def _rewrite_or_reason(job: tuple[bytes, FileEdits]) -> Rewrite | str:
    data, edits = job
    try:
        return rewrite(data.decode("utf-8"), edits)
    except UnicodeDecodeError as error:
        return f"not UTF-8 (byte {error.start}): the series is written in UTF-8 only"
    except cst.ParserSyntaxError as error:
        return f"does not parse (line {error.raw_line}): {error.message}"
    except NotKept as error:
        return (f"line {error.line} would not be kept as written (libcst, which rewrites the file, "
                "drops a form feed before a statement and a CR-only last line ending)")


def _rewrite_all(jobs: list[tuple[bytes, FileEdits]]) -> list[Rewrite | str]:
    """libcst takes ~0.5 s a file; the files are independent, so use every core."""
    workers = min(os.cpu_count() or 1, 8, len(jobs))
    if workers < 2 or "fork" not in mp.get_all_start_methods():
        return [_rewrite_or_reason(job) for job in jobs]
    with mp.get_context("fork").Pool(workers) as pool:
        return pool.map(_rewrite_or_reason, jobs, chunksize=1)


def _first_patch_only(edits: FileEdits) -> FileEdits:
    return replace(edits, mixin={}, why={}, redundant=[])


def build(
    root: str, *, all_readers: bool = False, remove_redundant: bool = False, with_tests: bool = True
) -> Upstream:
    """The patch for the vLLM tree under ``root``; reads files, writes none.
    ``with_tests``: the series adds its tests to vLLM's ``tests/``."""
    plan = analyse(root, all_readers=all_readers, remove_redundant=remove_redundant)
    # A file the analysis could not read may hold what the plan needs: the
    # series would be partial, so none is made.
    result = Upstream(root, unreadable=list(plan.problems), missing=list(plan.missing))
    if result.unreadable:
        return result
    jobs = [(plan.texts[path], edits) for path, edits in plan.edits.items()]
    # A file with changes of both patches is rewritten twice: the text between them.
    both = [path for path, edits in plan.edits.items()
            if (edits.mixin or edits.redundant) and (edits.rederivations or edits.gate is not None)]
    jobs += [(plan.texts[path], _first_patch_only(plan.edits[path])) for path in both]
    rewrites = _rewrite_all(jobs)
    firsts = dict(zip(both, rewrites[len(plan.edits):]))
    for (path, edits), rewritten in zip(plan.edits.items(), rewrites):
        change = _change(result, path, plan.texts[path], edits, rewritten)
        if change is None:
            continue
        if not isinstance(rewritten, str):
            declined = {line for line, _ in rewritten.left}
            text = plan.texts[path].decode("utf-8")
            result.sites += [(path, s.line, text) for s in edits.rederivations if s.line not in declined]
        first = firsts.get(path)
        if isinstance(first, str):  # never expected: the whole rewrite went through
            result.unmade.append((path, f"{first} (first patch only)"))
            continue
        if first is not None:
            change.middle = first.source
        else:
            change.middle = change.after if edits.rederivations or edits.gate is not None else change.before
        result.files.append(change)
    if result.unreadable:
        return result
    _generated(result, with_tests)
    if with_tests and not result.missing:
        _update_stand_ins(result)
    if result.unreadable:
        return result
    result.files.sort(key=lambda change: change.path)
    _restyle(result)
    return result


def _change(
    result: Upstream, path: str, data: bytes, edits: FileEdits, rewritten: Rewrite | str
) -> FileChange | None:
    """The change to one file, or None (a problem said, or nothing to change)."""
    if isinstance(rewritten, str):
        result.unreadable.append((path, rewritten))
        return None
    before = data.decode("utf-8")
    result.unmade += [(path, problem) for problem in rewritten.problems]
    done = +Counter({kind: n for kind, n in rewritten.done.items() if kind not in ("import", "comment")})
    expected = _expected(edits)
    expected["rederivation"] -= len(rewritten.left)
    if done != +expected:
        if not rewritten.problems:
            result.unmade.append((path, f"planned {dict(+expected)}, made {dict(done)}"))
        return None
    try:
        compile(rewritten.source.encode("utf-8"), path, "exec", dont_inherit=True)  # a BOM too
    except SyntaxError as error:  # never expected: the rewrite is not written then
        result.unmade.append((path, f"rewrite does not compile ({error})"))
        return None
    declined = {line for line, _ in rewritten.left}
    result.left += [(path, left.line, left.reason) for left in edits.left]
    result.left += [(path, line, why) for line, why in rewritten.left]
    if rewritten.source == before:
        return None
    result.counts.update(done)
    notes = [f"{line}: {note}" for line, note in _notes(edits)
             if not (line in declined and "->" in note)]
    notes += [f"comment: '{old}' -> '{new}' (the mixin is a base now)" for old, new in rewritten.comments]
    return FileChange(path, before, rewritten.source, notes)


def _reason(error: Exception) -> str:
    """Why a file could not be read, without repeating its path."""
    if isinstance(error, UnicodeDecodeError):
        return f"not UTF-8 (byte {error.start})"
    if isinstance(error, SyntaxError):
        return f"does not parse (line {error.lineno}): {error.msg}"
    if isinstance(error, NotADirectoryError):
        return "a part of its path is a file, not a folder"
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return str(error)


def _restyle(result: Upstream) -> None:
    """vLLM's ``ruff format`` and ``ruff check`` on every changed file, after
    each patch of the series (see ``_style``)."""
    from vllm_sp_base._upstream.checks._ruff import style

    python = [c for c in result.files if c.path.endswith(".py")]
    between = [c for c in python if c.middle is not None and c.middle not in (c.before, c.after)]
    try:
        styled = style({c.path: c.before for c in python}, {c.path: c.after for c in python})
        first = style({c.path: c.before for c in between}, {c.path: c.middle or "" for c in between})
    except FileNotFoundError:
        why = "not found: the patch is neither formatted nor linted as vLLM's pre-commit would"
        result.problems.append(("ruff", f"{why} (pip install ruff)"))
        return
    for change in python:
        if change.middle == change.after:
            change.middle = styled.texts[change.path]
        change.after = styled.texts[change.path]
        if change in between:
            change.middle = first.texts[change.path]
        if change.path in styled.unformatted:
            change.notes.append("not ruff-formatted before the patch: left unformatted")
    result.problems += styled.added
    result.problems += [found for found in first.added if found not in styled.added]
    # A generated file as vLLM's style writes it is already there: nothing to change.
    for change in [c for c in result.files if c.after == c.before]:
        result.files.remove(change)
        if change.generated:
            result.counts[change.generated] -= 1
    result.counts = +result.counts


def _update_stand_ins(result: Upstream) -> None:
    """Stand-ins in vLLM's tests that set both operands get the new property (first patch)."""
    modules = frozenset(path[: -len(".py")].replace("/", ".") for path, _, _ in result.sites)
    for path in candidates(result.root, modules):
        relpath = os.path.relpath(path, result.root).replace(os.sep, "/")
        try:
            with open(path, encoding="utf-8", newline="") as handle:
                before = handle.read()
            after, done = update(before, MODEL_GATE)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
            result.unreadable.append((relpath, f"not read for test stand-ins: {_reason(error)}"))
            continue
        if done:
            notes = [f"{s.line}: {s.note}" for s in done]
            result.files.append(FileChange(relpath, before, after, notes, middle=after))
            result.counts["stand-in"] += len(done)


def _site_calls(result: Upstream) -> list[tuple[str, SiteCall]]:
    """How the first patch's test reaches each rewritten site; a site it cannot
    reach is said (its test is the submitter's)."""
    calls: list[tuple[str, SiteCall]] = []
    for path, line, text in result.sites:
        name = enclosing(text, line)
        call = SITE_CALLS.get((path, name or ""))
        if call is None:
            why = f"rewritten, but no test of the first patch reaches it ({name or 'module level'})"
            result.untested.append((path, line, why))
        else:
            calls.append((name or "", call))
    # Sites an earlier run rewrote read the gate already: their test stays.
    for (path, name), call in SITE_CALLS.items():
        try:
            with open(os.path.join(result.root, *path.split("/")), encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            continue
        # Numbered as ast numbers lines (str.splitlines also breaks at form feeds).
        lines = re.split(r"\r\n|\r|\n", text)
        reading = [n for n, line in enumerate(lines, 1) if f".{MODEL_GATE}" in line]
        if any(enclosing(text, line) == name for line in reading):
            calls.append((name, call))
    return sorted(set(calls))


def _generated(result: Upstream, with_tests: bool) -> None:
    """The contract module, and the tests each patch adds to vLLM's ``tests/``."""
    anchors = [(module, name) for module, names in ANCHORS.items() for name in names]
    generated = [(CONTRACT_PATH, render(), "module", False)]
    if with_tests and not result.missing:  # the tests import what the patch expects to find
        generated += [(GATE_TEST_PATH, gate_test(MODEL_GATE, _site_calls(result)), "test", True),
                      (DEFAULTS_TEST_PATH, defaults_test(anchors), "test", False)]
        _wire_into_ci(result, DEFAULTS_TEST_PATH)
    for path, text, kind, first_patch in generated:
        try:
            with open(os.path.join(result.root, *path.split("/")), encoding="utf-8", newline="") as handle:
                current: str | None = handle.read()
        except FileNotFoundError:
            current = None
        except (OSError, UnicodeDecodeError) as error:
            result.unreadable.append((path, f"cannot read: {_reason(error)}"))
            continue
        if current == text:
            continue
        note = "new file" if current is None else "regenerated: it changed"
        what = {"module": "the contract, from vllm_sp_base", "test": "vLLM test"}[kind]
        result.files.append(FileChange(path, current, text, [f"1: {note}: {what}"],
                                       middle=text if first_patch else current, generated=kind))
        result.counts[kind] += 1


def _wire_into_ci(result: Upstream, test: str) -> None:
    """The second patch's model test into the Buildkite job of its neighbours."""
    path = os.path.join(result.root, *CI_PATH.split("/"))
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            before = handle.read()
    except FileNotFoundError:
        why = f"not found: wire {test} into a Buildkite job by hand (vLLM's check-test-tethering needs it)"
        result.left.append((CI_PATH, 0, why))
        return
    except (OSError, UnicodeDecodeError) as error:
        result.unreadable.append((CI_PATH, f"cannot read: {_reason(error)}"))
        return
    wired = wire(before, test)
    if wired is None:
        result.left.append((CI_PATH, 0, f"no job runs {ANCHOR_TEST}: wire {test} by hand"))
        return
    if wired != before:
        result.files.append(FileChange(CI_PATH, before, wired,
                                       [f"1: {test} run by the job of {ANCHOR_TEST}"], middle=before))
        result.counts["ci"] += 1
