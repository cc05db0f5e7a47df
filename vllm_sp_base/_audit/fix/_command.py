"""``audit --fix`` / ``--diff`` within a run: which fixes, the diff or the
write, and the line that says what was done."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from vllm_sp_base._audit.fix._apply import render_fixes, unified_diff, write
from vllm_sp_base._audit.fix._edit import Fix
from vllm_sp_base._audit.report._finding import Finding

EXIT_CLEAN, EXIT_CHANGES = 0, 1
#: --fix left a file alone (it changed meanwhile): the report still runs, the exit is 1.
EXIT_LEFT_ALONE = -1


class FixError(Exception):
    """Nothing could be written (or shown): the one line to say, exit 2."""


def finish_interrupted_fix(paths: list[str]) -> list[str]:
    """Finish or clear what a killed ``--fix`` left under the audited paths
    (a journal past its commit point, staged files before it), at the start
    of any ``--fix`` run, whether or not it has anything to write."""
    from vllm_sp_base._atomic import JournalError, finish_interrupted
    from vllm_sp_base._audit.fix._apply import journal_root

    try:
        return finish_interrupted(journal_root(paths))
    except JournalError as error:
        raise FixError(str(error)) from None
    except OSError as error:
        raise FixError(f"{error.filename or journal_root(paths)}: cannot finish an interrupted "
                       f"--fix: {error.strerror or error}") from None


def apply_fixes(fixes: dict[Finding, Fix], args: argparse.Namespace, paths: list[str],
                say: Callable[[str], None]) -> int | None:
    """With --diff: print the diff, return the exit code (1: there are
    changes, as ruff's --diff). With --fix: write, say so, return None (the
    run goes on to report what is left), or EXIT_CHANGES where a file changed
    while it was fixed and was left alone. Raises FixError where nothing
    could be written."""
    from vllm_sp_base._atomic import JournalError, WriteError
    from vllm_sp_base._audit.report._text import plural

    rendered = render_fixes(fixes, args.unsafe_fixes)
    for problem in rendered.problems:
        say(problem)
    fixed = len(rendered.applied)
    unsafe_left = 0 if args.unsafe_fixes else sum(f.status.applicability == "unsafe" for f in fixes.values())
    more = f" ({unsafe_left} more with --unsafe-fixes)" if unsafe_left else ""
    files = plural(len(rendered.texts), "file")
    if args.diff:
        text = unified_diff(rendered)
        if args.output_file:
            try:
                with open(args.output_file, "w", encoding="utf-8") as handle:
                    handle.write(text)
            except OSError as error:
                raise FixError(f"{args.output_file}: cannot write: {error.strerror or error}") from None
        else:
            sys.stdout.write(text)
        if not args.quiet:
            say(f"would fix {plural(fixed, 'finding')} in {files}{more}")
        return EXIT_CHANGES if text else EXIT_CLEAN
    try:
        left = write(rendered, paths)
    except WriteError as error:
        if error.begun:
            raise FixError(f"{error.path}: {error.why}; the write had begun: run the same command again "
                           "to finish it") from None
        raise FixError(f"{error.path}: nothing written: {error.why}") from None
    except (OSError, JournalError) as error:
        where = f"{error.filename}: " if isinstance(error, OSError) and error.filename else ""
        raise FixError(f"{where}nothing written: {getattr(error, 'strerror', None) or error}") from None
    from vllm_sp_base._audit.report._finding import display_path

    for path in left:
        say(f"{display_path(path)}: changed while it was being fixed; left as it is (run --fix again)")
    done = [f for f in rendered.applied if f.edit is not None and f.edit.path not in left]
    if not args.quiet:
        say(f"fixed {plural(len(done), 'finding')} in "
            f"{plural(len(rendered.texts) - len(left), 'file')}{more}")
    return EXIT_LEFT_ALONE if left else None
