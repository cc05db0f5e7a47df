"""The pre-scan of one module read with ``ast``: where the compiled lexer is
not sure (a name past ASCII, which Python folds by NFKC; a source it cannot
lex), the file is parsed rather than guessed at. Same fields as
``lexer/scan.c`` returns; where they could differ, this errs the same way
(towards more candidates)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from vllm_sp_base._audit.prescan._scans import ClassScan, FileScan
from vllm_sp_base._audit.summaries._syntax import BUILTINS_TAKING_SELF

#: Statements whose bodies are still the enclosing scope's (not a new function or class).
_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar)


def scan_by_ast(text: bytes) -> FileScan:
    """The pre-scan of ``text``; a module that does not parse is one with no
    classes and ``parses`` False (the checker parses it and says why)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return FileScan([], [], [], [], parses=False)
    found = FileScan([], [], [], [])
    classes = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            classes.append(node)
        elif isinstance(node, ast.ImportFrom):
            for name in node.names:
                if name.asname is not None and name.asname != name.name:
                    found.aliases.append((name.asname, name.name))
                if node.level == 0 and node.module is not None and name.name != "*":
                    found.imported.append((name.asname or name.name, node.module))
        elif isinstance(node, ast.Import):
            for name in node.names:
                if name.asname is not None:
                    found.modules.append((name.asname, name.name))
                else:
                    head = name.name.split(".", 1)[0]
                    found.modules.append((head, head))
    classes.sort(key=lambda node: (node.lineno, node.col_offset))  # in source order, as the lexer finds them
    found.classes = [_class(node) for node in classes]
    found.aliases += _module_aliases(tree.body)
    return found


def _leading_dotted(node: ast.expr) -> list[str] | None:
    """The dotted name an expression starts with (``a.b`` of ``a.b[T].c(x)``)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        inner = _leading_dotted(node.value)
        if inner is None:
            return None
        return [*inner, node.attr] if _is_dotted(node.value) else inner
    if isinstance(node, ast.Subscript):
        return _leading_dotted(node.value)
    if isinstance(node, ast.Call):
        return _leading_dotted(node.func)
    return None


def _is_dotted(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for an expression that is only a dotted name, else None."""
    if not _is_dotted(node):
        return None
    return ".".join(_leading_dotted(node) or [])


def _class(node: ast.ClassDef) -> ClassScan:
    bases, written = [], []
    for base in node.bases:
        if isinstance(base, ast.Starred):
            continue
        parts = _leading_dotted(base)
        bases.append(parts[-1] if parts else "?")
        written.append(".".join(parts) if parts else "?")
    scan = ClassScan(node.name, tuple(bases), tuple(written), False, True, False, False)
    for init in _inits(node.body):
        chains, explicit = _chains(init, node.name, written)
        scan.init_chains = scan.init_chains and chains
        scan.init_explicit = scan.init_explicit or explicit
        scan.init_sets = scan.init_sets or _may_set(init)
        scan.has_init = True
    if _binds_init(node.body):  # ``__init__ = nn.Module.__init__``: runs another class's
        scan.has_init, scan.init_chains, scan.init_explicit = True, False, True
    elif not scan.has_init and _writes_dataclass_init(node):  # sets the fields, runs no parent's
        scan.has_init, scan.init_chains, scan.init_sets, scan.generated = True, False, True, True
    scan.init_chains = scan.init_chains and scan.has_init
    return scan


def _writes_dataclass_init(node: ast.ClassDef) -> bool:
    """Whether a decorator is a dataclass's (a dotted name ending so, called
    or not), which may write an ``__init__``, as the compiled scan reads it:
    ``init=False`` is left to the summaries (a candidate more, never one less)."""
    for decorator in node.decorator_list:
        func = decorator.func if isinstance(decorator, ast.Call) else decorator
        parts = _leading_dotted(func) if _is_dotted(func) else None
        if parts and parts[-1] == "dataclass":
            return True
    return False


def _binds_init(body: list[ast.stmt]) -> bool:
    """Whether a class body binds ``__init__`` by assignment, under if/try/... too."""
    for stmt in body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
            stmt, ast.AnnAssign) and stmt.value is not None else []
        if any(isinstance(t, ast.Name) and t.id == "__init__" for t in targets):
            return True
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                _binds_init(block) for block in _blocks(stmt)):
            return True
    return False


