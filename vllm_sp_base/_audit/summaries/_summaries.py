"""Plain summaries of a module: its classes, their methods (each parsed the
first time its events are asked for) and its imports: what the rule needs and
nothing more."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from vllm_sp_base._audit.summaries._events import Call, Event, Import, Read, Set
from vllm_sp_base._audit.summaries._signature import (
    def_text,
    header_arguments,
    header_parameters,
    init_signature,
)
from vllm_sp_base._audit.summaries._visitor import (
    _REGISTERS,
    _REGISTRIES,
    MethodVisitor,
)

#: Spellings through which a body can set, read or test an attribute named by a
#: string, which escapes or adjacent literals can spell without its bytes
#: (``setattr (self, "\\170", v)``): each way the visitor reads one.
_ANY_NAME = (
    b"attr",  # getattr, setattr, hasattr, delattr, __setattr__
    b"__dict__", b"vars", b"dir",
    *sorted(name.encode() for name in _REGISTERS | _REGISTRIES),  # self.register_buffer("a", t), self._buffers["a"]
)


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
        for a string (``setattr``, ``vars(self)[...]``, ``register_buffer``)
        built from escapes or adjacent literals: then any name may be meant. (Looking for the name
        only after a dot parses ~15% fewer bodies but costs more than it saves
        in Python: measured, not kept.)"""
        source, start, end = self.source, self.start, self.end
        if self.non_ascii or any(source.find(spelling, start, end) >= 0 for spelling in _ANY_NAME):
            return True
        return any(source.find(name, start, end) >= 0 or (
            # ``_Class__a`` is spelled ``self.__a`` in its class's methods.
            name[:1] == b"_" and (at := name.find(b"__", 1)) > 0 and source.find(name[at:], start, end) >= 0
        ) for name in names)


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

    __slots__ = ("_body", "_events", "is_abstract", "is_property", "line", "name")

    def __init__(
        self, name: str, line: int, body: Body | None = None, is_property: bool = False, is_abstract: bool = False,
    ) -> None:
        self.name = name
        self.line = line
        self._events: list[Event] = []
        self._body = body
        self.is_property = is_property  # ``@property``: reading ``self.name`` runs it
        self.is_abstract = is_abstract  # ``@abstractmethod``: what an ABC's users call on its implementations

    def _loaded(self) -> Method:
        if self._body is not None:
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

    def spells(self, text: bytes) -> bool:
        """Whether the method's source holds ``text`` (unparsed: on its bytes;
        parsed already: True, its events are at hand)."""
        body = self._body
        return body is None or body.source.find(text, body.start, body.end) >= 0

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
    # ``__slots__``: names with a slot, which raises AttributeError until set (no default)
    slots: frozenset[str] = frozenset()
    # A class defined in a function: the function's names for its classes
    # (``Base`` -> ``make.<locals>.Base``), where ``Base.__init__(self)`` resolves.
    local_names: dict[str, str] = field(default_factory=dict)
    local_imports: dict[str, Import] = field(default_factory=dict)  # what its function imports
    # Class attributes bound to a dotted name (``base_class = Parent``): what
    # ``self.base_class.__init__(self)`` runs, as the instance finds it.
    held: dict[str, str] = field(default_factory=dict)
    # ``metaclass=`` in the header, as spelled (a dotted name; "" where not
    # one): its ``__call__``, where it has its own, builds the instances.
    metaclass: str | None = None
    # A dataclass's own fields (annotated names, ``ClassVar`` and ``InitVar``
    # left out); None: not a dataclass. ``generated_init``: its ``__init__``
    # is the one ``@dataclass`` writes (it sets the fields of every dataclass
    # of the MRO, runs ``__post_init__``, and no parent's ``__init__``).
    fields: tuple[str, ...] | None = None
    generated_init: bool = False

    def suppresses(self, code: str, attribute: str) -> bool:
        noqa = self.noqa
        return noqa is not None and (not noqa or code in noqa or f"{code}[{attribute}]" in noqa)


def bound_methods(cls: ClassInfo) -> Iterator[tuple[str, Method]]:
    """The methods Python finds on the instance by their name: not a
    property's setter or a static or class method summarised as given the
    instance (keys with a dot), which run only where an assignment or a call
    that hands over the instance runs them."""
    return ((name, method) for name, method in cls.methods.items() if "." not in name)


