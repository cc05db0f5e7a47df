"""Per-file results keyed by file content and tool version."""

from __future__ import annotations

import os
import pickle
import tempfile
from typing import Any

from vllm_sp_base import __version__

_FORMAT = 1


def default_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("VLLM_SP_BASE_CACHE_DIR") or os.path.join(base, "vllm-sp-base")


class Cache:
    def __init__(self, directory: str | None, enabled: bool = True) -> None:
        self.enabled = enabled and directory is not None
        self.path = os.path.join(directory or "", f"audit-{__version__}-{_FORMAT}.pickle")
        self.entries: dict[bytes, Any] = {}
        self.dirty = False
        if self.enabled:
            try:
                with open(self.path, "rb") as handle:
                    loaded = pickle.load(handle)
                if isinstance(loaded, dict):
                    self.entries = loaded
            except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError, TypeError):
                self.entries = {}

    def get(self, key: bytes) -> Any:
        return self.entries.get(key) if self.enabled else None

    def put(self, key: bytes, value: Any) -> None:
        if self.enabled:
            self.entries[key] = value
            self.dirty = True

    def save(self) -> None:
        if not (self.enabled and self.dirty):
            return
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(self.entries, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.path)
        except OSError:
            pass  # a cache that cannot be written only costs time
