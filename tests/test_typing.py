"""Run mypy over tests/typing: what must type-check does, what must fail fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TYPING = ROOT / "tests" / "typing"


def _mypy(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "mypy.ini"),
         "--strict", "--warn-unused-ignores", *map(str, paths)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )


def test_typing_files_hold_what_they_claim() -> None:
    files = sorted(TYPING.glob("check_*.py"))
    assert len(files) >= 2
    result = _mypy(*files)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_line_that_stopped_failing_is_caught(tmp_path: Path) -> None:
    stale = tmp_path / "check_stale.py"
    stale.write_text(
        "from vllm_sp_base import SequenceParallelDefaults, SequenceParallelModel\n"
        "def f(m: SequenceParallelModel) -> None: ...\n"
        "f(SequenceParallelDefaults())  # type: ignore[arg-type]\n"
    )
    result = _mypy(stale)
    assert result.returncode == 1
    assert 'Unused "type: ignore" comment' in result.stdout


def test_package_is_strict_clean() -> None:
    result = _mypy(ROOT / "vllm_sp_base")
    assert result.returncode == 0, result.stdout + result.stderr
