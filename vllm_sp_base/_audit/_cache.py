"""Results keyed by file content and tool version.

Two files: per-file summaries and pre-scans (large, loaded only when a file
changed), and whole-run results keyed by every audited file's digest (small:
what makes an unchanged tree a sub-second run).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import stat
import threading
from typing import Any

from vllm_sp_base import __version__

_FORMAT = 2


def _tool_fingerprint(here: str = os.path.dirname(os.path.abspath(__file__))) -> str:
    """The version plus a digest of the audit's own code (its Python, its C
    sources and the compiled lexer, if any), so a changed analysis never reads
    results an older one cached (editable installs included)."""
    digest = hashlib.blake2b(f"{__version__}/{_FORMAT}".encode(), digest_size=8)
    for directory, subdirs, names in sorted(os.walk(here)):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith((".py", ".c", ".h", ".so", ".pyd")):
                with open(os.path.join(directory, name), "rb") as handle:
                    digest.update(name.encode() + b"\0" + handle.read())
    return digest.hexdigest()


def default_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("VLLM_SP_BASE_CACHE_DIR") or os.path.join(base, "vllm-sp-base")


def _load(path: str) -> dict[bytes, Any]:
    """The file's entries; {} for anything but a readable, regular file that
    unpickles to a dict (missing, a FIFO, truncated, corrupt, foreign): a
    broken cache costs one slow run and is then rewritten, never an error."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO would block the run forever
            return {}
        with os.fdopen(os.dup(fd), "rb") as handle:
            loaded = pickle.load(handle)
    except Exception:  # noqa: BLE001 (a corrupt pickle raises nearly anything: MemoryError too)
        return {}
    finally:
        os.close(fd)
    return loaded if isinstance(loaded, dict) and all(isinstance(k, bytes) for k in loaded) else {}


def _save(path: str, data: dict[bytes, Any]) -> None:
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        import tempfile  # only where a cache is written: not in a --no-cache run

        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
    except OSError:
        return  # a cache that cannot be written only costs time
    try:
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(data, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # readers never see a half-written cache
    except (OSError, pickle.PicklingError):
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # no temp file left behind


class Cache:
    def __init__(self, directory: str | None, enabled: bool = True) -> None:
        self.enabled = enabled and directory is not None
        stem = os.path.join(directory or "", f"audit-{_tool_fingerprint()}")
        self.files_path = stem + "-files.pickle"
        self.runs_path = stem + "-runs.pickle"
        self._entries: dict[bytes, Any] | None = None
        self._runs: dict[bytes, Any] | None = None
        self._dirty: set[str] = set()
        self._loading = threading.Lock()

    @property
    def entries(self) -> dict[bytes, Any]:
        if self._entries is None:
            with self._loading:  # the pre-scan asks from several threads at once
                if self._entries is None:
                    self._entries = _load(self.files_path) if self.enabled else {}
        return self._entries

    def get(self, key: bytes) -> Any:
        return self.entries.get(key) if self.enabled else None

    def put(self, key: bytes, value: Any) -> None:
        if self.enabled:
            self.entries[key] = value
            self._dirty.add("files")

    def get_run(self, key: bytes) -> Any:
        if not self.enabled:
            return None
        if self._runs is None:
            self._runs = _load(self.runs_path)
        return self._runs.get(key)

    def put_run(self, key: bytes, value: Any) -> None:
        if self.enabled:
            if self._runs is None:
                self._runs = _load(self.runs_path)
            # The newest first; an older record under the same key is replaced, not kept.
            older = [(k, v) for k, v in self._runs.items() if k != key][:15]
            self._runs = {key: value, **dict(older)}
            self._dirty.add("runs")

    def save(self) -> None:
        if not self.enabled:
            return
        if "files" in self._dirty and self._entries is not None:
            _save(self.files_path, self._entries)
        if "runs" in self._dirty and self._runs is not None:
            _save(self.runs_path, self._runs)
        self._dirty.clear()
