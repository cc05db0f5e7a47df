"""vLLM's own pre-commit hooks on the series, run by the tool where asked
(``--run-hooks``), so the message states their outcome instead of a claim.

A scratch git repository of the tree (every file, as pre-commit and the
hooks read them) gets the series with ``git am``; then ``pre-commit run
--files`` on the changed files, with the tree's ``.pre-commit-config.yaml`` or
the configuration given. The tree itself is never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

_STATUS = re.compile(r"\.{3,}(\(no files to check\))?(Passed|Failed|Skipped)$")


@dataclass
class HookRun:
    config: str  # which configuration: "the tree's .pre-commit-config.yaml" or the file given
    outcomes: dict[str, str] = field(default_factory=dict)  # hook id -> Passed / Failed / Skipped
    no_files: set[str] = field(default_factory=set)  # hooks skipped for having no file to check
    modified: list[str] = field(default_factory=list)  # files a hook changed
    problem: str | None = None  # why the hooks could not be run

    def failed(self) -> list[str]:
        return [hook for hook, status in self.outcomes.items() if status == "Failed"]


def outcomes(output: str) -> tuple[dict[str, str], set[str]]:
    """hook id -> status, and the hooks with no file to check, from ``pre-commit run --verbose``."""
    found: dict[str, str] = {}
    no_files: set[str] = set()
    status: tuple[str, bool] | None = None
    for line in output.splitlines():
        match = _STATUS.search(line)
        if match:
            status = (match.group(2), bool(match.group(1)))
        elif line.startswith("- hook id: ") and status is not None:
            hook = line.removeprefix("- hook id: ").strip()
            found[hook] = status[0]
            if status[1]:
                no_files.add(hook)
            status = None
    return found, no_files


def _git(repo: str, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": os.path.dirname(repo), "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "vllm-sp-base",
           "GIT_AUTHOR_EMAIL": "check@vllm-sp-base.invalid", "GIT_COMMITTER_NAME": "vllm-sp-base",
           "GIT_COMMITTER_EMAIL": "check@vllm-sp-base.invalid"}
    return subprocess.run(["git", *argv], cwd=repo, env=env, capture_output=True, text=True, check=False)


def run_hooks(root: str, patches: list[str], changed: list[str], config: str | None,
              pre_commit: str | None = None, timeout: float = 1800) -> HookRun:
    """``pre-commit run --files changed`` on ``root`` with ``patches`` applied."""
    shown = "the tree's .pre-commit-config.yaml" if config is None else os.path.basename(config)
    run = HookRun(shown)
    pre_commit = pre_commit or shutil.which("pre-commit")
    if pre_commit is None:
        run.problem = "pre-commit is not installed"
        return run
    if config is None and not os.path.isfile(os.path.join(root, ".pre-commit-config.yaml")):
        run.problem = f"{root} has no .pre-commit-config.yaml"
        return run
    with tempfile.TemporaryDirectory(prefix="vllm-sp-base-hooks-") as scratch:
        repo = os.path.join(scratch, "repo")
        shutil.copytree(root, repo, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".git"))
        for argv in (("init", "-q"), ("add", "-A", "-f"), ("commit", "-q", "-m", "the tree")):
            done = _git(repo, *argv)
            if done.returncode != 0:
                run.problem = f"git {argv[0]}: {(done.stderr or done.stdout).strip()[:200]}"
                return run
        for number, text in enumerate(patches, 1):
            name = os.path.join(scratch, f"{number:04d}.patch")
            with open(name, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            done = _git(repo, "am", "-q", "--keep-non-patch", name)
            if done.returncode != 0:
                run.problem = f"patch {number} does not apply: {(done.stderr or done.stdout).strip()[:200]}"
                return run
        chosen = ["-c", os.path.abspath(config)] if config is not None else []
        command = [pre_commit, "run", *chosen, "--verbose", "--files", *changed]
        try:
            ran = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=timeout,
                                  check=False, env={**os.environ, "SKIP": ""})
        except subprocess.TimeoutExpired:
            run.problem = f"pre-commit did not finish in {timeout:.0f} s"
            return run
        run.outcomes, run.no_files = outcomes(ran.stdout)
        status = _git(repo, "status", "--porcelain").stdout.splitlines()
        run.modified = [line[3:] for line in status if line.strip()]
        if not run.outcomes:
            run.problem = f"pre-commit ran no hook (exit {ran.returncode})"
    return run
