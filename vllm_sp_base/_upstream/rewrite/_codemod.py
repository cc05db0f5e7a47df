"""The libcst rewrite of one vLLM file: formatting and comments are kept.

Each change the plan asks for is made only where the source still has the shape
it expects, so a second run finds nothing to do.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Final

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from vllm_sp_base._upstream._names import (
    CONFIG_CLASS,
    CONTRACT_MODULE,
    FLAGS,
    MIXIN,
    MODEL_GATE,
    MOE_GATE,
    PIPELINE_SIZE,
)
from vllm_sp_base._upstream.plan._edits import FileEdits
from vllm_sp_base._upstream.rewrite._imports import (
    code,
    import_position,
    is_import,
    is_vllm_import,
    spaced_after_imports,
)

# Parsed at module level and re-indented into the class: the docstring's own
# lines are literal text, so they carry the class body's indentation already.
GATE_PROPERTY: Final = f'''\
@property
def {MODEL_GATE}(self) -> bool:
    """Sequence-parallel MoE with no pipeline parallelism (PP size 1): the
        condition for sharding hidden states across TP ranks between layers, as
        sequence-parallel hidden states cannot cross pipeline stages yet."""
    return self.{MOE_GATE} and self.{PIPELINE_SIZE} == 1
'''


@dataclass
class Rewrite:
    source: str
    done: Counter[str] = field(default_factory=Counter)  # kind -> how many made
    problems: list[str] = field(default_factory=list)
    left: list[tuple[int, str]] = field(default_factory=list)  # (line, why): planned, not made
    comments: list[tuple[str, str]] = field(default_factory=list)  # (old, new) words in comments


def _is_attribute(node: cst.BaseExpression, attr: str) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == attr


#: Comments the mixin makes untrue, by the class given it: (what it says, what
#: it says once the class has the mixin). "A plain nn.Module" there means "not
#: a DeepseekV2DecoderLayer" (``set_moe_parameters`` keys on the MoE block).
STALE_COMMENTS: Final = {
    "DeepseekV32DecoderLayer": (
        "DeepseekV32DecoderLayer is a plain nn.Module",
        "DeepseekV32DecoderLayer is not a DeepseekV2DecoderLayer",
    ),
}

#: Bases a mixin goes after, as vLLM writes ``nn.Module, SupportsX``.
_MODULE_BASES: Final = frozenset({"nn.Module", "torch.nn.Module", "Module"})


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


class _Comments(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.Comment] = []

    def visit_Comment(self, node: cst.Comment) -> None:
        self.found.append(node)


def _comments(*nodes: cst.CSTNode) -> list[cst.Comment]:
    collector = _Comments()
    for node in nodes:
        node.visit(collector)
    return collector.found


def _with_comment_lines(
    space: cst.BaseParenthesizableWhitespace, comments: list[cst.Comment]
) -> cst.BaseParenthesizableWhitespace | None:
    """``space`` (which starts a line) with ``comments`` on lines of their own at its end."""
    if not isinstance(space, cst.ParenthesizedWhitespace):
        return None
    lines = [
        cst.EmptyLine(indent=space.indent, whitespace=space.last_line, comment=comment)
        for comment in comments
    ]
    return space.with_changes(empty_lines=[*space.empty_lines, *lines])


class _Rewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, edits: FileEdits) -> None:
        super().__init__()
        self.sites = {(site.line, site.column) for site in edits.rederivations}
        self.inner_chains: set[int] = set()
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
                    bound = {code(n) for n in names}
                    if MIXIN in bound:
                        from_contract = small.module is not None and code(small.module) == CONTRACT_MODULE
                        self.has_import |= from_contract and not small.relative
                        self.mixin_bound_elsewhere |= not from_contract

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self.result.done["mixin"] or self.has_import:
            return updated_node
        body = list(updated_node.body)
        index = import_position(body)
        statement = cst.parse_statement(f"from {CONTRACT_MODULE} import {MIXIN}\n")
        assert isinstance(statement, cst.SimpleStatementLine)
        if index < len(body) and is_vllm_import(body[index]):
            following = body[index]
            assert isinstance(following, cst.SimpleStatementLine)
            statement = statement.with_changes(leading_lines=following.leading_lines)
            body[index] = following.with_changes(leading_lines=())
        elif index > 0 and is_import(body[index - 1]) and not is_vllm_import(body[index - 1]):
            # The first vLLM import: a section of its own, after a blank line (isort).
            statement = statement.with_changes(leading_lines=[cst.EmptyLine()])
        body.insert(index, statement)
        if index + 1 < len(body) and not is_import(body[index + 1]):
            body[index + 1] = spaced_after_imports(body[index + 1])
        self.result.done["import"] += 1
        return updated_node.with_changes(body=body)

    def leave_Comment(self, original_node: cst.Comment, updated_node: cst.Comment) -> cst.Comment:
        for cls in self.mixin_classes & STALE_COMMENTS.keys():
            old, new = STALE_COMMENTS[cls]
            if old in updated_node.value:
                self.result.done["comment"] += 1
                self.result.comments.append((old, new))
                updated_node = updated_node.with_changes(value=updated_node.value.replace(old, new))
        return updated_node

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
        if any(code(arg.value).rsplit(".", 1)[-1] == MIXIN for arg in node.bases):
            return node
        if self.mixin_bound_elsewhere:
            self.result.problems.append(
                f"{node.name.value}: the name {MIXIN} is already bound to something else "
                "in this module; left as it is"
            )
            return node
        bases = list(node.bases)
        anchor = next(
            (i for i, arg in enumerate(bases) if code(arg.value) in _MODULE_BASES), 0
        )
        mixin = cst.Arg(cst.Name(MIXIN))
        if bases:
            # The mixin takes the anchor's comma (to the next base, or the
            # trailing one); the anchor takes a comma between bases.
            comma = bases[anchor].comma
            mixin = mixin.with_changes(comma=comma)
            if anchor + 1 < len(bases):
                between = comma
            elif anchor > 0:
                between = bases[anchor - 1].comma
            else:
                between = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            bases[anchor] = bases[anchor].with_changes(comma=between)
        self.result.done["mixin"] += 1
        return node.with_changes(bases=[*bases[: anchor + 1], mixin, *bases[anchor + 1 :]])

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
    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        left = node.left
        if isinstance(node.operator, cst.And) and isinstance(left, cst.BooleanOperation) and (
            isinstance(left.operator, cst.And) and not left.lpar
        ):
            self.inner_chains.add(id(left))  # part of this chain: rewritten with it

    def leave_BooleanOperation(
        self, original_node: cst.BooleanOperation, updated_node: cst.BooleanOperation
    ) -> cst.BaseExpression:
        if (
            MODEL_GATE in self.functions
            or not isinstance(original_node.operator, cst.And)
            or id(original_node) in self.inner_chains
        ):
            return updated_node
        originals, _ = _and_chain(original_node.with_changes(lpar=(), rpar=()))
        operands, operators = _and_chain(updated_node.with_changes(lpar=(), rpar=()))
        for i, operand in enumerate(originals):
            if not _is_attribute(operand, MOE_GATE):
                continue
            start = self.get_metadata(PositionProvider, operand).start
            if (start.line, start.column) not in self.sites:
                continue
            pipeline = next(
                (j for j in (i - 1, i + 1) if 0 <= j < len(operands) and _is_pipeline_size_one(operands[j])),
                None,
            )
            if pipeline is None:  # the plan said so: never expected
                continue
            rewritten = self._join(operands, operators, i, pipeline, updated_node)
            if rewritten is None:
                self.result.left.append((start.line, "a comment inside it would have no line to go on"))
                return updated_node
            self.result.done["rederivation"] += 1
            return rewritten
        return updated_node

    @staticmethod
    def _join(
        operands: list[cst.BaseExpression], operators: list[cst.And], gate: int, pipeline: int,
        node: cst.BooleanOperation,
    ) -> cst.BaseExpression | None:
        """The chain with its two adjacent operands joined into ``X.<gate>``; the
        comments of what goes kept on lines of their own; None where they cannot be."""
        first = min(gate, pipeline)
        between = operators[first]
        gate_node = operands[gate]
        assert isinstance(gate_node, cst.Attribute)
        lost = _comments(operands[pipeline], between)
        joined: cst.BaseExpression = gate_node.with_changes(attr=cst.Name(MODEL_GATE))
        operands = [*operands[:first], joined, *operands[first + 2 :]]
        operators = [*operators[:first], *operators[first + 1 :]]
        lpar, rpar = list(node.lpar), list(node.rpar)
        if lost:
            # On the line before the joined operand: after the operator or the
            # parenthesis that precedes it, when that ends a line.
            if first > 0:  # vLLM breaks lines before ``and``, so try that first
                before = operators[first - 1]
                space = _with_comment_lines(before.whitespace_before, lost)
                if space is not None:
                    operators[first - 1] = before.with_changes(whitespace_before=space)
                elif (space := _with_comment_lines(before.whitespace_after, lost)) is not None:
                    operators[first - 1] = before.with_changes(whitespace_after=space)
                else:
                    return None
            elif lpar:
                space = _with_comment_lines(lpar[-1].whitespace_after, lost)
                if space is None:
                    return None
                lpar[-1] = lpar[-1].with_changes(whitespace_after=space)
            else:
                return None
        if len(operands) == 1:
            return operands[0].with_changes(lpar=lpar, rpar=rpar) if lost else operands[0]
        chain: cst.BaseExpression = operands[0]
        for operator, operand in zip(operators, operands[1:]):
            chain = cst.BooleanOperation(left=chain, operator=operator, right=operand)
        assert isinstance(chain, cst.BooleanOperation)
        return chain.with_changes(lpar=lpar, rpar=rpar)


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
    rewriter.result.source = bom + MetadataWrapper(module).visit(rewriter).code
    return rewriter.result
