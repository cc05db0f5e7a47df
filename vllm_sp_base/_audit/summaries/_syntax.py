"""Small readings of Python syntax the summaries share: dotted names,
constant strings, what an import binds, handlers that swallow AttributeError."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from vllm_sp_base._audit.summaries._events import Import


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a Name/Attribute chain (through subscripts such as ``Generic[T]``)."""
    if isinstance(node, ast.Subscript):
        return dotted(node.value)
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


#: Handlers that catch AttributeError (a bare ``except:`` too).
_CATCHES_ATTRIBUTE_ERROR = frozenset({"AttributeError", "Exception", "BaseException"})


def swallows_attribute_error(handler: ast.ExceptHandler) -> bool:
    """The handler catches AttributeError (or a base of it) and can end
    without raising: ``except Exception as e: e.add_note(...); raise`` guards nothing."""
    if handler.type is not None:
        types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if not any((dotted(t) or "").rsplit(".", 1)[-1] in _CATCHES_ATTRIBUTE_ERROR for t in types):
            return False
    return not always_raises(handler.body)


def always_raises(statements: Sequence[ast.stmt]) -> bool:
    """Every path through ``statements`` ends in ``raise`` (as far as the
    source shows: a ``return`` or a loop exit on the way lets it end)."""
    for stmt in statements:
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, (ast.Return, ast.Break, ast.Continue)):
            return False
        if isinstance(stmt, ast.If) and always_raises(stmt.body) and always_raises(stmt.orelse):
            return True
        if isinstance(stmt, (ast.With, ast.AsyncWith)) and always_raises(stmt.body):
            return True
        if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.TryStar, ast.Match)) and any(
            isinstance(node, (ast.Return, ast.Break, ast.Continue)) for node in ast.walk(stmt)
        ):
            return False  # a way out of the handler that the source shows
    return False


def import_bindings(node: ast.Import | ast.ImportFrom) -> list[tuple[str, Import]]:
    """The names an import statement binds, as Python binds them."""
    out: list[tuple[str, Import]] = []
    if isinstance(node, ast.ImportFrom):
        for alias in node.names:
            bound = "*" if alias.name == "*" else alias.asname or alias.name
            out.append((bound, Import(node.level, node.module, None if bound == "*" else alias.name)))
        return out
    for alias in node.names:
        if alias.asname:
            out.append((alias.asname, Import(0, alias.name, None)))
        else:
            top = alias.name.split(".")[0]
            out.append((top, Import(0, top, None)))
    return out


def constant_strings(node: ast.expr) -> tuple[str, ...] | None:
    """The strings of a literal tuple/list/set of string constants."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return tuple(e.value for e in node.elts)  # type: ignore[attr-defined]
    return None


#: Builtins called with the instance that run none of its code the audit
#: follows (``setup(self)`` with any other name is followed; the compiled
#: pre-scan's list, ``lexer/inits.c``, is the same).
BUILTINS_TAKING_SELF = frozenset({
    "isinstance", "id", "type", "repr", "str", "print", "vars", "dir", "super", "len", "hash", "iter",
    "callable", "format", "bool", "issubclass", "object",
})


def suppresses_attribute_error(item: ast.withitem) -> bool:
    """``with contextlib.suppress(AttributeError):`` (or a base of it): a read in
    the body that fails ends the block, not the method."""
    call = item.context_expr
    return (
        isinstance(call, ast.Call) and (dotted(call.func) or "").rsplit(".", 1)[-1] == "suppress"
        and any((dotted(arg) or "").rsplit(".", 1)[-1] in _CATCHES_ATTRIBUTE_ERROR for arg in call.args)
    )


def constant_truth(test: ast.expr) -> bool | None:
    """What a test Python decides without running anything: ``True``, ``1``,
    ``"x"`` and ``not False`` hold; ``False``, ``0``, ``None``, ``()`` and
    ``TYPE_CHECKING`` fail (false when the code runs); None for any other."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = constant_truth(test.operand)
        return None if inner is None else not inner
    if isinstance(test, (ast.Tuple, ast.List)) and not test.elts:
        return False
    if (dotted(test) or "").rsplit(".", 1)[-1] == "TYPE_CHECKING":
        return False
    return None


def mangled(attr: str, class_name: str) -> str:
    """``self.__a`` as Python stores it in a method of ``class_name``:
    ``_Class__a``; a dunder, or any name in a class named only underscores, as is."""
    if not attr.startswith("__") or attr.endswith("__"):
        return attr
    owner = class_name.rsplit(".", 1)[-1].lstrip("_")
    return f"_{owner}{attr}" if owner else attr


def is_super(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def dataclass_decorator(node: ast.ClassDef) -> ast.expr | None:
    """The class's ``@dataclass`` decorator (a dotted name ending so, called or not), if it has one."""
    return next((d for d in node.decorator_list
                 if (dotted(d.func if isinstance(d, ast.Call) else d) or "").rsplit(".", 1)[-1] == "dataclass"), None)


def writes_init(decorator: ast.expr) -> bool:
    """Whether a ``@dataclass`` decorator writes an ``__init__`` (not ``init=False``)."""
    return not (isinstance(decorator, ast.Call) and any(
        k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False for k in decorator.keywords))
