"""The libcst rewrite of one vLLM file: formatting and comments are kept.

Each change the plan asks for is made only where the source still has the shape
it expects, so a second run finds nothing to do.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import libcst as cst

from vllm_sp_base._upstream._names import DEFAULT, FLAGS
from vllm_sp_base._upstream.plan._edits import FileEdits


@dataclass
class Rewrite:
    source: str
    done: Counter[str] = field(default_factory=Counter)  # kind -> how many made
    problems: list[str] = field(default_factory=list)


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _class_level_names(statement: cst.BaseStatement) -> set[str] | None:
    """The names a class-level assignment binds; None for any other statement."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    names: set[str] = set()
    for small in statement.body:
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, cst.AnnAssign):
            targets = [small.target]
        else:
            return None
        names |= {t.value for t in targets if isinstance(t, cst.Name)}
    return names


class _Rewriter(cst.CSTTransformer):
    def __init__(self, edits: FileEdits) -> None:
        super().__init__()
        self.defaults = {name: default.flags for name, default in edits.defaults.items()}
        self.redundant = {(r.cls, r.flag) for r in edits.redundant}
        self.result = Rewrite("")
        self.classes: list[str] = []
        self.functions: list[str] = []
        self.init_body: set[int] = set()  # ids of the statements of a top-level __init__ body

    # Classes -------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        self.classes.pop()
        name = original_node.name.value
        if self.classes or self.functions or name not in self.defaults:
            return updated_node
        return self._add_defaults(updated_node, self.defaults[name])

    def _add_defaults(self, node: cst.ClassDef, flags: tuple[str, ...]) -> cst.ClassDef:
        """``<flag>: bool = False`` after the docstring and the class-level
        assignments that open the body, for each flag the class does not bind there."""
        if not isinstance(node.body, cst.IndentedBlock):
            self.result.problems.append(f"{node.name.value}: its body is on the class line; left as it is")
            return node
        body = list(node.body.body)
        index = 1 if body and _is_docstring(body[0]) else 0
        bound: set[str] = set()
        for statement in body:
            bound |= _class_level_names(statement) or set()
        while index < len(body) and (_class_level_names(body[index]) is not None):
            index += 1
        missing = [flag for flag in flags if flag not in bound]
        if not missing:
            return node
        added = [cst.parse_statement(f"{flag}: bool = {DEFAULT}\n") for flag in missing]
        following = body[index] if index < len(body) else None
        if isinstance(following, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and (
            not following.leading_lines and _class_level_names(following) is None
        ):
            body[index] = following.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        if index == 1 and _is_docstring(body[0]):
            added[0] = added[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        self.result.done["default"] += 1
        return node.with_changes(body=node.body.with_changes(body=[*body[:index], *added, *body[index:]]))

    # Functions -----------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        top_level_init = len(self.classes) == 1 and not self.functions and node.name.value == "__init__"
        if top_level_init and isinstance(node.body, cst.IndentedBlock):
            self.init_body = {id(s) for s in node.body.body}
        self.functions.append(node.name.value)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self.functions.pop()
        if not self.functions:
            self.init_body = set()
        return updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        if id(original_node) not in self.init_body or len(original_node.body) != 1:
            return updated_node
        assign = original_node.body[0]
        if not (
            isinstance(assign, cst.Assign)
            and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Attribute)
            and isinstance(assign.value, cst.Name)
            and assign.value.value == "False"
        ):
            return updated_node
        flag = assign.targets[0].target.attr.value
        if flag in FLAGS and (self.classes[0], flag) in self.redundant:
            self.result.done["redundant"] += 1
            return cst.RemoveFromParent()
        return updated_node


class NotKept(ValueError):
    """A source libcst would not write back as it reads it, from ``line`` on:
    it drops a form feed before a statement, and the last CR of a file with
    CR-only line endings."""

    def __init__(self, line: int) -> None:
        super().__init__(f"line {line}")
        self.line = line


def rewrite(source: str, edits: FileEdits) -> Rewrite:
    """Raises ``libcst.ParserSyntaxError`` when the source does not parse, and
    ``NotKept`` where a rewrite would change more than the edits."""
    bom = "\ufeff" if source.startswith("\ufeff") else ""  # libcst drops it: put back
    body = source[len(bom):]
    module = cst.parse_module(body)
    kept = module.code
    if kept != body:
        same = next((i for i, (a, b) in enumerate(zip(body, kept)) if a != b), min(len(body), len(kept)))
        raise NotKept(body.count("\n", 0, same) + 1)
    rewriter = _Rewriter(edits)
    rewriter.result.source = bom + module.visit(rewriter).code
    return rewriter.result
