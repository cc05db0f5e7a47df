"""Decide, from source alone, what the upstream patch changes in a vLLM tree.

The audit's summaries and whole-program resolution answer the questions a
codemod of one file cannot: which classes root a hierarchy that reads the flags,
and which ``self.<flag> = False`` lines the inherited default makes redundant.
Resolution stays inside the given tree, so an older vLLM never resolves into
the installed one. Nothing is imported or executed.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Final

from vllm_sp_base._audit._engine import AuditResult
from vllm_sp_base._audit.files._discover import discover
from vllm_sp_base._audit.semantics._classes import ClassModel
from vllm_sp_base._audit.semantics._construction import construct, skipped_inits
from vllm_sp_base._audit.semantics._project import ClassRef, MroEntry, Project
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.sources._sources import Sources
from vllm_sp_base._audit.summaries._summaries import ClassInfo
from vllm_sp_base._plugin import ANCHORS
from vllm_sp_base._upstream._contract_module import CONTRACT_MODULE, CONTRACT_PATH, FLAGS, MIXIN
from vllm_sp_base._upstream._rederive import (
    CONFIG_CLASS,
    MOE_GATE,
    PIPELINE_SIZE,
    LeftAsIs,
    Site,
    find_sites,
)
from vllm_sp_base._upstream._redundant import Redundant, redundant_assignments, subclasses_of

__all__ = ["CONFIG_CLASS", "MODEL_GATE", "MOE_GATE", "PIPELINE_SIZE", "FileEdits", "Plan", "analyse"]

CONFIG_PATH: Final = "vllm/config/parallel.py"
#: The ``ParallelConfig`` property the patch adds. Not ``use_sequence_parallel``:
#: DeepSeek V4/V4.1, Step5 and MuseSpark set a ``self.use_sequence_parallel`` of
#: their own from other conditions, and two things of one name must not disagree.
MODEL_GATE: Final = "use_sequence_parallel_moe_without_pp"
#: Text every file the patch may touch contains; everything else is never parsed.
_FLAG_TEXT: Final = b"use_sequence_parallel"
_REDERIVATION_TEXT: Final = (b"use_sequence_parallel_moe", b"pipeline_parallel_size")


class SourceTreeError(Exception):
    """The given directory is not a vLLM source tree."""


def locate(given: str) -> str:
    """The directory holding ``vllm/`` for ``given`` (that directory, or ``vllm/`` itself)."""
    if not os.path.exists(given):
        raise SourceTreeError(f"{given}: no such directory")
    if not os.path.isdir(given):
        raise SourceTreeError(f"{given}: not a directory")
    path = os.path.abspath(given)
    if os.path.isfile(os.path.join(path, "vllm", "__init__.py")):
        return path
    if os.path.basename(path) == "vllm" and os.path.isfile(os.path.join(path, "__init__.py")):
        return os.path.dirname(path)
    raise SourceTreeError(f"{given}: not a vLLM source tree (no vllm/__init__.py)")


@dataclass
class FileEdits:
    """What the patch changes in one file; lines are the original file's."""

    mixin: dict[str, int] = field(default_factory=dict)  # class -> line of its header
    why: dict[str, str] = field(default_factory=dict)  # class -> why it is given the mixin
    redundant: list[Redundant] = field(default_factory=list)
    rederivations: list[Site] = field(default_factory=list)
    left: list[LeftAsIs] = field(default_factory=list)  # re-derivations not replaced
    gate: int | None = None  # line of ParallelConfig.use_sequence_parallel_moe, to add the gate

    def count(self) -> int:
        return len(self.mixin) + len(self.redundant) + len(self.rederivations) + (self.gate is not None)


@dataclass
class Plan:
    texts: dict[str, bytes] = field(default_factory=dict)  # relpath -> bytes, files read
    edits: dict[str, FileEdits] = field(default_factory=dict)  # relpath -> edits
    problems: list[tuple[str, str]] = field(default_factory=list)  # (relpath, reason)
    missing: list[str] = field(default_factory=list)  # expected, not found

    def file(self, relpath: str) -> FileEdits:
        return self.edits.setdefault(relpath, FileEdits())


