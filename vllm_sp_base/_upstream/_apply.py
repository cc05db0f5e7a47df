"""Turn a plan into new file contents, each change described, nothing written."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import Counter
from dataclasses import dataclass, field

import libcst as cst

from vllm_sp_base._upstream._codemod import Rewrite, rewrite
from vllm_sp_base._upstream._contract_module import CONTRACT_PATH, MIXIN, render
from vllm_sp_base._upstream._plan import (
    CONFIG_CLASS,
    MODEL_GATE,
    MOE_GATE,
    PIPELINE_SIZE,
    FileEdits,
    analyse,
)

#: How each kind of change is counted in the summary, in this order.
COUNTED = {
    "mixin": "classes given the mixin",
    "rederivation": "re-derivations replaced",
    "redundant": "redundant assignments removed",
    "gate": "gate added",
    "module": "contract module written",
}


@dataclass
class FileChange:
    path: str  # relative to the tree's root, with "/"
    before: str | None  # None: a new file
    after: str
    notes: list[str] = field(default_factory=list)  # "LINE: what changed"


@dataclass
class Upstream:
    root: str
    files: list[FileChange] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    missing: list[str] = field(default_factory=list)


def _notes(edits: FileEdits) -> list[tuple[int, str]]:
    notes = [(line, f"{cls} inherits {MIXIN}") for cls, line in edits.mixin.items()]
    notes += [(r.line, f"{r.cls}: removed self.{r.flag} = False (inherited default)")
              for r in edits.redundant]
    notes += [(line, f"{cfg}.{MOE_GATE} and {cfg}.{PIPELINE_SIZE} == 1 -> {cfg}.{MODEL_GATE}")
              for line, cfg in edits.rederivations]
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


def build(root: str) -> Upstream:
    """The patch for the vLLM tree under ``root``; reads files, writes none."""
    plan = analyse(root)
    result = Upstream(root, problems=list(plan.problems), missing=list(plan.missing))
    jobs = [(plan.texts[path], edits) for path, edits in plan.edits.items()]
    for (path, edits), rewritten in zip(plan.edits.items(), _rewrite_all(jobs)):
        if isinstance(rewritten, str):
            result.problems.append((path, rewritten))
            continue
        before = plan.texts[path].decode("utf-8")
        result.problems += [(path, problem) for problem in rewritten.problems]
        done = +Counter({kind: n for kind, n in rewritten.done.items() if kind != "import"})
        if done != +_expected(edits):
            planned = dict(_expected(edits))
            result.problems.append((path, f"planned {planned}, made {dict(done)}; left untouched"))
            continue
        try:
            compile(rewritten.source, path, "exec", dont_inherit=True)
        except SyntaxError as error:  # never expected: the rewrite is not written then
            result.problems.append((path, f"rewrite does not compile ({error}); left untouched"))
            continue
        if rewritten.source != before:
            notes = [f"{line}: {note}" for line, note in _notes(edits)]
            result.files.append(FileChange(path, before, rewritten.source, notes))
            result.counts.update(done)
    _contract(result)
    result.files.sort(key=lambda change: change.path)
    _restyle(result)
    return result


def _restyle(result: Upstream) -> None:
    """vLLM's ``ruff format`` and ``ruff check`` on every changed file (see ``_style``)."""
    from vllm_sp_base._upstream._style import style

    try:
        styled = style({c.path: c.before for c in result.files}, {c.path: c.after for c in result.files})
    except FileNotFoundError:
        why = "not found: the patch is neither formatted nor linted as vLLM's pre-commit would"
        result.problems.append(("ruff", f"{why} (pip install ruff)"))
        return
    for change in result.files:
        change.after = styled.texts[change.path]
        if change.path in styled.unformatted:
            change.notes.append("not ruff-formatted before the patch: left unformatted")
    result.problems += styled.added


def _contract(result: Upstream) -> None:
    path = os.path.join(result.root, *CONTRACT_PATH.split("/"))
    wanted = render()
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            current: str | None = handle.read()
    except FileNotFoundError:
        current = None
    except (OSError, UnicodeDecodeError) as error:
        result.problems.append((CONTRACT_PATH, f"cannot read: {error}"))
        return
    if current == wanted:
        return
    note = "new file: the contract" if current is None else "regenerated: the contract changed"
    result.files.append(FileChange(CONTRACT_PATH, current, wanted, [f"1: {note}, from vllm_sp_base"]))
    result.counts["module"] += 1
