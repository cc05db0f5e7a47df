"""Plain, picklable summaries of a module: what the rule needs and nothing more."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(slots=True)
class Read:
    """``self.<attr>`` read (also ``getattr(self, "attr")`` and ``self.attr += ...``)."""

    attr: str
    line: int
    col: int
    conditional: bool  # under an if/loop/try/boolean branch
    condition: str | None = None  # the source of the innermost test it runs under
    requires: str = ""  # see ``requirements``


@dataclass(slots=True)
class Set:
    """``self.<attr> = ...`` and the other spellings that bind an instance attribute
    (``setattr(self, "a", v)``, ``object.__setattr__(self, "a", v)``,
    ``self.__dict__.update({"a": v})``, ``self.__dict__["a"] = v``)."""

    attr: str
    line: int
    conditional: bool
    value: str | None = None  # the literal it binds (``"False"``, ``"None"``, ``"3"``), if one


@dataclass(slots=True)
class SetEach:
    """``for name in NAMES: setattr(self, name, ...)``: sets each string of the
    module-level (or, ``on_class``, class-level) constant ``NAMES``, resolved
    by whoever knows the module and the MRO."""

    constant: str
    line: int
    conditional: bool
    on_class: bool = False  # ``for name in self.NAMES``: a class-level constant


@dataclass(slots=True)
class SetAny:
    """An attribute set under a name not known from the source (``setattr(self,
    key, v)``, ``self.__dict__.update(kwargs)``): any attribute may be set."""

    line: int
    conditional: bool


@dataclass(slots=True)
class Call:
    """A call that runs a method on ``self``.

    kind ``self``: ``self.name(...)``, looked up from the instance's class;
    ``super``: ``super().name(...)``, from after the calling method's class;
    ``super_of``: ``super(X, self).name(...)``, from after X (``target``);
    ``explicit``: ``X.name(self, ...)``, from X. ``caught``: inside a ``try``
    whose handler swallows AttributeError: what it reads cannot crash the caller.

    A ``self`` call that finds no method, property or class attribute reads
    an instance attribute (``self.norm(x)``, a submodule): the walk says so."""

    kind: str
    target: str | None
    name: str
    line: int
    conditional: bool
    caught: bool = False
    col: int = 0
    condition: str | None = None  # as ``Read``'s
    requires: str = ""
    # Where ``target``'s first name comes from when the method imports it
    # itself (``import torch.nn as nn`` in the body): ``Import`` spelled
    # ``"<dots><module>:<name>"`` (see ``local_import``); None: the module's names.
    imported: str | None = None


@dataclass(slots=True)
class Marker:
    """Something the method does that decides how its class is checked.

    kind ``returns_other``: ``__new__`` returns what another call builds, so
    ``C(...)`` may not be a C; ``raises_attribute_error``: the method raises
    AttributeError itself (a ``__getattr__`` that does is no fallback)."""

    kind: str
    line: int


@dataclass(slots=True)
class Assert:
    """``assert <test>``: past it, what the test says of the instance holds
    (``requires``, spelled as ``Read.requires``)."""

    requires: str
    line: int
    conditional: bool


Event = Read | Set | SetEach | SetAny | Call | Marker | Assert


#: How ``Read.requires`` joins its requirements (a literal's repr has no raw newline).
REQUIREMENT_SEPARATOR = "\n"


def requirements(requires: str) -> list[tuple[str, str, str]]:
    """``Read.requires`` / ``Call.requires``: what the enclosing tests need of
    the instance's attributes for the event to run, as (attribute, test,
    literal): test ``true``/``false`` (``if self.a:``, the ``else`` of it),
    ``==``/``!=`` against the literal's repr (``if self.kind == "full":``,
    ``self.cache is None``). Spelled ``a``, ``!a``, ``a==<repr>``, ``a!=<repr>``."""
    found = []
    for requirement in requires.split(REQUIREMENT_SEPARATOR):
        if not requirement:
            continue
        attr, eq, literal = requirement.partition("==")
        if eq:
            found.append((attr, "==", literal))
            continue
        attr, ne, literal = requirement.partition("!=")
        if ne:
            found.append((attr, "!=", literal))
        elif requirement.startswith("!"):
            found.append((requirement[1:], "false", ""))
        else:
            found.append((requirement, "true", ""))
    return found


def holds(test: str, literal: str, value: str) -> bool:
    """Whether an attribute bound to the literal ``value`` passes ``test``."""
    if test == "true":
        return value not in FALSE_LITERALS
    if test == "false":
        return value in FALSE_LITERALS
    return (value == literal) == (test == "==")


def excludes(fact: tuple[str, str], needed: tuple[str, str]) -> bool:
    """Whether an attribute known to pass ``fact`` (test, literal) surely fails
    ``needed``: ``== False`` excludes ``true``; ``!= None`` excludes ``== None``."""
    (known, known_literal), (test, literal) = fact, needed
    if known == "==":
        return not holds(test, literal, known_literal)
    if test == "==":
        return not holds(known, known_literal, literal)
    return {known, test} == {"true", "false"}


#: Literals that are false (``Set.value``): what ``if self.flag:`` tests.
FALSE_LITERALS = frozenset({"False", "None", "0", "0.0", "''", '""', "()", "[]", "{}"})


#: Spellings through which a body can set or read an attribute it does not name
#: (``getattr``/``setattr``/``hasattr``, ``__setattr__``, ``self.__dict__``).
_ANY_NAME = (b"attr(", b"attr__(", b"__dict__")


@dataclass(slots=True)
class Body:
    """Where a method's body is in its module's source, not parsed yet.

    ``start``/``end`` are byte offsets of the body's lines, ``first_line`` the
    line ``start`` is on; ``non_ascii``: the body has bytes a byte search for an
    ASCII name could miss (identifiers are NFKC-normalised)."""

    path: str
    source: bytes
    start: int
    end: int
    first_line: int
    non_ascii: bool
    self_name: str
    class_name: str

    def may_name(self, names: Iterable[bytes]) -> bool:
        """Whether the body can read or set ``self.<name>`` for one of ``names``.

        An attribute the summary would record is spelled out in the body, but
        for ``getattr``/``setattr`` with a string built from escapes or
        adjacent literals: then any name may be meant. (Looking for the name
        only after a dot parses ~15% fewer bodies but costs more than it saves
        in Python: measured, not kept.)"""
        source, start, end = self.source, self.start, self.end
        if self.non_ascii or any(source.find(spelling, start, end) >= 0 for spelling in _ANY_NAME):
            return True
        return any(source.find(name, start, end) >= 0 for name in names)


class BodyDoesNotParse(Exception):
    """A cut method body, parsed when first asked for, is not valid Python
    (the rest of its module is)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class Method:
    """What one method does to ``self``, in the order it runs: reads, sets and
    the calls that run other methods on it (``events``).

    A method summarised from a cut module (see ``lexer/bodies.c``) holds its
    ``Body`` and is parsed the first time its events are asked for."""

    __slots__ = ("_body", "_events", "is_property", "line", "name")

    def __init__(self, name: str, line: int, body: Body | None = None, is_property: bool = False) -> None:
        self.name = name
        self.line = line
        self._events: list[Event] = []
        self._body = body
        self.is_property = is_property  # ``@property``: reading ``self.name`` runs it

    def _loaded(self) -> Method:
        if self._body is not None:
            from vllm_sp_base._audit._methods import summarize_body

            body, self._body = self._body, None
            try:
                summarize_body(self, body)
            except BaseException:
                # Asked again, it fails again rather than look empty.
                self._body = body
                self._events = []
                raise
        return self

    @property
    def events(self) -> list[Event]:
        return self._loaded()._events

    @property
    def reads(self) -> list[Read]:
        return [e for e in self.events if type(e) is Read]

    @property
    def sets(self) -> dict[str, int]:
        """attribute -> first line, of the sets spelled with a constant name."""
        found: dict[str, int] = {}
        for event in self.events:
            if type(event) is Set:
                found.setdefault(event.attr, event.line)
        return found

    @property
    def init_calls(self) -> list[Call]:
        return [
            e for e in self.events
            if type(e) is Call and e.kind != "self" and e.name == "__init__"
        ]

    def may_name(self, names: Iterable[bytes]) -> bool:
        """False only if the method surely neither reads nor sets any of
        ``self.<name>`` (checked on the source, without parsing it)."""
        body = self._body
        if body is None:
            return True
        return body.may_name(names)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Method):
            return NotImplemented
        return (self.name, self.line, self.is_property, self.events) == (
            other.name, other.line, other.is_property, other.events)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        state = "unparsed" if self._body is not None else f"{len(self._events)} events"
        return f"Method({self.name!r}, line {self.line}, {state})"


