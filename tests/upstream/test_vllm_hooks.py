"""vLLM's own pre-commit hooks on the series, as its pre-commit runs them.

On vLLM 0.33.0's source distribution (``.pre-commit-config.yaml``, ``tools/``,
``tests/`` and ``.buildkite/`` included) made a git repository, the series is
applied with ``git am`` and ``pre-commit run --files`` runs, on the changed
files: every ``repo: local`` hook of vLLM's configuration as it is written
there (mypy with its pinned dependencies, test tethering, SPDX, forbidden
imports, ...), and ruff-check, ruff-format and typos at the versions vLLM pins,
declared from their PyPI packages (their GitHub hook repositories are not
reachable here; entry, arguments and file types are those of the hooks).

The first run downloads the source distribution and the hooks' environments
(PyPI) into ``$XDG_CACHE_HOME/vllm-sp-base/``; later runs are offline (about
45 s, mypy warm). The hooks that must pass are the ones the commit messages
name (``checks/_validated.py``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vllm_sp_base._main import main
from vllm_sp_base._upstream.checks import _validated

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))

from upstream_releases import cache_root, source_tree  # noqa: E402

#: vLLM's remote hooks, declared from PyPI at the revisions its configuration pins.
_FROM_PYPI = {
    "https://github.com/astral-sh/ruff-pre-commit": [
        {"id": "ruff-check", "name": "ruff check", "entry": "ruff check --force-exclude",
         "language": "python", "types_or": ["python", "pyi", "jupyter"], "require_serial": True},
        {"id": "ruff-format", "name": "ruff format", "entry": "ruff format --force-exclude",
         "language": "python", "types_or": ["python", "pyi", "jupyter"], "require_serial": True},
    ],
    "https://github.com/crate-ci/typos": [
        {"id": "typos", "name": "typos", "entry": "typos", "language": "python", "types": ["text"]},
    ],
}
_PACKAGES = {"ruff-check": "ruff", "ruff-format": "ruff", "typos": "typos"}


def _config(vllm_config: dict[str, object]) -> dict[str, object]:
    """vLLM's configuration with its ``repo: local`` hooks as written, and the
    remote ones above as local hooks installing their pinned PyPI package."""
    repos = vllm_config["repos"]
    assert isinstance(repos, list)
    local = [repo for repo in repos if repo["repo"] == "local"]
    declared = []
    for repo in repos:
        for hook in _FROM_PYPI.get(repo["repo"], []):
            given = next(h for h in repo["hooks"] if h["id"] == hook["id"])
            version = repo["rev"].removeprefix("v")
            declared.append({**hook, "args": given.get("args", []),
                             "additional_dependencies": [f"{_PACKAGES[hook['id']]}=={version}"]})
    assert [h["id"] for h in declared] == ["ruff-check", "ruff-format", "typos"]
    return {**vllm_config, "repos": [{"repo": "local", "hooks": declared}, *local]}


def _git(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)


def _release_repository(tree: Path) -> Path:
    """A git repository of the release (every file, ignored ones too), made once."""
    repo = tree.with_name(tree.name + "-repo")
    if not (repo / ".git").is_dir():
        partial = tree.with_name(tree.name + "-repo.partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(tree, partial, symlinks=True)
        for argv in (("init", "-q"), ("add", "-A", "-f"), ("commit", "-qm", "release")):
            assert _git(partial, *argv).returncode == 0
        partial.rename(repo)
    return repo


def _outcomes(output: str) -> dict[str, str]:
    """hook id -> Passed / Failed / Skipped, from ``pre-commit run --verbose``."""
    found: dict[str, str] = {}
    status = None
    for line in output.splitlines():
        match = re.search(r"\.{3,}(?:\(no files to check\))?(Passed|Failed|Skipped)$", line)
        if match:
            status = match.group(1)
        elif line.startswith("- hook id: ") and status is not None:
            found[line.removeprefix("- hook id: ").strip()] = status
            status = None
    return found


@pytest.mark.slow
def test_vllms_hooks_pass_on_the_series(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("pre-commit") is None and not Path(sys.executable).with_name("pre-commit").exists():
        pytest.fail("pre-commit is not installed (requirements/dev.txt)")
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    tree = source_tree(_validated.VLLM_VERSION)
    assert tree is not None
    base = _release_repository(tree)
    out = tmp_path / "out"
    assert main(["upstream", "--vllm-src", str(tree), "--out", str(out)]) == 0, capsys.readouterr().err
    repo = tmp_path / "repo"
    assert _git(tmp_path, "clone", "-q", "--shared", str(base), str(repo)).returncode == 0
    done = _git(repo, "am", "-q", "--keep-non-patch", *map(str, sorted(out.glob("*.patch"))))
    assert done.returncode == 0, done.stderr
    changed = _git(repo, "diff", "--name-only", "HEAD~2").stdout.split()
    config = tmp_path / "pre-commit-config.yaml"
    config.write_text(json.dumps(_config(yaml.safe_load((repo / ".pre-commit-config.yaml").read_text()))))
    cache = cache_root().parent
    env = {**os.environ, "PRE_COMMIT_HOME": str(cache / "pre-commit"),
           "MYPY_CACHE_DIR": str(cache / "mypy" / _validated.VLLM_VERSION), "SKIP": ""}
    ran = subprocess.run([pre_commit, "run", "--verbose", "-c", str(config), "--files", *changed],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=1800, check=False)
    outcomes = _outcomes(ran.stdout)
    failed = {hook: status for hook, status in outcomes.items() if status == "Failed"}
    assert ran.returncode == 0 and not failed, ran.stdout[-4000:] + ran.stderr[-2000:]
    # The hooks the commit messages say passed did run, and passed.
    assert {hook: outcomes.get(hook) for hook in _validated.HOOKS} == dict.fromkeys(_validated.HOOKS, "Passed")
    # Nothing else changed the tree (ruff --fix, ruff format, typos).
    assert _git(repo, "status", "--porcelain").stdout == ""
