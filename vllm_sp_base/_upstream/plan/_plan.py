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
from typing import Final

from vllm_sp_base._audit.files._discover import discover
from vllm_sp_base._audit.semantics._classes import ClassModel
from vllm_sp_base._audit.semantics._construction import construct, skipped_inits
from vllm_sp_base._audit.semantics._project import ClassRef
from vllm_sp_base._audit.summaries._summaries import ClassInfo
from vllm_sp_base._plugin import ANCHORS
from vllm_sp_base._upstream._names import (
    CONFIG_CLASS,
    CONFIG_PATH,
    CONTRACT_PATH,
    FLAGS,
    MODEL_GATE,
    MOE_GATE,
)
from vllm_sp_base._upstream.plan._edits import Plan
from vllm_sp_base._upstream.plan._rederive import Site, find_sites
from vllm_sp_base._upstream.plan._redundant import redundant_assignments, subclasses_of
from vllm_sp_base._upstream.plan._tree import Analysis

#: Text every file the patch may touch contains; everything else is never parsed.
_FLAG_TEXT: Final = b"use_sequence_parallel"
_REDERIVATION_TEXT: Final = (b"use_sequence_parallel_moe", b"pipeline_parallel_size")


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
    plan = Plan()
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
        # A module's own classes (not one defined in a function, ``f.<locals>.C``,
        # nor one a later ``class`` of its name shadows, ``C@3``): what the codemod edits.
        classes += [ClassRef(module, name) for name in info.classes if name.isidentifier()]

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
    _plan_gate(analysis, plan)
    _check_expectations(analysis, plan, targets)
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


def _plan_gate(analysis: Analysis, plan: Plan) -> None:
    """Add ``ParallelConfig.<MODEL_GATE>`` after ``use_sequence_parallel_moe``."""
    path = os.path.join(analysis.root, *CONFIG_PATH.split("/"))
    config_module = CONFIG_PATH[: -len(".py")].replace("/", ".")
    # Absent, unparsable, or a package of that name: named as missing (and, if
    # unparsable, as a problem): the gate is written into that one file.
    located = analysis.project.module_file(config_module)
    at_path = located is not None and located[0] == path
    tree = analysis.tree(path) if at_path and analysis.project.module(config_module) is not None else None
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
        if cls is not None and not ((cls.class_attrs | cls.slots) & FLAGS):  # a slot defines it too
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
            for flag in (info.class_attrs | info.slots) & FLAGS
        }
        if readers[ref] - provided:
            targets.add(ref)
    return targets


def _check_expectations(analysis: Analysis, plan: Plan, targets: set[ClassRef]) -> None:
    """The classes the contract exists for must still be where the patch expects them."""
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