def _blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists of a compound statement that still run in its scope
    (if/for/while/with/try/match; not a function's or a class's)."""
    if isinstance(stmt, _BLOCKS):
        yield from (getattr(stmt, "body", []), getattr(stmt, "orelse", []), getattr(stmt, "finalbody", []))
        yield from (handler.body for handler in getattr(stmt, "handlers", []))
    elif isinstance(stmt, ast.Match):
        yield from (case.body for case in stmt.cases)


def _inits(body: list[ast.stmt]) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Each ``__init__`` defined in a class body, under if/try/with/... too."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name == "__init__":
                yield stmt
        else:
            for block in _blocks(stmt):
                yield from _inits(block)


def _self_name(init: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    positional = [*init.args.posonlyargs, *init.args.args]
    return positional[0].arg if positional else None


def _chains(init: ast.FunctionDef | ast.AsyncFunctionDef, owner: str, written: list[str]) -> tuple[bool, bool]:
    """(runs the parent's ``__init__`` at body level before any return or
    raise, or a nested return (``if True: return``), does so by naming its only base)."""
    self_name = _self_name(init)
    for stmt in init.body:
        if isinstance(stmt, ast.Raise) or any(isinstance(node, ast.Return) for node in ast.walk(stmt)):
            return False, False
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            continue
        func = stmt.value.func
        if not (isinstance(func, ast.Attribute) and func.attr == "__init__"):
            continue
        target = func.value
        if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "super":
            args = target.args
            if not args or (len(args) == 2 and isinstance(args[0], ast.Name) and args[0].id == owner):
                return True, False
            continue
        args = stmt.value.args
        if (len(written) == 1 and _dotted(target) == written[0] and args
                and isinstance(args[0], ast.Name) and args[0].id == self_name):
            return True, True
    return False, False


#: Names whose use may set an attribute with no ``self.`` spelled (fastcore's
#: ``store_attr()`` sets the caller's arguments from its frame).
_SETTERS = frozenset({"setattr", "__setattr__", "vars", "super", "store_attr"})


def _may_set(init: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the body may set an attribute, each way the summaries see a set:
    ``self.<name>``, a method run on self by its class (``B._setup(self)``,
    not the parent's ``__init__``), a ``super()`` method other than
    ``__init__``, or a setter named (``setattr``, ``vars``, ``__setattr__``,
    fastcore's ``store_attr``)."""
    self_name = _self_name(init)
    if self_name is None:
        return True
    todo: list[ast.AST] = list(init.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target, first = node.func.value, node.args[0] if node.args else None
            if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "super":
                if node.func.attr != "__init__":
                    return True
                todo += [*node.args, *node.keywords]  # ``super(C, self).__init__(...)``: its arguments only
                continue
            passes_self = (isinstance(first, ast.Name) and first.id == self_name) or any(
                k.arg == "self" for k in node.keywords)
            if _is_dotted(target) and passes_self:
                if node.func.attr != "__init__":
                    return True
                todo += [target, *node.args[1:], *node.keywords]
                continue
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args
                and isinstance(node.args[0], ast.Name) and node.args[0].id == self_name
                and node.func.id not in BUILTINS_TAKING_SELF):
            return True  # ``setup(self)``: a function run on the instance
        if isinstance(node, ast.Attribute) and (
            node.attr == "__setattr__" or (isinstance(node.value, ast.Name) and node.value.id == self_name)
        ):
            return True
        if isinstance(node, ast.Name) and node.id in _SETTERS:
            return True
        if not isinstance(node, ast.ClassDef):  # a class defined here: its methods' self is another object
            todo.extend(ast.iter_child_nodes(node))
    return False


def _module_aliases(body: list[ast.stmt]) -> list[tuple[str, str]]:
    """(alias, original's last name) of each ``Alias [: T] = dotted.Name`` the
    module binds, under if/try/... too."""
    found = []
    for stmt in body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        if isinstance(target, ast.Name) and value is not None:
            original = _dotted(value)
            if original is not None and original.rsplit(".", 1)[-1] != target.id:
                found.append((target.id, original.rsplit(".", 1)[-1]))
        for block in _blocks(stmt):
            found += _module_aliases(block)
    return found
