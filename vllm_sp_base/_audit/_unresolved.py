"""Bases the audit cannot see, said where they matter: a base of an audited
class that resolves to no class the source shows (its module is not installed
where the audit runs, or does not define it), when the class's own
``__init__`` may skip it. Like mypy's ``import-not-found``: what cannot be
checked is named, not passed silently."""

from __future__ import annotations

import builtins

from vllm_sp_base._audit._finding import Unresolved
from vllm_sp_base._audit._model import Call, ClassInfo
from vllm_sp_base._audit._prescan import HARMLESS_EXTERNAL_BASES
from vllm_sp_base._audit._project import ClassRef, Project


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


def unresolved_bases(project: Project, ref: ClassRef, path: str) -> list[Unresolved]:
    info = project.class_info(ref)
    if info is None or chains_surely(info):
        return []
    found = []
    for base in info.bases:
        if base is None or _builtin(base) or base.rsplit(".", 1)[-1] in HARMLESS_EXTERNAL_BASES:
            continue  # an expression, or a base known to set nothing a subclass reads
        if isinstance(project.resolve(ref.module, base), ClassRef):
            continue
        reason = project.why_unresolved(ref.module, base)
        found.append(Unresolved(path, info.line, str(ref), base, reason))
    return found


def _builtin(name: str) -> bool:
    return name.removeprefix("builtins.") in vars(builtins)
