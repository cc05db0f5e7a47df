"""Where the rewrite goes: a git patch, the tree itself, or a separate folder.

Files are written all or none (see ``_atomic``): a run killed at any moment
leaves the tree as it was, or one the next ``--write`` run completes.
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable

from vllm_sp_base._upstream._apply import FileChange
from vllm_sp_base._upstream._atomic import write_all

PATCH_NAME = "vllm-sp-base-upstream.patch"
_NO_NEWLINE = "\\ No newline at end of file\n"


class OutputError(Exception):
    """A destination that must not or cannot be written."""


def patch(files: Iterable[FileChange]) -> str:
    """A ``git apply``-able patch, paths relative to the tree's root."""
    out: list[str] = []
    for change in files:
        out.append(f"diff --git a/{change.path} b/{change.path}\n")
        if change.before is None:
            out += ["new file mode 100644\n", "--- /dev/null\n", f"+++ b/{change.path}\n"]
        else:
            out += [f"--- a/{change.path}\n", f"+++ b/{change.path}\n"]
        before = (change.before or "").splitlines(keepends=True)
        hunks = difflib.unified_diff(before, change.after.splitlines(keepends=True), n=3)
        for line in list(hunks)[2:]:  # the ---/+++ pair is written above
            out.append(line if line.endswith("\n") else line + "\n" + _NO_NEWLINE)
    return "".join(out)


def _inside(path: str, root: str) -> bool:
    real_root = os.path.realpath(root)
    return os.path.commonpath([os.path.realpath(path), real_root]) == real_root


def write_tree(root: str, files: list[FileChange]) -> None:
    """Rewrite the tree under ``root`` in place; every path stays inside it."""
    targets = []
    for change in files:
        path = os.path.join(root, *change.path.split("/"))
        if not _inside(path, root):
            raise OutputError(f"{change.path}: resolves outside {root}; nothing written")
        # The real path: a file linked from elsewhere in the tree stays a link.
        targets.append((os.path.realpath(path), change.after))
    write_all(root, targets)


def write_out(out: str, root: str, files: list[FileChange], text: str) -> str:
    """The changed files in vLLM's layout under ``out``, and the patch; returns its path."""
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
    patch_path = os.path.join(out, PATCH_NAME)
    os.makedirs(out, exist_ok=True)
    write_all(out, [(os.path.join(out, *c.path.split("/")), c.after) for c in files]
              + [(patch_path, text)])
    return patch_path


def check_patch(files: list[FileChange], text: str) -> str | None:
    """Run ``git apply --check`` on copies of the original files; None when it
    accepts the patch, else why not. Raises FileNotFoundError without git."""
    git = shutil.which("git")
    if git is None:
        raise FileNotFoundError("git")
    with tempfile.TemporaryDirectory(prefix="vllm-sp-base-check-") as scratch:
        for change in files:
            if change.before is not None:
                path = os.path.join(scratch, *change.path.split("/"))
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as handle:
                    handle.write(change.before.encode("utf-8"))
        patch_path = os.path.join(scratch, PATCH_NAME)
        with open(patch_path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        # Outside any repository, so git applies to these files, not to an enclosing repo.
        env = {**os.environ, "GIT_CEILING_DIRECTORIES": os.path.dirname(scratch)}
        done = subprocess.run(
            [git, "apply", "--check", PATCH_NAME],
            cwd=scratch, env=env, capture_output=True, text=True, check=False,
        )
        return None if done.returncode == 0 else done.stderr.strip() or "git apply --check failed"
