"""Checking the candidate classes of some files: one group of files per
process, each resolving and parsing what its candidates' MROs need."""

from __future__ import annotations

import marshal
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vllm_sp_base._audit._options import RuleOptions
from vllm_sp_base._audit.prescan._prescan import spells_any
from vllm_sp_base._audit.report._finding import Finding, Unresolved
from vllm_sp_base._audit.rule._rule import SkippedInitRead
from vllm_sp_base._audit.rule._suppress import ignored
from vllm_sp_base._audit.semantics._built import (
    family_of,
    generated_elsewhere,
    only_a_base,
    stored_where_nothing_reads,
)
from vllm_sp_base._audit.semantics._outside import set_on_every_build
from vllm_sp_base._audit.semantics._project import ClassRef, Project
from vllm_sp_base._audit.semantics._unresolved import unresolved_bases
from vllm_sp_base._audit.sources._stored import to_plain
from vllm_sp_base._audit.sources._workers import processes
from vllm_sp_base._audit.summaries._summaries import (
    BodyDoesNotParse,
    ClassInfo,
    python_name,
    shadowed,
)

if TYPE_CHECKING:
    from vllm_sp_base._audit.sources._sources import Sources

#: Fewer candidate files than this per process, and forking costs more than it saves.
FILES_PER_PROCESS = 16


