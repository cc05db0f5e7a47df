"""The series' test run on the tree without the change and with it, so the
message quotes what happened (``tests/AGENTS.md``: "fails before" without
output is not evidence). Both runs are on a scratch copy of the tree's
``vllm/`` and ``tests/``; the tree itself is never touched."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

#: Environment for a vLLM source tree on any host: its device inferred as CPU
#: where none is set, offline, and no general plugin (this project's own would
#: give the classes their defaults and hide the failure the test shows).
_ENV: Final = {"VLLM_TARGET_DEVICE": "cpu", "HF_HUB_OFFLINE": "1"}
_SUMMARY = re.compile(r"^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed)"
                      r"(?:, )?)+)", re.MULTILINE)
_COPIED: Final = ("vllm", "tests", "pyproject.toml")


@dataclass(frozen=True)
class Outcome:
    counts: str  # pytest's closing counts: "1 passed", "1 failed"
    failure: str | None  # the first ``E`` line of a failure, as pytest printed it

    @property
    def passed(self) -> bool:
        return bool(re.fullmatch(r"\d+ passed", self.counts))


@dataclass(frozen=True)
class TestRun:
    command: str  # what was run, from the tree's root
    where: str  # ", on CPU, Python 3.11.7, torch 2.13.0"
    before: Outcome  # the tree as it is
    after: Outcome  # with the series applied

    def shows_the_fix(self) -> bool:
        return self.after.passed and not self.before.passed and self.before.failure is not None


def _outcome(done: subprocess.CompletedProcess[str]) -> Outcome:
    output = done.stdout + done.stderr
    found = _SUMMARY.findall(output)
    counts = found[-1].rstrip(", ") if found else f"no summary (exit {done.returncode})"
    failure = next((line.strip() for line in output.splitlines() if line.startswith("E ")), None)
    return Outcome(counts, failure)


def _copy(root: str, scratch: str) -> None:
    def copy(src: str, dst: str) -> object:
        if src.endswith(".py"):
            return shutil.copy2(src, dst)
        os.symlink(os.path.abspath(src), dst)  # data and compiled extensions: read only
        return dst

    for name in _COPIED:
        source = os.path.join(root, name)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(scratch, name), copy_function=copy,
                            ignore=shutil.ignore_patterns("__pycache__"))
        elif os.path.isfile(source):
            shutil.copy2(source, os.path.join(scratch, name))


def _write_over(scratch: str, changed: Iterable[tuple[str, str]]) -> None:
    for path, text in changed:
        target = os.path.join(scratch, *path.split("/"))
        if os.path.islink(target):
            os.remove(target)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)


def run_test(root: str, node: str, tests: Iterable[tuple[str, str]], sources: Iterable[tuple[str, str]],
             python: str = sys.executable, timeout: float = 900) -> TestRun:
    """pytest ``node`` on ``root`` with the series' ``tests`` but not its
    ``sources`` (the base commit with the new test, as ``tests/AGENTS.md``
    asks), then with both; each (path, text), the path relative to the root.
    Raises OSError where the scratch copy cannot be made."""
    env = {**os.environ, **{k: v for k, v in _ENV.items() if k not in os.environ}, "VLLM_PLUGINS": "none"}
    argv = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short", node]
    with tempfile.TemporaryDirectory(prefix="vllm-sp-base-test-") as scratch:
        _copy(root, scratch)
        env["PYTHONPATH"] = os.pathsep.join([scratch, *filter(None, [os.environ.get("PYTHONPATH")])])

        def pytest() -> Outcome:
            try:
                done = subprocess.run(argv, cwd=scratch, env=env, capture_output=True, text=True,
                                      timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                return Outcome(f"timed out after {timeout:.0f} s", None)
            return _outcome(done)

        _write_over(scratch, tests)
        before = pytest()
        _write_over(scratch, sources)
        after = pytest()
    shown = " ".join(f"{k}={env[k]}" for k in ("VLLM_TARGET_DEVICE", "VLLM_PLUGINS"))
    return TestRun(f"{shown} python -m pytest {node}", _where(python, env), before, after)


def _where(python: str, env: dict[str, str]) -> str:
    """The platform the run had, as the message states it."""
    probe = ("import platform, torch; print(f'Python {platform.python_version()}, "
             "torch {torch.__version__}')")
    try:
        done = subprocess.run([python, "-c", probe], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    versions = done.stdout.strip() if done.returncode == 0 else ""
    device = env.get("VLLM_TARGET_DEVICE", "")
    return ", " + ", ".join(filter(None, [f"VLLM_TARGET_DEVICE={device}" if device else "", versions]))