@dataclass(slots=True)
class ClassInfo:
    name: str
    line: int
    col: int
    bases: list[str | None]  # dotted source names; None where not a name
    class_attrs: set[str]
    methods: dict[str, Method]
    noqa: tuple[str, ...] | None  # None: no noqa; (): bare noqa; else codes, ``SPB001[attr]`` too
    constants: dict[str, tuple[str, ...]] = field(default_factory=dict)  # ``NAMES = ("a", "b")``
    noqa_lines: tuple[int, ...] = ()  # the header and ``__init__`` lines that carry ``noqa``

    def suppresses(self, code: str, attribute: str) -> bool:
        noqa = self.noqa
        return noqa is not None and (not noqa or code in noqa or f"{code}[{attribute}]" in noqa)


@dataclass(slots=True)
class Import:
    level: int
    module: str | None
    name: str | None  # None: ``import module`` binds the module itself


def local_import(imp: Import) -> str:
    """``imp`` as a plain string, for a ``Call`` that names a locally imported class."""
    return f"{'.' * imp.level}{imp.module or ''}:{imp.name or ''}"


def parse_local_import(spelled: str) -> Import:
    where, _, name = spelled.partition(":")
    module = where.lstrip(".")
    return Import(len(where) - len(module), module or None, name or None)


@dataclass(slots=True)
class ModuleInfo:
    imports: dict[str, Import]
    aliases: dict[str, str]  # module-level ``Name = dotted.name``
    fallback_imports: dict[str, Import]  # only under ``if TYPE_CHECKING:``
    fallback_aliases: dict[str, str]
    star_imports: list[Import]
    classes: dict[str, ClassInfo]
    is_package: bool
    # module-level ``NAMES = ("a", "b")``: tuples, lists and sets of strings
    constants: dict[str, tuple[str, ...]] = field(default_factory=dict)


def detach_sources(info: ModuleInfo) -> None:
    """Drop the module's bytes from its unparsed bodies: a worker sends the
    summary back without them, and ``attach_sources`` puts them back."""
    for cls in info.classes.values():
        for method in cls.methods.values():
            if method._body is not None:
                method._body.source = b""


def attach_sources(info: ModuleInfo, source: bytes, path: str) -> None:
    """The module's bytes and path back into its unparsed bodies (a cached
    summary may have been made from the same bytes at another path)."""
    for cls in info.classes.values():
        for method in cls.methods.values():
            if method._body is not None:
                method._body.source = source
                method._body.path = path
