"""The hand-written sequence-parallel gates of a vLLM tree, for the message to
account for: an ``and`` chain with ``X.pipeline_parallel_size == 1`` that reads
``X.use_sequence_parallel_moe`` or that decides a sequence-parallel flag (what
it is assigned to, or the function returning it, names sequence parallelism).

The series changes none of them; it says which re-derive
``use_sequence_parallel_moe and pipeline_parallel_size == 1`` and which spell
out conditions of their own, so a reviewer sees what was looked at and left.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from vllm_sp_base._upstream._names import MOE_GATE, PIPELINE_SIZE

_SEQUENCE_PARALLEL = "sequence_parallel"


@dataclass(frozen=True)
class Gate:
    path: str
    line: int
    where: str  # the enclosing function, with its class: "KimiK3Model.__init__"
    decides: str  # what it is assigned to, or "return"
    conditions: tuple[str, ...]  # each operand as written, less the config's receiver
    rederives: bool  # exactly <moe gate> and <pp> == 1, with layer-local conditions


def _pipeline_receiver(node: ast.expr) -> str | None:
    """``X`` of ``X.pipeline_parallel_size == 1``, as written."""
    if (
        isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Attribute)
        and node.left.attr == PIPELINE_SIZE
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Eq)
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value == 1
    ):
        return ast.unparse(node.left.value)
    return None


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.scope: list[str] = []
        self.decides = ""
        self.found: list[Gate] = []

    def _scoped(self, node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_ClassDef = visit_FunctionDef = visit_AsyncFunctionDef = _scoped

    def _deciding(self, decides: str, node: ast.AST) -> None:
        outer, self.decides = self.decides, decides
        self.generic_visit(node)
        self.decides = outer

    def visit_Assign(self, node: ast.Assign) -> None:
        self._deciding(ast.unparse(node.targets[0]), node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._deciding(ast.unparse(node.target), node)

    def visit_Return(self, node: ast.Return) -> None:
        self._deciding("return", node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        receivers = [r for r in map(_pipeline_receiver, node.values) if r is not None]
        if not isinstance(node.op, ast.And) or not receivers:
            self.generic_visit(node)
            return
        receiver = receivers[0]
        moe = f"{receiver}.{MOE_GATE}"
        texts = [ast.unparse(value) for value in node.values]
        named = _SEQUENCE_PARALLEL in self.decides or any(_SEQUENCE_PARALLEL in s for s in self.scope)
        if moe not in texts and not named:
            return
        config_reads = [t for t in texts if t.startswith(f"{receiver}.")]
        self.found.append(Gate(
            self.path, node.lineno, ".".join(self.scope) or "module level",
            self.decides or "a condition",
            tuple(t.replace(f"{receiver}.", "") for t in texts),
            rederives=moe in texts and len(config_reads) == 2,
        ))


def find_gates(path: str, tree: ast.Module) -> list[Gate]:
    """The gates of one file (``path`` as the message names it)."""
    finder = _Finder(path)
    finder.visit(tree)
    return finder.found
