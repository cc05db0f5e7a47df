"""Results keyed by file content and tool version.

Two files: per-file summaries and pre-scans (large, loaded only when a file
changed), and whole-run results keyed by every audited file's digest (small:
what makes an unchanged tree a sub-second run).
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import stat
import threading
import time
from typing import Any

from vllm_sp_base import __version__

_FORMAT = 8


def _tool_fingerprint(here: str = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) -> str:
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


def default_dir() -> str | None:
    """``$VLLM_SP_BASE_CACHE_DIR``, else ``vllm-sp-base`` under ``$XDG_CACHE_HOME``
    or ``~/.cache``. None where the home directory does not exist: a run does
    not create one (a service account, a container with ``HOME`` unset)."""
    chosen = os.environ.get("VLLM_SP_BASE_CACHE_DIR")
    if chosen:
        return chosen
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home == "~" or not os.path.isdir(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "vllm-sp-base")


#: A cache file: this header, the BLAKE2b digest of the payload, the payload
#: (``marshal`` of plain values: see ``_stored``; reading it runs nothing).
_MAGIC = b"vllm-sp-base cache %d\n" % _FORMAT
_DIGEST = 32


def _load(path: str) -> dict[bytes, Any]:
    """The file's entries; {} for anything but a readable, regular file with
    this format's header and an intact payload that is a dict (missing, a
    FIFO, truncated, corrupt, foreign): a broken cache costs one slow run and
    is then rewritten, never an error."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO would block the run forever
            return {}
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read()
    except OSError:
        return {}
    finally:
        os.close(fd)
    start = len(_MAGIC) + _DIGEST
    if not data.startswith(_MAGIC) or hashlib.blake2b(
        memoryview(data)[start:], digest_size=_DIGEST
    ).digest() != data[len(_MAGIC) : start]:
        return {}
    try:
        loaded = marshal.loads(memoryview(data)[start:])
    except (EOFError, ValueError, TypeError):
        return {}
    return loaded if type(loaded) is dict and all(type(k) is bytes for k in loaded) else {}


def _save(path: str, data: dict[bytes, Any]) -> None:
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        import tempfile  # only where a cache is written: not in a --no-cache run

        fd, tmp = tempfile.mkstemp(dir=directory, prefix=_TEMP_PREFIX, suffix=".tmp")
    except OSError:
        return  # a cache that cannot be written only costs time
    try:
        payload = marshal.dumps(data)
        with os.fdopen(fd, "wb") as handle:
            handle.write(_MAGIC + hashlib.blake2b(payload, digest_size=_DIGEST).digest())
            handle.write(payload)
        os.replace(tmp, path)  # readers never see a half-written cache
    except (OSError, ValueError):  # ValueError: marshal met a value that is not plain
        _unlink(tmp)
        return
    except BaseException:  # interrupted: no temp file left behind either
        _unlink(tmp)
        raise
    _remove_stale_temp_files(directory)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


_TEMP_PREFIX = "audit-writing-"
_STALE_SECONDS = 3600


def _remove_stale_temp_files(directory: str) -> None:
    """Temp files a killed run left (an hour old: no live run still writes them)."""
    try:
        names = [n for n in os.listdir(directory) if n.startswith(_TEMP_PREFIX)]
    except OSError:
        return
    now = time.time()
    for name in names:
        with contextlib.suppress(OSError):
            found = os.lstat(os.path.join(directory, name))
            if stat.S_ISREG(found.st_mode) and now - found.st_mtime > _STALE_SECONDS:
                os.unlink(os.path.join(directory, name))


class Cache:
    """Per-file entries (pre-scans, summaries) and whole-run records.

    Entries are held as read (plain values) and turned into objects when asked
    for; one that does not decode is dropped, as if never cached."""

    def __init__(self, directory: str | None, enabled: bool = True) -> None:
        self.enabled = enabled and directory is not None
        stem = os.path.join(directory or "", f"audit-{_tool_fingerprint()}")
        self.files_path = stem + "-files.cache"
        self.runs_path = stem + "-runs.cache"
        self._entries: dict[bytes, Any] | None = None
        self._added: dict[bytes, Any] = {}
        self._runs: dict[bytes, Any] | None = None
        self._dirty: set[str] = set()
        self._loading = threading.Lock()

    @property
    def new(self) -> bool:
        """Whether no run has written this cache yet."""
        return not os.path.exists(self.files_path)

    @property
    def entries(self) -> dict[bytes, Any]:
        """Plain values, by key: as read, and as this run added them."""
        if self._entries is None:
            with self._loading:  # the pre-scan asks from several threads at once
                if self._entries is None:
                    self._entries = _load(self.files_path) if self.enabled else {}
        return self._entries

    def get(self, key: bytes) -> Any:
        """The object cached under ``key``; None for none or a damaged one."""
        if not self.enabled:
            return None
        added = self._added.get(key)
        if added is not None:
            return added
        plain = self.entries.get(key)
        if plain is None:
            return None
        from vllm_sp_base._audit.sources._stored import BadEntry, from_plain

        try:
            return from_plain(plain)
        except BadEntry:
            return None

    def put(self, key: bytes, value: Any) -> None:
        if self.enabled:
            self._added[key] = value
            self._dirty.add("files")

    def put_plain(self, key: bytes, plain: Any) -> None:
        """An entry already as ``to_plain`` makes it (from a forked checker)."""
        if self.enabled:
            self.entries[key] = plain
            self._dirty.add("files")

    def get_run(self, key: bytes) -> Any:
        """The plain record filed under ``key`` (its reader checks its shape)."""
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
        if "files" in self._dirty:
            from vllm_sp_base._audit.sources._stored import to_plain

            entries = self.entries
            for key, value in self._added.items():
                entries[key] = to_plain(value)
            self._added.clear()
            _save(self.files_path, entries)
        if "runs" in self._dirty and self._runs is not None:
            _save(self.runs_path, self._runs)
        self._dirty.clear()
