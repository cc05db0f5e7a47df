"""What the pre-scan finds in a file: its classes, their bases and what their
``__init__`` shows, and the names the module binds."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class ClassScan:
    name: str
    bases: tuple[str, ...]  # last dotted component of each base, in order ("?": an expression)
    written: tuple[str, ...]  # each base's dotted name as written, blanks dropped ("?": an expression)
    has_init: bool
    init_chains: bool  # body-level, unconditional ``super().__init__(`` or ``OnlyBase.__init__(self``
    init_explicit: bool  # some ``__init__`` chains by naming its base: the MRO's next class is skipped
    init_sets: bool  # the ``__init__`` may set some attribute (assigns, passes ``self`` on, ...)
    # ``@dataclass`` writes its ``__init__``: it sets every dataclass base's fields
    # itself, so only a base whose own ``__init__`` is no such one is skipped.
    generated: bool = False

    @property
    def dotted_bases(self) -> tuple[str, ...]:
        """The last names of the bases written ``module.Name``: may be installed classes."""
        return tuple(b for b, w in zip(self.bases, self.written) if "." in w)


@dataclass(slots=True)
class FileScan:
    classes: list[ClassScan]
    aliases: list[tuple[str, str]]  # (alias, original)
    imported: list[tuple[str, str]]  # (local name, absolute module) of ``from M import``
    modules: list[tuple[str, str]] = field(default_factory=list)  # (local name, module) of ``import M``
    parses: bool = True  # False: the module does not parse (its diagnostic comes from the checker)
