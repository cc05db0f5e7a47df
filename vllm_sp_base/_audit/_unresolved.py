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
from vllm_sp_base._audit._project import EXPRESSION, ClassRef, Opaque, Project


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
    """The bases ``project.bases`` left opaque, each with why, where the
    class's own ``__init__`` may skip them."""
    info = project.class_info(ref)
    if info is None or chains_surely(info):
        return []
    return [
        Unresolved(path, info.line, str(ref), base.text, project.why_unresolved(ref.module, base.text))
        for base in project.bases(ref)
        if isinstance(base, Opaque) and base.text != EXPRESSION and not _builtin(base.text)
        and base.text.rsplit(".", 1)[-1] not in HARMLESS_EXTERNAL_BASES
    ]


def _builtin(name: str) -> bool:
    return name.removeprefix("builtins.") in vars(builtins)
