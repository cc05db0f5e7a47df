"""Where a fix's new import goes, as ruff's isort rule (I001, its defaults)
puts it: merged into an existing ``from M import ...`` of the same module,
else into its section (future, standard library, third party, first party,
local folder), plain ``import`` lines before ``from`` lines, each sorted by
module; a section the file lacks is made, a blank line around it. So a file
that passed I001 before a fix passes it after."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import libcst as cst

#: ruff format's (and black's) default line length: a longer import is written as they write it.
LINE_LENGTH = 88
_SECTIONS = ("future", "standard-library", "third-party", "first-party", "local-folder")


def top_package(path: str) -> str | None:
    """The top-level package a file belongs to (its first-party root), if any."""
    folder = os.path.dirname(os.path.abspath(path))
    top = None
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        top = os.path.basename(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return top


def _module_of(statement: cst.SimpleStatementLine) -> tuple[str, int, bool]:
    """(module, relative level, is a ``from`` import) of an import line."""
    small = statement.body[0]
    if isinstance(small, cst.ImportFrom):
        module = cst.Module([]).code_for_node(small.module) if small.module is not None else ""
        return module, len(small.relative), True
    assert isinstance(small, cst.Import)
    return cst.Module([]).code_for_node(small.names[0].name), 0, False


def _section(module: str, level: int, first_party: str | None) -> int:
    top = module.split(".")[0]
    if level:
        return _SECTIONS.index("local-folder")
    if top == "__future__":
        return _SECTIONS.index("future")
    if top in sys.stdlib_module_names:
        return _SECTIONS.index("standard-library")
    if first_party is not None and top == first_party:
        return _SECTIONS.index("first-party")
    return _SECTIONS.index("third-party")


def _key(statement: cst.SimpleStatementLine, first_party: str | None) -> tuple[int, bool, str]:
    module, level, is_from = _module_of(statement)
    return _section(module, level, first_party), is_from, "." * level + module.lower()


def is_import(node: cst.BaseStatement) -> bool:
    return isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(
        node.body[0], (cst.Import, cst.ImportFrom))


def _name_key(name: str) -> tuple[int, str]:
    """isort's order-by-type: CONSTANTS, then Classes, then the rest."""
    bare = name.split(" as ")[0]
    kind = 0 if bare.isupper() and len(bare) > 1 else 1 if bare[:1].isupper() else 2
    return kind, bare.lower()


def wrapped(statement: str) -> str:
    """``from a import b, c`` over the line length as ruff format writes it."""
    head, sep, names = statement.partition(" import ")
    if len(statement) <= LINE_LENGTH or not head.startswith("from ") or not sep:
        return statement
    return f"{head} import (\n" + "".join(f"    {name},\n" for name in names.split(", ")) + ")"


def _merge(node: cst.SimpleStatementLine, names: list[str], config: cst.PartialParserConfig,
           module: cst.Module) -> cst.SimpleStatementLine | None:
    """``node`` (``from M import ...``) with ``names`` added, sorted; None where
    it cannot take them (a star, a comment inside it)."""
    small = node.body[0]
    code = module.code_for_node(node)
    if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar) or "#" in code:
        return None
    have = [module.code_for_node(alias).strip().rstrip(",").strip() for alias in small.names]
    merged = sorted(dict.fromkeys([*have, *names]), key=_name_key)
    head = code.strip().partition(" import ")[0]
    rebuilt = cst.parse_statement(wrapped(f"{head} import {', '.join(merged)}") + "\n", config)
    assert isinstance(rebuilt, cst.SimpleStatementLine)
    return rebuilt.with_changes(leading_lines=node.leading_lines)


def with_imports(body: list[cst.BaseStatement], imports: Sequence[str], module: cst.Module,
                 config: cst.PartialParserConfig, first_party: str | None) -> list[cst.BaseStatement]:
    """``body`` with each of ``imports`` not already there, placed as above."""
    body = list(body)
    present = {module.code_for_node(node).strip() for node in body if is_import(node)}
    for text in dict.fromkeys(i for i in imports if i not in present):
        new = cst.parse_statement(wrapped(text) + "\n", config)
        assert isinstance(new, cst.SimpleStatementLine)
        head, _, name = text.partition(" import ")
        same = next((i for i, node in enumerate(body) if is_import(node) and head.startswith("from ")
                     and module.code_for_node(node).strip().partition(" import ")[0] == head), None)
        if same is not None:
            node = body[same]
            merged = _merge(node, [name], config, module) if isinstance(node, cst.SimpleStatementLine) else None
            if merged is not None:
                body[same] = merged
                continue
        body = _placed(body, new, first_party)
    return body


def _placed(body: list[cst.BaseStatement], new: cst.SimpleStatementLine,
            first_party: str | None) -> list[cst.BaseStatement]:
    start = 1 if body and _docstring(body[0]) else 0
    block = start
    while block < len(body) and is_import(body[block]):
        block += 1
    lines = [node for node in body[start:block] if isinstance(node, cst.SimpleStatementLine)]
    key = _key(new, first_party)
    blank = [cst.EmptyLine(indent=False)]
    following = body[start] if start < len(body) else None
    if not lines:  # the first import of the file: after the docstring
        new = new.with_changes(leading_lines=blank if start else [])
        if isinstance(following, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            body[start] = following.with_changes(leading_lines=[*blank, *blank])
        return body[:start] + [new] + body[start:]
    keys = [_key(line, first_party) for line in lines]
    offset = next((n for n, k in enumerate(keys) if k > key), len(lines))
    at = start + offset
    after = lines[offset] if offset < len(lines) else None
    if any(k[0] == key[0] for k in keys[:offset]):  # inside its section: no blank line before it
        new = new.with_changes(leading_lines=[])
    elif after is not None and _key(after, first_party)[0] == key[0]:
        # The first of its section: it takes the section's opening lines.
        new = new.with_changes(leading_lines=after.leading_lines)
        body[at] = after.with_changes(leading_lines=[])
    elif offset == 0 and after is not None:  # a section of its own, first in the file
        new = new.with_changes(leading_lines=after.leading_lines)
        body[at] = after.with_changes(leading_lines=blank)
    else:  # a section of its own after others
        new = new.with_changes(leading_lines=blank)
    return body[:at] + [new] + body[at:]


def _docstring(node: cst.BaseStatement) -> bool:
    return (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1
            and isinstance(node.body[0], cst.Expr)
            and isinstance(node.body[0].value, cst.SimpleString | cst.ConcatenatedString))
