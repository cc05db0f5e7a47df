from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any


def _short(path: str) -> str:
    """A path relative to the working directory when it lies below it."""
    relative = os.path.relpath(path) if os.path.isabs(path) else path
    return path if relative.startswith("..") else relative


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: str  # "error" | "warning"
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
    skipped_by: str  # dotted: the class whose __init__ did not run it
    entry: str | None  # forward/load_weights/__call__ that reaches the read

    @property
    def message(self) -> str:
        short = self.class_name.rsplit(".", 1)[-1]
        owner, _, method = self.method.rpartition(".")
        reach = f" (reached from {self.entry})" if self.entry and self.entry != method else ""
        outcome = (
            "AttributeError on that path" if self.severity == "error"
            else "AttributeError if that read is reached"
        )
        return (
            f"{short} skips {self.skipped_init}.__init__ (via {self.skipped_by.rsplit('.', 1)[-1]}), "
            f"which sets self.{self.attribute} at {_short(self.skipped_path)}:{self.set_line}, but "
            f"{owner.rsplit('.', 1)[-1]}.{method} reads it at {_short(self.read_path)}:"
            f"{self.read_line}{reach}: {outcome}"
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["class"] = data.pop("class_name")
        data["message"] = self.message
        return data

    def fingerprint(self) -> str:
        """Stable across line moves: what a baseline remembers."""
        return f"{self.code}:{self.class_name}:{self.attribute}"
