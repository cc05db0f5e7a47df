"""Which ``self.<flag> = False`` lines the inherited default makes redundant.

Removing one must change no instance's value: the patch keeps every line that
overrides something (another ``__init__`` or helper the construction runs sets
the flag, or a class-level value other than the one the patch adds comes first in the MRO
of the class or of any subclass in the tree).

"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Mapping

from vllm_sp_base._audit.semantics._classes import ClassModel
from vllm_sp_base._audit.semantics._construction import construct
from vllm_sp_base._audit.semantics._project import ClassRef, MroEntry
from vllm_sp_base._audit.summaries._summaries import ModuleInfo
from vllm_sp_base._upstream._names import FLAGS
from vllm_sp_base._upstream.plan._edits import Redundant
from vllm_sp_base._upstream.plan._tree import Analysis


def redundant_assignments(
    analysis: Analysis, classes: list[ClassRef], targets: Mapping[ClassRef, Collection[str]]
) -> dict[ClassRef, list[Redundant]]:
    """The redundant lines of each class; ``targets`` are the classes given a default."""
    # A False is redundant once every other __init__ the construction runs stops
    # setting the flag, which may be because the patch removes their False too:
    # decide to a fixed point, so that a second run finds nothing left to do.
    removed: dict[ClassRef, list[Redundant]] = {}
    heirs: dict[ClassRef, list[list[MroEntry]]] = {}  # MROs of each class's subclasses, found once
    grew = True
    while grew:
        grew = False
        for ref in classes:
            found = _for_class(analysis, ref, targets, removed, heirs)
            if len(found) > len(removed.get(ref, [])):
                removed[ref] = found
                grew = True
    return removed


def _default_comes_from_target(
    analysis: Analysis, mro: list[MroEntry], flag: str, targets: Mapping[ClassRef, Collection[str]]
) -> bool:
    """Whether, after the patch, ``flag``'s class-level value in this MRO is a default the patch adds."""
    for entry in mro:
        if isinstance(entry, ClassRef) and flag in targets.get(entry, ()):
            return True
        info = analysis.info(entry)
        if info is None or flag in info.class_attrs or flag in info.slots:
            return False  # unknown code, or a class-level value (or slot) of its own
    return False


def _flag_of(target: ast.expr, self_name: str) -> str | None:
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == self_name
        and target.attr in FLAGS
    ):
        return target.attr
    return None


def _false_assignments(tree: ast.Module, class_name: str) -> list[tuple[str, int, int]]:
    """(flag, line, how many times ``__init__`` assigns it, ``setattr`` included)
    for each top-level ``self.<flag> = False`` of ``class_name.__init__``."""
    init = next(
        (
            item
            for node in tree.body
            if isinstance(node, ast.ClassDef) and node.name == class_name
            for item in node.body
            if isinstance(item, ast.FunctionDef) and item.name == "__init__" and item.args.args
        ),
        None,
    )
    if init is None:
        return []
    self_name = init.args.args[0].arg
    counts: dict[str, int] = {}
    for sub in ast.walk(init):
        targets = (
            sub.targets if isinstance(sub, ast.Assign)
            else [sub.target] if isinstance(sub, (ast.AnnAssign, ast.AugAssign)) else []
        )
        for target in targets:
            if (flag := _flag_of(target, self_name)) is not None:
                counts[flag] = counts.get(flag, 0) + 1
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Name)
            and sub.func.id == "setattr"
            and len(sub.args) >= 2
            and isinstance(sub.args[0], ast.Name)
            and sub.args[0].id == self_name
            and isinstance(sub.args[1], ast.Constant)
            and sub.args[1].value in FLAGS
        ):
            counts[sub.args[1].value] = counts.get(sub.args[1].value, 0) + 1
    return [
        (flag, stmt.lineno, counts[flag])
        for stmt in init.body
        if isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and (flag := _flag_of(stmt.targets[0], self_name)) is not None
        and isinstance(stmt.value, ast.Constant)
        and stmt.value.value is False
    ]


def _for_class(
    analysis: Analysis,
    ref: ClassRef,
    targets: Mapping[ClassRef, Collection[str]],
    removed: dict[ClassRef, list[Redundant]],
    heirs: dict[ClassRef, list[list[MroEntry]]],
) -> list[Redundant]:
    cls = analysis.info(ref)
    init = cls.methods.get("__init__") if cls is not None else None
    if cls is None or init is None or not (set(init.sets) & FLAGS):
        return []
    project = analysis.project
    model = ClassModel(project, ref)
    mro = model.mro
    # What construction sets besides this __init__'s own lines: the other
    # __init__ it runs (less the lines this patch removes there), and every
    # helper any of them runs on self.
    set_by_others: set[str] = set()
    for index, name in construct(model).executed:
        info, owner = model.infos[index], mro[index]
        if info is None or (index, name) == (0, "__init__"):
            continue
        sets = set(info.methods[name].sets)
        if name == "__init__" and isinstance(owner, ClassRef):
            sets -= {r.flag for r in removed.get(owner, [])}
        set_by_others |= sets
    found = [
        Redundant(ref.name, flag, line)
        for flag, line, count in _false_assignments(analysis.tree(analysis.path_of(ref)), ref.name)
        if count == 1
        and flag not in set_by_others
        and _default_comes_from_target(analysis, mro, flag, targets)
    ]
    if not found:
        return found
    # A subclass that runs this __init__ but has a class-level value of its own
    # ahead of the default would see that value once the line is gone.
    if ref not in heirs:
        heirs[ref] = [project.mro(heir) for heir in subclasses(analysis, ref)]
    return [
        r for r in found
        if all(_default_comes_from_target(analysis, mro, r.flag, targets) for mro in heirs[ref])
    ]


def subclasses(analysis: Analysis, ref: ClassRef) -> set[ClassRef]:
    return subclasses_of(analysis, [ref])[ref]


def subclasses_of(analysis: Analysis, refs: list[ClassRef]) -> dict[ClassRef, set[ClassRef]]:
    """Every class of the tree with each of ``refs`` in its MRO. A subclass names
    its base (or an alias, or another subclass) in its file: only such files are
    parsed, in one pass for all of ``refs``."""
    wanted = set(refs)
    names = {ref.name for ref in refs}
    heirs: dict[ClassRef, set[ClassRef]] = {ref: set() for ref in refs}
    parsed: dict[str, ModuleInfo] = {}
    grew = True
    while grew:
        grew = False
        pattern = re.compile(b"|".join(re.escape(n.encode()) for n in sorted(names)))
        for path, module in analysis.files.items():
            data = analysis.sources.read(path)
            if path in parsed or data is None or pattern.search(data) is None:
                continue
            info = analysis.project.module(module)
            if info is None:
                continue
            parsed[path] = info
            for name in info.classes:
                if not name.isidentifier():
                    continue  # defined in a function, or shadowed: not the codemod's
                candidate = ClassRef(module, name)
                ancestors = wanted.intersection(analysis.project.mro(candidate)) - {candidate}
                for ref in ancestors:
                    heirs[ref].add(candidate)
                if ancestors and name not in names:
                    names.add(name)
                    grew = True
        for info in parsed.values():
            bound = [a for a, v in info.aliases.items() if v.rsplit(".", 1)[-1] in names]
            bound += [local for local, imp in info.imports.items() if imp.name in names]
            grew |= not names.issuperset(bound)
            names.update(bound)
    return heirs
