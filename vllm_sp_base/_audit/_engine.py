"""Run the audit: discover, pre-scan, parse what can matter, check each class."""

from __future__ import annotations

import gc
import hashlib
import marshal
import os
import sys
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from vllm_sp_base import __version__
from vllm_sp_base._audit._options import (
    DEFAULT_ENTRY_POINTS,
    DEFAULT_FEATURE_ENTRY_POINTS,
    DEFAULT_PLAIN_ENTRY_POINTS,
    RuleOptions,
)
from vllm_sp_base._audit.files._discover import DEFAULT_EXCLUDE, Discovered, discover
from vllm_sp_base._audit.files._keys import (
    MAX_FILE_BYTES,
    TooBig,
    code_key,
    content_key,
    read_with_stat,
    stat_key,
)
from vllm_sp_base._audit.report._finding import AuditResult, Unresolved
from vllm_sp_base._audit.sources._cache import Cache

if TYPE_CHECKING:
    from vllm_sp_base._audit.prescan._scans import FileScan
    from vllm_sp_base._audit.sources._sources import Sources

# A run the cache answers imports only the modules above: the analysis is
# imported where a run needs it (``_audit``, ``_check``).

__all__ = ["AuditResult", "audit", "search_roots"]


def search_roots(audited_roots: list[str], import_path: Sequence[str] | None = None) -> list[str]:
    """The audited roots, then the import path (``sys.path`` of the Python that
    runs the audit, or another's: ``--python``)."""
    path = sys.path if import_path is None else import_path
    extra = [p for p in path if p and os.path.isdir(p) and p not in audited_roots]
    return audited_roots + [os.path.abspath(p) for p in extra]


