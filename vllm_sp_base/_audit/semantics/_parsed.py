"""One parse of a file's bytes for the checks that read source beyond the
summaries (who is built, what is set from outside, a processor's fields, a
factory's choices): the same file is often asked about by several of them in
a run. Callers only read the tree."""

from __future__ import annotations

import ast
import functools

from vllm_sp_base._audit.semantics._project import ClassRef, Project
from vllm_sp_base._audit.summaries._summaries import python_name


@functools.lru_cache(maxsize=8)
def parsed(data: bytes) -> ast.Module | None:
    """``data`` parsed, or None where it does not parse (or nests too deep to)."""
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def class_node(project: Project, entry: ClassRef) -> ast.ClassDef | None:
    """The definition of the class ``entry`` in its module's parse; None
    where its source is not at hand or does not parse."""
    info = project.class_info(entry)
    located = project.module_file(entry.module)
    if info is None or located is None or not located[0]:
        return None
    data = project.source(located[0])
    tree = parsed(data) if data is not None else None
    if tree is None:
        return None
    name = python_name(entry.name)
    return next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
                 and n.name == name and n.lineno == info.line), None)
