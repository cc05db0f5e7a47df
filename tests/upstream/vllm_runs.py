"""Running the series' vLLM tests on a vLLM tree, as vLLM's CPU CI would."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

#: An import-only torchvision, used only where the real one is missing.
IMPORT_STAND_INS = Path(__file__).parent / "import_stand_ins"


def pytest_in(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in ``root`` (the folder holding ``vllm/`` and ``tests/``), on CPU."""
    paths = [str(root)]
    if importlib.util.find_spec("torchvision") is None:
        paths.append(str(IMPORT_STAND_INS))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "VLLM_TARGET_DEVICE": "cpu"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(root), *args],
        check=False, cwd=root, env=env, capture_output=True, text=True, timeout=600)


def count(outcome: str, output: str) -> int:
    """How many tests pytest's summary line reports ``outcome`` ("passed", "failed")."""
    found = re.search(rf"\b(\d+) {outcome}\b", output)
    return int(found.group(1)) if found else 0
