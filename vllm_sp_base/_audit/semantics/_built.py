"""Who is built: a class that the audited tree only ever names as a base (and
in imports) is never instantiated on its own; it is checked through the
classes that are.

Any other mention counts as "may be built": a call, a registry entry, a
string that names it (``"module:Class"``, ``__all__``), an ``isinstance``,
a re-export from a package's ``__init__.py``. A leaf class is always built.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable

#: Past this many files that spell the name, it is taken to be built (a name
#: that common is used somewhere) rather than parse them all.
MAX_FILES = 40


def only_a_base(name: str, texts: Iterable[tuple[str, bytes]]) -> bool:
    """Whether every mention of ``name`` in ``texts`` ((path, bytes) of each
    audited file) is a base in a class header, an ``__init__`` run on another
    class's instance (``Name.__init__(self, ...)``, a helper), an import, or
    its own definition, and at least one is a base or such a call."""
    spelled = name.encode()
    word = re.compile(rb"(?<!\w)" + re.escape(spelled) + rb"(?!\w)")
    # A call or a quoted name, anywhere (a comment too): built, no parse needed.
    built = re.compile(rb"(?<!class )(?<![\w])" + re.escape(spelled) + rb"\s*\(|[\"':]" + re.escape(spelled) + rb"[\"']")
    files: list[tuple[str, bytes]] = []
    for path, data in texts:
        if spelled in data and word.search(data):
            if built.search(data) or len(files) == MAX_FILES:
                return False
            files.append((path, data))
    as_base = False
    for path, data in files:
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        uses = _Uses(name, exports=os.path.basename(path) == "__init__.py")
        uses.visit(tree)
        if uses.other:
            return False
        as_base |= uses.as_base or uses.init_run
    return as_base


class _Uses(ast.NodeVisitor):
    def __init__(self, name: str, exports: bool) -> None:
        self.name = name
        self.exports = exports  # a package's __init__.py: what it imports, it exports
        self.as_base = False
        self.init_run = False  # ``Name.__init__(self, ...)``: its code runs, no Name is built
        self.other = False
        self.inside = 0  # in the class's own body: its own ``Name.__init__(self)`` is no helper use

    def _names(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id == self.name
        if isinstance(node, ast.Attribute):
            return node.attr == self.name
        return False

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if self._names(base):
                # ``class B(B)`` derives from the B bound before: no use of the last one.
                self.as_base |= node.name != self.name or not isinstance(base, ast.Name)
            else:
                self.visit(base)
        for item in [*node.keywords, *node.decorator_list]:
            self.visit(item)
        own = node.name == self.name
        self.inside += own
        for item in node.body:
            self.visit(item)
        self.inside -= own

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
        if node.attr == "__init__" and isinstance(node.value, ast.Name) and node.value.id == self.name:
            self.init_run |= not self.inside
            self.other |= bool(self.inside)
            return
        self.other |= node.attr == self.name
        self.visit(node.value)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and self.name in node.value:
            self.other |= re.search(rf"(?<!\w){re.escape(self.name)}(?!\w)", node.value) is not None

    def visit_Import(self, node: ast.Import) -> None:
        self.other |= self.exports and any(a.name.rsplit(".", 1)[-1] == self.name for a in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.other |= self.exports and any(a.name == self.name for a in node.names)
