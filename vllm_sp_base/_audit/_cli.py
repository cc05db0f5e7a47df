"""The arguments of ``vllm-sp-base audit`` and ``vllm-sp-base rule`` (the run
itself is ``_command``)."""

from __future__ import annotations

import argparse
import os
import re
import sys

from vllm_sp_base._audit._command import EXIT_CLEAN, EXIT_USAGE
from vllm_sp_base._audit._config import FORMATS, fail_on
from vllm_sp_base._audit._options import DEFAULT_ENTRY_POINTS
from vllm_sp_base._audit.sources._cache import default_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or directories (default: the vLLM package of --python's "
                             "environment, or of this one)")
    parser.add_argument("--output-format", "--format", dest="format", choices=FORMATS, default=None,
                        help="grouped: by class, errors first (default); full: one line a "
                             "finding with its whole message; concise: one short line a finding; "
                             "json; sarif (2.1.0); github: workflow annotations; "
                             "also [tool.vllm-sp-base] output-format")
    parser.add_argument("--output-file", "-o", metavar="FILE", default=None,
                        help="write the report to FILE instead of stdout (the summary stays on stderr)")
    parser.add_argument("--statistics", action="store_true",
                        help="instead of the findings, how many each skipped __init__ causes")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="the report and what fails the run only: no summary, no advice")
    parser.add_argument("--show-unresolved", action="store_true",
                        help="list every base that could not be resolved, with the classes it "
                             "hides (default: one line for them all)")
    parser.add_argument("--fail-on", type=_fail_on, default=None, metavar="WHAT",
                        help="what makes the exit code 1, comma-separated: error (errors only), "
                             "warning (warnings and errors), unresolved (a base that could not be "
                             "resolved), noqa (a '# noqa: SPB001' that suppresses nothing); default: "
                             "warning,unresolved,noqa; also [tool.vllm-sp-base] fail-on. A file that "
                             "could not be audited always does.")
    parser.add_argument("--fix", action="store_true",
                        help="apply the safe fixes (needs libcst), then report what is left")
    parser.add_argument("--unsafe-fixes", action="store_true",
                        help="with --fix or --diff: the unsafe fixes too (each finding says which "
                             "it has, and why one is unsafe)")
    parser.add_argument("--diff", action="store_true",
                        help="print the fixes as a unified diff instead of writing them; change nothing")
    parser.add_argument("--exit-zero", action="store_true",
                        help="exit 0 whatever was found (2 still for bad input)")
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument("--baseline", metavar="FILE",
                          help="ignore the findings and unresolved bases recorded in FILE")
    baseline.add_argument("--write-baseline", metavar="FILE",
                          help="record the current findings and unresolved bases in FILE and exit 0")
    parser.add_argument("--exclude", metavar="GLOBS", type=_globs, default=None,
                        help="comma-separated globs of files and folders a walk skips, replacing "
                             "the defaults (build, dist, venv, *.egg-info, site-packages, "
                             "__pycache__, ...); a glob with '/' matches the path under the current "
                             "directory; also [tool.vllm-sp-base] exclude (under its file's folder). "
                             "Names starting with '.' are always skipped (a path given is read); "
                             ".gitignore is not read")
    parser.add_argument("--extend-exclude", metavar="GLOBS", type=_globs, default=None,
                        help="globs skipped in addition to the defaults or the configured ones")
    parser.add_argument("--config", metavar="FILE", default=None,
                        help="the pyproject.toml (or other TOML file) whose [tool.vllm-sp-base] to "
                             "use, instead of the nearest one above the audited paths")
    parser.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    parser.add_argument("--show-settings", action="store_true",
                        help="print the settings this run would use and where they come from; "
                             "audit nothing")
    parser.add_argument("--python", metavar="PYTHON", type=_interpreter, default=None,
                        help="resolve bases from the packages of this interpreter, or of this "
                             "virtual environment's folder (the vLLM environment), instead of the "
                             "one running the audit; nothing of it is imported into the audit "
                             "(config: python)")
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


def run(args: argparse.Namespace) -> int:
    from vllm_sp_base._audit._command import run as run_audit

    return run_audit(args)


def _globs(text: str) -> tuple[str, ...]:
    globs = tuple(g.strip() for g in text.split(","))
    if not globs or any(not g.strip("/") for g in globs):
        raise argparse.ArgumentTypeError(f"{text!r}: an empty glob (comma-separated globs, e.g. build,dist)")
    return globs


def _interpreter(text: str) -> list[str]:
    """The import path of another Python, or of a virtual environment's folder."""
    from vllm_sp_base._audit.files._discover import import_path_of

    try:
        return import_path_of(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def print_rule(args: argparse.Namespace) -> int:
    """``vllm-sp-base rule SPB001``: what the rule finds, its examples, its doc."""
    import inspect
    import textwrap

    from vllm_sp_base._audit.report._report import RULE_DOC
    from vllm_sp_base._audit.rule._rule import SkippedInitRead as rule

    if args.code.upper() != rule.CODE:
        print(f"vllm-sp-base rule: error: unknown rule {args.code!r} (there is {rule.CODE})",
              file=sys.stderr)
        return EXIT_USAGE
    print(f"{rule.CODE}: {rule.__name__}\n")
    # The docstring's reST literals as Markdown's, as ruff's `rule` prints its docs.
    print(re.sub(r"``(.+?)``", r"`\1`", inspect.cleandoc(rule.__doc__ or ""), flags=re.DOTALL))
    for title, examples in (("Reported", rule.INVALID), ("Not reported", rule.VALID)):
        for example in examples[:2]:
            print(f"\n{title}:\n{textwrap.indent(example.source.strip(), '    ')}")
    print(f"\nMore examples: {len(rule.VALID)} valid and {len(rule.INVALID)} reported in the rule's "
          f"source; the whole story: {RULE_DOC}")
    return EXIT_CLEAN


def _fail_on(text: str) -> frozenset[str]:
    try:
        return fail_on(text.split(","))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _directory(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("an empty path (leave --cache-dir out for the default)")
    return os.path.expanduser(text)  # ``--cache-dir=~/x``: the shell leaves ``~`` after ``=``


def _names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if not n.isidentifier()]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"not a list of method names: {text!r}")
    return names