def python_name(key: str) -> str:
    """The name a class has in Python from its key in ``ModuleInfo.classes``:
    ``make.<locals>.Child`` (defined in a function) and ``B@3`` (a top-level
    class that a later ``class B`` shadows) are ``Child`` and ``B``."""
    return key.rsplit(".", 1)[-1].partition("@")[0]


def shadowed(key: str) -> bool:
    """A class a later one of its name rebinds: reached only through what named
    it before (``class B(B)``), never built on its own."""
    return "@" in key


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
    # Module-level functions, summarised as what they do to their first
    # parameter: ``setup(self)`` in a method runs them on the instance.
    functions: dict[str, Method] = field(default_factory=dict)


def detach_sources(info: ModuleInfo) -> None:
    """Drop the module's bytes from its unparsed bodies: a worker sends the
    summary back without them, and ``attach_sources`` puts them back."""
    for method in _all_methods(info):
        if method._body is not None:
            method._body.source = b""


def attach_sources(info: ModuleInfo, source: bytes, path: str) -> None:
    """The module's bytes and path back into its unparsed bodies (a cached
    summary may have been made from the same bytes at another path)."""
    for method in _all_methods(info):
        if method._body is not None:
            method._body.source = source
            method._body.path = path


def _all_methods(info: ModuleInfo) -> Iterable[Method]:
    for cls in info.classes.values():
        yield from cls.methods.values()
    yield from info.functions.values()


def summarize_body(method: Method, body: Body) -> None:
    """Fill in ``method`` from its cut ``body``, parsed on its own.

    Raises BodyDoesNotParse where it is not valid Python: a syntax error in
    a body is found when the body is first needed, not when the module is."""
    try:
        tree = ast.parse(b"if 1:\n" + body.source[body.start : body.end])
        statements = tree.body[0].body  # type: ignore[attr-defined]
        line_offset = body.first_line - 2
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # What the whole module's parse says, with its line numbers.
        try:
            module = ast.parse(body.source)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            raise BodyDoesNotParse(body.path, unparsable(error)) from None
        statements = next(
            node.body for node in ast.walk(module)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (node.lineno, node.name) == (method.line, method.name.partition(".")[0])
        )
        line_offset = 0
    header = def_text(body.source, method.line, body.start, body.first_line)
    signature = header_parameters(header, body.self_name, statements)
    if signature is not None:
        method._events.append(signature)
    if method.name == "__init__":
        arguments = header_arguments(header)
        if arguments is not None:
            method._events.append(init_signature(arguments))
    def parameters() -> list[str] | None:
        found = header_arguments(def_text(body.source, method.line, body.start, body.first_line))
        return None if found is None else [a.arg for a in (*found.posonlyargs, *found.args, *found.kwonlyargs)]

    visitor = MethodVisitor(method._events, method.name.partition(".")[0], body.self_name, body.class_name,
                            line_offset, parameters)
    try:
        visitor.visit_block(statements)
    except RecursionError:
        raise BodyDoesNotParse(body.path, f"{TOO_DEEP} (in {method.name}, line {method.line})") from None
    visitor.finish()


#: Why a file that is valid Python is not audited: Python's own recursion limit.
TOO_DEEP = "nested too deeply to audit (an expression or block past the interpreter's recursion limit)"


def unparsable(error: BaseException) -> str:
    """One line for why source could not be read as Python, with a hint where
    the line looks like syntax of a newer Python than the one auditing."""
    if isinstance(error, RecursionError):
        return TOO_DEEP
    line = getattr(error, "lineno", None)
    said = f"does not parse{f' (line {line})' if line else ''}: {getattr(error, 'msg', error)}"
    text = getattr(error, "text", None) or ""
    msg = str(getattr(error, "msg", ""))
    if sys.version_info < (3, 12) and (msg.startswith("f-string") or _NEWER_SYNTAX.search(text)):
        said += (f" (this audit runs on Python {sys.version_info.major}.{sys.version_info.minor}; "
                 "that line looks like Python 3.12 syntax: run it under a newer Python)")
    return said


#: Generic classes and functions and ``type`` aliases (PEP 695), Python 3.12's.
_NEWER_SYNTAX = re.compile(r"^\s*(?:(?:async\s+)?def|class)\s+\w+\s*\[|^\s*type\s+\w+\s*(?:\[.*\])?\s*=")
