"""The pre-commit hook run for real: this repository's `.pre-commit-hooks.yaml`,
installed by pre-commit into its own environment (no vLLM, no torch) from
this repository's HEAD, on a scratch project."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._main import main

ROOT = Path(__file__).parents[1]
PRE_COMMIT = Path(sys.executable).with_name("pre-commit")

MODELS = {
    "app/__init__.py": "",
    "app/base.py": """\
        from torch import nn


        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.use_sequence_parallel = False

            def forward(self, x):
                return x if self.use_sequence_parallel else -x
    """,
    "app/model.py": """\
        from torch import nn

        from app.base import Base


        class Note(Base):
            def __init__(self):
                nn.Module.__init__(self)
    """,
}


def _git(cwd: Path, *argv: str) -> str:
    done = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})
    return done.stdout.strip()


def _hook(project: Path, home: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    rev = _git(ROOT, "rev-parse", "HEAD")
    (project / ".pre-commit-config.yaml").write_text(textwrap.dedent(f"""\
        repos:
          - repo: {ROOT}
            rev: {rev}
            hooks:
              - id: vllm-sp-base-audit
                args: {args!r}
    """))
    _git(project, "add", ".pre-commit-config.yaml")  # pre-commit refuses an unstaged config
    return subprocess.run(
        [str(PRE_COMMIT), "run", "--all-files"], cwd=project, capture_output=True, text=True,
        env={**os.environ, "PRE_COMMIT_HOME": str(home)}, check=False, timeout=900,
    )


@pytest.mark.skipif(not PRE_COMMIT.exists() or shutil.which("git") is None,
                    reason="needs pre-commit (requirements/dev.txt) and git")
def test_the_hook_fails_on_a_finding_and_a_baseline_or_an_exclude_lets_it_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    project = tmp_path / "project"
    for name, text in MODELS.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(textwrap.dedent(text))
    _git(project, "init", "-q")
    _git(project, "add", ".")
    _git(project, "commit", "-qm", "models")
    home = tmp_path / "pre-commit-home"

    found = _hook(project, home, [])
    assert found.returncode == 1, found.stdout + found.stderr
    assert "Failed" in found.stdout and "Note skips Base.__init__" in found.stdout
    assert "error   self.use_sequence_parallel" in found.stdout

    # The findings of today recorded once: the hook then passes, options after the path.
    assert main(["audit", "--no-cache", "--write-baseline", str(project / "baseline.json"),
                 str(project)]) == 0
    passed = _hook(project, home, ["--baseline", "baseline.json"])
    assert passed.returncode == 0 and "Passed" in passed.stdout, passed.stdout + passed.stderr

    excluded = _hook(project, home, ["--extend-exclude", "app/model.py"])
    assert excluded.returncode == 0, excluded.stdout + excluded.stderr
