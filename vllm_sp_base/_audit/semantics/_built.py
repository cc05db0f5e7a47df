"""Who is built: a class that the audited tree only ever names as a base (and
in imports) is never instantiated on its own; it is checked through the
classes that are. Nor is a class of a template another file is generated
from (``generated_elsewhere``).

Any other mention counts as "may be built": a call, a registry entry, a
string that names it (``"module:Class"``, ``__all__``), an ``isinstance``,
a re-export from a package's ``__init__.py``. A leaf class is built, but for
one only ever stored on an instance under an attribute nothing reads
(``self.model_cls = Name`` where no code loads ``.model_cls``).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterable
from typing import TypeVar

from vllm_sp_base._audit.semantics._classes import ClassModel
from vllm_sp_base._audit.semantics._parsed import parsed
from vllm_sp_base._audit.semantics._project import ClassRef, Project
from vllm_sp_base._audit.summaries._summaries import python_name

#: Past this many files that spell the name, it is taken to be built (a name
#: that common is used somewhere) rather than parse them all.
MAX_FILES = 40


def only_a_base(
    name: str, texts: Iterable[tuple[str, bytes]], names_it: Callable[[str], bool] = lambda path: True,
) -> bool:
    """Whether every mention of ``name`` in ``texts`` ((path, bytes) of each
    audited file) is a base in a class header, an ``__init__`` run on another
    class's instance (``Name.__init__(self, ...)``, a helper), an import, or
    its own definition, and at least one is a base or such a call in a file
    where the name may be this class (``names_it(path)``: not another class
    of that name)."""
    spelled = name.encode()
    word = re.compile(rb"(?<!\w)" + re.escape(spelled) + rb"(?!\w)")
    built = _build_spelled(name)
    files: list[tuple[str, bytes]] = []
    for path, data in texts:
        if spelled in data and word.search(data):
            if built.search(data) or len(files) == MAX_FILES:
                return False
            files.append((path, data))
    found = _walked(_Uses, name, files)
    return found is not None and any((uses.as_base or uses.init_run) and names_it(path) for path, uses in found)


def called_by_name(name: str, texts: Iterable[tuple[str, bytes]]) -> bool:
    """Whether one of ``texts`` spells a call of ``name`` (``Name(...)``,
    ``module.Name(...)``), not its class header: the tree builds it itself."""
    spelled = name.encode()
    call = re.compile(rb"(?<!class )(?<!\w)" + re.escape(spelled) + rb"\s*\(")
    # The name's bytes found first (a literal search), the pattern tried only where they are.
    return any(spelled in data and call.search(data) for _, data in texts)


def method_called(name: str, texts: Iterable[tuple[str, bytes]]) -> bool:
    """Whether one of ``texts`` spells a call of a method ``name`` on some object (``x.name(...)``)."""
    call = re.compile(rb"\." + re.escape(name.encode()) + rb"\s*\(")
    return any(call.search(data) for _, data in texts)


Places = set[tuple[int, int]]  # (line, column) of name nodes in one file


def only_named_at(name: str, texts: Iterable[tuple[str, bytes]], allowed: Callable[[bytes, ast.Module], Places]) -> bool:
    """Whether every mention of ``name`` in ``texts`` (the audited files that
    spell it) is its definition, an import under its own name, a base in a
    class header, or one of the places ``allowed`` gives in that file: then
    nothing builds it out of sight. A string that names it (a registry), an
    import under another name, a file that does not parse, or more than
    ``MAX_FILES`` files: it may be built anywhere."""
    trees = parsed_texts(texts)
    if trees is None:
        return False
    for data, tree in trees:
        places = allowed(data, tree) | {
            (n.lineno, n.col_offset) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
            for base in c.bases for n in ast.walk(base) if isinstance(n, ast.expr)
        }
        for node in ast.walk(tree):
            if (((isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name))
                    and (node.lineno, node.col_offset) not in places):
                return False  # named as a value
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and name in node.value:
                return False
            if renamed(node, name):
                return False
    return True


def parsed_texts(texts: Iterable[tuple[str, bytes]]) -> list[tuple[bytes, ast.Module]] | None:
    """Each of ``texts`` (the files that spell a name) with its one parse;
    None where there are none, more than ``MAX_FILES``, or one does not
    parse: then what they do with the name cannot be told."""
    found = []
    for count, (_, data) in enumerate(texts, 1):
        tree = parsed(data) if count <= MAX_FILES else None
        if tree is None:
            return None
        found.append((data, tree))
    return found or None


def renamed(node: ast.AST, name: str) -> bool:
    """Whether ``node`` imports ``name`` under another name (``import ... as``):
    what uses it there is out of a search for the name."""
    return isinstance(node, (ast.Import, ast.ImportFrom)) and any(
        alias.name.rsplit(".", 1)[-1] == name and alias.asname not in (None, name) for alias in node.names)


#: Where a generated file says what it was generated from (its header).
_GENERATED_FROM = re.compile(rb"generated\s+from\s+(\S+)", re.IGNORECASE)
_HEADER = 4096


def generated_elsewhere(path: str, texts: Iterable[tuple[str, bytes]]) -> bool:
    """Whether a file beside ``path`` says in its header that it was
    generated from it (transformers' ``modular_*.py``: the package imports
    the ``modeling_*.py`` written from it, never the template itself).
    ``texts``: the audited files that spell the template's file name."""
    folder, name = os.path.split(path)
    for other, data in texts:
        if other != path and os.path.dirname(other) == folder:
            for match in _GENERATED_FROM.finditer(data[:_HEADER]):
                if os.path.basename(match.group(1).decode("utf-8", "replace").rstrip(".,;:")) == name:
                    return True
    return False


