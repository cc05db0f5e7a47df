"""The README's commands, run as written, as a new user runs them: in a copy of
the repository (its tracked and new files, as a clone has them) and a fresh
virtual environment that has nothing of this one but setuptools (pip runs
offline: the build reuses this environment's setuptools instead of fetching it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
PRE_COMMIT = Path(sys.executable).with_name("pre-commit")
pytestmark = pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                                reason="needs git and a git checkout (the copy is what a clone holds)")


def blocks(language: str) -> list[tuple[str, str | None]]:
    """Each fenced block in ``language``, with the ``text`` block right after it (its output)."""
    found = re.finditer(r"```(\w+)\n(.*?)```\n(?:\n```text\n(.*?)```)?", README, re.DOTALL)
    return [(m.group(2), m.group(3)) for m in found if m.group(1) == language]


def _clone(where: Path) -> Path:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, where / name)
    return where


def _environment(where: Path) -> dict[str, str]:
    """A fresh venv whose setuptools is this one's (the build's pin), offline."""
    venv.EnvBuilder(with_pip=True).create(where)
    (site,) = where.glob("lib/python*/site-packages")
    ours = Path(__import__("setuptools").__file__).parents[1]
    for entry in [*site.glob("setuptools*"), *site.glob("_distutils_hack"), *site.glob("pkg_resources"),
                  *site.glob("distutils-precedence.pth")]:
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    for entry in [*ours.glob("setuptools*"), ours / "_distutils_hack", ours / "distutils-precedence.pth"]:
        (site / entry.name).symlink_to(entry)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_"))}
    return {**env, "PATH": f"{where / 'bin'}{os.pathsep}{env['PATH']}", "VIRTUAL_ENV": str(where),
            "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "VLLM_SP_BASE_CACHE_DIR": str(where.parent / "cache")}


def _shell(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)


def test_every_sh_block_runs_as_written_from_a_clone(tmp_path: Path) -> None:
    clone = _clone(tmp_path / "clone")
    env = _environment(tmp_path / "venv")
    ran = 0
    for block, shown in blocks("sh"):
        outputs = []
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if not command:
                continue
            if command.startswith("make "):
                # The set-up downloads 2.2 GB and `make test` is this suite:
                # the targets are checked as a dry run (.ci/run runs them for real).
                command = command.replace("make ", "make -n ", 1)
            done = _shell(command, clone, env)
            ran += 1
            # `vllm-sp-base audit` exits 1 on findings, as the README says; nothing else may fail.
            allowed = (0, 1) if command.startswith("vllm-sp-base audit") else (0,)
            assert done.returncode in allowed, (command, done.stdout, done.stderr)
            assert "Traceback" not in done.stderr, (command, done.stderr)
            outputs.append(done.stdout + done.stderr)
        if shown is not None:  # the output the README shows is the output it gets
            assert outputs[-1] == shown, outputs[-1]
    assert ran >= 4
    # The tool came from the clone's install, not from this checkout.
    where = _shell("python -c 'import vllm_sp_base; print(vllm_sp_base.__file__)'", tmp_path, env)
    assert where.stdout.startswith(str(tmp_path / "venv")), where.stdout


@pytest.mark.skipif(not PRE_COMMIT.exists(), reason="needs pre-commit (requirements/dev.txt)")
def test_the_pre_commit_snippet_runs_as_written(tmp_path: Path) -> None:
    (snippet, _), = blocks("yaml")
    clone = _clone(tmp_path / "clone")
    env = _environment(tmp_path / "venv")
    assert _shell("pip install -q ./", clone, env).returncode == 0
    project = tmp_path / "project"
    shutil.copytree(clone / "examples", project / "examples")
    (project / ".pre-commit-config.yaml").write_text("repos:\n" + textwrap.indent(snippet, "  "))
    assert yaml.safe_load((project / ".pre-commit-config.yaml").read_text())["repos"]
    env = {**env, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for command in ("git init -q", "git add ."):
        assert _shell(command, project, env).returncode == 0
    found = _shell(f"{PRE_COMMIT} run --all-files", project, env)
    assert found.returncode == 1 and "Dots3NoteModel skips DeepseekV2Model.__init__" in found.stdout, (
        found.stdout + found.stderr)
    # The README's way to adopt it on a tree with findings: a baseline, then `args`.
    assert "vllm-sp-base audit . --write-baseline .vllm-sp-base-baseline.json" in README
    assert _shell("vllm-sp-base audit . --write-baseline .vllm-sp-base-baseline.json", project,
                  env).returncode == 0
    config = project / ".pre-commit-config.yaml"
    config.write_text(config.read_text().replace(
        "entry: vllm-sp-base audit .", "entry: vllm-sp-base audit .\n        "
        "args: [--baseline, .vllm-sp-base-baseline.json]"))
    assert _shell("git add .", project, env).returncode == 0
    passed = _shell(f"{PRE_COMMIT} run --all-files", project, env)
    assert passed.returncode == 0 and "Passed" in passed.stdout, passed.stdout + passed.stderr


def test_the_upstream_extra_installs_what_the_suite_installs() -> None:
    # `pip install './[upstream]'` (README, and the hint `upstream` prints
    # without libcst) resolves on the index: its pins are requirements/dev.txt's.
    import tomllib

    assert "pip install './[upstream]'" in README
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    dev = (ROOT / "requirements" / "dev.txt").read_text().splitlines()
    assert extra["upstream"] and all(pin in dev for pin in extra["upstream"])
    hint = (ROOT / "vllm_sp_base" / "_upstream" / "_cli.py").read_text()
    assert "pip install './[upstream]'" in hint and "'vllm-sp-base[upstream]'" not in hint


def test_the_fix_extra_installs_what_the_suite_installs() -> None:
    # `pip install './[fix]'` (README, and the line --fix says without libcst).
    import tomllib

    assert "pip install './[fix]'" in README
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    dev = (ROOT / "requirements" / "dev.txt").read_text().splitlines()
    assert extra["fix"] and all(pin in dev for pin in extra["fix"])
    hint = (ROOT / "vllm_sp_base" / "_audit" / "_command.py").read_text()
    assert "pip install './[fix]'" in hint


def test_the_settings_block_is_read_as_it_says(tmp_path: Path) -> None:
    # The README's [tool.vllm-sp-base] example, every key of it, is accepted
    # as written and means what its comments say.
    import tomllib

    from vllm_sp_base._audit._config import settings_from

    (block, _), = blocks("toml")
    table = tomllib.loads(block)["tool"]["vllm-sp-base"]
    settings = settings_from(str(tmp_path / "pyproject.toml"), table)
    assert "generate" in settings.entry_points and settings.output_format == "concise"
    assert settings.src == (str(tmp_path), str(tmp_path / "src"))
    assert str(tmp_path / "tests" / "fixtures") in settings.exclude
