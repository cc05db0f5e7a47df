"""Where a module's names are bound beyond ``Name = dotted.name`` and ``class
Name``: aliases through annotated assignments, tuple unpacking and ``:=``; a
class that a later one of its name shadows (``class B(B)``); classes defined
inside functions, under the function's own scope."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from vllm_sp_base._audit.summaries._events import Import
from vllm_sp_base._audit.summaries._summaries import ClassInfo, ModuleInfo
from vllm_sp_base._audit.summaries._syntax import dotted, import_bindings

#: A ``class`` statement in a cut function body (a byte search: a docstring
#: that starts a line with ``class`` costs one needless parse, nothing more).
CLASS_STATEMENT = re.compile(rb"(?m)^[ \t]*class[ \t]+\w")


def _dotted_value(node: ast.expr) -> str | None:
    return dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None


def walrus_aliases(node: ast.AST | None) -> Iterator[tuple[str, str]]:
    """``(Alias := pkg.Base)`` anywhere in ``node``: (Alias, "pkg.Base")."""
    if node is None:
        return
    for inner in ast.walk(node):
        if isinstance(inner, ast.NamedExpr):
            value = _dotted_value(inner.value)
            if value is not None:
                yield inner.target.id, value


def _expressions(stmt: ast.stmt) -> list[ast.AST | None]:
    """The expressions a module-level statement evaluates in the module's scope."""
    if isinstance(stmt, ast.ClassDef):
        return [*stmt.bases, *stmt.keywords, *stmt.decorator_list]
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)):
        return [stmt.value]
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.iter]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in stmt.items]
    return []


def assigned_aliases(stmt: ast.stmt, walrus: bool = True) -> list[tuple[str, str]]:
    """The names a statement binds to a dotted name: ``A = pkg.Base``, ``A: type
    = Base``, ``A, B = Base, Other`` (each a pair), and ``:=`` in what it
    evaluates. A ``class`` header's own ``:=`` count too. ``walrus`` False: the
    module's source spells no ``:=``, so no expression is walked for one."""
    found = [pair for node in _expressions(stmt) for pair in walrus_aliases(node)] if walrus else []
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets = [stmt.target]
    value = getattr(stmt, "value", None)
    for target in targets:
        if isinstance(target, ast.Name) and value is not None:
            name = _dotted_value(value)
            if name is not None:
                found.append((target.id, name))
        elif (
            isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
        ):
            for each_target, each_value in zip(target.elts, value.elts):
                name = _dotted_value(each_value)
                if isinstance(each_target, ast.Name) and name is not None:
                    found.append((each_target.id, name))
    return found


def base_name(node: ast.expr) -> str | None:
    """The dotted name a base expression names (``(Alias := Base)`` names ``Base``)."""
    if isinstance(node, ast.NamedExpr):
        node = node.value
    return dotted(node)


def shadow(info: ModuleInfo, name: str) -> str | None:
    """A class ``name`` is about to be bound again at the top of the module:
    the earlier class keeps its own key, ``name@line``, and what named it so
    far (bases, aliases) names that key. Returns the key, None where ``name``
    was no class."""
    old = info.classes.pop(name, None)
    if old is None:
        return None
    key = old.name = f"{name}@{old.line}"
    info.classes[key] = old
    for cls in info.classes.values():
        cls.bases = [key if base == name else base for base in cls.bases]
    for aliases in (info.aliases, info.fallback_aliases):
        for alias, value in aliases.items():
            if value == name:
                aliases[alias] = key
    return key


def bind_local_classes(
    info: ModuleInfo,
    statements: list[ast.stmt],
    prefix: str,
    scope: dict[str, str],
    make_class: Callable[[ast.ClassDef], ClassInfo],
    imports: dict[str, Import] | None = None,
    walrus: bool = True,
) -> None:
    """The classes a function defines (``prefix`` is ``f.<locals>.``), in
    order, each under its qualified name as key. A base named by a class
    defined before it in the function (or an enclosing one) is that class;
    any other name is the module's. ``scope`` (local name -> key) is shared
    by the function's classes: a method resolves ``Base.__init__(self)`` in
    it when it runs, after the function bound all of them; ``imports``, what
    the function imports, likewise."""
    imports = {} if imports is None else imports
    for stmt in statements:
        if isinstance(stmt, ast.ClassDef):
            key = prefix + stmt.name
            if key in info.classes:
                key = f"{key}@{stmt.lineno}"
            cls = make_class(stmt)
            cls.name = key
            cls.bases = [scope.get(base, base) if base else base for base in cls.bases]
            cls.local_names = scope
            cls.local_imports = imports
            info.classes[key] = cls
            scope[stmt.name] = key
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope.pop(stmt.name, None)
            bind_local_classes(
                info, stmt.body, f"{prefix}{stmt.name}.<locals>.", dict(scope), make_class, dict(imports), walrus)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            for target, value in assigned_aliases(stmt, walrus):
                if value in scope:
                    scope[target] = scope[value]
                else:
                    scope.pop(target, None)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for name, imp in import_bindings(stmt):
                scope.pop(name, None)
                if name != "*":
                    imports[name] = imp
        else:
            for block in _blocks(stmt):
                bind_local_classes(info, block, prefix, scope, make_class, walrus=walrus)


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists a compound statement holds, in the order they may run."""
    if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [stmt.body]
    if isinstance(stmt, (ast.Try, ast.TryStar)):
        return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    return []