_U = TypeVar("_U", bound="_Uses")


def _walked(kind: type[_U], name: str, files: list[tuple[str, bytes]]) -> list[tuple[str, _U]] | None:
    """Each file's mentions of ``name`` (path, a ``kind`` walker); None where a
    file does not parse, is deeper than the walk goes (the summary says so),
    or mentions it in a way that may build it: then it may be anything."""
    found = []
    for path, data in files:
        tree = parsed(data)
        if tree is None:
            return None
        uses = kind(name, exports=os.path.basename(path) == "__init__.py")
        try:
            uses.visit(tree)
        except RecursionError:
            return None
        if uses.other:
            return None
        found.append((path, uses))
    return found


def _build_spelled(name: str) -> re.Pattern[bytes]:
    """A call or a quoted name, anywhere (a comment too): built, no parse needed."""
    spelled = re.escape(name.encode())
    return re.compile(rb"(?<!class )(?<![\w])" + spelled + rb"\s*\(|[\"':]" + spelled + rb"[\"']")


class _Uses(ast.NodeVisitor):
    def __init__(self, name: str, exports: bool) -> None:
        self.name = name
        self.exports = exports  # a package's __init__.py: what it imports, it exports
        self.as_base = False
        self.init_run = False  # ``Name.__init__(self, ...)``: its code runs, no Name is built
        self.other = False
        self.inside = 0  # in the class's own body: its own ``Name.__init__(self)`` is no helper use
        self.functions: dict[str, ast.FunctionDef] = {}

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

    def visit_Module(self, node: ast.Module) -> None:
        self.functions = _module_functions(node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        function = self.functions.get(node.func.id) if isinstance(node.func, ast.Name) else None
        if function is not None and any(self._names(arg) for arg in node.args):
            # ``register(tuple, Methods)`` where ``register`` only looks attributes
            # up on that parameter (``getattr(methods, name)``): nothing is built.
            for index, arg in enumerate(node.args):
                if not (isinstance(arg, ast.Name) and arg.id == self.name and _only_inspected(function, index)):
                    self.visit(arg)
            for keyword in node.keywords:
                self.visit(keyword)
            return
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

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring, or any string statement: used by nothing, it builds nothing
        self.visit(node.value)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and self.name in node.value:
            self.other |= re.search(rf"(?<!\w){re.escape(self.name)}(?!\w)", node.value) is not None

    def visit_Import(self, node: ast.Import) -> None:
        self.other |= self.exports and any(a.name.rsplit(".", 1)[-1] == self.name for a in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.other |= self.exports and any(a.name == self.name for a in node.names)


#: Calls that look an attribute up on their first argument, and no more.
_INSPECTS = frozenset({"getattr", "hasattr", "dir", "vars"})


def _module_functions(module: ast.Module) -> dict[str, ast.FunctionDef]:
    """The module's functions by name, each defined once at its top level."""
    found: dict[str, ast.FunctionDef] = {}
    twice: set[str] = set()
    for statement in module.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if statement.name in found:
                twice.add(statement.name)
            if isinstance(statement, ast.FunctionDef):
                found[statement.name] = statement
    return {name: function for name, function in found.items() if name not in twice}


def _only_inspected(function: ast.FunctionDef, index: int) -> bool:
    """Whether ``function`` uses its ``index``-th positional parameter only as
    the object ``getattr``, ``hasattr``, ``dir`` or ``vars`` look into: a
    class passed there is read, never called."""
    parameters = [*function.args.posonlyargs, *function.args.args]
    if index >= len(parameters) or function.decorator_list:
        return False
    name = parameters[index].arg
    looked_into: set[int] = set()
    uses: list[ast.Name] = []
    for node in ast.walk(function):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _INSPECTS
                and node.args and isinstance(node.args[0], ast.Name)):
            looked_into.add(id(node.args[0]))
        elif isinstance(node, ast.Name) and node.id == name:
            uses.append(node)
        elif isinstance(node, ast.arg) and node.arg == name and node is not parameters[index]:
            return False  # a nested function's parameter of that name: another binding
    return all(isinstance(use.ctx, ast.Load) and id(use) in looked_into for use in uses)


#: Who may hold a class's instance as ``self``: (path, name) of a class that
#: stores an attribute on ``self``, and the attribute -> the names of its MRO
#: and of the classes derived from it; None where that cannot be told.
Family = Callable[[str, str, str], "frozenset[str] | None"]


def stored_where_nothing_reads(
    name: str, texts: Iterable[tuple[str, bytes]],
    spelling: Callable[[str], list[tuple[str, bytes]]], family: Family,
) -> bool:
    """Whether every mention of the class ``name`` in ``texts`` (the audited
    files that spell it) but its definition and imports is the value of
    ``self.<attr> = name`` in a class's method, and no audited file
    (``spelling``: those that spell a word) may load such an attribute of
    that class's instances: stored where no one looks, the class is never
    built (sglang 0.5.9's ``self.model_cls = MistralLarge3Model``, which the
    parent ``__init__`` never reads). A load on ``self`` in a class outside
    the storing class's family reads another object; any other load counts."""
    files = list(texts)
    if not files or len(files) > MAX_FILES:
        return False
    # Byte searches first, as ``only_a_base``'s: most classes are never
    # stored (no ``self.a = Name``), and a call or a quoted name is a build.
    spelled = re.escape(name.encode())
    store = re.compile(rb"self\.\w+\s*=\s*" + spelled + rb"(?!\w)")
    if not any(b"= " + name.encode() in data and store.search(data) for _, data in files):
        return False
    built = _build_spelled(name)
    if any(built.search(data) for _, data in files):
        return False
    found = _walked(_Stores, name, files)
    if found is None:
        return False
    stores = {(path, owner, attr) for path, uses in found for owner, attr in uses.stored}
    if not stores:
        return False
    for path, owner, attr in stores:
        related = family(path, owner, attr)
        if related is None or _loaded(attr, spelling(attr), related):
            return False
    return True


class _Stores(_Uses):
    """The mentions ``_Uses`` sees, less ``self.<attr> = Name`` in a class's
    method (``stored``: (class, attribute)); a base or a helper ``__init__``
    counts as another use (what ``only_a_base`` is for)."""

    def __init__(self, name: str, exports: bool) -> None:
        super().__init__(name, exports)
        self.stored: set[tuple[str, str]] = set()
        self.classes: list[str] = []

    def visit_Assign(self, node: ast.Assign) -> None:
        target = node.targets[0] if len(node.targets) == 1 else None
        if (self.classes and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "self" and isinstance(node.value, ast.Name) and node.value.id == self.name):
            self.stored.add((self.classes[-1], target.attr))
            return
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node.name)
        super().visit_ClassDef(node)
        self.classes.pop()
        self.other |= self.as_base or self.init_run


