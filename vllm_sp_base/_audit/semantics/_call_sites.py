"""Where the audited tree calls a method on an instance of a plain class it
builds: ``runner = Runner(cfg)`` then ``runner.step()`` in the same function
(or module), ``Runner(cfg).step()``, ``with Runner(cfg) as runner:``. Such a
call is an entry point of the class as the tree uses it, said with its call
site; what calls a plain class's methods elsewhere cannot be told from
source. Like ``_outside``, it reads only the files that spell the class's
name, each parsed once, and matches the class by the name the call spells.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable

from vllm_sp_base._audit.semantics._outside import MAX_FILES
from vllm_sp_base._audit.semantics._parsed import parsed


def called_on_instances(name: str, texts: Iterable[tuple[str, bytes]]) -> dict[str, tuple[str, int]]:
    """Method -> (path, line) of the first call the files ``texts`` ((path,
    bytes), those that spell ``name``) make of it on an instance of the class
    ``name`` they build; tests' files are left out (a test double's calls)."""
    files = [(path, data) for path, data in texts if not _a_test(path)]
    found: dict[str, tuple[str, int]] = {}
    if len(files) > MAX_FILES:
        return found
    for path, data in sorted(files):
        for method, line in _calls_in(data, name):
            found.setdefault(method, (path, line))
    return found


@functools.lru_cache(maxsize=256)
def _calls_in(data: bytes, name: str) -> tuple[tuple[str, int], ...]:
    tree = parsed(data)
    if tree is None:
        return ()
    scopes = [tree.body, *(n.body for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]
    calls: list[tuple[str, int]] = []
    for body in scopes:
        calls += _scope_calls(body, name)
    return tuple(calls)


def _scope_calls(body: list[ast.stmt], name: str) -> list[tuple[str, int]]:
    """In one scope: the methods called on ``name(...)`` itself or on a
    variable bound to it, where the call may run after the binding (not in
    a sibling branch, not once the variable is bound again)."""
    calls: list[tuple[str, int]] = []
    _block(body, set(), name, calls)
    return calls


def _block(body: list[ast.stmt], holding: set[str], name: str, calls: list[tuple[str, int]]) -> set[str]:
    """``body`` run with ``holding`` (variables that may hold an instance):
    what may hold one after it."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            holding.discard(stmt.name)  # a scope of its own
        elif isinstance(stmt, (ast.If, ast.While)):
            _expression(stmt.test, holding, name, calls)
            holding = _block(stmt.body, set(holding), name, calls) | _block(stmt.orelse, set(holding), name, calls)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            _expression(stmt.iter, holding, name, calls)
            holding = holding - _bound(stmt.target)
            holding = holding | _block(stmt.body, set(holding), name, calls)
            holding = holding | _block(stmt.orelse, set(holding), name, calls)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                _expression(item.context_expr, holding, name, calls)
                if item.optional_vars is not None:
                    holding = holding - _bound(item.optional_vars)
                    if isinstance(item.optional_vars, ast.Name) and _builds(item.context_expr, name):
                        holding.add(item.optional_vars.id)
            holding = _block(stmt.body, holding, name, calls)
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            tried = _block(stmt.body, set(holding), name, calls)
            handled = [_block(h.body, holding | tried, name, calls) for h in stmt.handlers]
            holding = _block(stmt.orelse, set(tried), name, calls).union(*handled)
            holding = _block(stmt.finalbody, holding, name, calls)
        elif isinstance(stmt, ast.Match):
            _expression(stmt.subject, holding, name, calls)
            holding = holding.union(*(_block(case.body, set(holding), name, calls) for case in stmt.cases))
        else:
            _expression(stmt, holding, name, calls)
            holding = _assigned(stmt, holding, name)
    return holding


def _expression(node: ast.AST, holding: set[str], name: str, calls: list[tuple[str, int]]) -> None:
    """The calls ``node`` makes on an instance (not in a lambda's body)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Lambda):
            continue
        if isinstance(current, ast.Call) and isinstance(current.func, ast.Attribute):
            owner = current.func.value
            if (isinstance(owner, ast.Name) and owner.id in holding) or _builds(owner, name):
                calls.append((current.func.attr, current.lineno))
        stack.extend(ast.iter_child_nodes(current))


def _assigned(stmt: ast.stmt, holding: set[str], name: str) -> set[str]:
    """``holding`` after the simple statement ``stmt`` binds its names."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        holding = holding - set().union(*(_bound(t) for t in targets))
        if stmt.value is not None and _builds(stmt.value, name):
            holding |= {t.id for t in targets if isinstance(t, ast.Name)}
    elif isinstance(stmt, ast.Delete):
        holding = holding - set().union(*(_bound(t) for t in stmt.targets))
    return holding


def _bound(target: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _builds(node: ast.expr | None, name: str) -> bool:
    """``name(...)`` or ``module.name(...)``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == name) or (isinstance(func, ast.Attribute) and func.attr == name)


def _a_test(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    last = parts[-1].removesuffix(".py")
    return (any(part in ("test", "tests") for part in parts[:-1])
            or last.startswith("test_") or last.endswith("_test") or last == "conftest")
