"""Attributes the project sets from outside a class: every place that builds
it (``probe = Probe.__new__(Probe)``, ``runner = Runner(cfg)``) then assigns
``probe.config = ...`` in the same function. An instance built there has the
attribute whatever its ``__init__`` skipped; where every build of the class is
such a place, a read of it after construction cannot fail.

Any other mention of the class (passed as a value, named in a string, a
registry entry) may build it elsewhere without the assignment: then nothing is
dropped. Like ``_built``, it reads source only, and only the files that spell
the class's name.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

#: Past this many files that spell the name, give up (a name that common is built elsewhere).
MAX_FILES = 40


def set_on_every_build(name: str, attrs: set[str], texts: Iterable[tuple[str, bytes]]) -> set[str]:
    """Of ``attrs``, those that every build of the class ``name`` in ``texts``
    ((path, bytes) of each audited file) assigns on the built instance."""
    spelled = name.encode()
    word = re.compile(rb"(?<!\w)" + re.escape(spelled) + rb"(?!\w)")
    # A byte search first: the regular expression only where the name is spelled.
    files = [(path, data) for path, data in texts if spelled in data and word.search(data)]
    if not files or len(files) > MAX_FILES:
        return set()
    quoted = re.compile(rb"[\"'](?:[\w.]*[.:])?" + re.escape(spelled) + rb"[\"']")
    if any(quoted.search(data) for _, data in files):
        return set()  # named in a string (a model registry's entry): built out of sight, unparsed
    assigned: set[str] | None = None  # intersection over every build
    for path, data in files:
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return set()
        builds = _Builds(name, attrs)
        builds.visit(tree)
        if builds.elsewhere:
            return set()
        for found in builds.sets:
            assigned = found if assigned is None else assigned & found
    return assigned or set()


def _names_class(node: ast.expr, name: str) -> bool:
    return (isinstance(node, ast.Name) and node.id == name) or (
        isinstance(node, ast.Attribute) and node.attr == name
    )


class _Builds(ast.NodeVisitor):
    """One module: for each build of the class, the attributes its function
    assigns on the built instance afterwards; ``elsewhere``: a mention that
    may build it out of sight."""

    def __init__(self, name: str, attrs: set[str]) -> None:
        self.name = name
        self.attrs = attrs
        self.sets: list[set[str]] = []
        self.elsewhere = False

    def _scope(self, body: list[ast.stmt]) -> None:
        """A function's (or the module's) statements, in order."""
        built: dict[str, set[str]] = {}  # variable -> attributes assigned on it since
        for node in _in_scope(body):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                self._assignment(node, built)
            elif (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id in built
                and isinstance(node.args[1], ast.Constant) and node.args[1].value in self.attrs
            ):
                built[node.args[0].id].add(str(node.args[1].value))
        self.sets += built.values()

    def _assignment(self, node: ast.Assign | ast.AnnAssign, built: dict[str, set[str]]) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value
        for target in targets:
            if (
                isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id in built and target.attr in self.attrs
            ):
                built[target.value.id].add(target.attr)
        if value is not None and self._is_build(value) and len(targets) == 1 and isinstance(targets[0], ast.Name):
            if targets[0].id in built:  # the name built again: the first build is complete
                self.sets.append(built[targets[0].id])
            built[targets[0].id] = set()

    def _is_build(self, node: ast.expr) -> bool:
        """``Name(...)`` or ``Name.__new__(...)``."""
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        return _names_class(func, self.name) or (
            isinstance(func, ast.Attribute) and func.attr == "__new__" and _names_class(func.value, self.name)
        )

    def visit_Module(self, node: ast.Module) -> None:
        self._scope(node.body)
        followed: set[int] = set()  # mentions that are no build out of sight
        for found in ast.walk(node):
            if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._scope(found.body)
                followed.update(id(n) for n in _annotations(found))
            elif isinstance(found, ast.ClassDef):
                followed.update(id(base) for base in found.bases)
            elif isinstance(found, ast.AnnAssign):
                followed.update(id(n) for n in ast.walk(found.annotation))
            elif isinstance(found, ast.Call) and isinstance(found.func, ast.Name) and found.func.id in _NOT_BUILDS:
                followed.update(id(n) for arg in found.args for n in ast.walk(arg))
            if isinstance(found, (ast.Assign, ast.AnnAssign)) and found.value is not None and self._is_build(found.value):
                targets = found.targets if isinstance(found, ast.Assign) else [found.target]
                if len(targets) == 1 and isinstance(targets[0], ast.Name):
                    call = found.value
                    assert isinstance(call, ast.Call)
                    followed.update({id(call.func), id(getattr(call.func, "value", None))})
                    followed.update(id(arg) for arg in call.args[:1])  # ``Name.__new__(Name)``
        quoted = re.compile(rf"(?<!\w){re.escape(self.name)}(?!\w)")
        self.elsewhere = any(
            (isinstance(found, ast.expr) and _names_class(found, self.name) and id(found) not in followed)
            or (isinstance(found, ast.Constant) and isinstance(found.value, str) and quoted.search(found.value))
            for found in ast.walk(node)
        )


#: Calls that name a class without building it.
_NOT_BUILDS = frozenset({"super", "isinstance", "issubclass", "type", "cast"})


def _in_scope(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of ``body`` in source order, not those of the functions,
    lambdas and classes it defines (scopes of their own)."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return found


def _annotations(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    notes = [a.annotation for a in every if a is not None and a.annotation is not None]
    if function.returns is not None:
        notes.append(function.returns)
    return [n for note in notes for n in ast.walk(note)]
