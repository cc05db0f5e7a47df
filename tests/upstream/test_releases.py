"""The series on every recent vLLM release (0.30.0-0.32.0; 0.33.0 is
``test_vllm_tree.py``): applies with ``git am``, ruff-clean with vLLM's
settings, compiles, and a second run finds nothing to do.

Opt-in (``-m releases``; ``make releases`` prints the same table): each
release's source distribution is downloaded once and cached.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))

from upstream_releases import check, source_tree


@pytest.mark.releases
@pytest.mark.parametrize("version", ["0.30.0", "0.31.0", "0.32.0"])
def test_the_series_on_an_earlier_release(version: str) -> None:
    tree = source_tree(version)
    assert tree is not None
    row = check(version, tree)
    assert row["exit"] == 0 and row["patches"] == 1, row
    assert row["git am"] is True and row["ruff format"] == "clean" and row["lint added"] == []
    assert row["compiles"] is True and row["idempotent"] is True
    assert row["classes"] == 2
