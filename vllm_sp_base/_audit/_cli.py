"""Arguments and exit codes of ``vllm-sp-base audit``."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from vllm_sp_base._audit import _report, _text
from vllm_sp_base._audit._cache import Cache, default_dir
from vllm_sp_base._audit._config import ConfigError, load_settings
from vllm_sp_base._audit._engine import AuditResult, audit
from vllm_sp_base._audit._finding import display_path
from vllm_sp_base._audit._options import DEFAULT_ENTRY_POINTS
from vllm_sp_base._audit._text import FORMATS

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or directories (default: the installed vLLM package)")
    parser.add_argument("--output-format", "--format", dest="format", choices=FORMATS,
                        default="grouped",
                        help="grouped: by class, errors first (default); full: one line a "
                             "finding with its whole message; concise: one short line a finding; "
                             "json; sarif (2.1.0); github: workflow annotations")
    parser.add_argument("--statistics", action="store_true",
                        help="also print how many findings each skipped __init__ causes")
    parser.add_argument("--fail-on", type=_fail_on, default=_FAIL_ON_DEFAULT, metavar="WHAT",
                        help="what makes the exit code 1, comma-separated: error (errors only), "
                             "warning (warnings and errors), unresolved (a base that could not be "
                             "resolved), noqa (a '# noqa: SPB001' that suppresses nothing); default: "
                             "warning,unresolved,noqa. A file that could not be audited always does.")
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument("--baseline", metavar="FILE", help="ignore findings recorded in FILE")
    baseline.add_argument("--write-baseline", metavar="FILE",
                          help="record the current findings in FILE and exit 0")
    parser.add_argument("--exclude", metavar="GLOBS", type=_globs, default=None,
                        help="comma-separated globs of files and folders a walk skips, replacing "
                             "the defaults (build, dist, venv, *.egg-info, site-packages, "
                             "__pycache__, ...); a glob with '/' matches the path under the given "
                             "folder; also [tool.vllm-sp-base] exclude")
    parser.add_argument("--extend-exclude", metavar="GLOBS", type=_globs, default=None,
                        help="globs skipped in addition to the defaults or the configured ones")
    parser.add_argument("--python", metavar="PYTHON", type=_interpreter, default=None,
                        help="resolve bases from the packages of this interpreter (the vLLM "
                             "environment) instead of the one running the audit; nothing of it "
                             "is imported into the audit")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument("--cache-dir", default=None, type=_directory,
                        help=f"cache location (default: {default_dir() or 'none, no home directory'})")
    parser.add_argument("--parse-all", action="store_true",
                        help="parse every file instead of pre-scanning (same findings, slower)")
    parser.add_argument("--entry-points", metavar="NAMES", type=_names, default=None,
                        help="comma-separated methods a runner calls on a built module "
                             f"(default: {','.join(DEFAULT_ENTRY_POINTS)}); "
                             "also [tool.vllm-sp-base] entry-points in pyproject.toml")
    parser.add_argument("--extend-entry-points", metavar="NAMES", type=_names, default=None,
                        help="entry points added to the default or configured ones")
    parser.add_argument("--feature-entry-points", metavar="NAMES", type=_names, default=None,
                        help="methods a runner calls only with a feature on: what they "
                             "reach is at most a warning")
    parser.add_argument("--show-unreachable", action="store_true", default=None,
                        help="also report, as notes, reads that no entry point reaches")


def _globs(text: str) -> tuple[str, ...]:
    globs = tuple(g.strip() for g in text.split(","))
    if not globs or any(not g.strip("/") for g in globs):
        raise argparse.ArgumentTypeError(f"{text!r}: an empty glob (comma-separated globs, e.g. build,dist)")
    return globs


def _interpreter(text: str) -> list[str]:
    """The import path of another Python: asked of it (``sys.path``), nothing imported here."""
    import json
    import subprocess

    try:
        done = subprocess.run(
            [text, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
            capture_output=True, text=True, timeout=60, check=False,
        )
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired) as error:
        raise argparse.ArgumentTypeError(f"{text}: cannot run it as Python ({error})") from None
    if not isinstance(found, list) or not all(isinstance(p, str) for p in found):
        raise argparse.ArgumentTypeError(f"{text}: not a Python interpreter (exit {done.returncode})")
    return [p for p in found if p and os.path.isdir(p)]


def print_rule(args: argparse.Namespace) -> int:
    """``vllm-sp-base rule SPB001``: what the rule finds, its examples, its doc."""
    import inspect
    import textwrap

    from vllm_sp_base._audit._report import RULE_DOC
    from vllm_sp_base._audit._rule import SkippedInitRead as rule

    if args.code.upper() != rule.CODE:
        print(f"vllm-sp-base rule: error: unknown rule {args.code!r} (there is {rule.CODE})",
              file=sys.stderr)
        return EXIT_USAGE
    print(f"{rule.CODE}: {rule.__name__}\n")
    print(inspect.cleandoc(rule.__doc__ or ""))
    for title, examples in (("Reported", rule.INVALID), ("Not reported", rule.VALID)):
        for example in examples[:2]:
            print(f"\n{title}:\n{textwrap.indent(example.source.strip(), '    ')}")
    print(f"\nMore examples: {len(rule.VALID)} valid and {len(rule.INVALID)} reported in the rule's "
          f"source; the whole story: {RULE_DOC}")
    return EXIT_CLEAN


_FAIL_ON = ("error", "warning", "unresolved", "noqa")
_FAIL_ON_DEFAULT = frozenset({"warning", "unresolved", "noqa"})


def _fail_on(text: str) -> frozenset[str]:
    chosen = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(chosen - set(_FAIL_ON))
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(_FAIL_ON)} (comma-separated)")
    return chosen


def _directory(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("an empty path (leave --cache-dir out for the default)")
    return text


def _names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if not n.isidentifier()]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"not a list of method names: {text!r}")
    return names


def installed_vllm() -> str | None:
    spec = importlib.util.find_spec("vllm")  # locates the package; does not import it
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(iter(spec.submodule_search_locations))


def _fail(message: str) -> int:
    print(f"vllm-sp-base audit: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    paths: list[str] = args.paths
    if not paths:
        default = installed_vllm()
        if default is None:
            return _fail("vLLM is not installed in this environment; give a PATH to audit")
        paths = [default]
    for path in paths:
        if not os.path.exists(path):
            return _fail(f"{path}: no such file or directory")
    baseline: set[str] = set()
    if args.baseline:
        try:
            baseline = _report.read_baseline(args.baseline)
        except (OSError, ValueError) as error:
            return _fail(f"{args.baseline}: cannot read baseline: {getattr(error, 'strerror', None) or error}")
    try:
        settings = load_settings(os.getcwd())
    except ConfigError as error:
        return _fail(str(error))
    settings = settings.overridden(
        args.entry_points, args.extend_entry_points, args.show_unreachable, args.feature_entry_points,
    ).excluding(args.exclude, args.extend_exclude)
    cache_dir = None if args.no_cache else (args.cache_dir or default_dir())
    cache = Cache(cache_dir, cache_dir is not None)
    try:
        result = audit(
            paths, cache=cache, parse_all=args.parse_all,
            entry_points=settings.entry_points, show_unreachable=settings.show_unreachable,
            feature_entry_points=settings.feature_entry_points, import_path=args.python,
            exclude=settings.exclude,
        )
    except FileNotFoundError as error:
        return _fail(f"{error}: no such file or directory")
    if args.write_baseline:
        try:
            _report.write_baseline(args.write_baseline, result.findings)
        except OSError as error:
            return _fail(f"{args.write_baseline}: cannot write baseline: {error.strerror or error}")
        print(f"vllm-sp-base audit: wrote {len(result.findings)} finding(s) to {args.write_baseline}",
              file=sys.stderr)
        return EXIT_CLEAN
    stale = sorted(baseline - {f.fingerprint() for f in result.findings})
    result.findings = [f for f in result.findings if f.fingerprint() not in baseline]
    _print(result, args.format, args.statistics)
    if stale and args.format not in ("json", "sarif", "github"):
        shown = ", ".join(stale[:3]) + (f" and {len(stale) - 3} more" if len(stale) > 3 else "")
        print(f"vllm-sp-base audit: {args.baseline}: {len(stale)} entr{'y' if len(stale) == 1 else 'ies'} "
              f"no finding matches any more (fixed, or the class renamed): {shown}; "
              f"refresh it with --write-baseline", file=sys.stderr)
    severities = {"error"} if "error" in args.fail_on else set()
    if "warning" in args.fail_on:
        severities |= {"error", "warning"}
    failing = [f for f in result.findings if f.severity in severities]
    unresolved = result.unresolved if "unresolved" in args.fail_on else []
    unused = result.unused_noqa if "noqa" in args.fail_on else []
    # A file the audit could not read or parse was not checked: never "clean".
    return EXIT_FINDINGS if failing or unresolved or unused or result.diagnostics else EXIT_CLEAN


def _print(result: AuditResult, form: str, statistics: bool) -> None:
    """The report on stdout; in the text formats, what could not be checked
    and the summary on stderr (stdout stays the findings alone)."""
    if form == "json":
        print(_report.as_json(result))
        return
    if form == "sarif":
        print(_report.sarif(result))
        return
    colour = form == "grouped" and _colour(sys.stdout)
    render = {"grouped": lambda r: _text.grouped(r, colour), "full": _text.full,
              "concise": _text.concise, "github": _text.github}[form]
    report = render(result)
    if report:
        print(report)
    if statistics and result.findings:
        print(_text.statistics(result))
    if form == "github":
        return
    for said in _text.unresolved_lines(result.unresolved):
        print(f"vllm-sp-base audit: {said}", file=sys.stderr)
    for path, number in result.unused_noqa:
        print(f"{display_path(path)}:{number}: {_text.UNUSED_NOQA}", file=sys.stderr)
    for path, reason in result.diagnostics:
        print(f"{display_path(path)}: cannot audit: {reason}", file=sys.stderr)
    print(_text.summary(result), file=sys.stderr)


def _colour(stream: object) -> bool:
    """Colour only on a terminal, and never with NO_COLOR set (no-color.org)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
