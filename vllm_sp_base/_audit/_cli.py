"""Arguments and exit codes of ``vllm-sp-base audit``."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from vllm_sp_base._audit import _report
from vllm_sp_base._audit._cache import Cache, default_dir
from vllm_sp_base._audit._config import ConfigError, load_settings
from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit._options import DEFAULT_ENTRY_POINTS

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or directories (default: the installed vLLM package)")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument("--fail-on", choices=("error", "warning"), default="warning",
                        help="lowest severity that makes the exit code 1 (default: warning)")
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument("--baseline", metavar="FILE", help="ignore findings recorded in FILE")
    baseline.add_argument("--write-baseline", metavar="FILE",
                          help="record the current findings in FILE and exit 0")
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
        args.entry_points, args.extend_entry_points, args.show_unreachable, args.feature_entry_points)
    cache_dir = None if args.no_cache else (args.cache_dir or default_dir())
    cache = Cache(cache_dir, cache_dir is not None)
    try:
        result = audit(
            paths, cache=cache, parse_all=args.parse_all,
            entry_points=settings.entry_points, show_unreachable=settings.show_unreachable,
            feature_entry_points=settings.feature_entry_points,
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
    result.findings = [f for f in result.findings if f.fingerprint() not in baseline]
    if args.format == "json":
        print(_report.as_json(result))
    elif args.format == "sarif":
        print(_report.sarif(result))
    else:
        if result.findings:
            print(_report.text(result))
        if result.diagnostics:
            print(_report.diagnostics_text(result), file=sys.stderr)
        errors = sum(f.severity == "error" for f in result.findings)
        print(
            f"vllm-sp-base audit: {len(result.findings)} finding(s) ({errors} error(s)) in "
            f"{result.files} file(s); {len(result.diagnostics)} file(s) could not be audited",
            file=sys.stderr,
        )
    failing = [
        f for f in result.findings
        if f.severity == "error" or (args.fail_on == "warning" and f.severity == "warning")
    ]
    # A file the audit could not read or parse was not checked: never "clean".
    return EXIT_FINDINGS if failing or result.diagnostics else EXIT_CLEAN
