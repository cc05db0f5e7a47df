"""Run the audit: discover, pre-scan, parse what can matter, check each class."""

from __future__ import annotations

import gc
import hashlib
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from vllm_sp_base import __version__
from vllm_sp_base._audit._cache import Cache
from vllm_sp_base._audit._candidates import CandidateChecker, split
from vllm_sp_base._audit._files import Discovered, discover
from vllm_sp_base._audit._finding import Finding
from vllm_sp_base._audit._model import ModuleInfo, attach_sources, detach_sources
from vllm_sp_base._audit._prescan import (
    FileScan,
    candidate_names,
    read_and_scan,
    scan,
    scan_releases_the_gil,
    scanned,
)
from vllm_sp_base._audit._workers import (
    Workers,
    in_processes,
    in_threads,
    set_inits_of,
    summarize_or_reason,
)

MAX_FILE_BYTES = 4 * 1024 * 1024
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.MULTILINE)


@dataclass
class AuditResult:
    findings: list[Finding] = field(default_factory=list)
    diagnostics: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    files: int = 0
    parsed: int = 0
    suppressed: int = 0
    # Wall seconds of each phase of this run (``bench/audit_speed.py`` prints
    # them); empty when the whole-run cache answered.
    seconds: dict[str, float] = field(default_factory=dict)

    def lap(self, phase: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[phase] = now - since
        return now


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
        self.result = result
        self.audited = audited
        self.texts: dict[str, bytes] = {}
        self.keys: dict[str, bytes] = {}
        self.memo: dict[bytes, Any] = {}
        self.reported: set[str] = set()
        self.decodable: dict[str, bool] = {}  # path -> valid UTF-8 or declares its coding
        self.parsed: set[str] = set()  # audited files summarised
        self.stored: list[bytes] = []  # keys this process added to the cache
        self.workers = Workers(self.texts)

    def _lookup(self, key: bytes, path: str) -> Any:
        found = self.memo.get(key)
        if found is None:
            found = self.cache.get(key)
            if isinstance(found, ModuleInfo):
                # Cached without the file's bytes (see save_cache): they are
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
            if self._lookup(key, path) is None and self._decodable(path, self.texts[path]):
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
        said once, where the file cannot be read."""
        try:
            data, found = _read_and_scan(path) if lexing else (_read(path), None)
        except _TooBig as big:
            self.problem(path, f"skipped: {big.size} bytes is over the {MAX_FILE_BYTES}-byte limit")
            return None, None
        except OSError as error:
            self.problem(path, f"cannot read: {error.strerror or error}")
            return None, None
        self.texts[path] = data
        # Without a cache nothing outlives the run: the path is key enough, and
        # hashing vLLM's 50 MB would only slow a cold run down.
        self.keys[path] = _content_key(data) if self.cache.enabled else path.encode() + b"\0"
        return data, found

    def save_cache(self) -> None:
        """Summaries are cached without their file's bytes: whoever reads one
        back has just read that file. (The run is over: nothing parses a body
        of these any more.)"""
        if self.cache.enabled:
            for value in self.cache.entries.values():
                if isinstance(value, ModuleInfo):
                    detach_sources(value)
            self.cache.save()

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
        kind = self.summary_kinds[is_package]
        key = self.keys[path] + kind
        cached = self._lookup(key, path)
        if cached is None:
            if not self._decodable(path, data):
                return None
            cached = summarize_or_reason(data, path, kind)
            self._store(key, cached)
            if path in self.audited:
                self.parsed.add(path)
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
        key = self.keys[path] + b"S"
        cached = self._lookup(key, path)
        if cached is None:
            if not self._decodable(path, data):
                return None
            cached = scanned(data, found) if lexed else scan(data)
            self._store(key, cached)
        assert isinstance(cached, FileScan)
        return cached


class _TooBig(Exception):
    def __init__(self, size: int) -> None:
        self.size = size


def _read(path: str) -> bytes:
    """The file's bytes, with the fewest system calls (``open()`` adds a buffer
    and a probe or two per file); raises _TooBig past MAX_FILE_BYTES."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        size = os.fstat(fd).st_size
        if size > MAX_FILE_BYTES:
            raise _TooBig(size)
        parts = [os.read(fd, size)]
        while sum(map(len, parts)) < size and parts[-1]:  # a short read: keep going
            parts.append(os.read(fd, size - sum(map(len, parts))))
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


def _read_and_scan(path: str) -> tuple[bytes, Any]:
    """``_read`` and the compiled lexer's scan of the bytes, in one call."""
    assert read_and_scan is not None
    data, found = read_and_scan(path, MAX_FILE_BYTES)
    if data is None:
        raise _TooBig(found)
    return data, found


