from __future__ import annotations

import functools
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any


def display_path(path: str) -> str:
    """A path relative to the working directory when it lies below it; else,
    in a package, the module's path under its import root
    (``vllm/model_executor/models/deepseek_v2.py``, not the site-packages it
    sits in); else the path as it is."""
    if not os.path.isabs(path):
        return path.translate(_VISIBLE)
    relative = os.path.relpath(path)
    if not relative.startswith(".."):
        return relative.translate(_VISIBLE)
    root = _import_root(os.path.dirname(path))
    return (path if root == os.path.dirname(path) else os.path.relpath(path, root)).translate(_VISIBLE)


#: Control characters a file name may hold, escaped: one line stays one line.
_VISIBLE = {code: f"\\x{code:02x}" for code in (*range(32), 127)} | {10: "\\n", 13: "\\r", 9: "\\t"}


@functools.lru_cache(maxsize=4096)
def _import_root(directory: str) -> str:
    from vllm_sp_base._audit.files._discover import import_root

    return import_root(directory)


@dataclass(frozen=True, slots=True)
class Frame:
    """One step of the path to a read: ``Class.method`` at ``path:line`` (the
    call it makes, or, last, the read)."""

    method: str
    path: str
    line: int


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: str  # "error" | "warning" | "note"
    path: str
    line: int
    col: int
    class_name: str  # dotted: module.Class
    attribute: str
    method: str  # dotted: module.Owner.method holding the read
    read_path: str
    read_line: int
    skipped_init: str  # dotted: module.Parent whose __init__ is skipped
    skipped_path: str
    set_line: int  # where the skipped __init__ would have set the attribute
    set_path: str  # the file of that line (a helper's or a parent's the __init__ runs)
    skipped_by: str  # dotted: the class whose __init__ did not run it
    entry: str | None  # "__init__" (while it is built), an entry point, or None: not reached
    chain: tuple[Frame, ...] = ()  # from the entry point (or __init__) to the read
    # What makes it happen where not every load does: "with EPLB (--enable-eplb)", "when self.x".
    condition: str | None = None
    # An attribute whose read surely fails earlier on the same way, or while
    # the instance is built (``masked_while_built``): this read is real, yet
    # that one raises first.
    masked_by: str | None = None
    masked_while_built: bool = False

    @property
    def message(self) -> str:
        short = self.class_name.rsplit(".", 1)[-1]
        owner, _, method = self.method.rpartition(".")
        outcome = {
            "error": "AttributeError on that path",
            "warning": "AttributeError if that read is reached",
        }.get(self.severity, "no entry point reaches it")
        when = " while it is built" if self.entry == "__init__" else ""
        skipper = self.skipped_by.rsplit(".", 1)[-1]
        via = f" (via {skipper})" if skipper != short else ""  # never the class itself
        return (  # a module named after a file with a newline stays on one line
            f"{short} skips {self.skipped_init.translate(_VISIBLE)}.__init__{via}, "
            f"which sets self.{self.attribute} at {display_path(self.set_path)}:{self.set_line}, but "
            f"{owner.rsplit('.', 1)[-1]}.{method} reads it at {display_path(self.read_path)}:"
            f"{self.read_line}{when}{self.via}: {outcome}{f' ({self.condition})' if self.condition else ''}"
            f"{self.masked}"
        )

    @property
    def masked(self) -> str:
        """``; self.x fails first on this path`` where a sure failure comes before."""
        if self.masked_by is None:
            return ""
        return f"; self.{self.masked_by} fails first {'while it is built' if self.masked_while_built else 'on this path'}"

    @property
    def via(self) -> str:
        """`` (via A.forward -> B.forward)`` where the read is not in the first method."""
        if len(self.chain) < 2:
            return ""
        return " (via " + " -> ".join(frame.method for frame in self.chain) + ")"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["class"] = data.pop("class_name")
        data.pop("chain")
        data["file"] = data.pop("path")
        data["path"] = [
            {"method": f.method, "file": f.path, "line": f.line} for f in self.chain
        ]
        data["message"] = self.message
        return data

    def fingerprint(self) -> str:
        """What a baseline remembers: the class by the module its packages give
        its file (not by how the audited path was spelled: ``audit .`` and
        ``audit src`` agree) and the attribute; stable across line moves."""
        return f"{self.code}:{class_key(self.path, self.class_name)}:{self.attribute}"


def class_key(path: str, class_name: str) -> str:
    """``module.Class``, the module named from the file's own packages."""
    from vllm_sp_base._audit.files._discover import import_root, module_name

    module = module_name(path, import_root(path)) if os.path.isabs(path) else ""
    module = module or class_name.rpartition(".")[0]
    return f"{module}.{class_name.rpartition('.')[2]}"


@dataclass(frozen=True, slots=True)
class Unresolved:
    """A base of an audited class that resolves to no class the source shows,
    where the class's own ``__init__`` may skip it: what it skips is unknown."""

    path: str
    line: int
    class_name: str  # dotted: module.Class
    base: str  # as written in the class header
    reason: str  # "module torch.nn not found", ...

    @property
    def message(self) -> str:
        short = self.class_name.rsplit(".", 1)[-1]
        return f"base {self.base} of {short} not resolved ({self.reason}): what it sets is unknown"

    def fingerprint(self) -> str:
        """What a baseline remembers of it, as of a finding: the class and the base."""
        return f"unresolved:{class_key(self.path, self.class_name)}:{self.base}"


@dataclass(frozen=True, slots=True)
class FixStatus:
    """Whether ``audit --fix`` can fix a finding, ruff's way: ``safe`` (``--fix``
    applies it), ``unsafe`` (only with ``--unsafe-fixes``: ``reason`` says what
    it may change besides), or ``none`` (``message`` says why)."""

    applicability: str  # "safe" | "unsafe" | "none"
    message: str  # what the fix does, or why there is none
    reason: str = ""  # for an unsafe fix: why it is not safe

    def to_json(self) -> dict[str, str]:
        return {"applicability": self.applicability, "message": self.message,
                **({"reason": self.reason} if self.reason else {})}

    @property
    def label(self) -> str:
        """One line: ``safe fix: ...``, ``unsafe fix: ... (reason)``, ``no fix: why``."""
        if self.applicability == "none":
            return f"no fix: {self.message}"
        return f"{self.applicability} fix: {self.message}" + (f" ({self.reason})" if self.reason else "")


@dataclass
class AuditResult:
    findings: list[Finding] = field(default_factory=list)
    diagnostics: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    files: int = 0
    parsed: int = 0
    suppressed: int = 0
    baselined: int = 0  # findings and unresolved bases the baseline hides
    only_bases: list[str] = field(default_factory=list)  # classes never built on their own
    unresolved: list[Unresolved] = field(default_factory=list)
    unused_noqa: list[tuple[str, int]] = field(default_factory=list)  # (path, line): suppresses nothing
    # (path, line, attribute): an ignore comment's attribute that hid nothing.
    unused_ignored: list[tuple[str, int, str]] = field(default_factory=list)
    # What ``--fix`` can do for each finding (``fix``): planned after the audit, never cached.
    fixes: dict[Finding, FixStatus] = field(default_factory=dict)
    # Wall seconds of each phase of this run (``bench/audit_speed.py`` prints
    # them); empty when the whole-run cache answered.
    seconds: dict[str, float] = field(default_factory=dict)

    def lap(self, phase: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[phase] = now - since
        return now
