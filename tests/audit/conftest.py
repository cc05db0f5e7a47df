"""Trees the audit tests read: the fixture tree and the installed vLLM's."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_sp_base._audit.files._discover import installed_vllm

TREE = Path(__file__).with_name("fixtures") / "tree"


@pytest.fixture(scope="session")
def fixture_files() -> list[Path]:
    """Every fixture module that parses."""
    files = [p for p in sorted(TREE.rglob("*.py")) if p.name != "broken_syntax.py"]
    assert len(files) > 10
    return files


@pytest.fixture(scope="session")
def vllm_files() -> list[Path]:
    """Every module of the installed vLLM."""
    location = installed_vllm()
    if location is None:
        pytest.skip("vLLM is not installed")
    files = sorted(Path(location).rglob("*.py"))
    assert len(files) > 3000
    return files