def _content_key(data: bytes) -> bytes:
    # SHA-256 runs in hardware on current x86 and ARM: 3x blake2b on a warm run.
    return hashlib.sha256(data).digest()[:16]


def search_roots(audited_roots: list[str]) -> list[str]:
    extra = [p for p in sys.path if p and os.path.isdir(p) and p not in audited_roots]
    return audited_roots + [os.path.abspath(p) for p in extra]


def _run_key(discovered: Discovered, sources: Sources, roots: list[str], parse_all: bool) -> bytes:
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{__version__}|{parse_all}|{MAX_FILE_BYTES}|{sys.version_info[:2]}".encode())
    for root in roots:
        digest.update(root.encode() + b"\0")
    for path, module in discovered.files.items():
        digest.update(path.encode() + b"\0" + module.encode() + b"\0")
        digest.update(sources.keys.get(path, b"-"))
    return digest.digest()


def _still_valid(saved: dict[str, Any]) -> bool:
    for path, key in saved["dependencies"]:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return False
        if _content_key(data) != key:
            return False
    return True


def audit(paths: list[str], *, cache: Cache, parse_all: bool = False) -> AuditResult:
    """Raises FileNotFoundError for a path that does not exist."""
    # Parsing allocates millions of short-lived, acyclic objects: the cyclic
    # collector would walk them again and again for nothing (~15% of a cold run).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _audit(paths, cache, parse_all)
    finally:
        if collecting:
            gc.enable()


def _audit(paths: list[str], cache: Cache, parse_all: bool) -> AuditResult:
    start = time.perf_counter()
    discovered = discover(paths)
    result = AuditResult(files=len(discovered.files))
    result.diagnostics.extend(discovered.problems)
    audited = set(discovered.files)
    sources = Sources(cache, result, audited, whole=parse_all)
    read_first = cache.enabled or parse_all  # the whole-run cache's key needs every file's digest
    if read_first:
        for path in discovered.files:
            sources.read(path)
    # Otherwise the pre-scan reads each file, on its threads.
    roots = search_roots(discovered.roots)
    result.lap("discover and read" if read_first else "discover", start)
    run_key = _run_key(discovered, sources, roots, parse_all) if cache.enabled else b""
    saved = cache.get_run(run_key)
    if saved is not None and _still_valid(saved):
        return AuditResult(**saved["result"])
    try:
        _check(discovered, sources, result, roots, parse_all, read_first)
    finally:
        sources.workers.close()
        set_inits_of(None)
    result.diagnostics.sort()  # threads report in the order they finish
    result.parsed = len(sources.parsed)
    dependencies = [(p, k) for p, k in sources.keys.items() if p not in audited]
    kept = {k: v for k, v in vars(result).items() if k != "seconds"}
    cache.put_run(run_key, {"result": kept, "dependencies": dependencies})
    sources.save_cache()
    return result


def _check(
    discovered: Discovered,
    sources: Sources,
    result: AuditResult,
    roots: list[str],
    parse_all: bool,
    read_first: bool,
) -> None:
    start = time.perf_counter()
    names: set[str] | None = None  # every class is a candidate
    if parse_all:
        files = list(discovered.files)
        sources.prefetch(files, b"M")
        start = result.lap("parse all", start)
    else:
        if scan_releases_the_gil():
            listed = list(discovered.files)
            found = dict(zip(listed, in_threads(sources.prescan, listed)))
        else:
            sources.prefetch(list(discovered.files), b"S")
            found = {path: sources.prescan(path) for path in discovered.files}
        scans = {path: s for path, s in found.items() if s is not None}
        chosen = candidate_names(scans.values(), {m.split(".", 1)[0] for m in discovered.files.values()})
        names = chosen.names
        set_inits_of(chosen.in_mros)
        files = [p for p, fs in scans.items() if any(c.name in chosen.names for c in fs.classes)]
        start = result.lap("pre-scan" if read_first else "read and pre-scan", start)

    # Its threads would be forked mid-flight with the groups; they need it no more.
    sources.workers.close()
    groups = split(files, sources.texts)
    check = CandidateChecker(sources, roots, discovered.files, names)
    for checked in in_processes(check, groups):
        result.findings += checked.findings
        result.suppressed += checked.suppressed
        for path, reason in checked.problems:
            sources.problem(path, reason)
        sources.parsed |= checked.parsed
        for path, key in checked.keys:
            sources.keys.setdefault(path, key)
        for key, value in checked.entries:
            if key not in sources.memo:  # the cache only: it comes without its file's bytes
                sources.cache.put(key, value)
    result.findings.sort(key=lambda f: (f.path, f.line, f.attribute))
    result.lap("candidates, their MROs, the rule", start)
