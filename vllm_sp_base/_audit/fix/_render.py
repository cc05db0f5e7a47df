"""A file's planned edits as new text, with libcst: everything else in the
file (formatting, comments) stays as it was."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

Positions = Mapping[cst.CSTNode, CodeRange]

from vllm_sp_base._audit.fix._edit import Edit


class RenderError(Exception):
    """An edit that cannot be placed: the class or its ``__init__`` moved."""


def render(source: str, edits: Sequence[Edit]) -> str:
    """``source`` with every edit of ``edits`` (all of one file) applied; the
    same statement asked for twice (two findings, one local) goes in once."""
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module)
    positions = wrapper.resolve(PositionProvider)
    module = wrapper.module
    config = module.config_for_parsing
    classes: dict[str, list[Edit]] = {}
    for edit in edits:
        classes.setdefault(edit.class_name, []).append(edit)
    new_body: list[cst.BaseStatement] = list(module.body)
    for index, statement in enumerate(new_body):
        if isinstance(statement, cst.ClassDef) and statement.name.value in classes:
            new_body[index] = _class(statement, classes.pop(statement.name.value), positions, config)
    if classes:
        raise RenderError(f"class {', '.join(sorted(classes))} not found at the top level")
    imports = list(dict.fromkeys(i for edit in edits for i in edit.imports))
    module = module.with_changes(body=_with_imports(new_body, imports, module, config))
    return module.code


def _class(cls: cst.ClassDef, edits: list[Edit], positions: Positions, config: cst.PartialParserConfig) -> cst.ClassDef:
    body = cls.body
    if not isinstance(body, cst.IndentedBlock):
        raise RenderError(f"class {cls.name.value} is written on one line")
    statements = list(body.body)
    lines = [line for edit in edits for line in edit.class_lines]
    inits = [edit for edit in edits if edit.statements]
    if inits:
        for index, node in enumerate(statements):
            if isinstance(node, cst.FunctionDef) and node.name.value == "__init__":
                statements[index] = _init(node, inits, positions, config)
                break
        else:
            raise RenderError(f"{cls.name.value}.__init__ not found")
    if lines:
        at = 1 if statements and _docstring(statements[0]) else 0
        new = [cst.parse_statement(line + "\n", config) for line in dict.fromkeys(lines)]
        statements[at:at] = new
    return cls.with_changes(body=body.with_changes(body=statements))


def _init(init: cst.FunctionDef, edits: list[Edit], positions: Positions,
          config: cst.PartialParserConfig) -> cst.FunctionDef:
    body = init.body
    if not isinstance(body, cst.IndentedBlock):
        raise RenderError(f"{init.name.value} is written on one line")
    statements = list(body.body)
    anchor = max(edit.after_line for edit in edits)
    at = 0
    for index, node in enumerate(statements):
        position = positions[node]
        if position.start.line <= anchor:
            at = index + 1
    ordered = sorted({order_text for edit in edits for order_text in edit.statements})
    texts = list(dict.fromkeys(text for _, text in ordered))
    new = [cst.parse_statement(text + "\n", config) for text in texts]
    statements[at:at] = new
    return init.with_changes(body=body.with_changes(body=statements))


def _docstring(node: cst.BaseStatement) -> bool:
    return (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1
            and isinstance(node.body[0], cst.Expr) and isinstance(node.body[0].value, cst.SimpleString | cst.ConcatenatedString))


def _with_imports(body: list[cst.BaseStatement], imports: list[str], module: cst.Module,
                  config: cst.PartialParserConfig) -> list[cst.BaseStatement]:
    """Each import not already there (as written), after the module's last
    top-level absolute import (isort puts relative ones after them), else
    after its last import, else after its docstring."""
    present = {module.code_for_node(node).strip() for node in body if _is_import(node)}
    wanted = _merged([i for i in imports if i not in present])
    if not wanted:
        return body
    at = absolute_at = 0
    for index, node in enumerate(body):
        if _is_import(node) or (index == 0 and _docstring(node)):
            at = index + 1
            if not _is_relative(node):
                absolute_at = index + 1
    at = absolute_at or at
    new = [cst.parse_statement(_wrapped(i) + "\n", config) for i in wanted]
    return body[:at] + new + body[at:]


def _merged(imports: list[str]) -> list[str]:
    """``from m import a`` and ``from m import b`` as ``from m import a, b``."""
    names: dict[str, list[str]] = {}
    merged: list[str] = []
    for statement in imports:
        head, sep, name = statement.partition(" import ")
        if head.startswith("from ") and sep:
            if head not in names:
                names[head] = []
                merged.append(head)
            names[head].append(name)
        else:
            merged.append(statement)
    return [f"{m} import {', '.join(names[m])}" if m in names else m for m in merged]


def _is_relative(node: cst.BaseStatement) -> bool:
    return isinstance(node, cst.SimpleStatementLine) and any(
        isinstance(small, cst.ImportFrom) and small.relative for small in node.body)


#: ruff format's (and black's) default line length: a longer import is written as they write it.
LINE_LENGTH = 88


def _wrapped(statement: str) -> str:
    """``from a import b`` over the line length as ruff format writes it."""
    head, sep, name = statement.partition(" import ")
    if len(statement) <= LINE_LENGTH or not head.startswith("from ") or not sep:
        return statement
    return f"{head} import (\n    {name},\n)"


def _is_import(node: cst.BaseStatement) -> bool:
    return isinstance(node, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in node.body)
