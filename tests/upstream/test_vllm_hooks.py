"""vLLM's own pre-commit hooks on the series, run by the tool itself
(``--run-hooks``) on vLLM 0.33.0's source distribution, and the message's
statement of them.

The configuration is vLLM's: its ``repo: local`` hooks as written (mypy with
its pinned dependencies, test tethering, SPDX, forbidden imports, ...), and
ruff-check, ruff-format and typos at the versions vLLM pins, declared from
their PyPI packages (their GitHub hook repositories are not reachable here;
``vllm_hooks_config``). The first run downloads the source distribution and
the hooks' environments (PyPI) into ``$XDG_CACHE_HOME/vllm-sp-base/``; later
runs are offline (about a minute).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from vllm_hooks_config import DECLARED, write_config

from vllm_sp_base._main import main
from vllm_sp_base._upstream.checks._hooks import outcomes

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))

from upstream_releases import cache_root, source_tree  # noqa: E402

#: Hooks of vLLM's that must run on the series' files and pass.
MUST_PASS = (*DECLARED, "mypy", "check-test-tethering", "check-spdx-header", "check-forbidden-imports")


def test_pre_commits_verbose_output_is_read_hook_by_hook() -> None:
    output = ("ruff check...............................................................Passed\n"
              "- hook id: ruff-check\n- duration: 0.1s\n"
              "Check SPDX headers.................................(no files to check)Skipped\n"
              "- hook id: check-spdx-header\n"
              "mypy...................................................................Failed\n"
              "- hook id: mypy\n- exit code: 1\n")
    assert outcomes(output) == ({"ruff-check": "Passed", "check-spdx-header": "Skipped", "mypy": "Failed"},
                                {"check-spdx-header"})


@pytest.mark.slow
def test_vllms_hooks_pass_on_the_series_and_the_message_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    assert os.access(pre_commit, os.X_OK), "pre-commit is not installed (requirements/dev.txt)"
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(pre_commit).parent), os.environ["PATH"]]))
    cache = cache_root().parent
    monkeypatch.setenv("PRE_COMMIT_HOME", str(cache / "pre-commit"))
    monkeypatch.setenv("MYPY_CACHE_DIR", str(cache / "mypy" / "0.33.0"))
    tree = source_tree("0.33.0")
    assert tree is not None
    config = write_config(tree, tmp_path / "pre-commit-config.yaml")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["upstream", "--vllm-src", str(tree), "--out", str(tmp_path / "out"), "--author",
                     "Ada Lovelace <ada@example.org>", "--no-test-run", "--run-hooks",
                     "--pre-commit-config", str(config)])
    assert code == 0, err.getvalue()
    (patch,) = (tmp_path / "out").glob("*.patch")
    message = re.sub(r"\s*\n\s*", " ", patch.read_text().split("\n---\n", 1)[0])
    said = re.search(r"vLLM's pre-commit hooks, run by vllm-sp-base on the changed files with "
                     r"pre-commit-config\.yaml \(`pre-commit run --files (.*?)`\): (\d+) of (\d+) passed "
                     r"\(([^)]*)\); no file was modified\.", message)
    assert said is not None, message
    files, passed, ran, names = said.groups()
    assert files.split() == ["tests/models/deepseek_v32/test_sequence_parallel.py",
                             "vllm/models/deepseek_v32/nvidia/model.py",
                             "vllm/models/dots3_note/nvidia/model.py"]
    assert passed == ran and set(MUST_PASS) <= set(names.split(", "))
    assert "failed:" not in message
