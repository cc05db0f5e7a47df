"""Turn a plan into new file contents, each change described, nothing written."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import Counter
from dataclasses import dataclass, field

import libcst as cst

from vllm_sp_base._upstream._names import TEST_PATH
from vllm_sp_base._upstream.checks._buildkite import Wiring, find_steps
from vllm_sp_base._upstream.plan._edits import Default, FileEdits, Reader, Redundant
from vllm_sp_base._upstream.plan._gates import Gate
from vllm_sp_base._upstream.plan._plan import analyse
from vllm_sp_base._upstream.rewrite._codemod import NotKept, Rewrite, rewrite
from vllm_sp_base._upstream.rewrite._vllm_tests import (
    extended,
    missing_helpers,
    tests_setting_the_flag,
)

#: How each kind of change is counted in the summary, in this order.
COUNTED = {
    "default": "classes given class-level defaults",
    "redundant": "redundant assignments removed",
    "test": "vLLM tests added",
}


@dataclass
class FileChange:
    path: str  # relative to the tree's root, with "/"
    before: str | None  # None: a new file
    after: str
    notes: list[str] = field(default_factory=list)  # "LINE: what changed"
    generated: str | None = None  # the count a generated change adds to ("test")


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
    defaults: list[tuple[str, str, Default]] = field(default_factory=list)  # (path, class, what)
    removed: list[tuple[str, Redundant]] = field(default_factory=list)  # (path, the line removed)
    readers: list[Reader] = field(default_factory=list)
    gates: list[Gate] = field(default_factory=list)
    wiring: Wiring | None = None  # the CI steps running the test (None: no test in the series)
    cited: list[str] = field(default_factory=list)  # existing tests setting the flag on an instance

    def sources(self) -> list[str]:
        """The changed files other than tests."""
        return [c.path for c in self.files if not c.path.startswith("tests/")]


def _notes(edits: FileEdits) -> list[tuple[int, str]]:
    notes = [(d.line, f"{cls}: class-level {', '.join(f'{f} = False' for f in d.flags)}: {d.why}")
             for cls, d in edits.defaults.items()]
    notes += [(r.line, f"{r.cls}: removed self.{r.flag} = False (the class-level default)")
              for r in edits.redundant]
    return sorted(notes)


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


def build(
    root: str, *, all_readers: bool = False, remove_redundant: bool = True, with_tests: bool = True
) -> Upstream:
    """The patch for the vLLM tree under ``root``; reads files, writes none.
    ``with_tests``: the series adds its test to vLLM's ``tests/``."""
    plan = analyse(root, all_readers=all_readers, remove_redundant=remove_redundant)
    # A file the analysis could not read may hold what the plan needs: the
    # series would be partial, so none is made.
    result = Upstream(root, unreadable=list(plan.problems), missing=list(plan.missing),
                      readers=plan.readers, gates=plan.gates)
    if result.unreadable:
        return result
    jobs = [(plan.texts[path], edits) for path, edits in plan.edits.items()]
    for (path, edits), rewritten in zip(plan.edits.items(), _rewrite_all(jobs)):
        change = _change(result, path, plan.texts[path], edits, rewritten)
        if change is not None:
            result.files.append(change)
            result.defaults += [(path, cls, default) for cls, default in edits.defaults.items()]
            result.removed += [(path, line) for line in edits.redundant]
    if result.unreadable:
        return result
    if with_tests and not result.missing:  # the test imports what the patch expects to find
        _add_test(result)
    if result.unreadable:
        return result
    result.files.sort(key=lambda change: change.path)
    _restyle(result)
    if with_tests and result.files:
        result.wiring = find_steps(root, TEST_PATH, result.sources())
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
    done = +Counter(rewritten.done)
    expected = +Counter(default=len(edits.defaults), redundant=len(edits.redundant))
    if done != expected:
        if not rewritten.problems:
            result.unmade.append((path, f"planned {dict(expected)}, made {dict(done)}"))
        return None
    try:
        compile(rewritten.source.encode("utf-8"), path, "exec", dont_inherit=True)  # a BOM too
    except SyntaxError as error:  # never expected: the rewrite is not written then
        result.unmade.append((path, f"rewrite does not compile ({error})"))
        return None
    if rewritten.source == before:
        return None
    result.counts.update(done)
    return FileChange(path, before, rewritten.source, [f"{line}: {note}" for line, note in _notes(edits)])


def _add_test(result: Upstream) -> None:
    """The test, at the end of vLLM's own test file of these classes."""
    try:
        with open(os.path.join(result.root, *TEST_PATH.split("/")), encoding="utf-8", newline="") as handle:
            current = handle.read()
        missing = missing_helpers(current)
    except FileNotFoundError:
        result.missing.append(f"{TEST_PATH} (the test file the series extends)")
        return
    except (OSError, UnicodeDecodeError, SyntaxError) as error:
        result.unreadable.append((TEST_PATH, f"cannot read: {_reason(error)}"))
        return
    if missing:
        result.missing.append(f"{TEST_PATH}: {', '.join(missing)} (what the added test reuses)")
        return
    result.cited = tests_setting_the_flag(current, {cls for _, cls, _ in result.defaults})
    after = extended(current)
    if after != current:
        result.files.append(FileChange(TEST_PATH, current, after, ["end: the added test"], generated="test"))
        result.counts["test"] += 1


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
    """vLLM's ``ruff format`` and ``ruff check`` on every changed file (see ``checks._ruff``)."""
    from vllm_sp_base._upstream.checks._ruff import style

    python = [c for c in result.files if c.path.endswith(".py")]
    try:
        styled = style({c.path: c.before for c in python}, {c.path: c.after for c in python})
    except FileNotFoundError:
        why = "not found: the patch is neither formatted nor linted as vLLM's pre-commit would"
        result.problems.append(("ruff", f"{why} (pip install ruff)"))
        return
    for change in python:
        change.after = styled.texts[change.path]
        if change.path in styled.unformatted:
            change.notes.append("not ruff-formatted before the patch: left unformatted")
    result.problems += styled.added
    # A change vLLM's style undoes is no change.
    for change in [c for c in result.files if c.after == c.before]:
        result.files.remove(change)
        if change.generated:
            result.counts[change.generated] -= 1
    result.counts = +result.counts
