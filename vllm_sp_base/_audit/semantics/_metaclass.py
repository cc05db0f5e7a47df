"""Who builds an instance: ``C(...)`` runs ``type(C).__call__``. With no
metaclass of its own, that is ``type.__call__``: ``__new__``, then
``__init__``, which is all the rule walks. A metaclass with a ``__call__`` of
its own (fastcore's ``PrePostInitMeta`` runs ``__pre_init__``, which runs
``nn.Module.__init__``, before the class's ``__init__``) builds the instance
its own way; so may one the source does not show. Either way what
construction runs is not the ``__init__`` chain alone, unless that
``__call__`` only hands back what the next one builds (``return
super().__call__(*args)``; a singleton's ``cls._instances[cls] =
super().__call__(...)``, returned later), never touching it: then the next
``__call__`` of the metaclass's MRO decides. A metaclass whose ``__new__`` or
``__init__`` binds the class's ``__init__`` anew (fastai v1's
``PrePostInitMeta``: ``x.__init__ = _pass``, which runs ``__pre_init__``,
then the class's own) builds it its own way too."""

from __future__ import annotations

import ast

from vllm_sp_base._audit.semantics._parsed import method_node
from vllm_sp_base._audit.semantics._project import ClassRef, MroEntry, Opaque, Project, is_builtin

#: How ``C(...)`` builds an instance, where not as ``type.__call__`` does.
OWN_CALL = "its metaclass's __call__"
UNSEEN = "a metaclass the source does not show"


def metaclass_of(project: Project, mro: list[MroEntry]) -> tuple[ClassRef, str] | None:
    """The first class of ``mro`` whose header names a metaclass, and the
    name as spelled there ("" where it is no name): the class's metaclass,
    which subclasses inherit."""
    for entry in mro:
        if isinstance(entry, ClassRef):
            info = project.class_info(entry)
            if info is not None and info.metaclass is not None:
                return entry, info.metaclass
    return None


def built_by_a_metaclass(project: Project, mro: list[MroEntry]) -> str | None:
    """How ``C(...)``, ``mro`` being C's, builds the instance where it is not
    ``type.__call__``'s way: ``OWN_CALL`` (a ``__call__`` of the metaclass's
    MRO that does more than hand back), ``UNSEEN`` (a metaclass or a base of
    it the source does not show); None: ``__new__`` then ``__init__``."""
    found = metaclass_of(project, mro)
    if found is None:
        return None
    owner, spelled = found
    if spelled and is_builtin(spelled):
        return None  # ``metaclass=type``
    meta = project.resolve(owner.module, spelled) if spelled else None
    if not isinstance(meta, ClassRef):
        return UNSEEN
    for entry in project.mro(meta):
        if isinstance(entry, Opaque):
            if not is_builtin(entry.text):
                return UNSEEN
            continue
        info = project.class_info(entry)
        if info is None:
            return UNSEEN
        if "__call__" in info.methods:
            handed = _hands_back(method_node(project, entry, "__call__"))
            if handed is None:
                return OWN_CALL
            if handed == "type":
                return None  # ``type.__call__(cls, ...)``: the rest of the MRO is passed over
            continue  # ``super().__call__``: the next one decides
        if "__call__" in info.class_attrs:  # bound to something else: ``__call__ = _build``
            return OWN_CALL
        if any(_rebinds_init(method_node(project, entry, name)) for name in ("__new__", "__init__")
               if name in info.methods):
            return OWN_CALL
    return None


def _rebinds_init(node: ast.FunctionDef | None) -> bool:
    """Whether the metaclass method ``node`` binds an ``__init__`` on what it
    makes (``x.__init__ = _pass``, ``setattr(cls, "__init__", f)``)."""
    if node is None:
        return False
    for child in ast.walk(node):
        if isinstance(child, (ast.Assign, ast.AnnAssign)):
            targets = child.targets if isinstance(child, ast.Assign) else [child.target]
            if any(isinstance(t, ast.Attribute) and t.attr == "__init__" for t in targets):
                return True
        if (isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id == "setattr"
                and len(child.args) == 3 and isinstance(child.args[1], ast.Constant)
                and child.args[1].value == "__init__"):
            return True
    return False


def _hands_back(node: ast.FunctionDef | None) -> str | None:
    """Whether the metaclass's ``__call__`` ``node`` returns what the next
    ``__call__`` builds and does nothing else with it (no attribute of it
    read or set, not passed to a call): "super" or "type", the call it
    hands back; None where it does more, or its source is not at hand."""
    if node is None:
        return None
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "__call__" and _next_in_line(n.func.value) is not None]
    if not calls:
        return None
    # Compared as written: a target and the load of it differ only in ``ctx``.
    returned = {ast.unparse(s.value) for s in ast.walk(node) if isinstance(s, ast.Return) and s.value is not None}
    holders: set[str] = set()
    for call in calls:
        if ast.unparse(call) in returned:
            continue
        stores = [s for s in ast.walk(node) if isinstance(s, ast.Assign) and s.value is call]
        if not stores:
            return None  # its result used some other way
        holders.update(ast.unparse(t) for s in stores for t in s.targets)
    if holders and not holders & returned:
        return None
    for other in ast.walk(node):
        if isinstance(other, ast.Attribute) and ast.unparse(other.value) in holders:
            return None  # ``obj.setup()``, ``obj.x = 1``: touches the instance
        if isinstance(other, ast.Call) and any(
                ast.unparse(a) in holders for a in (*other.args, *(k.value for k in other.keywords))):
            return None  # handed to a function, which may set anything on it
    kinds = {_next_in_line(c.func.value) for c in calls}  # type: ignore[attr-defined]
    return "type" if kinds == {"type"} else "super"


def _next_in_line(node: ast.expr) -> str | None:
    """``super()`` / ``super(Meta, cls)`` ("super") or ``type`` ("type"):
    ``.__call__`` on it runs the next ``__call__`` of the metaclass's MRO, or
    ``type``'s own."""
    if isinstance(node, ast.Name):
        return "type" if node.id == "type" else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
        return "super"
    return None