class Analysis:
    """The audit's source reader and resolution, over the given tree only."""

    def __init__(self, root: str, files: dict[str, str]) -> None:
        self.plan = Plan()
        self.root = root
        self.files = files  # path -> module
        self.found = AuditResult()  # collects why a file could not be read or parsed
        self.sources = Sources(Cache(None, False), self.found, set(files), whole=True)
        self.project = Project([root], self.sources.summary, text=self.sources.read)
        self._trees: dict[str, ast.Module] = {}

    def path_of(self, ref: ClassRef) -> str:
        located = self.project.module_file(ref.module)
        assert located is not None
        return located[0]

    def relpath(self, path: str) -> str:
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    def tree(self, path: str) -> ast.Module:
        """The AST of a file that summarised cleanly, parsed once."""
        if path not in self._trees:
            self._trees[path] = ast.parse(self.sources.texts[path])
        return self._trees[path]

    def info(self, entry: MroEntry) -> ClassInfo | None:
        return self.project.class_info(entry) if isinstance(entry, ClassRef) else None

    def is_mixin(self, entry: MroEntry) -> bool:
        return isinstance(entry, ClassRef) and (entry.module, entry.name) == (CONTRACT_MODULE, MIXIN)


def _flags_read_outside_init(cls: ClassInfo) -> set[str]:
    """Reads in ``__init__`` run before any subclass could skip them; the rest can be inherited."""
    return {
        read.attr
        for method in cls.methods.values()
        if method.name != "__init__"
        for read in method.reads
        if read.attr in FLAGS
    }


def analyse(root: str, *, all_readers: bool = False, remove_redundant: bool = False) -> Plan:
    """What the patch changes in the vLLM tree under ``root`` (the directory holding ``vllm/``).

    The mixin goes to the classes whose hierarchy has a subclass that skips the
    ``__init__`` setting a flag, and to those the contract names; with
    ``all_readers``, to every class rooting a hierarchy that reads one.
    ``remove_redundant`` also removes the ``= False`` lines the default makes redundant.
    """
    discovered = discover([os.path.join(root, "vllm")])
    analysis = Analysis(root, discovered.files)
    plan = analysis.plan
    project = analysis.project

    classes: list[ClassRef] = []
    for path, module in discovered.files.items():
        data = analysis.sources.read(path)
        if data is None or _FLAG_TEXT not in data:
            continue
        info = project.module(module)
        if info is None:
            continue
        if all(marker in data for marker in _REDERIVATION_TEXT):
            sites, left = find_sites(analysis.tree(path), skip_function=MODEL_GATE)
            if sites or left:
                edits = plan.file(analysis.relpath(path))
                edits.rederivations, edits.left = _in_characters(data, sites), left
        classes += [ClassRef(module, name) for name in info.classes]

    readers = _mixin_targets(analysis, classes)
    needed = _needing_the_mixin(analysis, readers)
    targets = set(readers) if all_readers else set(needed)
    for ref in targets:
        cls = analysis.info(ref)
        assert cls is not None
        edits = plan.file(_relpath_of(analysis, ref))
        edits.mixin[ref.name] = cls.line
        edits.why[ref.name] = needed.get(ref, "reads a flag outside __init__ (--all-readers)")
    if remove_redundant:
        for ref, found in redundant_assignments(analysis, classes, targets).items():
            plan.file(_relpath_of(analysis, ref)).redundant += found
    _plan_gate(analysis)
    _check_expectations(analysis, targets)
    plan.edits = {
        path: edits for path, edits in sorted(plan.edits.items()) if edits.count() or edits.left
    }
    plan.texts = {
        rel: analysis.sources.texts[os.path.join(root, *rel.split("/"))] for rel in plan.edits
    }
    plan.problems = [
        (analysis.relpath(path), why) for path, why in [*discovered.problems, *analysis.found.diagnostics]
    ]
    return plan


def _in_characters(data: bytes, sites: list[Site]) -> list[Site]:
    """ast counts columns in UTF-8 bytes, libcst in characters."""
    lines = data.splitlines()
    return [
        Site(s.line, len(lines[s.line - 1][: s.column].decode("utf-8", "replace")), s.receiver)
        for s in sites
    ]


