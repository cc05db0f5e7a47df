"""Decide, from source alone, what the upstream patch changes in a vLLM tree.

The audit's summaries and whole-program resolution answer the questions a
codemod of one file cannot: which classes read a flag outside ``__init__``,
which of them have a subclass whose ``__init__`` skips theirs (those get a
class-level default), and which ``self.<flag> = False`` lines the default makes
redundant. Resolution stays inside the given tree, so an older vLLM never
resolves into the installed one. Nothing is imported or executed.
"""

from __future__ import annotations

import ast
import os
from typing import Final

from vllm_sp_base._audit.files._discover import discover
from vllm_sp_base._audit.semantics._classes import ClassModel
from vllm_sp_base._audit.semantics._construction import construct, skipped_inits
from vllm_sp_base._audit.semantics._project import ClassRef
from vllm_sp_base._audit.summaries._summaries import ClassInfo, bound_methods
from vllm_sp_base._plugin import ANCHORS
from vllm_sp_base._upstream._names import FLAGS, PIPELINE_SIZE
from vllm_sp_base._upstream.plan._edits import Default, Plan, Reader
from vllm_sp_base._upstream.plan._gates import find_gates
from vllm_sp_base._upstream.plan._redundant import redundant_assignments, subclasses_of
from vllm_sp_base._upstream.plan._tree import Analysis

#: Text every file the patch may touch contains; everything else is never parsed.
_FLAG_TEXT: Final = b"use_sequence_parallel"
_GATE_TEXT: Final = (b"sequence_parallel", PIPELINE_SIZE.encode())


def _flags_read_outside_init(cls: ClassInfo) -> set[str]:
    """Reads in ``__init__`` run before any subclass could skip them; the rest can be inherited."""
    return {
        read.attr
        for _, method in bound_methods(cls)
        if method.name != "__init__"
        for read in method.reads
        if read.attr in FLAGS
    }


def analyse(root: str, *, all_readers: bool = False, remove_redundant: bool = True) -> Plan:
    """What the patch changes in the vLLM tree under ``root`` (the directory holding ``vllm/``).

    A class-level default goes to each class reading a flag outside
    ``__init__`` that has a subclass skipping the ``__init__`` that sets it,
    and to those the contract names; with ``all_readers``, to every class
    reading one that no ancestor already covers. ``remove_redundant`` also
    removes the ``= False`` lines the defaults make redundant.
    """
    discovered = discover([os.path.join(root, "vllm")])
    analysis = Analysis(root, discovered.files)
    plan = Plan()
    project = analysis.project

    classes: list[ClassRef] = []
    for path, module in discovered.files.items():
        data = analysis.sources.read(path)
        if data is None:
            continue
        if all(marker in data for marker in _GATE_TEXT) and project.module(module) is not None:
            plan.gates += find_gates(analysis.relpath(path), analysis.tree(path))
        if _FLAG_TEXT not in data:
            continue
        info = project.module(module)
        if info is None:
            continue
        # A module's own classes (not one defined in a function, ``f.<locals>.C``,
        # nor one a later ``class`` of its name shadows, ``C@3``): what the codemod edits.
        classes += [ClassRef(module, name) for name in info.classes if name.isidentifier()]

    readers = _readers(analysis, classes)
    uncovered = _uncovered(analysis, readers)
    needed = _needing_defaults(analysis, sorted(uncovered, key=str))
    targets = uncovered if all_readers else {ref: uncovered[ref] for ref in needed}
    plan.readers = sorted(
        (Reader(_relpath_of(analysis, ref), ref.name, tuple(sorted(flags)),
                _kind(analysis, ref, flags, targets)) for ref, flags in readers.items()),
        key=lambda r: (r.path, r.cls),
    )
    for ref, flags in targets.items():
        cls = analysis.info(ref)
        assert cls is not None
        why = needed.get(ref, "reads a flag outside __init__ (--all-readers)")
        builds = _built_from(analysis, ref, flags)
        plan.file(_relpath_of(analysis, ref)).defaults[ref.name] = Default(
            cls.line, tuple(sorted(flags)), why, builds)
    if remove_redundant:
        for ref, found in redundant_assignments(analysis, classes, targets).items():
            plan.file(_relpath_of(analysis, ref)).redundant += found
    _check_expectations(analysis, plan, set(targets))
    plan.gates.sort(key=lambda gate: (gate.path, gate.line))
    plan.edits = {path: edits for path, edits in sorted(plan.edits.items()) if edits.count()}
    plan.texts = {
        rel: analysis.sources.texts[os.path.join(root, *rel.split("/"))] for rel in plan.edits
    }
    plan.problems = [
        (analysis.relpath(path), why) for path, why in [*discovered.problems, *analysis.found.diagnostics]
    ]
    return plan


