"""One run of ``vllm-sp-base audit``: settings, paths, baseline, the report,
what is said on stderr, the exit code."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from vllm_sp_base._audit._config import ConfigError, Settings, anchored, load_settings
from vllm_sp_base._audit._engine import AuditResult, audit
from vllm_sp_base._audit.files._discover import DEFAULT_SRC, HIDDEN, installed_vllm, source_roots
from vllm_sp_base._audit.files._keys import open_regular
from vllm_sp_base._audit.report import _report, _stale, _text
from vllm_sp_base._audit.report._finding import display_path
from vllm_sp_base._audit.sources._cache import Cache, default_dir

PROG = "vllm-sp-base audit"
EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _Usage(Exception):
    """Bad input: the one line to say, exit 2."""


def _say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except _Usage as error:
        _say(f"error: {error}")
        return EXIT_USAGE


def _run(args: argparse.Namespace) -> int:
    settings = _settings(args)
    args.python_from = "given (--python)" if args.python is not None else None
    if args.python is None and settings.python is not None:  # the command line wins
        args.python_from = f"{settings.python} (config: python)"
        from vllm_sp_base._audit.files._discover import import_path_of

        try:
            args.python = import_path_of(settings.python)
        except ValueError as error:
            raise _Usage(f"{settings.source}: [tool.vllm-sp-base] python: {error}") from None
    form = args.format or settings.output_format
    if args.statistics and form == "sarif":
        raise _Usage("--statistics has no SARIF form (use it with a text format or json)")
    if args.show_settings:
        print(_show(settings, form, args))
        return EXIT_CLEAN
    paths = _paths(args)
    baseline: set[str] = set()
    if args.baseline:
        try:
            baseline = _report.read_baseline(args.baseline)
        except (OSError, ValueError) as error:
            raise _Usage(f"{args.baseline}: cannot read baseline: "
                         f"{getattr(error, 'strerror', None) or error}") from None
    fixing = args.fix or args.diff
    if fixing:
        _can_fix(args)
    if args.fix:
        from vllm_sp_base._audit.fix._command import FixError, finish_interrupted_fix

        try:
            finished = finish_interrupted_fix(paths)
        except FixError as error:
            raise _Usage(str(error)) from None
        if finished:
            _say(f"finished an interrupted --fix: {_text.plural(len(finished), 'file')} moved into place")
    result = _audit(paths, args, settings, plan_fixes=not (fixing or args.write_baseline))
    if args.write_baseline:
        try:
            _report.write_baseline(args.write_baseline, result)
        except OSError as error:
            raise _Usage(f"{args.write_baseline}: cannot write baseline: {error.strerror or error}") from None
        _say(f"wrote {_text.plural(len(result.findings), 'finding')} and "
             f"{_text.plural(len(result.unresolved), 'unresolved base')} to {args.write_baseline}")
        return EXIT_CLEAN
    stale = (_stale.stale(args.baseline, baseline, result, paths, settings.exclude, _source_roots(settings, args))
             if args.baseline else None)
    _drop_baselined(result, baseline)
    from vllm_sp_base._audit.fix._apply import plan_result

    fixes = plan_result(result, paths) if result.findings and fixing else {}
    left_alone = False
    if fixing:
        from vllm_sp_base._audit.fix._command import EXIT_LEFT_ALONE, FixError, apply_fixes

        try:
            outcome = apply_fixes(fixes, args, paths, _say)
        except FixError as error:
            raise _Usage(str(error)) from None
        left_alone = outcome == EXIT_LEFT_ALONE
        if outcome is not None and not left_alone:  # --diff: the diff is the whole output
            return EXIT_CLEAN if args.exit_zero else outcome
        result = _audit(paths, args, settings, plan_fixes=True)  # what is left, as the report shows it
        _drop_baselined(result, baseline)
    # Where the report has a place for the stale entries they go in it (JSON,
    # SARIF, GitHub annotations); otherwise on stderr with the summary.
    in_report = form in ("sarif", "github") or (form == "json" and not args.statistics)
    with _report_stream(args.output_file) as out:
        print(_report_text(result, form, args.statistics, stale if in_report else None), file=out, end="")
    # A machine format on stdout is the whole output (what could not be checked
    # is in it); a report written to a file leaves the terminal the summary.
    said_on_stderr = args.output_file is not None or form not in ("json", "sarif", "github")
    if said_on_stderr:
        _stderr(result, args, paths, args.fail_on or settings.fail_on)
    if stale and not args.quiet and (said_on_stderr or not in_report):
        for line in stale.lines():
            _say(line)
    if args.exit_zero:
        return EXIT_CLEAN
    code = _exit_code(result, args.fail_on or settings.fail_on)
    return max(code, 1) if left_alone else code


def _audit(paths: list[str], args: argparse.Namespace, settings: Settings, plan_fixes: bool) -> AuditResult:
    """The audit of ``paths`` (none: an empty result); ``plan_fixes``: with
    what ``--fix`` would do of each finding (``result.fixes``)."""
    if not paths:
        return AuditResult()
    cache_dir = None if args.no_cache else (args.cache_dir or default_dir())
    try:
        return audit(
            paths, cache=Cache(cache_dir, cache_dir is not None), parse_all=args.parse_all,
            entry_points=settings.entry_points, show_unreachable=settings.show_unreachable,
            feature_entry_points=settings.feature_entry_points, import_path=args.python,
            exclude=settings.exclude, plain_entry_points=settings.plain_entry_points,
            src=_source_roots(settings, args), plan_fixes=plan_fixes,
        )
    except FileNotFoundError as error:
        raise _Usage(f"{error}: no such file or directory") from None


def _drop_baselined(result: AuditResult, baseline: set[str]) -> None:
    before = len(result.findings) + len(result.unresolved)
    result.findings = [f for f in result.findings if f.fingerprint() not in baseline]
    result.fixes = {f: status for f, status in result.fixes.items() if f.fingerprint() not in baseline}
    result.unresolved = [u for u in result.unresolved if u.fingerprint() not in baseline]
    result.baselined = before - len(result.findings) - len(result.unresolved)


def _can_fix(args: argparse.Namespace) -> None:
    """--fix and --diff: what they cannot go with, and libcst, said before the audit runs."""
    if args.write_baseline:
        raise _Usage("--fix/--diff and --write-baseline: fix first, then record what is left")
    try:
        import libcst  # noqa: F401
    except ImportError:
        raise _Usage("--fix and --diff need libcst: from a clone of vllm-sp-base, "
                     "pip install './[fix]'") from None


def _start(args: argparse.Namespace) -> str:
    """Where the configuration is looked for: the folder of the audited paths."""
    if not args.paths:
        return os.getcwd()
    start: str = os.path.commonpath([os.path.abspath(p) for p in args.paths])
    return start if os.path.isdir(start) else os.path.dirname(start)


def _source_roots(settings: Settings, args: argparse.Namespace) -> list[str]:
    """The project's own import roots: ``src`` as configured, else ruff's
    default (``.`` and ``src``) under the project's root, the configuration's
    folder or (none found) the audited paths' folder. An audit of the
    installed vLLM (no path given) has no project: none unless configured."""
    if settings.src is not None:
        return source_roots(settings.src)
    if not args.paths:
        return []
    root = os.path.dirname(os.path.abspath(settings.source)) if settings.source else _start(args)
    return source_roots([os.path.join(root, folder) for folder in DEFAULT_SRC])


def _settings(args: argparse.Namespace) -> Settings:
    start = _start(args)
    try:
        settings = load_settings(start, args.config, args.isolated)
    except ConfigError as error:
        raise _Usage(str(error)) from None
    here = os.getcwd()
    return settings.overridden(
        args.entry_points, args.extend_entry_points, args.show_unreachable, args.feature_entry_points,
    ).excluding(anchored(args.exclude, here), anchored(args.extend_exclude, here))


def _show(settings: Settings, form: str, args: argparse.Namespace) -> str:
    lines = [f"config: {settings.source or 'none (defaults)'}",
             f"output-format: {form}",
             f"fail-on: {','.join(sorted(args.fail_on or settings.fail_on))}",
             f"entry-points: {','.join(settings.entry_points)}",
             f"feature-entry-points: {','.join(settings.feature_entry_points)}",
             "plain-entry-points: " + "; ".join(
                 f"{base}: {','.join(methods)}" for base, methods in settings.plain_entry_points),
             f"show-unreachable: {str(settings.show_unreachable).lower()}",
             f"exclude: {','.join(settings.exclude)}",
             f"always skipped by a walk: {HIDDEN} (a path given by name is read); .gitignore is not read",
             f"src: {', '.join(_source_roots(settings, args)) or 'none'}",
             f"python: {getattr(args, 'python_from', None) or sys.executable}"]
    return "\n".join(lines)


def _paths(args: argparse.Namespace) -> list[str]:
    """The paths to audit; a file named that is no Python source is said and
    left out (a README passed by mistake is not "1 file audited")."""
    if not args.paths:
        default = installed_vllm(args.python)
        if default is None:
            where = "the environment of --python" if args.python is not None else "this environment"
            raise _Usage(f"vLLM is not installed in {where}; give a PATH to audit")
        return [default]
    paths = []
    for path in args.paths:
        if not os.path.exists(path):
            raise _Usage(f"{path}: no such file or directory")
        if os.path.isfile(path) and not _python_source(path):
            _say(f"warning: {path}: not a Python file (neither .py nor .pyi, no python #! line): "
                 "not audited")
            continue
        paths.append(path)
    return paths


def _python_source(path: str) -> bool:
    if path.endswith((".py", ".pyi")):
        return True
    try:
        fd, _ = open_regular(path)  # a FIFO put there since it was listed: no wait
        with os.fdopen(fd, "rb") as handle:
            first = handle.readline(200)
    except OSError:
        return True  # said by the audit, as any file it cannot read
    return first.startswith(b"#!") and b"python" in first


@contextmanager
def _report_stream(path: str | None) -> Iterator[TextIO]:
    if path is None:
        yield sys.stdout
        return
    try:
        handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed below, errors said)
    except OSError as error:
        raise _Usage(f"{path}: cannot write: {error.strerror or error}") from None
    with handle:
        yield handle


def _report_text(result: AuditResult, form: str, statistics: bool, stale: _stale.Stale | None = None) -> str:
    """What goes on stdout (or ``--output-file``): the report, or with
    ``--statistics`` the counts instead; ``stale``: the baseline's entries not
    met, for the formats that hold them. Ends with a newline unless empty."""
    if statistics:
        text = _report.statistics_json(result) if form == "json" else _text.statistics(result)
    elif form == "json":
        text = _report.as_json(result, stale)
    elif form == "sarif":
        text = _report.sarif(result, stale)
    elif form == "github":
        text = _text.github(result, stale.lines() if stale else [])
    else:
        colour = form == "grouped" and _colour(sys.stdout)
        text = {"grouped": lambda r: _text.grouped(r, colour), "full": _text.full,
                "concise": _text.concise}[form](result)
    return text + "\n" if text else ""


def _stderr(result: AuditResult, args: argparse.Namespace, paths: list[str],
            fail_on: frozenset[str]) -> None:
    """In the text formats: what could not be checked, then the summary.
    Unresolved bases are one line unless ``--show-unresolved``; under ``-q``,
    said only where they fail the run."""
    if result.unresolved and (not args.quiet or "unresolved" in fail_on):
        for said in _text.unresolved_lines(result.unresolved, every=args.show_unresolved):
            _say(said)
    if not args.quiet and any(u.reason.endswith(" not found") for u in result.unresolved):
        _say(_text.missing_module_hint(args.python is not None))
    for path, number in result.unused_noqa:
        print(f"{display_path(path)}:{number}: {_text.unused_suppression(result, path, number)}",
              file=sys.stderr)
    for path, reason in result.diagnostics:
        print(f"{display_path(path)}: cannot audit: {reason}", file=sys.stderr)
    if result.files == 0 and not result.diagnostics:
        _say(f"warning: No Python files found under {', '.join(paths or args.paths)}")
    if not args.quiet:
        fixable = _text.fixable(result)
        if fixable:
            print(fixable, file=sys.stderr)
        print(_text.summary(result), file=sys.stderr)


def _exit_code(result: AuditResult, fail_on: frozenset[str]) -> int:
    severities = {"error"} if "error" in fail_on else set()
    if "warning" in fail_on:
        severities |= {"error", "warning"}
    failing = [f for f in result.findings if f.severity in severities]
    unresolved = result.unresolved if "unresolved" in fail_on else []
    unused = result.unused_noqa if "noqa" in fail_on else []
    # A file the audit could not read or parse was not checked: never "clean".
    return EXIT_FINDINGS if failing or unresolved or unused or result.diagnostics else EXIT_CLEAN


def _colour(stream: object) -> bool:
    """Colour only on a terminal, and never with NO_COLOR set (no-color.org)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
