"""Turn a plan into new file contents, each change described, nothing written."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import Counter
from dataclasses import dataclass, field, replace

import libcst as cst

from vllm_sp_base._plugin import ANCHORS
from vllm_sp_base._upstream._ci_wiring import ANCHOR_TEST, CI_PATH, wire
from vllm_sp_base._upstream._codemod import Rewrite, rewrite
from vllm_sp_base._upstream._contract_module import CONTRACT_PATH, MIXIN, render
from vllm_sp_base._upstream._load_check import (
    CHECK_FUNCTION,
    CHECK_PATH,
    CHECK_TEST_PATH,
    LOADER_PATH,
    add_call,
    check_test,
    render_check,
)
from vllm_sp_base._upstream._plan import (
    CONFIG_CLASS,
    MODEL_GATE,
    MOE_GATE,
    PIPELINE_SIZE,
    FileEdits,
    analyse,
)
from vllm_sp_base._upstream._stand_ins import candidates, update
from vllm_sp_base._upstream._vllm_tests import (
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
    "check": "load-time check added",
    "ci": "tests wired into Buildkite",
}


@dataclass
class FileChange:
    path: str  # relative to the tree's root, with "/"
    before: str | None  # None: a new file
    after: str
    notes: list[str] = field(default_factory=list)  # "LINE: what changed"
    middle: str | None = None  # after the first patch of the series (None: not there yet)
    last_patch: bool = False  # the whole change is the series' last patch (the load-time check)
    second: str | None = None  # after the second patch, where the third changes the file too
    generated: str | None = None  # the count a generated file adds to ("test", "module", ...)

    def after_second(self) -> str | None:
        """The text between the second and the third patch."""
        if self.second is not None:
            return self.second
        return self.middle if self.last_patch else self.after


@dataclass
class Upstream:
    root: str
    files: list[FileChange] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    missing: list[str] = field(default_factory=list)
    left: list[tuple[str, int, str]] = field(default_factory=list)  # (path, line, why not replaced)


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
        return f"not UTF-8 (byte {error.start}); left untouched"
    except cst.ParserSyntaxError as error:
        return f"does not parse (line {error.raw_line}): {error.message}; left untouched"


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
    result = Upstream(root, problems=list(plan.problems), missing=list(plan.missing))
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
        first = firsts.get(path)
        if isinstance(first, str):  # never expected: the whole rewrite went through
            result.problems.append((path, f"{first} (first patch only)"))
            continue
        if first is not None:
            change.middle = first.source
        else:
            change.middle = change.after if edits.rederivations or edits.gate is not None else change.before
        result.files.append(change)
    _generated(result, with_tests)
    if with_tests and not result.missing:
        _update_stand_ins(result)
    result.files.sort(key=lambda change: change.path)
    _restyle(result)
    return result


def _change(
    result: Upstream, path: str, data: bytes, edits: FileEdits, rewritten: Rewrite | str
) -> FileChange | None:
    """The change to one file, or None (a problem said, or nothing to change)."""
    if isinstance(rewritten, str):
        result.problems.append((path, rewritten))
        return None
    before = data.decode("utf-8")
    result.problems += [(path, problem) for problem in rewritten.problems]
    done = +Counter({kind: n for kind, n in rewritten.done.items() if kind != "import"})
    expected = _expected(edits)
    expected["rederivation"] -= len(rewritten.left)
    if done != +expected:
        result.problems.append((path, f"planned {dict(+expected)}, made {dict(done)}; left untouched"))
        return None
    try:
        compile(rewritten.source, path, "exec", dont_inherit=True)
    except SyntaxError as error:  # never expected: the rewrite is not written then
        result.problems.append((path, f"rewrite does not compile ({error}); left untouched"))
        return None
    declined = {line for line, _ in rewritten.left}
    result.left += [(path, left.line, left.reason) for left in edits.left]
    result.left += [(path, line, why) for line, why in rewritten.left]
    if rewritten.source == before:
        return None
    result.counts.update(done)
    notes = [f"{line}: {note}" for line, note in _notes(edits)
             if not (line in declined and "->" in note)]
    return FileChange(path, before, rewritten.source, notes)


def _restyle(result: Upstream) -> None:
    """vLLM's ``ruff format`` and ``ruff check`` on every changed file, after
    each patch of the series (see ``_style``)."""
    from vllm_sp_base._upstream._style import style

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
    for path in candidates(result.root):
        relpath = os.path.relpath(path, result.root).replace(os.sep, "/")
        try:
            with open(path, encoding="utf-8", newline="") as handle:
                before = handle.read()
            after, done = update(before, MODEL_GATE)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
            result.problems.append((relpath, f"not read for test stand-ins: {error}"))
            continue
        if done:
            notes = [f"{s.line}: {s.note}" for s in done]
            result.files.append(FileChange(relpath, before, after, notes, middle=after))
            result.counts["stand-in"] += len(done)


def _generated(result: Upstream, with_tests: bool) -> None:
    """The contract module, and the tests each patch adds to vLLM's ``tests/``."""
    anchors = [(module, name) for module, names in ANCHORS.items() for name in names]
    generated = [(CONTRACT_PATH, render(), "module", False)]
    if with_tests and not result.missing:  # the tests import what the patch expects to find
        generated += [(GATE_TEST_PATH, gate_test(MODEL_GATE), "test", True),
                      (DEFAULTS_TEST_PATH, defaults_test(anchors), "test", False)]
    if not result.missing and _call_the_check(result):
        generated += [(CHECK_PATH, render_check(), "check", False)]
        if with_tests:
            generated += [(CHECK_TEST_PATH, check_test(anchors[0]), "test", False)]
    if with_tests and not result.missing:
        _wire_into_ci(result, [path for path, _, kind, first in generated if kind == "test" and not first])
    for path, text, kind, first_patch in generated:
        try:
            with open(os.path.join(result.root, *path.split("/")), encoding="utf-8", newline="") as handle:
                current: str | None = handle.read()
        except FileNotFoundError:
            current = None
        except (OSError, UnicodeDecodeError) as error:
            result.problems.append((path, f"cannot read: {error}"))
            continue
        if current == text:
            continue
        note = "new file" if current is None else "regenerated: it changed"
        what = "the contract, from vllm_sp_base" if kind == "module" else "vLLM test"
        result.files.append(FileChange(path, current, text, [f"1: {note}: {what}"],
                                       middle=text if first_patch else current,
                                       last_patch=path in (CHECK_PATH, CHECK_TEST_PATH),
                                       generated=kind))
        result.counts[kind] += 1


