"""Where the rewrite goes: a patch series, the tree itself, or a separate folder.

Files are written all or none (see ``_atomic``): a run killed at any moment
leaves the tree as it was, or one the next ``--write`` run completes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable

from vllm_sp_base._atomic import (
    WriteError,
    make_folders,
    remove_folders,
    write_all,
)
from vllm_sp_base._upstream.series._build import FileChange
from vllm_sp_base._upstream.series._patches import diff

_SERIES_NAME = re.compile(r"\d{4}-.*\.patch")
_NOT_APPLIED = re.compile(r"error: (.*): patch does not apply")


class OutputError(Exception):
    """A destination that must not or cannot be written."""


def patch(files: Iterable[FileChange]) -> str:
    """The whole change as one ``git apply``-able diff, paths relative to the tree's root."""
    return diff((change.path, change.before, change.after) for change in files)


def _inside(path: str, root: str) -> bool:
    real_root = os.path.realpath(root)
    return os.path.commonpath([os.path.realpath(path), real_root]) == real_root


def write_tree(root: str, files: list[FileChange]) -> None:
    """Rewrite the tree under ``root`` in place; every path stays inside it,
    and every file is still what was read (else nothing is written)."""
    targets: dict[str, FileChange] = {}
    for change in files:
        path = os.path.join(root, *change.path.split("/"))
        if not _inside(path, root):
            raise OutputError(f"{change.path}: resolves outside {root}; nothing written")
        # The real path: a file linked from elsewhere in the tree stays a link.
        real = os.path.realpath(path)
        other = targets.setdefault(real, change)
        if other.after != change.after:  # two modules to Python, one file: no text serves both
            raise OutputError(f"{change.path}: the same file as {other.path} (a link), which the "
                              "series changes differently; nothing written")
        if _current(real) != change.before:
            raise OutputError(f"{change.path}: changed since it was read; nothing written "
                              "(run the command again)")
    expected = {real: None if c.before is None else c.before.encode("utf-8", "surrogateescape")
                for real, c in targets.items()}
    left = write_all(root, [(real, change.after) for real, change in targets.items()], expected)
    if left:  # another process wrote it between the check above and the move
        raise OutputError(f"{left[0]}: changed while it was being written; left as it is, the rest "
                          "written (run the command again)")


def _current(path: str) -> str | None:
    """The text at ``path`` now; None where there is no file."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise WriteError(path, f"cannot read it again: {error.strerror or error}", begun=False) from None
    return data.decode("utf-8", "surrogateescape")


def check_out(out: str, root: str) -> None:
    """Raises OutputError where ``out`` must not receive the series of the tree under ``root``."""
    package = os.path.join(root, "vllm")
    if _inside(out, package):
        raise OutputError(f"{out}: inside the vLLM package being rewritten; choose another --out")
    if _inside(root, out):  # --out at the tree's root (or above it) would rewrite the sources
        raise OutputError(f"{out}: holds the vLLM tree being read ({root}); choose another --out")
    if os.path.exists(out) and not os.path.isdir(out):
        raise OutputError(f"{out}: exists and is not a directory")
    if os.path.realpath(out) in {os.path.realpath(p or os.curdir) for p in sys.path}:
        raise OutputError(f"{out}: on Python's import path, so its partial vllm/ would shadow "
                          "the real vLLM; choose another --out")


def write_out(out: str, root: str, files: list[FileChange], patches: dict[str, str]) -> list[str]:
    """The changed files in vLLM's layout under ``out``, and the series (name ->
    text) beside them; returns the paths of the patches."""
    check_out(out, root)
    try:
        made = make_folders(out)
    except OSError as error:
        raise WriteError(error.filename or out, error.strerror or str(error), begun=False) from None
    try:
        stale = [os.path.join(out, name) for name in os.listdir(out) if _SERIES_NAME.fullmatch(name)]
        written = [os.path.join(out, name) for name in patches]
        write_all(out, [(os.path.join(out, *c.path.split("/")), c.after) for c in files]
                  + list(zip(written, patches.values())))
    except OSError as error:
        remove_folders(made)
        raise WriteError(error.filename or out, error.strerror or str(error), begun=False) from None
    except WriteError as error:
        if not error.begun:
            remove_folders(made)
        raise
    for path in set(stale) - set(written):  # an earlier run's series, so `git am DIR/*.patch` works
        try:
            os.remove(path)
        except OSError as error:
            raise WriteError(path, f"an earlier run's patch, not removed: {error.strerror or error}",
                             begun=True) from None
    return written


def with_carriage_returns(files: list[FileChange]) -> list[str]:
    """The changed files with CR line endings: their patches carry the CRs,
    which ``git am`` keeps only with ``--keep-cr``."""
    return [c.path for c in files if any("\r" in (t or "") for t in (c.before, c.after))]


def check_series(files: list[FileChange], patches: list[str]) -> str | None:
    """Apply the series with ``git am`` to a repository of the original files
    and compare the outcome with the rewrite; None when both hold, else why
    not, in one line. Raises FileNotFoundError without git, OSError where the
    scratch repository cannot be written."""
    git = shutil.which("git")
    if git is None:
        raise FileNotFoundError("git")
    keep_cr = ["--keep-cr"] if with_carriage_returns(files) else []
    with tempfile.TemporaryDirectory(prefix="vllm-sp-base-check-") as scratch:
        repo = os.path.join(scratch, "repo")
        os.makedirs(repo)
        for change in files:
            if change.before is not None:
                _write(os.path.join(repo, *change.path.split("/")), change.before)
        # Outside any repository and with no user configuration: only this one counts.
        env = {**os.environ, "GIT_CEILING_DIRECTORIES": scratch, "GIT_CONFIG_GLOBAL": os.devnull,
               "GIT_CONFIG_NOSYSTEM": "1", "GIT_COMMITTER_NAME": "vllm-sp-base",
               "GIT_COMMITTER_EMAIL": "check@vllm-sp-base.invalid", "GIT_AUTHOR_NAME": "vllm-sp-base",
               "GIT_AUTHOR_EMAIL": "check@vllm-sp-base.invalid"}

        def git_run(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([git, *argv], cwd=repo, env=env, capture_output=True, text=True,
                                  check=False)

        git_run("init", "-q")
        git_run("add", "-A")
        git_run("commit", "-q", "--allow-empty", "-m", "the tree before the series")
        for number, text in enumerate(patches, 1):
            name = os.path.join(scratch, f"{number:04d}.patch")
            _write(name, text)
            done = git_run("am", "-q", "--keep-non-patch", *keep_cr, name)
            if done.returncode != 0:
                return f"patch {number}: {_rejection(done.stderr or done.stdout)}"
        for change in files:
            path = os.path.join(repo, *change.path.split("/"))
            with open(path, encoding="utf-8", newline="") as handle:
                if handle.read() != change.after:
                    return f"{change.path}: the series does not give the rewritten file"
    return None


def _rejection(told: str) -> str:
    """git am's complaint in one line, without its hints about a scratch
    repository that is gone by the time it is read."""
    lines = [line.strip() for line in told.splitlines() if line.strip() and not line.startswith("hint:")]
    for line in lines:
        found = _NOT_APPLIED.fullmatch(line)
        if found:
            return f"{found.group(1)}: git am finds the patch does not apply to the file as read"
    return lines[0].removeprefix("error: ") if lines else "git am failed"


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
