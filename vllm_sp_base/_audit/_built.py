"""Who is built: a private class (``_Name``: not exported) that the audited
tree only ever names as a base (and in imports) is never instantiated on its
own; it is checked through the classes that are.

Any other mention counts as "may be built": a call, a registry entry, a
string that names it (``"module:Class"``, ``__all__``), an ``isinstance``.
A leaf class is always built.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

#: Past this many files that spell the name, it is taken to be built (a name
#: that common is used somewhere) rather than parse them all.
MAX_FILES = 40


def only_a_base(name: str, texts: Iterable[bytes]) -> bool:
    """Whether ``name`` is private and every mention of it in ``texts`` is a
    base in a class header, an import, or its own definition, at least one a base.
    A public class may be built by code outside the tree."""
    if not name.startswith("_"):
        return False
    spelled = name.encode()
    word = re.compile(rb"(?<!\w)" + re.escape(spelled) + rb"(?!\w)")
    files = [data for data in texts if spelled in data and word.search(data)]
    if len(files) > MAX_FILES:
        return False
    as_base = False
    for data in files:
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        uses = _Uses(name)
        uses.visit(tree)
        if uses.other:
            return False
        as_base |= uses.as_base
    return as_base


class _Uses(ast.NodeVisitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.as_base = False
        self.other = False

    def _names(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id == self.name
        if isinstance(node, ast.Attribute):
            return node.attr == self.name
        return False

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if self._names(base):
                self.as_base = True
            else:
                self.visit(base)
        for item in [*node.keywords, *node.decorator_list, *node.body]:
            self.visit(item)

    def visit_Call(self, node: ast.Call) -> None:
        # type(name, (Base, Other), namespace): a class made at run time.
        bases = node.args[1] if len(node.args) == 3 else None
        if isinstance(node.func, ast.Name) and node.func.id == "type" and isinstance(bases, ast.Tuple):
            for base in bases.elts:
                if self._names(base):
                    self.as_base = True
                else:
                    self.visit(base)
            for item in [node.func, node.args[0], node.args[2], *node.keywords]:
                self.visit(item)
            return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        self.other |= node.id == self.name

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.other |= node.attr == self.name
        self.visit(node.value)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and self.name in node.value:
            self.other |= re.search(rf"(?<!\w){re.escape(self.name)}(?!\w)", node.value) is not None

    def visit_Import(self, node: ast.Import) -> None:
        pass

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        pass