def _wire_into_ci(result: Upstream, tests: list[str]) -> None:
    """Each model test into the Buildkite job of its neighbours, in the patch adding it."""
    path = os.path.join(result.root, *CI_PATH.split("/"))
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            before = handle.read()
    except OSError:
        why = (f"not found: wire {', '.join(tests)} into a Buildkite job by hand "
               "(vLLM's check-test-tethering needs it)")
        result.left.append((CI_PATH, 0, why))
        return
    texts = [before]
    for test in tests:  # the defaults' test (second patch), then the check's (third)
        wired = wire(texts[-1], test)
        if wired is None:
            result.left.append((CI_PATH, 0, f"no job runs {ANCHOR_TEST}: wire {test} by hand"))
            return
        texts.append(wired)
    if texts[-1] == before:
        return
    second = texts[1] if len(texts) > 2 else None
    notes = [f"1: {test} run by the job of {ANCHOR_TEST}" for test in tests]
    result.files.append(FileChange(CI_PATH, before, texts[-1], notes, middle=before, second=second,
                                   last_patch=second is None and CHECK_TEST_PATH in tests[:1]))
    result.counts["ci"] += len(tests)


def _call_the_check(result: Upstream) -> bool:
    """``BaseModelLoader.load_model`` runs the check once the model is created;
    False (said) where the loader has no place for it: no third patch then."""
    path = os.path.join(result.root, *LOADER_PATH.split("/"))
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            before = handle.read()
        after = add_call(before)
    except FileNotFoundError:
        after, before = None, ""
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
        result.problems.append((LOADER_PATH, f"cannot read: {error}"))
        return False
    if after is None:
        why = ("no BaseModelLoader.load_model with `model = self.create_model(...)`: "
               "the load-time check (third patch) is left out")
        result.left.append((LOADER_PATH, 0, why))
        return False
    if after != before:
        line = next(i for i, text in enumerate(after.splitlines(), 1)
                    if text.strip() == f"{CHECK_FUNCTION}(model)")
        result.files.append(FileChange(LOADER_PATH, before, after,
                                       [f"{line}: {CHECK_FUNCTION}(model) once the model is created"],
                                       middle=before, last_patch=True))
    return True
