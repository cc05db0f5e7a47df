"""Which hand re-derivations of the model-level gate the patch may replace.

A site ``X.use_sequence_parallel_moe and X.pipeline_parallel_size == 1`` is
rewritten to ``X.<gate>`` only where that is the same value for certain:

- ``X`` is bound to a ``ParallelConfig``: ``<anything>.parallel_config``, a
  name assigned only from such an attribute or from ``ParallelConfig(...)``,
  or a parameter annotated ``ParallelConfig``;
- the two operands are next to each other in their ``and`` chain (joining
  operands with others between them changes what is evaluated);
- the chain's value is used only for its truth (``if``, ``while``, ``assert``,
  ``not``, a condition), or every operand of the chain is a bool.

Every other site that has both operands is reported with the reason it was
left as it is. Source only: nothing is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from vllm_sp_base._upstream._names import CONFIG_CLASS, CONFIG_FIELD, MOE_GATE, PIPELINE_SIZE

#: Calls whose value is always a bool.
_BOOL_CALLS: Final = frozenset({"bool", "isinstance", "issubclass", "hasattr", "callable"})

_Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
_FUNCTIONS: Final = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass(frozen=True)
class Site:
    """A re-derivation the patch replaces: where its ``use_sequence_parallel_moe``
    operand starts (1-based line, 0-based byte column) and its receiver's source."""

    line: int
    column: int
    receiver: str


@dataclass(frozen=True)
class LeftAsIs:
    line: int
    reason: str


def _is_moe(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == MOE_GATE


def _is_pipeline_one(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Attribute)
        and node.left.attr == PIPELINE_SIZE
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Eq)
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value == 1
        and type(node.comparators[0].value) is int
    )


def _receiver(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Compare):
        node = node.left
    assert isinstance(node, ast.Attribute)
    return node.value


def _names_config(annotation: ast.expr | None) -> bool:
    """``ParallelConfig``, ``config.ParallelConfig``, ``"ParallelConfig"``, ``ParallelConfig | None``."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.strip() == CONFIG_CLASS
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _names_config(annotation.left) or _names_config(annotation.right)
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, (ast.Name, ast.Attribute)):
        outer = annotation.value.id if isinstance(annotation.value, ast.Name) else annotation.value.attr
        return outer == "Optional" and _names_config(annotation.slice)
    name = annotation.id if isinstance(annotation, ast.Name) else (
        annotation.attr if isinstance(annotation, ast.Attribute) else None)
    return name == CONFIG_CLASS


def _is_config_value(value: ast.expr) -> bool:
    if isinstance(value, ast.Attribute):
        return value.attr == CONFIG_FIELD
    if isinstance(value, ast.Call):
        return _names_config(value.func)
    return False


class _Scope:
    """What each name of one function (or the module) is bound to."""

    def __init__(self, node: ast.Module | _Function, parent: _Scope | None) -> None:
        self.parent = parent
        self.config: dict[str, bool] = {}  # name -> every binding is a ParallelConfig
        self.bools: dict[str, bool] = {}  # name -> every binding is a bool
        self.why: dict[str, str] = {}  # name -> why it is not a ParallelConfig
        if not isinstance(node, ast.Module):
            arguments = node.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                ok = _names_config(arg.annotation)
                self.config[arg.arg] = ok
                self.bools[arg.arg] = isinstance(arg.annotation, ast.Name) and arg.annotation.id == "bool"
                if not ok:
                    self.why[arg.arg] = "a parameter not annotated ParallelConfig"
            for star in (arguments.vararg, arguments.kwarg):
                if star is not None:
                    self.config[star.arg] = self.bools[star.arg] = False
                    self.why[star.arg] = "a * or ** parameter"
        for child in _own_nodes(node):
            if isinstance(child, ast.Assign):
                for target in child.targets:
                    self._bind(target, child.value)
            elif isinstance(child, ast.AnnAssign):
                annotated = _names_config(child.annotation)
                self._bind(child.target, child.value, annotated, bool_annotated=(
                    isinstance(child.annotation, ast.Name) and child.annotation.id == "bool"))
            elif isinstance(child, (ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith,
                                    ast.NamedExpr, ast.Import, ast.ImportFrom)):
                for name in _bound_names(child):
                    self._bind_unknown(name, "bound by a statement that is not an assignment")

    def _bind(self, target: ast.expr, value: ast.expr | None, annotated: bool = False,
              bool_annotated: bool = False) -> None:
        if not isinstance(target, ast.Name):
            for name in _target_names(target):
                self._bind_unknown(name, "bound by unpacking")
            return
        name = target.id
        is_config = annotated or (value is not None and _is_config_value(value))
        self.config[name] = self.config.get(name, True) and is_config
        if not is_config:
            self.why.setdefault(name, "assigned a value not known to be a ParallelConfig")
        is_bool = bool_annotated or (value is not None and _is_bool(value, self))
        self.bools[name] = self.bools.get(name, True) and is_bool

    def _bind_unknown(self, name: str, why: str) -> None:
        self.config[name] = self.bools[name] = False
        self.why.setdefault(name, why)

    def lookup(self, name: str) -> _Scope | None:
        scope: _Scope | None = self
        while scope is not None and name not in scope.config:
            scope = scope.parent
        return scope


def _target_names(target: ast.expr) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            yield node.id


def _bound_names(node: ast.AST) -> Iterator[str]:
    if isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)):
        yield from _target_names(node.target)
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            if item.optional_vars is not None:
                yield from _target_names(item.optional_vars)
    elif isinstance(node, ast.NamedExpr):
        yield node.target.id
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            yield (alias.asname or alias.name).split(".")[0]


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node of this scope, not of the functions or classes nested in it."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        child = todo.pop()
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(child))


def _is_bool(node: ast.expr, scope: _Scope) -> bool:
    if isinstance(node, ast.Compare) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    if isinstance(node, ast.BoolOp):
        return all(_is_bool(value, scope) for value in node.values)
    if isinstance(node, ast.Attribute):
        return node.attr == MOE_GATE
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id in _BOOL_CALLS
    if isinstance(node, ast.Name):
        found = scope.lookup(node.id)
        return found is not None and found.bools.get(node.id, False)
    return False


def _truth_only(node: ast.expr, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether only the truth of ``node``'s value is used."""
    parent = parents.get(node)
    if isinstance(parent, (ast.If, ast.While, ast.Assert, ast.IfExp)) and parent.test is node:
        return True
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return True
    if isinstance(parent, ast.comprehension) and node in parent.ifs:
        return True
    if isinstance(parent, ast.BoolOp):
        return _truth_only(parent, parents)
    return False


