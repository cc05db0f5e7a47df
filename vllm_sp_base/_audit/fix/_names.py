"""What names mean where a fix moves code: a module's top-level bindings (and
the import that binds the same object elsewhere), what an expression or
statement needs (names, ``self`` attributes, calls)."""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

#: Calls with no effect worth naming: a copy that makes them again is safe.
PURE_BUILTINS = frozenset({
    "bool", "int", "float", "str", "bytes", "tuple", "list", "dict", "set", "frozenset", "len",
    "getattr", "hasattr", "isinstance", "issubclass", "min", "max", "abs", "round", "sorted",
    "any", "all", "sum", "range", "enumerate", "zip", "type", "repr",
})
BUILTIN_NAMES = frozenset(dir(builtins))


@dataclass(frozen=True)
class Binding:
    """How a module binds a top-level name: ``origin`` says what object
    (``module:name``, or ``module`` for a module), ``statement`` the import
    that binds the same name to it in another module."""

    origin: str
    statement: str
    is_module: bool = False


def absolute(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The module a ``from`` import at ``level`` in ``module`` names."""
    if not level:
        return target or ""
    parts = module.split(".") if module else []
    keep = len(parts) - level + (1 if is_package else 0)
    base = parts[:max(keep, 0)]
    return ".".join(base + ([target] if target else []))


def bindings(tree: ast.Module, module: str, is_package: bool) -> dict[str, Binding | None]:
    """Every name the module's own top-level statements bind; ``None`` for a
    name bound more than once or in a way no import elsewhere can reproduce
    (under ``if``/``try``: which branch ran is not known here)."""
    found: dict[str, Binding | None] = {}

    def bind(name: str, binding: Binding | None) -> None:
        found[name] = None if name in found and found[name] != binding else binding

    for statement in tree.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    bind(alias.asname, Binding(alias.name, f"import {alias.name} as {alias.asname}", True))
                else:
                    top = alias.name.split(".")[0]
                    bind(top, Binding(top, f"import {alias.name}", True))
        elif isinstance(statement, ast.ImportFrom):
            source = absolute(module, is_package, statement.level, statement.module)
            for alias in statement.names:
                if alias.name == "*":
                    continue
                name = alias.asname or alias.name
                spelled = alias.name if name == alias.name else f"{alias.name} as {name}"
                bind(name, Binding(f"{source}:{alias.name}", f"from {source} import {spelled}"))
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(statement.name, Binding(f"{module}:{statement.name}",
                                         f"from {module} import {statement.name}"))
        else:
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    nested = not isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                    bind(node.id, None if nested else Binding(f"{module}:{node.id}",
                                                             f"from {module} import {node.id}"))
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    for alias in node.names:
                        bind((alias.asname or alias.name).split(".")[0], None)
    return found


@dataclass
class Needs:
    """What some code needs from where it runs."""

    names: set[str] = field(default_factory=set)
    self_reads: set[str] = field(default_factory=set)
    self_sets: set[str] = field(default_factory=set)
    local_sets: set[str] = field(default_factory=set)
    calls: list[ast.Call] = field(default_factory=list)  # what it calls, but self's methods
    self_calls: list[str] = field(default_factory=list)


def needs(*nodes: ast.AST) -> Needs:
    """Names loaded that the code itself does not bind (comprehension and
    lambda variables, its own locals), ``self.x`` read and set, calls."""
    found = Needs()
    bound: set[str] = set()
    called = {id(n.func) for root in nodes for n in ast.walk(root) if isinstance(n, ast.Call)}
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Load):
                    found.names.add(node.id)
                else:
                    bound.add(node.id)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.Attribute) and _is_self(node.value):
                if id(node) in called:
                    continue  # a method called: said as a call, not as a read
                if isinstance(node.ctx, ast.Load):
                    found.self_reads.add(node.attr)
                else:
                    found.self_sets.add(node.attr)
            elif isinstance(node, ast.Call):
                if isinstance(node.func, ast.Attribute) and _is_self(node.func.value):
                    found.self_calls.append(node.func.attr)
                else:
                    found.calls.append(node)
    found.local_sets = bound - {"self"}
    found.names -= bound | {"self"}
    return found


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def root_name(node: ast.expr) -> str | None:
    """``a`` of ``a.b.c`` (or of ``a.b().c``), else None."""
    while True:
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return node.id if isinstance(node, ast.Name) else None


def sets_attribute(node: ast.AST, attribute: str) -> bool:
    """Whether ``node`` (a statement) assigns ``self.<attribute>`` anywhere in it."""
    return any(
        isinstance(n, ast.Attribute) and n.attr == attribute and _is_self(n.value)
        and isinstance(n.ctx, ast.Store)
        for n in ast.walk(node)
    )


def literal(node: ast.expr | None) -> bool:
    """A plain immutable literal: None, a bool, a number, a string (a negative number too)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
        return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex))
    return isinstance(node, ast.Constant) and not isinstance(node.value, type(...))
