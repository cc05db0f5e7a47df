"""The ``vllm-sp-base`` command line."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn


class _Parser(argparse.ArgumentParser):
    """Bad input gets one line and exit 2, not the usage block; no option is
    taken for another by its first letters (``--base`` is not ``--baseline``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


#: Options ruff and mypy users reach for that mean nothing here, and why.
_NOT_HERE = {
    "--select": "there is one rule, SPB001: --fail-on chooses what fails the run",
    "--ignore": "there is one rule, SPB001: suppress with noqa, an ignore comment or a baseline",
    "--extend-select": "there is one rule, SPB001: --fail-on chooses what fails the run",
}


def _did_you_mean(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """``unrecognized arguments: --base x (did you mean --baseline?)``."""
    import difflib

    options = [o for action in parser._actions for o in action.option_strings]
    for word in unknown:
        if word.split("=", 1)[0] in _NOT_HERE and parser.prog.endswith(" audit"):
            return f" ({_NOT_HERE[word.split('=', 1)[0]]})"
        if word.startswith("-"):
            close = difflib.get_close_matches(word.split("=", 1)[0], options, n=2, cutoff=0.6)
            if close:
                return f" (did you mean {' or '.join(close)}?)"
    return ""


def _parser() -> _Parser:
    # Imported here, inside main's handling of Ctrl-C: an interrupt while the
    # command starts is one line too, not an import traceback.
    from vllm_sp_base import _explain
    from vllm_sp_base._audit import _cli as audit_cli
    from vllm_sp_base._upstream import _cli as upstream_cli

    parser = _Parser(
        prog="vllm-sp-base",
        description="The sequence-parallel attribute contract for vLLM: explain, audit, upstream.",
    )
    from vllm_sp_base import __version__

    parser.add_argument("--version", action="version", version=f"vllm-sp-base {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    explain = commands.add_parser(
        "explain", help="show why SP-MoE and model-level SP are on or off for a layout"
    )
    _explain.add_arguments(explain)
    explain.set_defaults(run=_explain.run, parser=explain)
    parser.commands["explain"] = explain
    audit = commands.add_parser(
        "audit", help="find inherited reads of attributes only a skipped __init__ sets"
    )
    audit_cli.add_arguments(audit)
    audit.set_defaults(run=audit_cli.run, parser=audit)
    rule = commands.add_parser("rule", help="print a rule's documentation and examples (SPB001)")
    rule.add_argument("code", metavar="CODE", help="the rule's code: SPB001")
    rule.set_defaults(run=audit_cli.print_rule, parser=rule)
    upstream = commands.add_parser(
        "upstream",
        help="write the vLLM patch that gives the flags class-level defaults (dry run by default)",
        description="Write the vLLM patch that gives a class-level default for each "
        "sequence-parallel flag it reads to every class with a subclass that skips its "
        "__init__, with a test in vLLM's own test file of those classes. With --out, the "
        "test is run with and without the change and the commit message states what was "
        "run and found. Dry run unless --write or --out. Exit 0 done, 1 something needs "
        "attention (named on stderr), 2 bad input.",
    )
    upstream_cli.add_arguments(upstream)
    upstream.set_defaults(run=upstream_cli.run, parser=upstream)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = _parser()
        words = list(sys.argv[1:] if argv is None else argv)
        ignored: list[str] = []
        notes: list[str] = []
        if words[:1] == ["explain"]:
            # Only ``explain`` takes words it does not know (a pasted ``vllm
            # serve`` line, said as ignored); every other command refuses them.
            from vllm_sp_base import _explain

            explain = parser.commands["explain"]
            try:
                ours, ignored, notes = _explain.sort_words(explain, words[1:])
            except _explain.ExplainInputError as error:
                explain.error(str(error))
            words = ["explain", *ours]
        args, unknown = parser.parse_known_args(words)
        if unknown:
            command = getattr(args, "parser", parser)
            command.error(f"unrecognized arguments: {' '.join(unknown)}{_did_you_mean(command, unknown)}")
        args.ignored = ignored
        args.notes = notes
        code: int = args.run(args)
    except KeyboardInterrupt:
        print("vllm-sp-base: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # a reader that stopped early, such as `| head`
        # What is still buffered would fail again at exit: send it nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as error:  # the report's stream is full or gone (> /dev/full)
        if error.filename is not None:
            raise
        _say(f"vllm-sp-base: cannot write the output: {error.strerror or error}")
        return 2
    return code


def _say(line: str) -> None:
    """One line on stderr, if there is a stderr to say it on."""
    try:
        print(line, file=sys.stderr)
    except (OSError, AttributeError, ValueError):
        pass


def console() -> NoReturn:
    """The ``vllm-sp-base`` command: ``main``, then exit without tearing the
    interpreter down (freeing an audit's objects one by one only costs time).

    The cyclic collector stays off: an audit leaves millions of objects behind
    that a command about to exit need not have walked (~0.05-0.08 s on vLLM)."""
    gc.disable()
    for stream in (sys.stdout, sys.stderr):  # a path that is not UTF-8 prints escaped, not as a crash
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        os.getcwd()
    except OSError:
        _say("vllm-sp-base: the current directory no longer exists: cd to one that does and run it again")
        os._exit(2)
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        if not any(a in ("-o", "--output-file") or a.startswith(("--output-file=", "-o")) for a in sys.argv[1:]):
            _say("vllm-sp-base: stdout is closed: the report has nowhere to go (use --output-file FILE)")
            os._exit(2)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (lives until os._exit) the report goes to its file
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # a reader that stopped early, such as `| head`
        code = code or 1
    except (OSError, AttributeError, ValueError) as error:  # full, or closed under us
        _say(f"vllm-sp-base: cannot write the output: {getattr(error, 'strerror', None) or error}")
        code = 2
    os._exit(code)


if __name__ == "__main__":
    raise SystemExit(main())