def _tree_key(discovered: Discovered, roots: list[str], parse_all: bool, options: RuleOptions) -> bytes:
    """What a run's record is filed under: the tool, the question asked, the
    search roots in their order (the environment: each keeps its own record),
    and which files there are (their contents are in the record)."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{__version__}|{parse_all}|{MAX_FILE_BYTES}|{sys.version_info[:2]}".encode())
    digest.update(repr(options).encode())
    for root in roots:
        digest.update(root.encode() + b"\0")
    for path, module in discovered.files.items():
        digest.update(path.encode() + b"\0" + module.encode() + b"\0")
    return digest.digest()


#: path -> (stat key, content key, code key) of every file a run read (and
#: of each file it could not read, with no keys): the stat as it was read.
FileKeys = dict[str, tuple[Any, bytes | None, bytes | None]]


def _reuse(saved: Any, roots: list[str]) -> tuple[AuditResult, FileKeys] | None:
    """The saved result, if no file it read changed in a way the audit can
    see: same stat, else same bytes, else (an audited file) same code key (a
    comment edited or added), and every module it looked for resolves as it
    did (none missing then found now, none found now in an earlier search
    root). With the keys of the files that moved. A record of the wrong shape
    is no record."""
    try:
        return _reused(saved, roots)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _reused(saved: dict[str, Any], roots: list[str]) -> tuple[AuditResult, FileKeys] | None:
    from vllm_sp_base._audit.semantics._project import Project

    moved: FileKeys = {}
    for path, (stat, key, code) in saved["files"].items():
        now = stat_key(path)
        if now == stat:
            continue
        if key is None or now is None:
            return None
        try:
            data, seen = read_with_stat(path)
        except (OSError, TooBig):
            return None
        new_key = content_key(data)
        if new_key != key and (code is None or code_key(data) != code):
            return None
        moved[path] = (seen, new_key, code)
    probe = Project(roots, lambda path, is_package: None)
    if any(probe.module_file(name) != found for name, found in saved["modules"].items()):
        return None  # a module appeared, or one in an earlier root now shadows the one used
    from vllm_sp_base._audit.sources._stored import BadEntry, result_from_plain

    try:
        return result_from_plain(saved["result"]), moved
    except BadEntry:
        return None


def _record(sources: Sources, discovered: Discovered) -> FileKeys | None:
    """The keys a later run checks (``_reuse``): each file's stat as it was
    read (taken before its bytes), content, and code for the audited files
    (from the digest the pre-scan's pass folded, where it did; none on a run
    that found no cache: ``Sources.code_keys``). None where a
    file changed while the run read it (its stat now is not the one it was
    read with, or two reads disagree): its result may hold what was there
    before, so nothing is recorded and the next run reads again."""
    from vllm_sp_base._audit.sources._workers import in_threads

    if sources.changed:
        return None
    audited = [p for p in discovered.files if p in sources.texts] if sources.code_keys else []
    codes = dict(zip(audited, in_threads(lambda p: code_key(sources.texts[p], sources.digests.get(p)), audited)))
    files: FileKeys = {}
    for path in {**discovered.files, **sources.seen}:
        now = stat_key(path)
        if path in sources.seen and sources.seen[path] != now:
            return None
        files[path] = (now, sources.keys.get(path), codes.get(path))
    return files


#: The recursion limit while an audit runs (Python frames of the summaries'
#: walks run inline in 3.11: this bounds their depth, not the C stack).
RECURSION_LIMIT = 20_000


def audit(
    paths: list[str],
    *,
    cache: Cache,
    parse_all: bool = False,
    entry_points: Sequence[str] = DEFAULT_ENTRY_POINTS,
    show_unreachable: bool = False,
    feature_entry_points: Sequence[str] = DEFAULT_FEATURE_ENTRY_POINTS,
    import_path: Sequence[str] | None = None,
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
    plain_entry_points: Sequence[tuple[str, Sequence[str]]] = DEFAULT_PLAIN_ENTRY_POINTS,
    src: Sequence[str] = (),
    plan_fixes: bool = False,
) -> AuditResult:
    """Raises FileNotFoundError for a path that does not exist. ``src``: the
    project's own import roots (``source_roots``), searched after the audited
    ones; ``import_path``: where bases are resolved past those (default:
    ``sys.path``); ``plan_fixes``: say in ``result.fixes`` what ``--fix``
    would do of each finding, kept with the run's record (a warm run reads
    it there, as it reads the findings)."""
    options = RuleOptions(
        tuple(entry_points), show_unreachable, tuple(feature_entry_points),
        tuple((base, tuple(methods)) for base, methods in plain_entry_points),
    )
    # Parsing allocates millions of short-lived, acyclic objects: the cyclic
    # collector would walk them again and again for nothing (~15% of a cold run).
    collecting = gc.isenabled()
    gc.disable()
    # Valid code nests deeper than Python's default limit lets ``ast`` and the
    # summaries walk (a ``return`` of a 600-term sum): raised for the run, and
    # past it a file is one diagnostic, never a crash.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
    try:
        return _audit(paths, cache, parse_all, options, import_path, exclude, src, plan_fixes)
    finally:
        sys.setrecursionlimit(limit)
        if collecting:
            gc.enable()


def _audit(
    paths: list[str], cache: Cache, parse_all: bool, options: RuleOptions,
    import_path: Sequence[str] | None, exclude: Sequence[str], src: Sequence[str], plan_fixes: bool,
) -> AuditResult:
    start = time.perf_counter()
    discovered = discover(paths, exclude, src)  # its roots (the source roots too) key the run
    roots = search_roots(discovered.roots, import_path)
    tree_key = _tree_key(discovered, roots, parse_all, options) if cache.enabled else b""
    saved = cache.get_run(tree_key)
    reused = _reuse(saved, roots) if saved is not None else None
    if saved is not None and reused is not None:
        found, moved = reused
        planned = plan_fixes and bool(found.findings) and not found.fixes  # a record of a run that planned none
        if planned:
            _plan(found, paths)
        if moved or planned:
            from vllm_sp_base._audit.sources._stored import result_to_plain

            record = result_to_plain(found) if planned else saved["result"]
            cache.put_run(tree_key, {**saved, "result": record, "files": {**saved["files"], **moved}})
            cache.save()
        return found
    from vllm_sp_base._audit.sources._sources import Sources
    from vllm_sp_base._audit.sources._workers import set_inits_of

    result = AuditResult(files=len(discovered.files))
    result.diagnostics.extend(discovered.problems)
    audited = set(discovered.files)
    sources = Sources(cache, result, audited, whole=parse_all)
    sources.marks = _suppression_marks()
    if parse_all:
        for path in discovered.files:
            sources.read(path)
    # Otherwise the pre-scan reads each file, on its threads.
    result.lap("discover and read" if parse_all else "discover", start)
    try:
        modules = _check(discovered, sources, result, roots, parse_all, options)
    finally:
        sources.workers.close()
        set_inits_of(None)
    result.diagnostics.sort()  # threads report in the order they finish
    result.parsed = len(sources.parsed)
    if plan_fixes and result.findings:
        _plan(result, paths)
    files = _record(sources, discovered) if cache.enabled and modules is not None else None
    if files is not None:
        from vllm_sp_base._audit.sources._stored import result_to_plain

        cache.put_run(tree_key, {"result": result_to_plain(result), "files": files, "modules": modules})
    # Summaries go without their file's bytes (``_stored``): whoever reads one has just read the file.
    cache.save()
    return result


def _plan(result: AuditResult, paths: list[str]) -> None:
    from vllm_sp_base._audit.fix._apply import plan_result

    plan_result(result, paths)


def _check(
    discovered: Discovered,
    sources: Sources,
    result: AuditResult,
    roots: list[str],
    parse_all: bool,
    options: RuleOptions,
) -> dict[str, tuple[str, bool] | None] | None:
    """Runs the check into ``result``; returns how each module it looked for
    resolved (None where two processes saw one resolve two ways: it changed)."""
    from vllm_sp_base._audit.prescan._prescan import (
        candidate_names,
        files_reached,
        scan_releases_the_gil,
    )
    from vllm_sp_base._audit.rule._candidates import CandidateChecker, split
    from vllm_sp_base._audit.sources._workers import Queues, in_processes, in_threads, set_inits_of

    start = time.perf_counter()
    # Both modes take ``subclassed`` (who may be only a base) from the pre-scan:
    # the same answer by construction, whichever files are parsed.
    if parse_all:
        files = list(discovered.files)
        sources.prefetch(files, b"M")
        start = result.lap("parse all", start)
    if scan_releases_the_gil():
        listed = list(discovered.files)
        found = dict(zip(listed, in_threads(sources.prescan, listed)))
    else:
        sources.prefetch(list(discovered.files), b"S")
        found = {path: sources.prescan(path) for path in discovered.files}
    scans = {path: s for path, s in found.items() if s is not None}
    chosen = candidate_names(scans.values(), {m.split(".", 1)[0] for m in discovered.files.values()})
    subclassed = chosen.subclassed
    names: set[str] | None = None  # every class is a candidate
    if not parse_all:
        names = chosen.names
        set_inits_of(chosen.in_mros)
        # A file that does not parse has its diagnostic from the checker, as with --parse-all.
        sources.whole_paths = {p for p, fs in scans.items() if not fs.parses}
        files = [p for p, fs in scans.items() if not fs.parses or any(c.name in names for c in fs.classes)]
        start = result.lap("read and pre-scan", start)

    # Its threads would be forked mid-flight with the groups; they need it no more.
    sources.workers.close()
    groups = split(files, sources.texts, None if parse_all else files_reached(scans, chosen.names))
    check = CandidateChecker(sources, roots, discovered.files, names, options, subclassed, _binders(scans))
    modules: dict[str, tuple[str, bool] | None] = {}
    agree = True
    used: set[tuple[str, int]] = set()
    ignores_used: set[tuple[str, int, str]] = set()
    queues = Queues(groups) if len(groups) > 1 and Queues.fit(groups) else None
    takers: list[Iterable[str]] = (
        [queues.taker(k) for k in range(len(groups))] if queues is not None else list(groups))
    try:
        checked_groups = in_processes(check, takers)
    finally:
        if queues is not None:
            queues.close()
    for checked in checked_groups:
        used.update(checked.noqa_used)
        ignores_used.update(checked.ignores_used)
        result.findings += checked.findings
        result.suppressed += checked.suppressed
        result.only_bases += checked.only_bases
        result.unresolved += checked.unresolved
        for path, reason in checked.problems:
            sources.problem(path, reason)
        sources.parsed |= checked.parsed
        for name, resolution in checked.modules.items():
            agree = agree and modules.setdefault(name, resolution) == resolution
        for path, seen in checked.seen:
            if sources.seen.setdefault(path, seen) != seen:
                sources.changed.add(path)
        for path, key in checked.keys:
            if sources.keys.setdefault(path, key) != key:
                sources.changed.add(path)
        for key, value in checked.entries:
            if key not in sources.memo:  # the cache only: it comes without its file's bytes
                sources.cache.put(key, value)
        for key, data in checked.stored:
            if key not in sources.memo:
                sources.cache.put_plain(key, marshal.loads(data))
    result.findings.sort(key=lambda f: (f.path, f.line, f.attribute))
    result.only_bases.sort()  # which process checked which file is decided at run time
    result.unresolved.sort(key=lambda u: (u.path, u.line, u.base))
    unchecked = _unchecked_lines(sources, result.unresolved)
    result.unused_noqa, result.unused_ignored = _unused_noqa(discovered, sources, used, ignores_used, unchecked)
    result.lap("candidates, their MROs, the rule", start)
    return modules if agree else None


def _suppression_marks() -> tuple[bytes, ...]:
    """What a line that suppresses SPB001 spells: its code (``# noqa``) or the marker of an ignore comment."""
    from vllm_sp_base._audit.rule._rule import SkippedInitRead
    from vllm_sp_base._audit.rule._suppress import MARKER

    return (SkippedInitRead.CODE.encode(), MARKER)


def _unchecked_lines(sources: Sources, unresolved: list[Unresolved]) -> set[tuple[str, int]]:
    """The lines an ignore comment counts on (the ``class`` header, the
    ``def __init__`` line) of each class not checked past an unresolved base:
    an ignore there hides what a run that resolves the base finds, so it is
    not unused in this one."""
    import ast

    from vllm_sp_base._audit.rule._suppress import MARKER

    found: set[tuple[str, int]] = set()
    by_path: dict[str, set[int]] = {}
    for u in unresolved:
        by_path.setdefault(u.path, set()).add(u.line)
    for path, lines in by_path.items():
        text = sources.texts.get(path)
        if text is None or MARKER not in text:
            continue  # no ignore comment to count (the parse took 0.2 s of a cold run on vLLM)
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            if cls.lineno not in lines or not cls.body:
                continue
            found.update((path, n) for n in range(cls.lineno, cls.body[0].lineno))
            for item in cls.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__" and item.body:
                    found.update((path, n) for n in range(item.lineno, item.body[0].lineno))
    return found


def _unused_noqa(
    discovered: Discovered, sources: Sources, used: set[tuple[str, int]], ignores_used: set[tuple[str, int, str]],
    unchecked: set[tuple[str, int]],
) -> tuple[list[tuple[str, int]], list[tuple[str, int, str]]]:
    """Lines of the audited files whose ``# noqa`` names SPB001 (or one of its
    attributes) and suppressed nothing: a class header or ``__init__`` line of a
    class with no finding to hide, or a line the rule never reads a noqa on;
    and lines whose ``# vllm-sp-base: ignore[...]`` names an attribute that hid
    nothing (a misspelt one among others too), and those attributes."""
    from vllm_sp_base._audit.rule._rule import SkippedInitRead
    from vllm_sp_base._audit.rule._suppress import MARKER, ignore_comment
    from vllm_sp_base._audit.summaries._noqa import noqa_codes

    code = SkippedInitRead.CODE
    unused: list[tuple[str, int]] = []
    names_unused: list[tuple[str, int, str]] = []
    hid_at: dict[tuple[str, int], set[str]] = {}
    for path, number, attr in ignores_used:
        hid_at.setdefault((path, number), set()).add(attr)
    for path in discovered.files:
        text = sources.texts.get(path)
        if path in sources.unmarked or text is None or (code.encode() not in text and MARKER not in text):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            names = ignore_comment(line) if MARKER in line else None
            if names and (path, number) in unchecked:
                continue
            hid = hid_at.get((path, number), set())
            if names and set(names) - hid:  # ``# vllm-sp-base: ignore[attr]`` (_suppress)
                unused.append((path, number))
                names_unused += [(path, number, name) for name in names if name not in hid]
                continue
            if (path, number) in used:
                continue
            if b"noqa" in line and code.encode() in line:
                codes = noqa_codes(line.decode("utf-8", "replace"))
                if codes and any(c.split("[", 1)[0] == code for c in codes):
                    unused.append((path, number))
    return unused, names_unused


def _binders(scans: dict[str, FileScan]) -> dict[str, frozenset[str]]:
    """Name -> the files that bind it at their top: a class they define, a
    name they import, a module they import (by its local name and by its
    own). Where a class can be built by name (``Name(...)``,
    ``module.Name(...)``), its name or its module's is bound."""
    found: dict[str, set[str]] = {}
    for path, scan in scans.items():
        for cls in scan.classes:
            found.setdefault(cls.name, set()).add(path)
        for local, module in (*scan.imported, *scan.modules):
            found.setdefault(local, set()).add(path)
            found.setdefault(module, set()).add(path)
    return {name: frozenset(paths) for name, paths in found.items()}
