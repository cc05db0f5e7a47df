"""A file's planned edits as new text, with libcst: everything else in the
file (formatting, comments) stays as it was."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

Positions = Mapping[cst.CSTNode, CodeRange]

from vllm_sp_base._audit.fix._edit import Edit
from vllm_sp_base._audit.fix._imports import top_package, with_imports


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
    first_party = top_package(edits[0].path) if edits else None
    module = module.with_changes(body=with_imports(new_body, imports, module, config, first_party))
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
