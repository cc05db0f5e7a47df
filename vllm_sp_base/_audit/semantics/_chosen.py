"""A class a factory chooses by one value of a setting. sglang chooses its
speculative-decoding worker with a method of the algorithm's enum::

    def create_worker(self, server_args):
        if self.is_eagle():
            return EAGLEWorker
        elif self.is_standalone():
            return StandaloneWorker

and the worker's own construction converts the same setting again
(``self.speculative_algorithm = SpeculativeAlgorithm.from_string(
server_args.speculative_algorithm)``). Where every conversion to the enum in
the audited files reads that one setting, the value is the server's one
choice: a ``StandaloneWorker`` holds STANDALONE, and the enum's predicates on
it are decided (``self.speculative_algorithm.is_eagle3()`` is False).

Read from source, only for an attribute whose predicate a finding's way tests
(requirements spelled ``attr.predicate()``). Any mention of the class but its
definition, imports, a base and the factory's ``return`` may build it out of
sight: then nothing is decided.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from vllm_sp_base._audit.semantics._bound import bound_value
from vllm_sp_base._audit.semantics._built import only_named_at, parsed_texts, renamed
from vllm_sp_base._audit.semantics._classes import ClassModel
from vllm_sp_base._audit.semantics._construction import Construction
from vllm_sp_base._audit.semantics._parsed import class_node, module_source
from vllm_sp_base._audit.semantics._project import ClassRef
from vllm_sp_base._audit.summaries._conditions import PREDICATE
from vllm_sp_base._audit.summaries._events import Known
from vllm_sp_base._audit.summaries._summaries import python_name

#: What an enum class derives from (``enum.Enum``, ``IntEnum``, ``StrEnum``).
_ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum"})

Members = frozenset[str]


def chosen_facts(
    model: ClassModel, built: Construction, tested: set[str], not_run: set[tuple[int, str]],
    spelling: Callable[[str], list[tuple[str, bytes]]] | None,
) -> Known:
    """What the factory's choice decides of the predicates ``tested`` (spelled
    ``attr.predicate()``) on an instance of the class: ``true`` where every
    member the factory chooses the class for passes the predicate, ``false``
    where none does."""
    asked: dict[str, set[str]] = {}
    for name in tested:
        if name.endswith(PREDICATE) and name.count(".") == 1:
            attr, predicate = name[:-len(PREDICATE)].split(".")
            asked.setdefault(attr, set()).add(predicate)
    first = model.mro[0]
    if not asked or spelling is None or built.sets_any or not isinstance(first, ClassRef):
        return {}
    facts: Known = {}
    for attr, predicates in asked.items():
        converted = _converted(model, built, attr, not_run)
        if converted is None:
            continue
        ref, setting = converted
        node = class_node(model.project, ref)
        source = module_source(model.project, ref.module)
        enum = _Enum.read(node, source) if node is not None and source is not None else None
        if enum is None or not _one_setting(enum.node.name, setting, spelling(enum.node.name)):
            continue
        chosen = _chosen_for(python_name(first.name), enum, spelling(python_name(first.name)))
        if not chosen:
            continue
        for predicate in predicates:
            holds = enum.predicate(predicate)
            if holds is not None and (chosen <= holds or not chosen & holds):
                facts[f"{attr}.{predicate}{PREDICATE}"] = [("true" if chosen <= holds else "false", "")]
    return facts


def _converted(
    model: ClassModel, built: Construction, attr: str, not_run: set[tuple[int, str]],
) -> tuple[ClassRef, str] | None:
    """(the enum, the setting's name) where construction binds ``attr`` once,
    on no condition, to a conversion of a setting (``E.from_string(args.name)``,
    ``E(args.name)``) and no other method of the class binds it."""
    found = bound_value(model, built, attr, not_run)
    if found is None:
        return None
    owner, _, value = found
    if not isinstance(value, ast.Call) or len(value.args) != 1 or value.keywords:
        return None
    func, argument = value.func, value.args[0]
    spelled_enum = func.value if isinstance(func, ast.Attribute) else func
    if not (isinstance(spelled_enum, ast.Name) and isinstance(argument, ast.Attribute)):
        return None
    enum = model.project.resolve(owner.module, spelled_enum.id)
    return (enum, argument.attr) if isinstance(enum, ClassRef) else None


def _one_setting(enum: str, setting: str, texts: list[tuple[str, bytes]]) -> bool:
    """Whether every conversion to the enum in ``texts`` (a call of it or of
    one of its class methods, a lookup ``E[...]``) reads the setting named
    ``setting`` (``server_args.speculative_algorithm``,
    ``get_global_server_args().speculative_algorithm``): one value per server."""
    trees = parsed_texts(texts)
    if trees is None:
        return False
    for _, tree in trees:
        for node in ast.walk(tree):
            if renamed(node, enum):
                return False  # used under another name: its conversions are out of sight
            if isinstance(node, ast.Call):
                func = node.func.value if isinstance(node.func, ast.Attribute) else node.func
                if not (isinstance(func, ast.Name) and func.id == enum):
                    continue
                arguments = [*node.args, *(k.value for k in node.keywords)]
                if not (len(arguments) == 1 and isinstance(arguments[0], ast.Attribute)
                        and arguments[0].attr == setting):
                    return False
            elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == enum
                  and not isinstance(node.slice, ast.Constant)):
                return False
    return True


class _Enum:
    """An enum's members and the predicates its methods compute of ``self``
    (``return self == E.EAGLE3``, ``return self.is_eagle() or self.is_standalone()``)."""

    def __init__(self, node: ast.ClassDef, members: Members, source: bytes) -> None:
        self.node = node
        self.source = source  # its module's bytes: where ``chosen``'s positions are
        self.members = members
        self._methods = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
        self._predicates: dict[str, Members | None] = {}

    @classmethod
    def read(cls, node: ast.ClassDef, source: bytes) -> _Enum | None:
        """The enum ``node`` defines; None where it is no plain enum (another
        base, members that alias each other)."""
        if not any((b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else None)
                   in _ENUM_BASES for b in node.bases):
            return None
        names: list[str] = []
        values: list[str] = []
        for statement in node.body:
            if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name) and not statement.targets[0].id.startswith("_")):
                names.append(statement.targets[0].id)
                value = statement.value
                if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "auto"):
                    values.append(ast.dump(value))  # two equal values: the second is an alias of the first
        if not names or len(set(values)) != len(values):
            return None
        return cls(node, frozenset(names), source)

    def predicate(self, name: str) -> Members | None:
        """The members for which ``self.<name>()`` is true; None where that is
        not read from a lone ``return`` of comparisons with members."""
        if name not in self._predicates:
            self._predicates[name] = None  # asked again while being read: unknown
            method = self._methods.get(name)
            body = [s for s in method.body if not _docstring(s)] if method is not None else []
            if (method is not None and len(method.args.args) == 1 and len(body) == 1
                    and isinstance(body[0], ast.Return) and body[0].value is not None):
                self._predicates[name] = self.holds(body[0].value)
        return self._predicates[name]

    def holds(self, test: ast.expr) -> Members | None:
        """The members ``self`` may be for ``test`` to be true; None: not known."""
        if isinstance(test, ast.BoolOp):
            parts = [self.holds(value) for value in test.values]
            combined = self.members if isinstance(test.op, ast.And) else frozenset[str]()
            for part in parts:
                if part is None:
                    return None
                combined = combined & part if isinstance(test.op, ast.And) else combined | part
            return combined
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.holds(test.operand)
            return None if inner is None else self.members - inner
        if (isinstance(test, ast.Call) and not test.args and not test.keywords and _on_self(test.func)
                and isinstance(test.func, ast.Attribute)):
            return self.predicate(test.func.attr)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            if _is_self(right) and not isinstance(op, (ast.In, ast.NotIn)):
                left, right = right, left
            if not _is_self(left):
                return None
            if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                named = [self._member(e) for e in right.elts]
            elif isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
                named = [self._member(right)]
            else:
                return None
            if any(m is None for m in named):
                return None
            found = frozenset(m for m in named if m is not None)
            return found if isinstance(op, (ast.Eq, ast.Is, ast.In)) else self.members - found
        return None

    def _member(self, node: ast.expr) -> str | None:
        """The member ``M`` that ``E.M`` names (``E``: the enum's own name)."""
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == self.node.name and node.attr in self.members):
            return node.attr
        return None

    def chosen(self, class_name: str) -> tuple[Members, set[tuple[int, int]]] | None:
        """The members for which a method of the enum returns the class
        (``return C``, ``return C(...)``), and where the names of it there
        are (line, column); None where the enum never returns it."""
        found: list[tuple[ast.expr, Members]] = []
        for method in self._methods.values():
            _reaching(method.body, self.members, self, found)
        members: Members = frozenset()
        nodes: set[tuple[int, int]] = set()
        for value, reaching in found:
            named = value.func if isinstance(value, ast.Call) else value
            if isinstance(named, ast.Name) and named.id == class_name:
                members |= reaching
                nodes.add((named.lineno, named.col_offset))
        return (members, nodes) if nodes else None

    def test(self, test: ast.expr) -> tuple[Members, Members]:
        """(the members for which ``test`` is surely true, those for which it may be)."""
        if isinstance(test, ast.BoolOp):
            parts = [self.test(value) for value in test.values]
            if isinstance(test.op, ast.And):
                must, may = self.members, self.members
                for part_must, part_may in parts:
                    must, may = must & part_must, may & part_may
                return must, may
            must, may = frozenset(), frozenset()
            for part_must, part_may in parts:
                must, may = must | part_must, may | part_may
            return must, may
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            must, may = self.test(test.operand)
            return self.members - may, self.members - must
        holds = self.holds(test)
        return (holds, holds) if holds is not None else (frozenset(), self.members)


def _reaching(
    statements: list[ast.stmt], members: Members, enum: _Enum, found: list[tuple[ast.expr, Members]],
) -> Members:
    """Record each ``return`` of ``statements`` with the members ``self`` may
    be there (``members`` on entry, narrowed by the tests on the way); what
    may go on past the block."""
    for statement in statements:
        if not members:
            break
        if isinstance(statement, ast.If):
            must, may = enum.test(statement.test)
            members = (_reaching(statement.body, members & may, enum, found)
                       | _reaching(statement.orelse, members - must, enum, found))
        elif isinstance(statement, ast.Return):
            if statement.value is not None:
                found.append((statement.value, members))
            return frozenset()
        elif isinstance(statement, ast.Raise):
            return frozenset()
        elif isinstance(statement, ast.Assert):
            members = members & enum.test(statement.test)[1]
        else:
            for block in _blocks(statement):
                _reaching(block, members, enum, found)  # may run or not: no narrowing past it
    return members


def _blocks(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        block = getattr(statement, name, None)
        if isinstance(block, list) and not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                  ast.ClassDef)):
            yield block
    for handler in getattr(statement, "handlers", ()):
        yield handler.body
    for case in getattr(statement, "cases", ()):
        yield case.body


def _chosen_for(class_name: str, enum: _Enum, texts: list[tuple[str, bytes]]) -> Members | None:
    """The members the enum's methods choose ``class_name`` for, where every
    other mention of the class in ``texts`` is its definition, an import or a
    base; None otherwise."""
    chosen = enum.chosen(class_name)
    if chosen is None:
        return None
    members, returned = chosen
    factory = only_named_at(class_name, texts, lambda data, _: returned if data == enum.source else set())
    return members if factory else None


def _docstring(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str))


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _on_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and _is_self(node.value)
