"""Arguments, output and exit codes of ``vllm-sp-base upstream``."""

from __future__ import annotations

import argparse
import os
import sys

EXIT_DONE, EXIT_INCOMPLETE, EXIT_USAGE = 0, 1, 2
_PROG = "vllm-sp-base upstream"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--vllm-src", metavar="DIR",
        help="a vLLM source tree: the folder holding vllm/, or vllm/ itself "
             "(default, for a dry run or --out only: the installed vLLM; --write needs it)",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the tree in place")
    parser.add_argument("--out", metavar="DIR",
                        help="write the changed files in vLLM's layout and a .patch under DIR")
    parser.add_argument("--diff", action="store_true", help="also print the patch")


def _fail(message: str) -> int:
    print(f"{_PROG}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    try:
        from vllm_sp_base._upstream import _apply, _atomic, _output, _plan
    except ImportError as error:  # libcst is the `upstream` extra
        return _fail(f"needs libcst ({error.name} is missing): pip install 'vllm-sp-base[upstream]'")
    given = args.vllm_src
    if given is None and args.write:
        return _fail("--write rewrites a tree in place: name it with --vllm-src DIR "
                     "(the installed vLLM is never rewritten by default)")
    if given is None:
        from vllm_sp_base._audit._cli import installed_vllm

        given = installed_vllm()
        if given is None:
            return _fail("vLLM is not installed here; give --vllm-src DIR")
    try:
        root = _plan.locate(given)
    except _plan.SourceTreeError as error:
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
    result = _apply.build(root)
    for path, reason in result.problems:
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
    added = sum(line.startswith("+") and not line.startswith("+++") for line in text.splitlines())
    removed = sum(line.startswith("-") and not line.startswith("---") for line in text.splitlines())
    counts = ", ".join(f"{result.counts[kind]} {label}" for kind, label in _apply.COUNTED.items())
    print(f"{len(result.files)} file(s), +{added} -{removed} lines: {counts}")

    if result.missing:
        print(f"{_PROG}: nothing written: this tree is not laid out as the patch expects",
              file=sys.stderr)
        return EXIT_INCOMPLETE
    if result.files:
        try:
            rejected = _output.check_patch(result.files, text)
        except FileNotFoundError:
            print(f"{_PROG}: git not found; the patch was not checked", file=sys.stderr)
        else:
            if rejected is not None:
                return _fail(f"git apply --check rejects the patch; nothing written: {rejected}")
    if not args.write and not args.out:
        print("dry run: nothing written (--write changes the tree, --out DIR writes the files "
              "and a patch)")
    try:
        if args.out:
            where = _output.write_out(os.path.abspath(args.out), root, result.files, text)
            print(f"wrote {len(result.files)} file(s) and {where}")
        if args.write:
            _output.write_tree(root, result.files)
            print(f"rewrote {len(result.files)} file(s) under {root}")
    except _output.OutputError as error:
        return _fail(str(error))
    except _atomic.JournalError as error:
        return _fail(str(error))
    except OSError as error:
        return _fail(f"{error.filename or ''}: {error.strerror or error}; nothing half-written "
                     "(a rerun with --write finishes a write that had begun)")
    return EXIT_INCOMPLETE if result.problems else EXIT_DONE
