"""Process-wide settings as source spells them: a function called with no
arguments (``is_nsa_enable_prefill_cp()``, reading the server's arguments),
and the functions whose true result needs one::

    def nsa_use_prefill_cp(forward_batch, nsa_enable_prefill_cp=None):
        if nsa_enable_prefill_cp is None:
            nsa_enable_prefill_cp = is_nsa_enable_prefill_cp()
        if forward_batch.meta is not None and nsa_enable_prefill_cp and ...:
            return True
        else:
            return False

Called with one argument, it is true only where the setting is on: what
decides the setting (``_refused``) decides the call. Read from source only,
for a call a finding's way tests.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from vllm_sp_base._audit.semantics._parsed import module_tree
from vllm_sp_base._audit.semantics._project import Project
from vllm_sp_base._audit.summaries._events import Import

#: What a test of a value is false for (``return None``, ``return False``, a bare ``return``).
_FALSE_CONSTANTS = (None, False, 0, "")


def local_imports(function: ast.FunctionDef) -> dict[str, Import]:
    """The names a function binds by its own ``from m import name`` (sglang
    imports a setting's function inside ``__init__``)."""
    return {
        alias.asname or alias.name: Import(node.level, node.module, alias.name)
        for node in ast.walk(function) if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def setting_called(project: Project, module: str, value: ast.expr, local: dict[str, Import]) -> str | None:
    """The absolute name of the function ``value`` calls with no arguments."""
    if isinstance(value, ast.Call) and not value.args and not value.keywords and isinstance(value.func, ast.Name):
        return function_origin(project, module, value.func.id, local)
    return None


def function_origin(project: Project, module: str, name: str, local: dict[str, Import]) -> str | None:
    """``name``'s absolute dotted name in ``module``: through its imports (or
    the function's own, ``local``), or a function the module defines."""
    found = project.origin(module, name, local)
    if found is not None:
        return found
    tree = module_tree(project, module)
    if tree is not None and any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body):
        return f"{module}.{name}"
    return None


def function_node(project: Project, origin: str) -> ast.FunctionDef | None:
    """The definition of the module-level function ``origin`` names."""
    where, _, name = origin.rpartition(".")
    tree = module_tree(project, where) if where else None
    if tree is None:
        return None
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


#: How a need spells a parameter of the function (its index) rather than a setting: ``#1``.
PARAMETER = "#"


def parse_called(spelled: str) -> tuple[str, int, dict[int, str]]:
    """(name, positional arguments, index -> the instance's attribute passed
    there) of a requirement ``CALLED`` spells, less that prefix: ``uses_cp/2/1.flag``."""
    name, count, *passed = spelled.split("/")
    attrs = dict(item.split(".", 1) for item in passed)
    return name, int(count), {int(index): attr for index, attr in attrs.items()}


def needs_of_call(project: Project, modules: Iterable[str], name: str, count: int) -> set[str]:
    """What ``name(...)`` with ``count`` positional arguments, written in one
    of ``modules`` (those of the class's methods), is never true without:
    the function itself where it takes no arguments, and the setting its
    true results all need (or the parameter, ``#index``, they all need).
    Empty where ``name`` is not one module-level function in all of them (a
    name a function binds may be anything)."""
    origins = set()
    for module in modules:
        tree = module_tree(project, module)
        if tree is None or _bound_in_a_function(tree, name):
            return set()
        origin = function_origin(project, module, name, {})
        if origin is not None:
            origins.add(origin)
    if len(origins) != 1:
        return set()
    (origin,) = origins
    found = {origin} if count == 0 else set()
    function = function_node(project, origin)
    if function is not None:
        needed = needed_setting(project, origin.rpartition(".")[0], function, count)
        if needed is not None:
            found.add(needed)
    return found


def _bound_in_a_function(tree: ast.Module, name: str) -> bool:
    """Whether a function of ``tree`` (or a class body) binds ``name`` (a
    parameter, an assignment, its own import): a call of it there may call
    anything. One walk; what the module's own statements bind is its binding."""
    module_level = {id(node) for statement in tree.body for node in outside_nested_functions(statement)}
    for node in ast.walk(tree):
        if id(node) in module_level:
            continue
        if ((isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name)
                or (isinstance(node, ast.arg) and node.arg == name)
                or (isinstance(node, (ast.Import, ast.ImportFrom))
                    and any((a.asname or a.name) == name for a in node.names))):
            return True
    return False


def needed_setting(project: Project, module: str, function: ast.FunctionDef, count: int) -> str | None:
    """The setting every true ``return`` of ``function``, called with
    ``count`` positional arguments, runs under (a test that needs it, or a
    conjunction returned that holds it), or the parameter (``#index``) they
    all need true; None where one may run without either."""
    arguments = function.args
    if arguments.posonlyargs or arguments.vararg or count > len(arguments.args):
        return None
    with_defaults = arguments.args[len(arguments.args) - len(arguments.defaults):]
    unpassed_none = {
        a.arg for a, default in zip(with_defaults, arguments.defaults)
        if a in arguments.args[count:] and isinstance(default, ast.Constant) and default.value is None
    }
    reader = _Needs(project, module, local_imports(function))
    passed = {a.arg: f"{PARAMETER}{index}" for index, a in enumerate(arguments.args[:count])}
    if not reader.block(function.body, None, passed, unpassed_none) or len(reader.needed) != 1:
        return None
    return next(iter(reader.needed))


class _Needs:
    """Reads a function's blocks in order: which names hold a setting, and
    which setting each true ``return`` runs under."""

    def __init__(self, project: Project, module: str, local: dict[str, Import]) -> None:
        self.project = project
        self.module = module
        self.local = local
        self.needed: set[str] = set()

    def block(self, statements: list[ast.stmt], under: str | None, holds: dict[str, str],
              none: set[str]) -> bool:
        """Whether every true ``return`` of ``statements`` runs under a setting
        (``under``: the one the block already runs under). ``holds``: names
        bound to a setting; ``none``: parameters still None (not passed)."""
        for statement in statements:
            if isinstance(statement, ast.Return):
                if _false(statement):
                    return True
                assert statement.value is not None
                setting = under or self.test(statement.value, holds)
                if setting is None:
                    return False
                self.needed.add(setting)
                return True
            if isinstance(statement, ast.Assign):
                self.forget(statement, holds, none)
                setting = setting_called(self.project, self.module, statement.value, self.local)
                if setting is not None and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
                    holds[statement.targets[0].id] = setting
                continue
            if isinstance(statement, ast.If):
                still_none = _is_none_test(statement.test, none)
                if still_none is not None:
                    # ``if flag is None: flag = setting()`` on a parameter not passed: it runs.
                    taken = statement.body if still_none else statement.orelse
                    if not self.block(taken, under, holds, none):
                        return False
                    if _ends(taken):
                        return True
                    continue
                if not (self.block(statement.body, under or self.test(statement.test, holds), dict(holds), set(none))
                        and self.block(statement.orelse, under or self.test_fails(statement.test, holds),
                                       dict(holds), set(none))):
                    return False
                if _ends(statement.body) and not statement.orelse:
                    under = under or self.test_fails(statement.test, holds)  # ``if not on: return False``
                self.forget(statement, holds, none)
                continue
            for node in outside_nested_functions(statement):
                if isinstance(node, ast.Return) and not _false(node):
                    if under is None:
                        return False  # in a loop, a ``with``, a handler: not followed
                    self.needed.add(under)
            self.forget(statement, holds, none)
        return True

    @staticmethod
    def forget(statement: ast.stmt, holds: dict[str, str], none: set[str]) -> None:
        """What ``statement`` may bind again holds no setting, and is no longer None."""
        for node in outside_nested_functions(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                holds.pop(node.id, None)
                none.discard(node.id)

    def test(self, test: ast.expr, holds: dict[str, str]) -> str | None:
        """The setting ``test`` being true needs: the test, or a term of its conjunction."""
        terms = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        for term in terms:
            if isinstance(term, ast.Name) and term.id in holds:
                return holds[term.id]
            setting = setting_called(self.project, self.module, term, self.local)
            if setting is not None:
                return setting
        return None

    def test_fails(self, test: ast.expr, holds: dict[str, str]) -> str | None:
        """The setting ``test`` being false needs (``not on``, ``not a or not on``)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.test(test.operand, holds)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            for term in test.values:
                setting = self.test_fails(term, holds)
                if setting is not None:
                    return setting
        return None


def _is_none_test(test: ast.expr, none: set[str]) -> bool | None:
    """For ``p is None`` / ``p is not None`` of a parameter still None: whether it holds."""
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and test.left.id in none and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None and isinstance(test.ops[0], (ast.Is, ast.IsNot))):
        return isinstance(test.ops[0], ast.Is)
    return None


def _ends(statements: list[ast.stmt]) -> bool:
    """Whether a block always leaves the function (its last statement returns or raises)."""
    return bool(statements) and isinstance(statements[-1], (ast.Return, ast.Raise))


def _false(statement: ast.Return) -> bool:
    """Whether a ``return`` gives a value a test fails (``None``, ``False``, nothing)."""
    value = statement.value
    return value is None or (isinstance(value, ast.Constant) and value.value in _FALSE_CONSTANTS)


def outside_nested_functions(statement: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of ``statement`` but those of functions and lambdas it defines (they run elsewhere)."""
    todo: list[ast.AST] = [statement]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(child for child in ast.iter_child_nodes(node)
                    if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)))
