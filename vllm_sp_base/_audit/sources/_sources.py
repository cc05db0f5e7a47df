"""Where the audit's files are read, once each: their bytes, their pre-scans
and summaries, each through the cache, and why a file could not be read."""

from __future__ import annotations

import re
from typing import Any

from vllm_sp_base._audit.files._keys import (
    MAX_FILE_BYTES,
    StatKey,
    TooBig,
    content_key,
    read_with_stat,
    stat_key,
)
from vllm_sp_base._audit.prescan._prescan import read_and_scan, scan, scanned, spells_any
from vllm_sp_base._audit.prescan._scans import FileScan
from vllm_sp_base._audit.report._finding import AuditResult
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.sources._workers import Workers, summarize_or_reason
from vllm_sp_base._audit.summaries._summaries import ModuleInfo, attach_sources

_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.MULTILINE)


class Sources:
    """File bytes, parsed summaries and pre-scans, each through the cache."""

    def __init__(
        self, cache: Cache, result: AuditResult, audited: set[str], whole: bool = False
    ) -> None:
        self.cache = cache
        # Summaries of whole files (``--parse-all``) or of files with their
        # method bodies cut out, parsed when asked for: the same once parsed,
        # kept apart so the first mode stays a check on the second.
        self.summary_kinds = (b"m", b"p") if whole else (b"M", b"P")
        # Files the pre-scan could not parse: parsed whole, so a cut body that
        # holds the error is not left unread (the diagnostic --parse-all gives).
        self.whole_paths: set[str] = set()
        self.result = result
        self.audited = audited
        self.texts: dict[str, bytes] = {}
        self.keys: dict[str, bytes] = {}
        # What the run's record is keyed on: the stat of each file as it was
        # read (None: there was nothing), and the code digests the pre-scan's
        # pass folded on the way (``code_key``).
        self.seen: dict[str, StatKey | None] = {}
        self.digests: dict[str, bytes] = {}
        # Code keys let a later run keep its result across a comment edit. A
        # first run (no cache yet: CI without a kept cache) folds none: it
        # pays nothing for them, and the run after it folds them.
        self.code_keys = cache.enabled and not cache.new
        self.changed: set[str] = set()  # files two reads of this run saw differ
        self.unreadable: set[str] = set()  # files this run could not read (said once)
        self.memo: dict[bytes, Any] = {}
        self.reported: set[str] = set()
        self.decodable: dict[str, bool] = {}  # path -> valid UTF-8 or declares its coding
        self.parsed: set[str] = set()  # audited files summarised (now or in the cache)
        self.stored: list[bytes] = []  # keys this process added to the cache
        # The bytes a suppression comment spells (set by the engine), and the files
        # the pre-scan's threads found holding none of them: read again by nobody.
        self.marks: tuple[bytes, ...] = ()
        self.unmarked: set[str] = set()
        self.workers = Workers(self.texts)

    def _lookup(self, key: bytes, path: str) -> Any:
        """What memory or the cache holds for ``key``; None for nothing, or for
        an entry of the wrong kind (a damaged cache): it is made again."""
        found = self.memo.get(key)
        if found is None:
            found = self.cache.get(key)
            if not isinstance(found, FileScan if key.endswith(b"S") else (ModuleInfo, str)):
                return None
            if isinstance(found, ModuleInfo):
                # Cached without the file's bytes (see _stored): they are
                # the bytes just read, whose digest the key holds.
                attach_sources(found, self.texts[path], path)
                self.memo[key] = found
        return found

    def _store(self, key: bytes, value: Any) -> None:
        self.memo[key] = value
        if self.cache.enabled:
            self.cache.put(key, value)
            self.stored.append(key)

    def prefetch(self, paths: list[str], kind: bytes) -> None:
        """Compute pre-scans (kind ``S``) or summaries (``M``/``P`` by file) of
        ``paths`` not yet known, on every core."""
        todo = []
        for path in paths:
            if self.read(path) is None:
                continue
            job_kind = kind if kind == b"S" else self.summary_kinds[path.endswith("__init__.py")]
            key = self.keys[path] + job_kind
            if self._lookup(key, path) is not None:
                if kind != b"S" and path in self.audited:
                    self.parsed.add(path)  # summarised by an earlier run: counted the same
            elif self._decodable(path, self.texts[path]):
                todo.append((path, job_kind, key))
        for (path, _, key), value in zip(todo, self.workers.map([(p, k) for p, k, _ in todo])):
            if isinstance(value, ModuleInfo):
                attach_sources(value, self.texts[path], path)
            self._store(key, value)
            if kind != b"S" and path in self.audited:
                self.parsed.add(path)

    def read(self, path: str) -> bytes | None:
        if path in self.texts:
            return self.texts[path]
        return self._load(path, lexing=False)[0]

    def _load(self, path: str, lexing: bool) -> tuple[bytes | None, Any]:
        """``path``'s bytes, and with ``lexing`` what the compiled lexer found
        in them (read and lexed in one call: see ``read_and_scan``); None,
        said once, where the file cannot be read (and for the rest of the run:
        one run, one view of each file)."""
        if path in self.unreadable:
            return None, None  # tried before
        try:
            try:
                data, found, digest, self.seen[path] = _read_and_scan(path, self.code_keys) if lexing else _read(path)
            except (OSError, TooBig):
                # Tried again after a stat, so the stat the record keeps was
                # taken before the read that failed: a file that appears or
                # becomes readable after it differs from it (see ``_record``).
                self.seen[path] = stat_key(path)
                data, found, digest, self.seen[path] = _read_and_scan(path, self.code_keys) if lexing else _read(path)
        except TooBig as big:
            self.unreadable.add(path)
            self.problem(path, f"skipped: {big.size} bytes is over the {MAX_FILE_BYTES}-byte limit")
            return None, None
        except OSError as error:
            self.unreadable.add(path)
            self.problem(path, f"cannot read: {error.strerror or error}")
            return None, None
        self.texts[path] = data
        if digest is not None:
            self.digests[path] = digest
        # Without a cache nothing outlives the run: the path is key enough, and
        # hashing vLLM's 50 MB would only slow a cold run down.
        self.keys[path] = content_key(data) if self.cache.enabled else path.encode() + b"\0"
        return data, found

    def problem(self, path: str, reason: str) -> None:
        if path in self.audited and path not in self.reported:
            self.reported.add(path)
            self.result.diagnostics.append((path, reason))

    def _decodable(self, path: str, data: bytes) -> bool:
        if data.isascii():
            return True
        known = self.decodable.get(path)
        if known is None:  # decoded once, though scan and summary both ask
            try:
                data.decode("utf-8")
                known = True
            except UnicodeDecodeError as error:
                known = _CODING.search(data, 0, 400) is not None
                if not known:
                    self.problem(path, f"not UTF-8 (byte {error.start}) and no coding declaration")
            self.decodable[path] = known
        return known

    def summary(self, path: str, is_package: bool) -> ModuleInfo | None:
        data = self.read(path)
        if data is None:
            return None
        kind = (b"m", b"p")[is_package] if path in self.whole_paths else self.summary_kinds[is_package]
        key = self.keys[path] + kind
        cached = self._lookup(key, path)
        if cached is None:
            if not self._decodable(path, data):
                return None
            cached = summarize_or_reason(data, path, kind)
            self._store(key, cached)
        if path in self.audited:
            self.parsed.add(path)  # parsed now or by an earlier run: one count
        if isinstance(cached, str):
            self.problem(path, cached)
            return None
        assert isinstance(cached, ModuleInfo)
        return cached

    def prescan(self, path: str) -> FileScan | None:
        # Read by the lexer, which holds no GIL for the reading either: the
        # pre-scan's threads then read in parallel (os.read alone did not: the
        # Python around thousands of small reads holds the GIL).
        lexed = path not in self.texts and read_and_scan is not None
        data, found = self._load(path, lexing=True) if lexed else (self.read(path), None)
        if data is None:
            return None
        if self.marks and spells_any is not None and not spells_any(data, self.marks):
            self.unmarked.add(path)
        key = self.keys[path] + b"S"
        cached = self._lookup(key, path)
        if cached is None:
            if not self._decodable(path, data):
                return None
            cached = scanned(data, found) if lexed else scan(data)
            self._store(key, cached)
        assert isinstance(cached, FileScan)
        return cached


def _read(path: str) -> tuple[bytes, None, None, StatKey]:
    data, seen = read_with_stat(path)
    return data, None, None, seen


def _read_and_scan(path: str, with_digest: bool = True) -> tuple[bytes, Any, bytes | None, StatKey]:
    """``read_with_stat``, the compiled lexer's scan of the bytes and their
    code digest (``code_key``), in one call and one lexing pass."""
    assert read_and_scan is not None
    answer = read_and_scan(path, MAX_FILE_BYTES, with_digest)
    if answer[0] is None:
        raise TooBig(answer[1])
    data, found, digest, seen = answer
    return data, found, digest, seen