def split(paths: list[str], texts: dict[str, bytes], reached: dict[str, set[str]] | None = None) -> list[list[str]]:
    """``paths`` in one group per process (fewer for few files), of about as
    many bytes to parse. Each process summarises its files and the files
    their bases are defined in (``reached``): a file goes, the heaviest
    first, where that adds the fewest bytes while the group stays within its
    share of the whole (files that share bases together), else where it adds
    the fewest."""
    count = min(processes(), max(1, len(paths) // FILES_PER_PROCESS))
    reached = reached or {}
    needs = {path: {path} | reached.get(path, set()) for path in paths}

    def size(files: set[str]) -> int:
        return sum(len(texts.get(p, b"")) for p in files)

    # A candidate's own file costs twice: summarised, then its methods' bodies parsed for the rule.
    share = (size(set().union(*needs.values())) + size(set(paths))) / count if paths else 0
    groups: list[list[str]] = [[] for _ in range(count)]
    parsed: list[set[str]] = [set() for _ in range(count)]
    weights = [0] * count
    for path in sorted(paths, key=lambda p: (-size(needs[p]), p)):
        added = [size(needs[path] - parsed[g]) + len(texts.get(path, b"")) for g in range(count)]
        within = [g for g in range(count) if weights[g] + added[g] <= share] or list(range(count))
        chosen = min(within, key=lambda g: (added[g], weights[g], g))
        groups[chosen].append(path)
        weights[chosen] += added[chosen]
        parsed[chosen] |= needs[path]
    return [group for group in groups if group] or [[]]


@dataclass
class Checked:
    """What checking some candidate files found, and what was learnt on the
    way that the run keeps: it comes back from a forked process."""

    findings: list[Finding] = field(default_factory=list)
    suppressed: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)
    parsed: set[str] = field(default_factory=set)
    keys: list[tuple[str, bytes]] = field(default_factory=list)  # files read: the run cache's dependencies
    modules: dict[str, tuple[str, bool] | None] = field(default_factory=dict)  # how each module resolved
    seen: list[tuple[str, tuple[int, int, int, int] | None]] = field(default_factory=list)  # stat of each file read
    entries: list[tuple[bytes, Any]] = field(default_factory=list)  # new cache entries
    # From a forked child: the new entries as the cache stores them, marshalled
    # (the parent only stores them; pickling the objects would cost ~2x).
    stored: list[tuple[bytes, bytes]] = field(default_factory=list)
    only_bases: list[str] = field(default_factory=list)  # classes never built alone: not reported
    unresolved: list[Unresolved] = field(default_factory=list)  # bases that resolve to no class
    noqa_used: list[tuple[str, int]] = field(default_factory=list)  # (path, line) of a noqa that suppressed
    ignores_used: list[tuple[str, int, str]] = field(default_factory=list)  # (path, line, attribute) ignored


class CandidateChecker:
    """Checks the candidate classes of some files, resolving and parsing what
    their MROs need as it goes. Each process has its own: the modules two
    groups share are parsed in both, which costs less than sending them."""

    def __init__(
        self,
        sources: Sources,
        roots: list[str],
        files: dict[str, str],
        names: set[str] | None,
        options: RuleOptions | None = None,
        subclassed: frozenset[str] | None = None,
        binders: dict[str, frozenset[str]] | None = None,
    ) -> None:
        self.sources = sources
        # name -> the audited files that bind it (a class, an import); None:
        # not known, every file that spells a class's name may build it.
        self.binders = binders
        self.options = options or RuleOptions()
        self.subclassed = subclassed  # None: not known (no pre-scan): any class may be a base
        self.roots = roots
        self.files = files  # path -> module name, the audited ones
        self.audited_modules = set(files.values())
        self.names = names  # None: every class
        self.home = os.getpid()
        self._spelled: dict[str, list[tuple[str, bytes]]] = {}
        self._folders: dict[str, list[str]] | None = None

    def __call__(self, paths: Iterable[str]) -> Checked:
        sources = self.sources
        problems_before, keys_before, stored_before, seen_before = (
            len(sources.result.diagnostics), len(sources.keys), len(sources.stored), len(sources.seen))
        project = Project(self.roots, sources.summary, text=sources.read)
        rule = SkippedInitRead(
            project, self.audited_modules.__contains__,
            self.options.entry_points, self.options.show_unreachable,
            self.options.feature_entry_points, self.options.plain_entry_points, self._spelling,
            module_of=self.files.get, builders=self._builders,
        )
        checked = Checked()
        for path in paths:
            name = self.files[path]
            located = project.module_file(name)
            if located is not None and located[0] and located[0] != path:
                # Two files, one module name (a copy on another root): Python
                # imports the first; this one would be checked as that one.
                sources.problem(path, f"module {name} is first found at {located[0]}: this copy "
                                      "is not audited (exclude one of them)")
                continue
            info = project.module(name) if located else None
            if info is None:  # not importable under that name from the roots
                info = sources.summary(path, path.endswith("__init__.py"))
                if info is None:
                    continue
                project.add_module(name, info, path)
            for key, cls in info.classes.items():
                class_name = python_name(key)  # its name in Python, what the tree spells
                if (self.names is not None and class_name not in self.names) or shadowed(key):
                    continue  # a class a later ``class`` of its name rebinds is never built alone
                try:
                    unseen = unresolved_bases(project, ClassRef(name, key), path)
                    if unseen and cls.suppresses(SkippedInitRead.CODE, ""):
                        # Said on the class's own line, as ruff's noqa hides what is reported
                        # there: the user knows this class is not checked past that base.
                        checked.noqa_used += [(path, line) for line in cls.noqa_lines]
                        unseen = []
                    checked.unresolved += unseen
                    findings = rule.check(ClassRef(name, key))
                    checked.unresolved += rule.unseen_metaclasses
                    rule.unseen_metaclasses.clear()
                except BodyDoesNotParse as error:
                    sources.problem(error.path, error.reason)
                    continue
                if findings and generated_elsewhere(path, self._beside(path)):
                    checked.only_bases.append(str(ClassRef(name, key)))
                    continue  # a template: the package imports the file generated from it
                if (findings and self._may_be_a_base(class_name)
                        and only_a_base(class_name, self._spelling(class_name), self._names_it(
                            project, class_name, ClassRef(name, key)))):
                    checked.only_bases.append(str(ClassRef(name, key)))
                    continue  # never built on its own: its subclasses, and who runs its __init__, are checked
                if findings and self._stored_unread(project, class_name):
                    checked.only_bases.append(str(ClassRef(name, key)))
                    continue  # never built: only stored where nothing reads it
                findings = self._not_set_from_outside(class_name, findings)
                kept = [f for f in findings if not self._suppressed(project, path, cls, f, checked)]
                checked.suppressed += len(findings) - len(kept)
                checked.findings += kept
        checked.problems = sources.result.diagnostics[problems_before:]
        checked.parsed = sources.parsed
        checked.keys = list(sources.keys.items())[keys_before:]
        checked.modules = project.resolved()
        checked.seen = list(sources.seen.items())[seen_before:]
        entries = [(key, sources.memo[key]) for key in sources.stored[stored_before:]]
        if os.getpid() != self.home:  # a forked child, done: plain values travel back
            checked.stored = [(key, marshal.dumps(to_plain(value))) for key, value in entries]
        else:
            checked.entries = entries
        return checked

    def _not_set_from_outside(self, class_name: str, findings: list[Finding]) -> list[Finding]:
        """Drop the reads after construction of attributes that every build of
        the class assigns on the instance it built (a test double, a runner's
        owner): nothing that runs on such an instance misses them."""
        later = {f.attribute for f in findings if f.entry != "__init__"}
        if not later:
            return findings
        outside = set_on_every_build(class_name, later, self._spelling(class_name))
        return [f for f in findings if f.entry == "__init__" or f.attribute not in outside]

    def _stored_unread(self, project: Project, class_name: str) -> bool:
        """Whether the class is only stored on instances under attributes nothing reads."""
        def family(path: str, owner: str, attr: str) -> frozenset[str] | None:
            module = self.files.get(path)
            return None if module is None else family_of(project, module, owner, self._spelling, attr)

        return stored_where_nothing_reads(class_name, self._spelling(class_name), self._spelling, family)

    def _suppressed(self, project: Project, path: str, cls: ClassInfo, finding: Finding,
                    checked: Checked) -> bool:
        """Whether a noqa or an ``ignore`` comment hides ``finding``: on its
        class, or on the class whose ``__init__`` skips (``_suppress``); the
        lines that did are marked used."""
        owners = [(path, cls)]
        if finding.skipped_by != finding.class_name:
            ref = project.class_ref(finding.skipped_by)
            skipper = None if ref is None else project.class_info(ref)
            located = None if ref is None else project.module_file(ref.module)
            if skipper is not None and located is not None and located[0]:
                owners.append((located[0], skipper))
        for where, info in owners:
            if info.suppresses(SkippedInitRead.CODE, finding.attribute):
                checked.noqa_used += [(where, line) for line in info.noqa_lines]
                return True
            line = ignored(info, self.sources.texts.get(where, b"")).get(finding.attribute)
            if line is not None:
                checked.noqa_used.append((where, line))
                checked.ignores_used.append((where, line, finding.attribute))
                return True
        return False

    def _may_be_a_base(self, name: str) -> bool:
        """Whether ``name`` may be only a base: a class header names it, it is
        private (a base made at run time, ``type(name, (cls, _Base), {})``, is in
        no header), or another class runs its ``__init__`` (``Name.__init__(self)``,
        a helper). Any other class is a leaf: built, not searched for."""
        if self.subclassed is None or name in self.subclassed or name.startswith("_"):
            return True
        helper = f"{name}.__init__".encode()
        return any(helper in data for _, data in self._spelling(name))

    def _builders(self, ref: ClassRef) -> list[tuple[str, bytes]]:
        """The audited files (and their bytes) that may build the class by a
        name: those that bind its name or its module's, per the pre-scan."""
        if self.binders is None:
            return self._spelling(python_name(ref.name))
        texts, name = self.sources.texts, python_name(ref.name).rsplit(".", 1)[-1]
        paths = (self.binders.get(name, frozenset()) | self.binders.get(ref.module, frozenset())
                 | self.binders.get(ref.module.rsplit(".", 1)[-1], frozenset()))
        return [(path, texts[path]) for path in sorted(paths) if path in self.files and path in texts]

    def _names_it(self, project: Project, name: str, ref: ClassRef) -> Callable[[str], bool]:
        """Whether a file's bare ``name`` may be the class ``ref``: its module
        binds the name to that class, or binds it to no class (``mod.Name``);
        not where it binds another class of that name (two ``Lookahead``s)."""
        def names_it(path: str) -> bool:
            module = self.files.get(path)
            found = project.resolve(module, name) if module is not None else None
            return not isinstance(found, ClassRef) or found == ref
        return names_it

    def _beside(self, path: str) -> list[tuple[str, bytes]]:
        """The other audited files of ``path``'s folder that spell its file
        name: where a file generated from it says so (a template is read
        only by what is generated beside it)."""
        if self._folders is None:
            self._folders = {}
            for other in self.files:
                self._folders.setdefault(os.path.dirname(other), []).append(other)
        texts, spelled = self.sources.texts, os.path.basename(path).encode()
        return [(other, texts[other]) for other in self._folders.get(os.path.dirname(path), [])
                if other != path and other in texts and spelled in texts[other]]

    def _spelling(self, name: str) -> list[tuple[str, bytes]]:
        """The audited files (and their bytes, read before the groups were
        forked) that spell ``name``: one search of the tree a class, shared by
        who is built and what is set from outside."""
        found = self._spelled.get(name)
        if found is None:
            texts, spelled = self.sources.texts, name.encode()
            if spells_any is None:
                found = [(path, texts[path]) for path in self.files if path in texts and spelled in texts[path]]
            else:  # the C library's memmem: twice as fast as ``in`` on a tree's bytes, searched once a name
                needles = (spelled,)
                found = [(path, data) for path in self.files
                         if (data := texts.get(path)) is not None and spells_any(data, needles)]
            self._spelled[name] = found
        return found
