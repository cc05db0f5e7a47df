"""The libcst rewrite of one vLLM file: formatting and comments are kept.

Each change the plan asks for is made only where the source still has the shape
it expects, so a second run finds nothing to do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import libcst as cst

from vllm_sp_base._upstream._contract_module import CONTRACT_MODULE, FLAGS, MIXIN
from vllm_sp_base._upstream._plan import (
    CONFIG_CLASS,
    MODEL_GATE,
    MOE_GATE,
    PIPELINE_SIZE,
    FileEdits,
)

# Parsed at module level and re-indented into the class: the docstring's own
# lines are literal text, so they carry the class body's indentation already.
GATE_PROPERTY: Final = f'''\
@property
def {MODEL_GATE}(self) -> bool:
    """Model-level sequence parallelism, which model classes read instead of
        re-deriving it: SP-MoE, and no pipeline parallelism (sequence-parallel
        hidden states cannot cross pipeline stages yet)."""
    return self.{MOE_GATE} and self.{PIPELINE_SIZE} == 1
'''


@dataclass
class Rewrite:
    source: str
    done: Counter[str] = field(default_factory=Counter)  # kind -> how many made
    problems: list[str] = field(default_factory=list)


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _is_attribute(node: cst.BaseExpression, attr: str) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == attr


def _is_pipeline_size_one(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Comparison)
        and _is_attribute(node.left, PIPELINE_SIZE)
        and len(node.comparisons) == 1
        and isinstance(node.comparisons[0].operator, cst.Equal)
        and isinstance(node.comparisons[0].comparator, cst.Integer)
        and node.comparisons[0].comparator.value == "1"
    )


def _and_chain(node: cst.BaseExpression) -> tuple[list[cst.BaseExpression], list[cst.And]]:
    """Operands and operators of ``a and b and c`` (left-associative in libcst)."""
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And) and (
        not node.lpar
    ):
        operands, operators = _and_chain(node.left)
        return [*operands, node.right], [*operators, node.operator]
    return [node], []


def _rederivation(
    node: cst.BooleanOperation,
) -> tuple[list[cst.BaseExpression], list[cst.And], int, int] | None:
    if not isinstance(node.operator, cst.And):
        return None
    operands, operators = _and_chain(node.with_changes(lpar=(), rpar=()))
    for i, operand in enumerate(operands):
        if not _is_attribute(operand, MOE_GATE):
            continue
        assert isinstance(operand, cst.Attribute)
        for j, other in enumerate(operands):
            if _is_pipeline_size_one(other):
                assert isinstance(other, cst.Comparison) and isinstance(other.left, cst.Attribute)
                if operand.value.deep_equals(other.left.value):
                    return operands, operators, i, j
    return None


class _Rewriter(cst.CSTTransformer):
    def __init__(self, edits: FileEdits) -> None:
        super().__init__()
        self.mixin_classes = set(edits.mixin)
        self.redundant = {(r.cls, r.flag) for r in edits.redundant}
        self.add_gate = edits.gate is not None
        self.result = Rewrite("")
        self.classes: list[str] = []
        self.functions: list[str] = []
        self.init_body: set[int] = set()  # ids of the statements of a top-level __init__ body
        self.mixin_bound_elsewhere = False
        self.has_import = False

    # Module level --------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        for statement in node.body:
            if isinstance(statement, cst.ClassDef) and statement.name.value == MIXIN:
                self.mixin_bound_elsewhere = True
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                    names = {(a.asname.name if a.asname else a.name) for a in small.names}
                    bound = {_code(n) for n in names}
                    if MIXIN in bound:
                        from_contract = small.module is not None and _code(small.module) == CONTRACT_MODULE
                        self.has_import |= from_contract and not small.relative
                        self.mixin_bound_elsewhere |= not from_contract

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self.result.done["mixin"] or self.has_import:
            return updated_node
        body = list(updated_node.body)
        index = _import_position(body)
        statement = cst.parse_statement(f"from {CONTRACT_MODULE} import {MIXIN}\n")
        assert isinstance(statement, cst.SimpleStatementLine)
        if index < len(body) and _is_vllm_import(body[index]):
            following = body[index]
            assert isinstance(following, cst.SimpleStatementLine)
            statement = statement.with_changes(leading_lines=following.leading_lines)
            body[index] = following.with_changes(leading_lines=())
        elif index > 0 and _is_import(body[index - 1]) and not _is_vllm_import(body[index - 1]):
            # The first vLLM import: a section of its own, after a blank line (isort).
            statement = statement.with_changes(leading_lines=[cst.EmptyLine()])
        body.insert(index, statement)
        if index + 1 < len(body) and not _is_import(body[index + 1]):
            body[index + 1] = _spaced_after_imports(body[index + 1])
        self.result.done["import"] += 1
        return updated_node.with_changes(body=body)

    # Classes -------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        self.classes.pop()
        name = original_node.name.value
        if self.classes or self.functions:
            return updated_node
        if self.add_gate and name == CONFIG_CLASS:
            updated_node = self._add_gate(updated_node)
        if name in self.mixin_classes:
            updated_node = self._add_mixin(updated_node)
        return updated_node

    def _add_mixin(self, node: cst.ClassDef) -> cst.ClassDef:
        if any(_code(arg.value).rsplit(".", 1)[-1] == MIXIN for arg in node.bases):
            return node
        if self.mixin_bound_elsewhere:
            self.result.problems.append(
                f"{node.name.value}: the name {MIXIN} is already bound to something else "
                "in this module; left as it is"
            )
            return node
        bases = list(node.bases)
        comma = (
            bases[0].comma
            if bases and isinstance(bases[0].comma, cst.Comma)
            else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        mixin = cst.Arg(cst.Name(MIXIN), comma=comma if bases else cst.MaybeSentinel.DEFAULT)
        self.result.done["mixin"] += 1
        return node.with_changes(bases=[mixin, *bases])

    def _add_gate(self, node: cst.ClassDef) -> cst.ClassDef:
        body = list(node.body.body)
        names = [s.name.value for s in body if isinstance(s, cst.FunctionDef)]
        if MODEL_GATE in names or MOE_GATE not in names:
            return node
        index = names.index(MOE_GATE)
        position = [i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef)][index]
        gate = cst.parse_statement(GATE_PROPERTY.lstrip("\n"))
        assert isinstance(gate, cst.FunctionDef)
        body.insert(position + 1, gate.with_changes(leading_lines=[cst.EmptyLine(indent=False)]))
        self.result.done["gate"] += 1
        return node.with_changes(body=node.body.with_changes(body=body))

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

    # Expressions ---------------------------------------------------------
    def leave_BooleanOperation(
        self, original_node: cst.BooleanOperation, updated_node: cst.BooleanOperation
    ) -> cst.BaseExpression:
        if MODEL_GATE in self.functions:  # the gate's own definition
            return updated_node
        found = _rederivation(updated_node)
        if found is None:
            return updated_node
        operands, operators, gate, pipeline = found
        gate_node = operands[gate]
        assert isinstance(gate_node, cst.Attribute)
        operands[gate] = gate_node.with_changes(attr=cst.Name(MODEL_GATE))
        self.result.done["rederivation"] += 1
        del operands[pipeline]
        del operators[max(pipeline - 1, 0)]
        if len(operands) == 1:  # an attribute needs no parentheses
            return operands[0]
        chain: cst.BaseExpression = operands[0]
        for operator, operand in zip(operators, operands[1:]):
            chain = cst.BooleanOperation(left=chain, operator=operator, right=operand)
        assert isinstance(chain, cst.BooleanOperation)
        return chain.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)


def _is_vllm_import(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    return (
        isinstance(small, cst.ImportFrom)
        and not small.relative
        and small.module is not None
        and _code(small.module).split(".")[0] == "vllm"
    )


_Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


def _spaced_after_imports(statement: _Statement) -> _Statement:
    """The blank lines isort wants between the last import and ``statement``:
    two before a class or a function, one before anything else."""
    wanted = 2 if isinstance(statement, (cst.ClassDef, cst.FunctionDef)) else 1
    blank = 0
    for line in statement.leading_lines:
        if line.comment is not None:
            break
        blank += 1
    if blank >= wanted:
        return statement
    extra = [cst.EmptyLine()] * (wanted - blank)
    return statement.with_changes(leading_lines=[*extra, *statement.leading_lines])


def _is_import(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and isinstance(
        statement.body[0], (cst.Import, cst.ImportFrom))


def _import_position(body: Sequence[cst.BaseStatement]) -> int:
    """Where isort would put ``from vllm.models.common... import``: among the
    top-level ``from vllm...`` imports, else after the last import."""
    last_import = -1
    key = CONTRACT_MODULE.lower()
    for index, statement in enumerate(body):
        if isinstance(statement, (cst.ClassDef, cst.FunctionDef)):
            break
        if _is_vllm_import(statement):
            assert isinstance(statement, cst.SimpleStatementLine)
            small = statement.body[0]
            assert isinstance(small, cst.ImportFrom) and small.module is not None
            if _code(small.module).lower() > key:
                return index
            last_import = index
        elif (
            isinstance(statement, cst.SimpleStatementLine)
            and isinstance(statement.body[0], (cst.Import, cst.ImportFrom))
            and (last_import < 0 or not _is_vllm_import(body[last_import]))
        ):
            last_import = index
    if last_import >= 0:
        return last_import + 1
    first = body[0] if body else None
    has_docstring = isinstance(first, cst.SimpleStatementLine) and isinstance(
        first.body[0], cst.Expr
    ) and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    return 1 if has_docstring else 0


def rewrite(source: str, edits: FileEdits) -> Rewrite:
    """Raises ``libcst.ParserSyntaxError`` when the source does not parse."""
    rewriter = _Rewriter(edits)
    rewriter.result.source = cst.parse_module(source).visit(rewriter).code
    return rewriter.result
