"""Arguments, output and exit codes of ``vllm-sp-base upstream``."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import TYPE_CHECKING

from vllm_sp_base._upstream._names import TEST_PATH

if TYPE_CHECKING:
    from vllm_sp_base._upstream.series import _build, _patches

EXIT_DONE, EXIT_INCOMPLETE, EXIT_USAGE = 0, 1, 2
_AUTHOR = re.compile(r"[^<>]+ <[^<>\s]+@[^<>\s]+>")
_PROG = "vllm-sp-base upstream"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--vllm-src", metavar="DIR",
        help="a vLLM checkout or source distribution: the folder holding vllm/, or vllm/ "
             "itself (default, for a dry run only: the installed vLLM, which has no tests/; "
             "--out and --write need it)",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the tree in place")
    parser.add_argument("--out", metavar="DIR",
                        help="write the changed files in vLLM's layout and the patch series "
                             "(0001-*.patch ..., for git am) under DIR")
    parser.add_argument("--diff", action="store_true", help="also print the whole change as one diff")
    parser.add_argument("--all-readers", action="store_true",
                        help="give a class-level default to every class reading a flag outside "
                             "__init__ (default: only those with a subclass that skips their "
                             "__init__, and the contract's own classes)")
    parser.add_argument("--keep-redundant", action="store_true",
                        help="keep the `self.<flag> = False` lines the defaults make redundant "
                             "(default: the series moves them into the parent's default)")
    parser.add_argument("--author", metavar="'NAME <EMAIL>'", default=None,
                        help="author and Signed-off-by of the series (default: git's user.name "
                             "and user.email)")
    parser.add_argument("--no-test-run", action="store_true",
                        help="with --out: do not run the added test with and without the change "
                             "(the message then says it was not run)")
    parser.add_argument("--run-hooks", action="store_true",
                        help="with --out: run vLLM's pre-commit hooks on the series and state "
                             "their outcome in the message (needs pre-commit)")
    parser.add_argument("--pre-commit-config", metavar="FILE",
                        help="with --run-hooks: the configuration to run (default: the tree's "
                             ".pre-commit-config.yaml)")


def _fail(message: str) -> int:
    print(f"{_PROG}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _git_author(root: str) -> str | None:
    """git's ``user.name <user.email>``, as a commit in ``root`` would take them."""
    import subprocess

    found = []
    for key in ("user.name", "user.email"):
        try:
            done = subprocess.run(["git", "config", key], cwd=root, capture_output=True, text=True,
                                  check=False, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        found.append(done.stdout.strip())
    return f"{found[0]} <{found[1]}>" if all(found) else None


def _evidence(root: str, result: _build.Upstream) -> _patches.Evidence:
    """The test file run on the tree without the change and with it."""
    from vllm_sp_base._upstream.checks._test_run import run_test
    from vllm_sp_base._upstream.series import _patches

    print(f"{_PROG}: running {TEST_PATH} without the change and with it ...", file=sys.stderr)
    try:
        tests = [(c.path, c.after) for c in result.files if c.path.startswith("tests/")]
        sources = [(c.path, c.after) for c in result.files if not c.path.startswith("tests/")]
        run = run_test(root, TEST_PATH, tests, sources)
    except OSError as error:
        return _patches.Evidence(test_not_run=f"no scratch copy: {error.strerror or error}")
    if not run.shows_the_fix():
        before = f" ({run.before.failure})" if run.before.failure else ""
        after = f" ({run.after.failure})" if run.after.failure else ""
        why = f"without the change: {run.before.counts}{before}; with it: {run.after.counts}{after}"
        result.problems.append((TEST_PATH, why))
    return _patches.Evidence(test=run)


def run(args: argparse.Namespace) -> int:
    try:
        from vllm_sp_base import _atomic
        from vllm_sp_base._upstream.plan import _tree
        from vllm_sp_base._upstream.series import _build, _output, _patches
    except ImportError as error:  # libcst is the `upstream` extra
        return _fail(f"needs libcst ({error.name} is missing): from a clone of vllm-sp-base, pip install './[upstream]'")
    given = args.vllm_src
    if given is None and args.write:
        return _fail("--write rewrites a tree in place: name it with --vllm-src DIR "
                     "(the installed vLLM is never rewritten by default)")
    if given is None:
        from vllm_sp_base._audit.files._discover import installed_vllm

        given = installed_vllm()
        if given is None:
            return _fail("vLLM is not installed here; give --vllm-src DIR")
    try:
        root = _tree.locate(given)
    except _tree.SourceTreeError as error:
        return _fail(str(error))

    if args.write:  # the tree as a killed --write would have left it once done
        try:
            finished = _atomic.finish_interrupted(root)
        except _atomic.JournalError as error:
            return _fail(str(error))
        except OSError as error:
            return _fail(f"{error.filename or root}: cannot finish an interrupted write: "
                         f"{error.strerror or error}")
        if finished:
            print(f"{_PROG}: finished an interrupted --write: {len(finished)} file(s) moved into place",
                  file=sys.stderr)
    author = args.author or _git_author(root)
    if args.out and author is None:
        return _fail("no author for the series: give --author 'Name <email>' or set git's "
                     "user.name and user.email (vLLM's DCO check needs the real one)")
    if author is not None and ("\n" in author or not _AUTHOR.fullmatch(author)):
        return _fail(f"--author {author!r}: expected 'Name <email>'")
    if (args.run_hooks or args.pre_commit_config) and not args.out:
        return _fail("--run-hooks and --pre-commit-config go with --out (they check the series it writes)")
    if args.pre_commit_config and not os.path.isfile(args.pre_commit_config):
        return _fail(f"--pre-commit-config {args.pre_commit_config}: no such file")
    if args.out:
        try:
            _output.check_out(os.path.abspath(args.out), root)
        except _output.OutputError as error:
            return _fail(str(error))
    with_tests = os.path.isdir(os.path.join(root, "tests"))
    if args.out and not with_tests:
        return _fail(f"{root} has no tests/ (an installed vLLM ships none): the series extends "
                     f"{TEST_PATH} and names the CI step that runs it; give --vllm-src with a "
                     "vLLM checkout or source distribution")
    try:
        result = _build.build(root, all_readers=args.all_readers,
                              remove_redundant=not args.keep_redundant, with_tests=with_tests)
    except OSError as error:  # a scratch folder for ruff, a worker process
        return _fail(f"{error.filename or 'a scratch folder'}: {error.strerror or error}; nothing written")
    if result.unreadable:  # the series would be partial: bad input, refused whole
        for path, reason in result.unreadable:
            _fail(f"{path}: {reason}; nothing written")
        return EXIT_USAGE
    if not with_tests:
        print(f"{_PROG}: no tests/ under {root}: the change carries no vLLM test "
              "(a series with --out needs a vLLM checkout)", file=sys.stderr)
    for path, reason in result.unmade:
        print(f"{_PROG}: {path}: {reason}", file=sys.stderr)
    for what in result.missing:
        print(f"{_PROG}: expected but not found (classes moved?): {what}", file=sys.stderr)

    text = _output.patch(result.files)
    if args.diff:
        sys.stdout.write(text)
    for change in result.files:
        print(change.path)
        for note in change.notes:
            print(f"  {note}")
    evidence = _patches.Evidence(test_not_run="a dry run" if not args.out else "--no-test-run")
    if args.out and result.files and not args.no_test_run and not result.missing and not result.unmade:
        evidence = _evidence(root, result)
    if args.out and result.wiring is not None and not result.wiring.covering():
        why = "no Buildkite step of this tree runs it with source_file_dependencies covering the changes"
        result.problems.append((TEST_PATH, why))
    patches = _patches.series(result, evidence)
    for number, patch in enumerate(patches, 1):
        print(f"patch {number}/{len(patches)}: {patch.title} ({len(patch.files)} file(s))")
    diff_lines = _patches.lines_of(text)
    added = sum(line.startswith("+") and not line.startswith("+++") for line in diff_lines)
    removed = sum(line.startswith("-") and not line.startswith("---") for line in diff_lines)
    counts = ", ".join(f"{result.counts[kind]} {label}" for kind, label in _build.COUNTED.items())
    print(f"{len(result.files)} file(s), +{added} -{removed} lines: {counts}")
    for gate in result.gates:
        kind = "re-derives the SP-MoE gate without PP" if gate.rederives else "its own conditions"
        print(f"{gate.path}:{gate.line}: left as is: a hand-written sequence-parallel gate "
              f"({gate.where}: {gate.decides}; {kind})")
    if args.run_hooks and patches and not result.missing and not result.unmade:
        from vllm_sp_base._upstream.checks._hooks import run_hooks

        print(f"{_PROG}: running vLLM's pre-commit hooks on the series ...", file=sys.stderr)
        drafts = [_patches.mbox(p, n, len(patches), author or "") for n, p in enumerate(patches, 1)]
        evidence.hooks = run_hooks(root, drafts, [c.path for c in result.files], args.pre_commit_config)
        if evidence.hooks.problem or evidence.hooks.failed() or evidence.hooks.modified:
            result.problems.append(("pre-commit", evidence.hooks.problem or
                                    f"failed: {', '.join(evidence.hooks.failed()) or 'none'}; "
                                    f"modified: {', '.join(evidence.hooks.modified) or 'none'}"))
        patches = _patches.series(result, evidence)
    for path, reason in result.problems:
        print(f"{_PROG}: {path}: {reason}", file=sys.stderr)
    if patches and args.out:
        print(f"{_PROG}: before opening the PR, run AGENTS.md's duplicate-work checks "
              "(gh pr list --repo vllm-project/vllm ...) and vLLM's /pr-checklist skill, and review "
              "every line; apply with git am --keep-non-patch to keep the [Model] tag", file=sys.stderr)
    mboxes = {
        _patches.file_name(number, patch.title): _patches.mbox(patch, number, len(patches), author or "")
        for number, patch in enumerate(patches, 1)
    }

    if result.missing:
        print(f"{_PROG}: nothing written: this tree is not laid out as the patch expects",
              file=sys.stderr)
        return EXIT_INCOMPLETE
    if result.unmade:
        print(f"{_PROG}: nothing written: a planned change could not be made (above)", file=sys.stderr)
        return EXIT_INCOMPLETE
    if result.files:
        try:
            rejected = _output.check_series(result.files, list(mboxes.values()))
        except FileNotFoundError:
            print(f"{_PROG}: git not found; the series was not checked", file=sys.stderr)
        except OSError as error:
            return _fail(f"{error.filename or 'a scratch folder'}: cannot check the series: "
                         f"{error.strerror or error}; nothing written")
        else:
            if rejected is not None:
                return _fail(f"the series does not apply; nothing written: {rejected}")
    crlf = _output.with_carriage_returns(result.files)
    if crlf and args.out:
        print(f"{_PROG}: {crlf[0]}{f' and {len(crlf) - 1} more' if len(crlf) > 1 else ''}: CRLF line "
              "endings, kept in the series: apply it with git am --keep-cr --keep-non-patch",
              file=sys.stderr)
    if not args.write and not args.out:
        print("dry run: nothing written (--write changes the tree, --out DIR writes the files "
              "and the patch series)")
    unchanged = "nothing written"
    try:
        if args.out:
            written = _output.write_out(os.path.abspath(args.out), root, result.files, mboxes)
            print(f"wrote {len(result.files)} file(s) and {len(written)} patch(es): "
                  + " ".join(os.path.relpath(path) for path in written))
        if args.write:
            unchanged = "the tree is as it was"
            _output.write_tree(root, result.files)
            print(f"rewrote {len(result.files)} file(s) under {root}")
    except (_output.OutputError, _atomic.JournalError) as error:
        return _fail(str(error))
    except _atomic.WriteError as error:
        if error.begun:  # past the commit point: the journal knows the rest
            return _fail(f"{error.path}: {error.why}; the write had begun: run the same command "
                         "again to finish it")
        return _fail(f"{error.path}: cannot write: {error.why}; {unchanged}")
    return EXIT_INCOMPLETE if result.problems else EXIT_DONE
