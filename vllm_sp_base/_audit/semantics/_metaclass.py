"""Who builds an instance: ``C(...)`` runs ``type(C).__call__``. With no
metaclass of its own, that is ``type.__call__``: ``__new__``, then
``__init__``, which is all the rule walks. A metaclass with a ``__call__`` of
its own (fastcore's ``PrePostInitMeta`` runs ``__pre_init__``, which runs
``nn.Module.__init__``, before the class's ``__init__``) builds the instance
its own way; so may one the source does not show. Either way what
construction runs is not the ``__init__`` chain alone, unless that
``__call__`` only hands the instance ``type.__call__`` built back
(``return super().__call__(*args)``), never touching it."""

from __future__ import annotations

import ast
import builtins

from vllm_sp_base._audit.semantics._parsed import method_node
from vllm_sp_base._audit.semantics._project import ClassRef, MroEntry, Opaque, Project
from vllm_sp_base._audit.summaries._summaries import ClassInfo


def metaclass_of(project: Project, mro: list[MroEntry]) -> tuple[ClassRef, str] | None:
    """The first class of ``mro`` whose header names a metaclass, and the
    name as spelled there: the class's metaclass, which subclasses inherit."""
    for entry in mro:
        if isinstance(entry, ClassRef):
            info = project.class_info(entry)
            if info is not None and info.metaclass is not None:
                return entry, info.metaclass
    return None


def built_by_a_metaclass(project: Project, mro: list[MroEntry]) -> bool:
    """Whether ``C(...)``, ``mro`` being C's, runs a metaclass's own
    ``__call__``, or a metaclass the source does not show (whose ``__call__``
    is unknown)."""
    found = metaclass_of(project, mro)
    if found is None:
        return False
    owner, spelled = found
    meta = project.resolve(owner.module, spelled) if spelled else None
    if not isinstance(meta, ClassRef):
        return True
    for entry in project.mro(meta):
        if isinstance(entry, Opaque):
            if not _builtin(entry.text):
                return True  # a base of the metaclass the source does not show
            continue
        info: ClassInfo | None = project.class_info(entry)
        if info is None:
            return True
        if "__call__" in info.methods:
            return not _hands_back(method_node(project, entry, "__call__"))
        if "__call__" in info.class_attrs:  # bound to something else: ``__call__ = _build``
            return True
    return False


def _hands_back(node: ast.FunctionDef | None) -> bool:
    """Whether the metaclass's ``__call__`` ``node`` returns what the next
    ``__call__`` (``super().__call__``, ``type.__call__``) builds, and does
    nothing else with it: each such call is what a ``return`` returns."""
    if node is None:
        return False
    returned = {id(s.value) for s in ast.walk(node) if isinstance(s, ast.Return) and s.value is not None}
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "__call__" and _next_in_line(n.func.value)]
    return bool(calls) and all(id(c) in returned for c in calls)


def _next_in_line(node: ast.expr) -> bool:
    """``super()``, ``super(Meta, cls)`` or ``type``: what ``.__call__`` on it runs is ``type.__call__``'s way."""
    if isinstance(node, ast.Name):
        return node.id == "type"
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _builtin(name: str) -> bool:
    return name.removeprefix("builtins.") in vars(builtins)
