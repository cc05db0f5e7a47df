"""Run the audit: discover, pre-scan, parse what can matter, check each class."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass, field

from vllm_sp_base._audit._cache import Cache
from vllm_sp_base._audit._files import discover
from vllm_sp_base._audit._finding import Finding
from vllm_sp_base._audit._model import ModuleInfo
from vllm_sp_base._audit._prescan import FileScan, candidate_names, scan
from vllm_sp_base._audit._project import ClassRef, Project
from vllm_sp_base._audit._rule import SkippedInitRead

MAX_FILE_BYTES = 4 * 1024 * 1024
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.M)


@dataclass
class AuditResult:
    findings: list[Finding] = field(default_factory=list)
    diagnostics: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    files: int = 0
    parsed: int = 0
    suppressed: int = 0


def _key(data: bytes, kind: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest() + kind


class _Sources:
    """File bytes, parsed summaries and pre-scans, each through the cache."""

    def __init__(self, cache: Cache, result: AuditResult, audited: set[str]) -> None:
        self.cache = cache
        self.result = result
        self.audited = audited
        self.texts: dict[str, bytes] = {}
        self.keys: dict[str, bytes] = {}

    def read(self, path: str) -> bytes | None:
        if path in self.texts:
            return self.texts[path]
        try:
            size = os.path.getsize(path)
            if size > MAX_FILE_BYTES:
                self._problem(path, f"skipped: {size} bytes is over the {MAX_FILE_BYTES}-byte limit")
                return None
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as error:
            self._problem(path, f"cannot read: {error.strerror or error}")
            return None
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as error:
            if not _CODING.search(data, 0, 400):
                self._problem(path, f"not UTF-8 (byte {error.start}) and no coding declaration")
                return None
        self.texts[path] = data
        self.keys[path] = hashlib.blake2b(data, digest_size=16).digest()
        return data

    def _problem(self, path: str, reason: str) -> None:
        if path in self.audited:
            self.result.diagnostics.append((path, reason))

    def summary(self, path: str, is_package: bool) -> ModuleInfo | None:
        data = self.read(path)
        if data is None:
            return None
        key = self.keys[path] + (b"P" if is_package else b"M")
        cached = self.cache.get(key)
        if cached is None:
            from vllm_sp_base._audit._summarize import summarize

            try:
                cached = summarize(data, path, is_package)
            except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
                line = getattr(error, "lineno", None)
                cached = f"does not parse{f' (line {line})' if line else ''}: {getattr(error, 'msg', error)}"
            self.cache.put(key, cached)
            if path in self.audited:
                self.result.parsed += 1
        if isinstance(cached, str):
            self._problem(path, cached)
            return None
        assert isinstance(cached, ModuleInfo)
        return cached

    def prescan(self, path: str) -> FileScan | None:
        data = self.read(path)
        if data is None:
            return None
        key = self.keys[path] + b"S"
        cached = self.cache.get(key)
        if cached is None:
            cached = scan(data)
            self.cache.put(key, cached)
        assert isinstance(cached, FileScan)
        return cached


def search_roots(audited_roots: list[str]) -> list[str]:
    extra = [p for p in sys.path if p and os.path.isdir(p) and p not in audited_roots]
    return audited_roots + [os.path.abspath(p) for p in extra]


def audit(paths: list[str], *, cache: Cache, parse_all: bool = False) -> AuditResult:
    """Raises FileNotFoundError for a path that does not exist."""
    discovered = discover(paths)
    result = AuditResult(files=len(discovered.files))
    result.diagnostics.extend(discovered.problems)
    audited = set(discovered.files)
    sources = _Sources(cache, result, audited)
    project = Project(search_roots(discovered.roots), sources.summary)
    modules = {name: path for path, name in discovered.files.items()}

    candidates: list[ClassRef] = []
    if parse_all:
        for path, name in discovered.files.items():
            info = project.module(name) if project.module_file(name) else None
            if info is None:
                info = sources.summary(path, path.endswith("__init__.py"))
                if info is not None:
                    project.add_module(name, info)
            if info is not None:
                candidates += [ClassRef(name, c) for c in info.classes]
    else:
        scans = {path: s for path in discovered.files if (s := sources.prescan(path)) is not None}
        names = candidate_names(scans.values())
        for path, file_scan in scans.items():
            if not any(c.name in names for c in file_scan.classes):
                continue
            name = discovered.files[path]
            info = project.module(name)
            if info is not None:
                candidates += [ClassRef(name, c) for c in info.classes if c in names]

    rule = SkippedInitRead(project, lambda module: module in modules)
    for ref in candidates:
        cls = project.class_info(ref)
        findings = rule.check(ref)
        if cls is not None and cls.noqa is not None and (not cls.noqa or rule.CODE in cls.noqa):
            result.suppressed += len(findings)
            continue
        result.findings += findings
    result.findings.sort(key=lambda f: (f.path, f.line, f.attribute))
    cache.save()
    return result
