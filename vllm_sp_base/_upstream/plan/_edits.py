"""What the series changes in one file, and in the whole tree: the plan the
rewrite carries out. Lines are the original file's."""

from __future__ import annotations

from dataclasses import dataclass, field

from vllm_sp_base._upstream.plan._gates import Gate


@dataclass(frozen=True)
class Redundant:
    """``self.<flag> = False`` in ``cls.__init__`` that the inherited default makes redundant."""

    cls: str
    flag: str
    line: int


@dataclass(frozen=True)
class Default:
    """Class-level defaults for ``flags`` in the class at ``line``, and why it gets them."""

    line: int
    flags: tuple[str, ...]
    why: str
    # What its ``__init__`` builds from the flag: "`DeepseekV2MLP(is_sequence_parallel=...)`".
    builds: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reader:
    """A class whose own methods other than ``__init__`` read ``flags``, and
    what the plan makes of it (``kind``): ``"class-level"``, its MRO defines
    them already (a class attribute, a property); ``"given"``, it or an
    ancestor gets the default; ``"init"``, neither, and no subclass in the
    tree skips the ``__init__`` that sets them."""

    path: str
    cls: str
    flags: tuple[str, ...]
    kind: str


@dataclass
class FileEdits:
    """What the patch changes in one file; lines are the original file's."""

    defaults: dict[str, Default] = field(default_factory=dict)  # class -> its defaults
    redundant: list[Redundant] = field(default_factory=list)

    def count(self) -> int:
        return len(self.defaults) + len(self.redundant)


@dataclass
class Plan:
    texts: dict[str, bytes] = field(default_factory=dict)  # relpath -> bytes, files read
    edits: dict[str, FileEdits] = field(default_factory=dict)  # relpath -> edits
    problems: list[tuple[str, str]] = field(default_factory=list)  # (relpath, reason)
    missing: list[str] = field(default_factory=list)  # expected, not found
    readers: list[Reader] = field(default_factory=list)  # every class reading a flag outside __init__
    gates: list[Gate] = field(default_factory=list)  # hand-written sequence-parallel gates

    def file(self, relpath: str) -> FileEdits:
        return self.edits.setdefault(relpath, FileEdits())