def _needing_the_mixin(analysis: Analysis, readers: set[ClassRef]) -> dict[ClassRef, str]:
    """The readers whose hierarchy has (or, for the contract's own classes, can
    get) a subclass that skips an ``__init__`` setting a flag: reader -> why."""
    needed: dict[ClassRef, str] = {}
    ordered = sorted(readers, key=str)
    for ref, heirs in subclasses_of(analysis, ordered).items():
        for heir in sorted(heirs, key=str):
            model = ClassModel(analysis.project, heir)
            skipped: list[ClassRef] = []
            for index in skipped_inits(model, construct(model)):
                info, entry = model.infos[index], model.mro[index]
                if info and isinstance(entry, ClassRef) and set(info.methods["__init__"].sets) & FLAGS:
                    skipped.append(entry)
            if skipped:
                needed[ref] = f"{heir.name} does not run {skipped[0].name}.__init__, which sets a flag"
                break
        else:
            if ref.name in ANCHORS.get(ref.module, ()):
                needed[ref] = "named by the contract: custom-__init__ subclasses are written against it"
    return needed


def _plan_gate(analysis: Analysis) -> None:
    """Add ``ParallelConfig.<MODEL_GATE>`` after ``use_sequence_parallel_moe``."""
    plan = analysis.plan
    path = os.path.join(analysis.root, *CONFIG_PATH.split("/"))
    config_module = CONFIG_PATH[: -len(".py")].replace("/", ".")
    # Absent or unparsable: named as missing (and, if unparsable, as a problem).
    tree = analysis.tree(path) if analysis.project.module(config_module) is not None else None
    config = next(
        (n for n in (tree.body if tree else []) if isinstance(n, ast.ClassDef) and n.name == CONFIG_CLASS),
        None,
    )
    methods = {
        n.name: n.lineno for n in (config.body if config else []) if isinstance(n, ast.FunctionDef)
    }
    if MOE_GATE not in methods:
        plan.missing.append(f"{CONFIG_PATH}: {CONFIG_CLASS}.{MOE_GATE}")
    elif MODEL_GATE not in methods:
        plan.file(CONFIG_PATH).gate = methods[MOE_GATE]


def _relpath_of(analysis: Analysis, ref: ClassRef) -> str:
    return analysis.relpath(analysis.path_of(ref))


def _mixin_targets(analysis: Analysis, classes: list[ClassRef]) -> set[ClassRef]:
    """Classes reading a flag whose MRO does not provide it: only the roots, since
    their subclasses inherit the mixin. A class already holding it is never one."""
    readers: dict[ClassRef, set[str]] = {}
    for ref in classes:
        cls = analysis.info(ref)
        if cls is not None and not (cls.class_attrs & FLAGS):
            flags = _flags_read_outside_init(cls)
            if flags:
                readers[ref] = flags
    targets: set[ClassRef] = set()
    for ref in sorted(readers, key=lambda r: (len(analysis.project.mro(r)), str(r))):
        ancestors = analysis.project.mro(ref)[1:]
        if any(a in targets or analysis.is_mixin(a) for a in ancestors):
            continue
        provided = {
            flag
            for a in ancestors
            if (info := analysis.info(a)) is not None
            for flag in info.class_attrs & FLAGS
        }
        if readers[ref] - provided:
            targets.add(ref)
    return targets


def _check_expectations(analysis: Analysis, targets: set[ClassRef]) -> None:
    """The classes the contract exists for must still be where the patch expects them."""
    plan = analysis.plan
    if not os.path.isdir(os.path.join(analysis.root, os.path.dirname(CONTRACT_PATH))):
        plan.missing.append(f"{os.path.dirname(CONTRACT_PATH)}/ (the package the contract module joins)")
    for module, names in ANCHORS.items():
        info = analysis.project.module(module)
        where = module.replace(".", "/") + ".py"
        for name in names:
            ref = ClassRef(module, name)
            if info is None or name not in info.classes:
                plan.missing.append(f"{where}: class {name}")
            elif ref not in targets and not any(
                analysis.is_mixin(e) for e in analysis.project.mro(ref)
            ):
                plan.missing.append(f"{where}: {name} reading use_sequence_parallel")

