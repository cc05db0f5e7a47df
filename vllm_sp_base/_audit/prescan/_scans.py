"""What the pre-scan finds in a file: its classes, their bases and what their
``__init__`` shows, and the names the module binds."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ClassScan:
    name: str
    bases: tuple[str, ...]  # last dotted component of each base, in order
    dotted_bases: tuple[str, ...]  # bases written as ``module.Name``: may be installed classes
    has_init: bool
    init_chains: bool  # body-level, unconditional ``super().__init__(``
    init_sets: bool  # the ``__init__`` assigns some ``self.<attr>``


@dataclass(slots=True)
class FileScan:
    classes: list[ClassScan]
    aliases: list[tuple[str, str]]  # (alias, original)
    imported: list[tuple[str, str]]  # (local name, absolute module) of ``from M import``
