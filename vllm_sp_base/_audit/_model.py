"""Plain, picklable summaries of a module: what the rule needs and nothing more."""

from __future__ import annotations

from dataclasses import dataclass, field


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
class Method:
    name: str
    line: int
    reads: list[Read] = field(default_factory=list)
    sets: dict[str, int] = field(default_factory=dict)  # attr -> first line
    self_calls: list[tuple[str, bool]] = field(default_factory=list)  # (name, conditional)
    init_calls: list[InitCall] = field(default_factory=list)


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
