"""Attributes the project sets from outside a class: every place that builds
it (``probe = Probe.__new__(Probe)``, ``runner = Runner(cfg)``) then assigns
``probe.config = ...`` in the same function. An instance built there has the
attribute whatever its ``__init__`` skipped; where every build of the class is
such a place, a read of it after construction cannot fail.

A call of one of the class's own factories (``Hooked.from_linear(m)``, a
function in its body that builds by name, not through ``cls``) is no build
out of sight: its builds are read like any other; where the project gets
its instances only so and no factory builds one, nothing here builds it.
Any other mention of the class (passed as a value, named in a string, a
registry entry; not a docstring) may build it out of sight without the
assignment: then nothing is dropped.

And which functions bind or fill an attribute on an object not their own
``self`` (an owner's ``self.model.layers_to_capture = [...]``): what a list
construction left empty may hold by the time it is tested.

Like ``_built``, it reads source only, and only the files that spell the
name; each file is read into a ``Builds`` index once, whatever the number of
classes asked about it.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from vllm_sp_base._audit.semantics._parsed import parsed

#: Past this many files that spell the name, give up (a name that common is built elsewhere).
MAX_FILES = 40
#: Calls that name a class without building it.
_NOT_BUILDS = frozenset({"super", "isinstance", "issubclass", "type", "cast"})
_WORD = re.compile(r"[A-Za-z_]\w*")
#: Methods that fill a list in place.
_FILLS = frozenset({"append", "extend", "insert", "__setitem__", "__iadd__"})
#: Where a write sits outside any function.
MODULE_LEVEL = "<module>"


def set_on_every_build(name: str, attrs: set[str], texts: Iterable[tuple[str, bytes]]) -> set[str]:
    """Of ``attrs``, those that every build of the class ``name`` in ``texts``
    ((path, bytes) of each audited file) assigns on the built instance."""
    spelled = name.encode()
    spellings = {path: _spellings(data, spelled) for path, data in texts}
    files = [(path, data) for path, data in texts if spellings[path][0]]
    if not files or len(files) > MAX_FILES:
        return set()
    if any(spellings[path][1] for path, _ in files):
        return set()  # named in a string (a model registry's entry): built out of sight, unparsed
    assigned = set(attrs)  # what every build so far assigns
    every_build_seen = False  # or the project gets its instances from the class's own factories
    for path, data in files:
        builds = builds_in(path, data)
        if builds is None or name in builds.elsewhere:
            return set()
        every_build_seen |= name in builds.through_factory
        for found in builds.assigned.get(name, ()):
            assigned &= found
            every_build_seen = True
    return assigned if every_build_seen else set()


_IDENTIFIER = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_QUOTES = frozenset(b"\"'")


def _spellings(data: bytes, spelled: bytes) -> tuple[bool, bool]:
    """Whether ``data`` spells the identifier ``spelled`` as a word, and
    whether as a whole quoted string or its last dotted part (``"Name"``,
    ``"pkg.mod:Name"``). Byte searches, not a regular expression: a pattern
    that looks behind is matched position by position, ~100x slower."""
    word = quoted = False
    at = data.find(spelled)
    while at >= 0:
        end = at + len(spelled)
        if (at == 0 or data[at - 1] not in _IDENTIFIER) and (end == len(data) or data[end] not in _IDENTIFIER):
            word = True
            if end < len(data) and data[end] in _QUOTES:
                start = at
                while start > 0 and (data[start - 1] in _IDENTIFIER or data[start - 1] in b".:"):
                    start -= 1
                if start > 0 and data[start - 1] in _QUOTES and (start == at or data[at - 1] in b".:"):
                    return True, True
        at = data.find(spelled, end)
    return word, quoted


@dataclass
class Builds:
    """One module, read once: for each class name it builds into a variable
    (``v = Name(...)``, ``v = Name.__new__(...)``), the attributes each such
    build's function then assigns on ``v``; and every name mentioned in a way
    that may build it out of sight (passed as a value, named in a string)."""

    assigned: dict[str, list[frozenset[str]]] = field(default_factory=dict)
    elsewhere: set[str] = field(default_factory=set)
    through_factory: set[str] = field(default_factory=set)  # ``Name.from_x(...)`` called


@functools.lru_cache(maxsize=256)
def builds_in(path: str, data: bytes) -> Builds | None:
    """``data``'s ``Builds``; None where it does not parse. Cached: a file is
    asked about once per class with a finding that it names."""
    tree = parsed(data)
    if tree is None:
        return None
    found = Builds()
    followed: set[int] = set()  # mentions that are no build out of sight
    factories: dict[str, frozenset[str]] = {}  # class -> its functions that build by name only
    scopes: list[list[ast.stmt]] = [tree.body]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scopes.append(node.body)
            followed.update(id(n) for n in _annotations(node))
        elif isinstance(node, ast.ClassDef):
            followed.update(id(base) for base in node.bases)
            factories[node.name] = frozenset(
                item.name for item in node.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _builds_its_own(item))
        elif isinstance(node, ast.AnnAssign):
            followed.update(id(n) for n in ast.walk(node.annotation))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _NOT_BUILDS:
            followed.update(id(n) for arg in node.args for n in ast.walk(arg))
    for body in scopes:
        _scope(body, found, followed)
    for node in ast.walk(tree):  # a parent before its children
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            followed.add(id(node.value))  # a docstring names, it builds nothing
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.attr in factories.get(node.value.id, ())):
            followed.add(id(node.value))  # ``Name.from_x(...)``: its builds are in its body, read above
            found.through_factory.add(node.value.id)
        if isinstance(node, ast.Name) and id(node) not in followed:
            found.elsewhere.add(node.id)
        elif isinstance(node, ast.Attribute) and id(node) not in followed:
            found.elsewhere.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in followed:
            found.elsewhere.update(_WORD.findall(node.value))
    return found


def _builds_its_own(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``function`` may build an instance of the class it is called on."""
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "__new__":
                func = func.value
            if ((isinstance(func, ast.Name) and func.id == "cls")
                    or (isinstance(func, ast.Attribute) and func.attr == "__class__")
                    or (isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type")):
                return True
    return False


def _built_class(node: ast.expr | None) -> str | None:
    """The class ``Name(...)`` or ``Name.__new__(...)`` builds."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "__new__":
        func = func.value
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _scope(body: list[ast.stmt], found: Builds, followed: set[int]) -> None:
    """A function's (or the module's) statements, in order: each variable a
    build is assigned to, and what is assigned on it afterwards."""
    built: dict[str, tuple[str, set[str]]] = {}  # variable -> (class, attributes assigned since)

    def close(variable: str) -> None:
        name, attrs = built.pop(variable)
        found.assigned.setdefault(name, []).append(frozenset(attrs))

    for node in in_scope(body):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in built:
                    built[target.value.id][1].add(target.attr)
            name = _built_class(node.value)
            if name is not None and len(targets) == 1 and isinstance(targets[0], ast.Name):
                call = node.value
                assert isinstance(call, ast.Call)
                func = call.func
                followed.update({id(func), id(getattr(func, "value", None))})
                followed.update(id(arg) for arg in call.args[:1])  # ``Name.__new__(Name)``
                if isinstance(func, ast.Attribute) and func.attr == "__new__":
                    followed.add(id(getattr(func.value, "value", None)))
                if targets[0].id in built:  # the name built again: the first build is complete
                    close(targets[0].id)
                built[targets[0].id] = (name, set())
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
            and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id in built
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
        ):
            built[node.args[0].id][1].add(node.args[1].value)
    for variable in list(built):
        close(variable)


def in_scope(body: list[ast.stmt]) -> list[ast.AST]:
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


def filled_from_outside(attr: str, texts: Iterable[tuple[str, bytes]]) -> frozenset[str] | None:
    """The functions in ``texts`` ((path, bytes) of the audited files that
    spell ``attr``) that bind or fill ``x.attr`` where ``x`` is not their own
    ``self`` (``MODULE_LEVEL`` for a module's statements); None where that
    cannot be told (a file that does not parse, too many files)."""
    files = list(texts)
    if len(files) > MAX_FILES:
        return None
    found: set[str] = set()
    for path, data in files:
        writers = _writers_in(path, data, attr)
        if writers is None:
            return None
        found |= writers
    return frozenset(found)


@functools.lru_cache(maxsize=256)
def _writers_in(path: str, data: bytes, attr: str) -> frozenset[str] | None:
    tree = parsed(data)
    if tree is None:
        return None
    scopes: list[tuple[str, list[ast.stmt]]] = [(MODULE_LEVEL, tree.body)]
    scopes += [(n.name, n.body) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return frozenset(name for name, body in scopes if any(_writes(node, attr) for node in in_scope(body)))


def _writes(node: ast.AST, attr: str) -> bool:
    """Whether ``node`` binds or fills ``attr`` of an object other than ``self``."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        return any(_foreign(t, attr) for target in targets for t in ast.walk(target))
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _FILLS:
            return _foreign(func.value, attr)
        if isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) >= 2:
            named = node.args[1]
            first = node.args[0]
            return (not (isinstance(named, ast.Constant) and named.value != attr)
                    and not (isinstance(first, ast.Name) and first.id == "self"))
    return False


def _foreign(node: ast.AST, attr: str) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == attr
            and not (isinstance(node.value, ast.Name) and node.value.id == "self"))
