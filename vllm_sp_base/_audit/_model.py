"""Plain, picklable summaries of a module: what the rule needs and nothing more."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(slots=True)
class Read:
    attr: str
    line: int
    col: int
    conditional: bool  # under an if/loop/try/boolean branch, or a guard


@dataclass(slots=True)
class InitCall:
    """A call that runs another ``__init__`` on self.

    kind ``super``: ``super().__init__(...)``; ``super_of``: ``super(X, self).__init__``
    (target X); ``explicit``: ``X.__init__(self, ...)`` (target X).
    """

    kind: str
    target: str | None
    conditional: bool
    line: int


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
        if self.non_ascii or source.find(b"attr(", start, end) >= 0:
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
    """One method's self-attribute reads, sets, self-calls and init calls.

    A method summarised from a cut module (see ``lexer/bodies.c``) holds its
    ``Body`` and is parsed the first time one of those is asked for."""

    __slots__ = ("_body", "_init_calls", "_reads", "_self_calls", "_sets", "line", "name")

    def __init__(self, name: str, line: int, body: Body | None = None) -> None:
        self.name = name
        self.line = line
        self._reads: list[Read] = []
        self._sets: dict[str, int] = {}  # attr -> first line
        self._self_calls: list[tuple[str, bool]] = []  # (name, conditional)
        self._init_calls: list[InitCall] = []
        self._body = body

    def _loaded(self) -> Method:
        if self._body is not None:
            from vllm_sp_base._audit._methods import summarize_body

            body, self._body = self._body, None
            try:
                summarize_body(self, body)
            except BaseException:
                # Asked again, it fails again rather than look empty.
                self._body = body
                self._reads, self._sets, self._self_calls, self._init_calls = [], {}, [], []
                raise
        return self

    @property
    def reads(self) -> list[Read]:
        return self._loaded()._reads

    @property
    def sets(self) -> dict[str, int]:
        return self._loaded()._sets

    @property
    def self_calls(self) -> list[tuple[str, bool]]:
        return self._loaded()._self_calls

    @property
    def init_calls(self) -> list[InitCall]:
        return self._loaded()._init_calls

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
        return (self.name, self.line, self.reads, self.sets, self.self_calls, self.init_calls) == (
            other.name, other.line, other.reads, other.sets, other.self_calls, other.init_calls)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        state = "unparsed" if self._body is not None else f"{len(self._reads)} reads"
        return f"Method({self.name!r}, line {self.line}, {state})"


@dataclass(slots=True)
class ClassInfo:
    name: str
    line: int
    col: int
    bases: list[str | None]  # dotted source names; None where not a name
    class_attrs: set[str]
    methods: dict[str, Method]
    noqa: tuple[str, ...] | None  # None: no noqa; (): bare noqa; else the codes


@dataclass(slots=True)
class Import:
    level: int
    module: str | None
    name: str | None  # None: ``import module`` binds the module itself


@dataclass(slots=True)
class ModuleInfo:
    imports: dict[str, Import]
    aliases: dict[str, str]  # module-level ``Name = dotted.name``
    fallback_imports: dict[str, Import]  # only under ``if TYPE_CHECKING:``
    fallback_aliases: dict[str, str]
    star_imports: list[Import]
    classes: dict[str, ClassInfo]
    is_package: bool


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
