"""Where isort puts the import the rewrite adds, and the blank lines around it
(vLLM's ruff settings: the ``vllm`` imports a section of their own)."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from vllm_sp_base._upstream._names import CONTRACT_MODULE


def code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def is_vllm_import(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    return (
        isinstance(small, cst.ImportFrom)
        and not small.relative
        and small.module is not None
        and code(small.module).split(".")[0] == "vllm"
    )


_Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


def spaced_after_imports(statement: _Statement) -> _Statement:
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


def is_import(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and isinstance(
        statement.body[0], (cst.Import, cst.ImportFrom))


def import_position(body: Sequence[cst.BaseStatement]) -> int:
    """Where isort would put ``from vllm.models.common... import``: among the
    top-level ``from vllm...`` imports, else after the last import."""
    last_import = -1
    key = CONTRACT_MODULE.lower()
    for index, statement in enumerate(body):
        if isinstance(statement, (cst.ClassDef, cst.FunctionDef)):
            break
        if is_vllm_import(statement):
            assert isinstance(statement, cst.SimpleStatementLine)
            small = statement.body[0]
            assert isinstance(small, cst.ImportFrom) and small.module is not None
            if code(small.module).lower() > key:
                return index
            last_import = index
        elif (
            isinstance(statement, cst.SimpleStatementLine)
            and isinstance(statement.body[0], (cst.Import, cst.ImportFrom))
            and (last_import < 0 or not is_vllm_import(body[last_import]))
        ):
            last_import = index
    if last_import >= 0:
        return last_import + 1
    first = body[0] if body else None
    has_docstring = isinstance(first, cst.SimpleStatementLine) and isinstance(
        first.body[0], cst.Expr
    ) and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    return 1 if has_docstring else 0