def _needing_defaults(analysis: Analysis, candidates: list[ClassRef]) -> dict[ClassRef, str]:
    """The candidates whose hierarchy has (or, for the contract's own classes,
    can get) a subclass that skips an ``__init__`` setting a flag: class -> why."""
    needed: dict[ClassRef, str] = {}
    for ref, heirs in subclasses_of(analysis, candidates).items():
        for heir in sorted(heirs, key=str):
            model = ClassModel(analysis.project, heir)
            skipped: list[ClassRef] = []
            for index in skipped_inits(model, construct(model)):
                info, entry = model.infos[index], model.mro[index]
                if info and isinstance(entry, ClassRef) and set(info.methods["__init__"].sets) & FLAGS:
                    skipped.append(entry)
            if skipped:
                needed[ref] = f"{heir.name} does not run {skipped[0].name}.__init__, which sets it"
                break
        else:
            if ref.name in ANCHORS.get(ref.module, ()):
                needed[ref] = "named by the contract: custom-__init__ subclasses are written against it"
    return needed


def _kind(analysis: Analysis, ref: ClassRef, flags: set[str], targets: dict[ClassRef, set[str]]) -> str:
    """What the plan makes of a reader (see ``Reader``)."""
    if flags <= _provided(analysis, ref):
        return "class-level"
    given = {flag for entry in analysis.project.mro(ref) if isinstance(entry, ClassRef)
             for flag in targets.get(entry, ())}
    return "given" if flags <= given | _provided(analysis, ref) else "init"


def _built_from(analysis: Analysis, ref: ClassRef, flags: set[str]) -> tuple[str, ...]:
    """The calls ``ref.__init__`` passes a flag to (``DeepseekV2MLP(is_sequence_parallel=
    self.use_sequence_parallel)``): the modules it configures for sequence parallelism."""
    tree = analysis.tree(analysis.path_of(ref))
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == ref.name), None)
    init = next((n for n in (cls.body if cls else []) if isinstance(n, ast.FunctionDef) and n.name == "__init__"),
                None)
    found: list[str] = []
    for call in (n for n in ast.walk(init) if isinstance(n, ast.Call)) if init else ():
        for keyword in call.keywords:
            value = keyword.value
            if (isinstance(value, ast.Attribute) and value.attr in flags and isinstance(value.value, ast.Name)
                    and value.value.id == "self" and keyword.arg):
                found.append(f"{ast.unparse(call.func)}({keyword.arg}=self.{value.attr})")
    return tuple(dict.fromkeys(found))


def _relpath_of(analysis: Analysis, ref: ClassRef) -> str:
    return analysis.relpath(analysis.path_of(ref))


def _readers(analysis: Analysis, classes: list[ClassRef]) -> dict[ClassRef, set[str]]:
    """Each class whose own methods other than ``__init__`` read a flag, and those flags."""
    readers: dict[ClassRef, set[str]] = {}
    for ref in classes:
        cls = analysis.info(ref)
        flags = _flags_read_outside_init(cls) if cls is not None else set()
        if flags:
            readers[ref] = flags
    return readers


def _provided(analysis: Analysis, ref: ClassRef) -> set[str]:
    """The flags a class-level value or slot of ``ref`` or an ancestor defines."""
    return {
        flag
        for entry in analysis.project.mro(ref)
        if (info := analysis.info(entry)) is not None
        for flag in (info.class_attrs | info.slots) & FLAGS
    }


def _uncovered(analysis: Analysis, readers: dict[ClassRef, set[str]]) -> dict[ClassRef, set[str]]:
    """The flags each reader reads that neither it nor an ancestor defines at
    class level, nor an ancestor given the same default: only the highest
    class gets a default, its subclasses inherit it."""
    given: dict[ClassRef, set[str]] = {}
    for ref in sorted(readers, key=lambda r: (len(analysis.project.mro(r)), str(r))):
        ancestors = analysis.project.mro(ref)[1:]
        inherited = {flag for a in ancestors if isinstance(a, ClassRef) for flag in given.get(a, ())}
        flags = readers[ref] - _provided(analysis, ref) - inherited
        if flags:
            given[ref] = flags
    return given


def _check_expectations(analysis: Analysis, plan: Plan, targets: set[ClassRef]) -> None:
    """The classes the contract exists for must still be where the patch expects them."""
    for module, names in ANCHORS.items():
        info = analysis.project.module(module)
        where = module.replace(".", "/") + ".py"
        for name in names:
            ref = ClassRef(module, name)
            if info is None or name not in info.classes:
                plan.missing.append(f"{where}: class {name}")
            elif ref not in targets and "use_sequence_parallel" not in _provided(analysis, ref):
                plan.missing.append(f"{where}: {name} reading use_sequence_parallel")
