"""Bases the audit cannot see, said where they matter: a base of an audited
class that resolves to no class the source shows (its module is not installed
where the audit runs, or does not define it), when the class's own
``__init__`` may skip it. Like mypy's ``import-not-found``: what cannot be
checked is named, not passed silently."""

from __future__ import annotations

import sys

from vllm_sp_base._audit.prescan._prescan import HARMLESS_EXTERNAL_BASES
from vllm_sp_base._audit.report._finding import Unresolved
from vllm_sp_base._audit.semantics._metaclass import metaclass_of
from vllm_sp_base._audit.semantics._project import (
    EXPRESSION,
    ClassRef,
    MroEntry,
    Opaque,
    Project,
    is_builtin,
)
from vllm_sp_base._audit.summaries._events import Call
from vllm_sp_base._audit.summaries._summaries import ClassInfo


def chains_surely(info: ClassInfo) -> bool:
    """The class has no ``__init__`` (its base's runs), or its ``__init__``
    calls ``super().__init__`` on no condition: it skips no base's own."""
    init = info.methods.get("__init__")
    if init is None:
        return True
    return any(
        type(e) is Call and e.kind == "super" and e.name == "__init__" and not e.conditional
        and not e.caught
        for e in init.events
    )


#: Said once for every base from torch where torch is not found: what the audit assumed.
TORCH_NOT_FOUND = (
    "torch is not installed where the audit runs: its classes (nn.LayerNorm, Parameter, ...) are "
    "taken to set nothing a subclass reads; give --python an environment with torch to check them"
)


def unresolved_bases(project: Project, ref: ClassRef, path: str) -> list[Unresolved]:
    """The bases ``project.bases`` left opaque, each with why, where the
    class's own ``__init__`` may skip them. A class of the standard library
    that the source does not show is defined in C (``threading.local``): it
    has no Python ``__init__`` that sets what a subclass reads. The bases from
    an absent torch are one ``torch`` base, said once."""
    info = project.class_info(ref)
    if info is None or chains_surely(info):
        return []
    found = []
    for base in project.bases(ref):
        if not isinstance(base, Opaque) or base.text == EXPRESSION or is_builtin(base.text):
            continue
        if base.text.rsplit(".", 1)[-1] in HARMLESS_EXTERNAL_BASES:
            continue
        origin = project.origin(ref.module, base.text, info.local_imports) or ""
        top = origin.split(".", 1)[0]
        if top in sys.stdlib_module_names and project.in_stdlib(top):
            continue
        if top == "torch" and project.module_file("torch") is None:
            found.append(Unresolved(path, info.line, str(ref), "torch", TORCH_NOT_FOUND))
            continue
        found.append(Unresolved(path, info.line, str(ref), base.text, project.why_unresolved(ref.module, base.text, info.local_imports)))
    return found


def unseen_metaclass(project: Project, ref: ClassRef, path: str) -> Unresolved:
    """The metaclass the source does not show that builds ``ref``'s
    instances (``UNSEEN``), said as an unresolved base: what its ``__call__``
    runs in place of the ``__init__`` chain is unknown."""
    info = project.class_info(ref)
    found = metaclass_of(project, project.mro(ref))
    owner, spelled = found if found is not None else (ref, "")
    reason = project.why_unresolved(owner.module, spelled) if spelled else "not a name (an expression)"
    return Unresolved(path, info.line if info is not None else 0, str(ref), f"metaclass={spelled or '...'}", reason)


def unseen_getattr(project: Project, mro: list[MroEntry]) -> bool:
    """Whether the instance looks ``__getattr__`` up in a base the source
    does not show because its package is not installed (fastcore's
    ``GetAttr``, which hands what the instance lacks to a delegate): any read
    may be answered there. A builtin, a harmless class, or a class defined in
    C by a package that is there (the standard library's, ``torch._C``'s)
    defines none that answers."""
    index = next((i for i, entry in enumerate(mro) if isinstance(entry, Opaque) or (
        (info := project.class_info(entry)) is not None and "__getattr__" in info.methods)), None)
    if index is None or not isinstance(opaque := mro[index], Opaque):
        return False
    if (opaque.text == EXPRESSION or is_builtin(opaque.text)
            or opaque.text.rsplit(".", 1)[-1] in HARMLESS_EXTERNAL_BASES):
        return False  # an expression's class is as likely to answer as any base: said as unresolved
    for entry in mro:
        if isinstance(entry, ClassRef) and opaque in project.bases(entry):
            info = project.class_info(entry)
            origin = project.origin(entry.module, opaque.text, info.local_imports if info else None)
            if origin is None:
                return True
            top = origin.split(".", 1)[0]
            # An absent torch's classes are taken to set nothing a subclass reads (TORCH_NOT_FOUND).
            return top != "torch" and project.module_file(top) is None
    return True

