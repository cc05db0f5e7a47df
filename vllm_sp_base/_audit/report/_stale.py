"""Baseline entries a run did not meet, sorted by why: only "fixed, or the
class renamed" where nothing else explains it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from vllm_sp_base._audit.report import _text
from vllm_sp_base._audit.report._finding import AuditResult, class_key


@dataclass(frozen=True)
class Stale:
    """The entries of ``baseline`` no finding or unresolved base of this run matched."""

    baseline: str
    #: Their file was not audited this run: excluded, outside the paths given, or unreadable.
    not_audited: list[str]
    #: Findings of a class this run did not check: a base of it is unresolved now.
    not_checked: list[str]
    #: Unresolved bases not met again: the base resolves now, or the class changed.
    resolved: list[str]
    #: Findings no longer found in a class that was checked: fixed, or the class renamed.
    gone: list[str]

    def __bool__(self) -> bool:
        return bool(self.not_audited or self.not_checked or self.resolved or self.gone)

    def to_json(self) -> dict[str, object]:
        return {"file": self.baseline, "not_audited": self.not_audited, "not_checked": self.not_checked,
                "resolved": self.resolved, "gone": self.gone}

    def lines(self) -> list[str]:
        """One line a kind, each saying what is true of its entries and what to do."""
        said = []
        if self.gone:
            said.append(f"{_entries(self.gone)} no finding matches any more (fixed, or the class "
                        f"renamed): {_text.shown(self.gone)}; refresh it with --write-baseline")
        if self.resolved:
            said.append(f"{_entries(self.resolved)} of unresolved bases this run did not meet (the base "
                        f"resolves now, or the class changed): {_text.shown(self.resolved)}; refresh it "
                        "with --write-baseline")
        if self.not_checked:
            said.append(f"{_entries(self.not_checked)} of classes this run could not check (a base is "
                        f"unresolved now), kept: {_text.shown(self.not_checked)}; a --write-baseline "
                        "from this run would record the unresolved bases instead")
        if self.not_audited:
            said.append(f"{_entries(self.not_audited)} of modules this run did not audit (excluded, "
                        f"outside the paths given, or unreadable), kept: {_text.shown(self.not_audited)}; "
                        "a --write-baseline from this run would drop them")
        return [f"{self.baseline}: {line}" for line in said]


def _entries(entries: list[str]) -> str:
    return _text.plural(len(entries), "entry", "entries")


def _class_of(entry: str) -> str:
    """``module.Class`` of ``SPB001:module.Class:attr`` or ``unresolved:module.Class:Base``."""
    return entry.split(":")[1]


def _module_of(entry: str) -> str:
    return _class_of(entry).rpartition(".")[0]


def stale(baseline: str, entries: set[str], result: AuditResult, paths: Sequence[str],
          exclude: Sequence[str], src: Sequence[str]) -> Stale:
    """The ``entries`` of ``baseline`` that ``result`` (before the baseline
    hid anything) did not meet, by why."""
    from vllm_sp_base._audit.report._report import baselined

    missed = sorted(entries - baselined(result))
    if not missed or not paths:  # no path left to audit (a README named alone): none was
        return Stale(baseline, missed, [], [], [])
    unaudited = _unaudited_modules({_module_of(e) for e in missed}, result, paths, exclude, src)
    unchecked = {class_key(u.path, u.class_name) for u in result.unresolved}
    not_audited = [e for e in missed if _module_of(e) in unaudited]
    rest = [e for e in missed if e not in not_audited]
    resolved = [e for e in rest if e.startswith("unresolved:")]
    not_checked = [e for e in rest if e not in resolved and _class_of(e) in unchecked]
    gone = [e for e in rest if e not in resolved and e not in not_checked]
    return Stale(baseline, not_audited, not_checked, resolved, gone)


def _unaudited_modules(modules: set[str], result: AuditResult, paths: Sequence[str],
                       exclude: Sequence[str], src: Sequence[str]) -> set[str]:
    """Of ``modules``, those whose file exists under an audited root (an
    audited path's import root, a source root) but was not audited, or was and
    could not be (a diagnostic)."""
    from vllm_sp_base._audit.files._discover import discover

    found = discover(list(paths), exclude, src)
    unreadable = {path for path, _ in result.diagnostics}
    audited = {module for path, module in found.files.items() if path not in unreadable}
    roots = found.roots
    unaudited = set()
    for module in modules - audited:
        stem = module.replace(".", os.sep)
        if any(os.path.isfile(os.path.join(root, stem + ".py"))
               or os.path.isfile(os.path.join(root, stem, "__init__.py")) for root in roots):
            unaudited.add(module)
    return unaudited