def _loaded(attr: str, texts: list[tuple[str, bytes]], related: frozenset[str]) -> bool:
    """Whether a file of ``texts`` may read ``attr`` of an instance of a
    class named in ``related``: ``self.attr`` in one of them, ``x.attr`` on
    any other object, or ``attr`` as a string or dotted name (``getattr(x,
    "attr")``)."""
    if len(texts) > MAX_FILES:
        return True
    for _, data in texts:
        tree = parsed(data)
        if tree is None:
            return True
        stack: list[tuple[ast.AST, str | None]] = [(tree, None)]
        while stack:
            node, owner = stack.pop()
            if isinstance(node, ast.ClassDef):
                owner = node.name
            elif isinstance(node, ast.Attribute) and node.attr == attr and not isinstance(node.ctx, ast.Store):
                on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
                if not on_self or owner is None or owner in related:
                    return True
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and attr in node.value.split("."):
                return True  # ``getattr(x, "attr")``, ``attrgetter("a.attr")``; not prose
            stack.extend((child, owner) for child in ast.iter_child_nodes(node))
    return False


def family_of(
    project: Project, module: str, owner: str, spelling: Callable[[str], list[tuple[str, bytes]]],
    attr: str,
) -> frozenset[str] | None:
    """The names of the classes whose ``self`` may be an instance of the
    class ``owner`` of ``module``: its MRO (each entry's code outside the
    audited files must not spell ``attr``: no search sees it) and the audited
    classes derived from it; None where that cannot be told."""
    target = project.resolve(module, owner)
    if not isinstance(target, ClassRef):
        return None
    names: set[str] = set()
    searched = {path for path, _ in spelling(attr)}
    for entry in ClassModel(project, target).mro:
        if not isinstance(entry, ClassRef):
            return None  # code out of sight may read it
        names.add(python_name(entry.name))
        located = project.module_file(entry.module)
        path = located[0] if located else None
        data = project.source(path) if path else None
        if data is None or (attr.encode() in data and path not in searched):
            return None
    derived, todo = {python_name(target.name)}, [python_name(target.name)]
    while todo:
        base = todo.pop()
        for _, data in spelling(base):
            tree = parsed(data)
            if tree is None:
                return None
            for node in ast.walk(tree):
                if (isinstance(node, ast.ClassDef) and node.name not in derived
                        and any(_base_name(b) == base for b in node.bases)):
                    if len(derived) == MAX_FILES:
                        return None
                    derived.add(node.name)
                    todo.append(node.name)
    return frozenset(names | derived)


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None
