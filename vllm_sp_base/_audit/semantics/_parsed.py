"""One parse of a file's bytes for the checks that read source beyond the
summaries (who is built, what is set from outside, a processor's fields, a
factory's choices): the same file is often asked about by several of them in
a run. Callers only read the tree."""

from __future__ import annotations

import ast
import functools

from vllm_sp_base._audit.semantics._project import ClassRef, Project, is_builtin
from vllm_sp_base._audit.summaries._signature import bound_names
from vllm_sp_base._audit.summaries._summaries import python_name


@functools.lru_cache(maxsize=8)
def parsed(data: bytes) -> ast.Module | None:
    """``data`` parsed, or None where it does not parse (or nests too deep to)."""
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def module_source(project: Project, module: str) -> bytes | None:
    """The bytes of ``module``'s file, as the run read them; None where it has none."""
    located = project.module_file(module)
    return project.source(located[0]) if located and located[0] else None


def module_tree(project: Project, module: str) -> ast.Module | None:
    """``module``'s one parse; None where its source is not at hand or does not parse."""
    data = module_source(project, module)
    return parsed(data) if data is not None else None


def class_node(project: Project, entry: ClassRef) -> ast.ClassDef | None:
    """The definition of the class ``entry`` in its module's parse; None
    where its source is not at hand or does not parse."""
    info = project.class_info(entry)
    tree = module_tree(project, entry.module) if info is not None else None
    if info is None or tree is None:
        return None
    name = python_name(entry.name)
    return next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
                 and n.name == name and n.lineno == info.line), None)


def method_node(project: Project, owner: ClassRef, name: str) -> ast.FunctionDef | None:
    """The definition of ``owner``'s method ``name`` in its module's parse."""
    node = class_node(project, owner)
    if node is None:
        return None
    return next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def unbound_in(project: Project, module: str, name: str) -> bool:
    """Whether ``name`` is bound nowhere in ``module``'s source (no
    assignment, ``def``, ``class``, import, parameter or ``global``; no star
    import, not a builtin): where it runs, Python raises NameError. False
    where the source is not at hand."""
    tree = module_tree(project, module)
    if tree is None or is_builtin(name):
        return False
    if any(isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names) for node in ast.walk(tree)):
        return False
    return name not in bound_names(tree.body)