def _config_receiver(receiver: ast.expr, scope: _Scope, class_name: str | None) -> str | None:
    """None when ``receiver`` is bound to a ParallelConfig, else why it is not known to be."""
    if isinstance(receiver, ast.Attribute):
        if receiver.attr == CONFIG_FIELD:
            return None
        return f"{ast.unparse(receiver)} is not known to be a ParallelConfig"
    if isinstance(receiver, ast.Name):
        if receiver.id == "self" and class_name == CONFIG_CLASS:
            return None
        found = scope.lookup(receiver.id)
        if found is None:
            return f"{receiver.id} is not bound in this module"
        if found.config[receiver.id]:
            return None
        return f"{receiver.id} is not known to be a ParallelConfig ({found.why.get(receiver.id, '')})"
    return f"{ast.unparse(receiver)} is not a name or an attribute"


def find_sites(tree: ast.Module, skip_function: str) -> tuple[list[Site], list[LeftAsIs]]:
    """The re-derivations to replace, and those left as they are with the reason;
    nothing inside a function named ``skip_function`` (the gate's own body)."""
    candidates = [
        node for node in ast.walk(tree)
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And)
        and any(map(_is_moe, node.values)) and any(map(_is_pipeline_one, node.values))
    ]
    sites: list[Site] = []
    left: list[LeftAsIs] = []
    if not candidates:
        return sites, left
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    scopes: dict[ast.AST, _Scope] = {}

    def scope_of(node: ast.AST) -> _Scope:
        """The scope of the function (or module) ``node`` is, built once."""
        if node not in scopes:
            parent = enclosing(node)
            assert isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            scopes[node] = _Scope(node, None if parent is None else scope_of(parent))
        return scopes[node]

    def enclosing(node: ast.AST) -> ast.AST | None:
        up = parents.get(node)
        while up is not None and not isinstance(up, (ast.Module, *_FUNCTIONS)):
            up = parents.get(up)
        return up

    for node in candidates:
        chain: list[ast.AST] = [node]
        while chain[-1] in parents:
            chain.append(parents[chain[-1]])
        if any(isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)) and up.name == skip_function
               for up in chain):
            continue
        function = enclosing(node)
        assert function is not None
        class_name = next((up.name for up in chain if isinstance(up, ast.ClassDef)), None)
        _judge(node, scope_of(function), class_name, parents, sites, left)
    return sorted(sites, key=lambda s: (s.line, s.column)), sorted(left, key=lambda x: x.line)


def _judge(
    node: ast.BoolOp, scope: _Scope, class_name: str | None, parents: dict[ast.AST, ast.AST],
    sites: list[Site], left: list[LeftAsIs],
) -> None:
    values = node.values
    moes = [i for i, v in enumerate(values) if _is_moe(v)]
    pipes = [i for i, v in enumerate(values) if _is_pipeline_one(v)]
    for i in moes:
        line = values[i].lineno
        same = [j for j in pipes if ast.dump(_receiver(values[j])) == ast.dump(_receiver(values[i]))]
        if not same:
            if pipes:
                left.append(LeftAsIs(line, "its pipeline_parallel_size check reads another object"))
            continue
        receiver = _receiver(values[i])
        adjacent = [j for j in same if abs(j - i) == 1]
        if not adjacent:
            left.append(LeftAsIs(line, "the two operands are not next to each other in the `and` "
                                       "chain: joining them would change what is evaluated"))
            continue
        why = _config_receiver(receiver, scope, class_name)
        if why is not None:
            left.append(LeftAsIs(line, why))
            continue
        if not _truth_only(node, parents) and not all(_is_bool(v, scope) for v in values):
            not_bool = next(v for v in values if not _is_bool(v, scope))
            left.append(LeftAsIs(line, f"its value is used, and `{ast.unparse(not_bool)}` may not "
                                       "be a bool"))
            continue
        sites.append(Site(line, values[i].col_offset, ast.unparse(receiver)))
