"""What the series changes in one file, and in the whole tree: the plan the
rewrite carries out. Lines are the original file's."""

from __future__ import annotations

from dataclasses import dataclass, field

from vllm_sp_base._upstream.plan._rederive import LeftAsIs, Site


@dataclass(frozen=True)
class Redundant:
    """``self.<flag> = False`` in ``cls.__init__`` that the inherited default makes redundant."""

    cls: str
    flag: str
    line: int


@dataclass
class FileEdits:
    """What the patch changes in one file; lines are the original file's."""

    mixin: dict[str, int] = field(default_factory=dict)  # class -> line of its header
    why: dict[str, str] = field(default_factory=dict)  # class -> why it is given the mixin
    redundant: list[Redundant] = field(default_factory=list)
    rederivations: list[Site] = field(default_factory=list)
    left: list[LeftAsIs] = field(default_factory=list)  # re-derivations not replaced
    gate: int | None = None  # line of ParallelConfig.use_sequence_parallel_moe, to add the gate

    def count(self) -> int:
        return len(self.mixin) + len(self.redundant) + len(self.rederivations) + (self.gate is not None)


@dataclass
class Plan:
    texts: dict[str, bytes] = field(default_factory=dict)  # relpath -> bytes, files read
    edits: dict[str, FileEdits] = field(default_factory=dict)  # relpath -> edits
    problems: list[tuple[str, str]] = field(default_factory=list)  # (relpath, reason)
    missing: list[str] = field(default_factory=list)  # expected, not found

    def file(self, relpath: str) -> FileEdits:
        return self.edits.setdefault(relpath, FileEdits())
