"""What the series' commit messages say was run, on which vLLM, where.

The messages state results, not blanks to fill; each claim here is checked
again by this project's tests on every run (``tests/upstream/test_vllm_tree.py``
runs the added tests on the patched release and on the release as it was;
``tests/upstream/test_vllm_hooks.py`` runs these hooks through pre-commit on
the patched 0.33.0 source distribution), so a message cannot drift from
what holds.
"""

from __future__ import annotations

import os
import re
from typing import Final

#: The release the claims are about, and where they are run.
VLLM_VERSION: Final = "0.33.0"
WHERE: Final = "CPU only (x86_64, Python 3.11, torch 2.13 CPU build)"
#: vLLM 0.33.0's own pre-commit hooks run on the changed files: every
#: ``repo: local`` hook of its .pre-commit-config.yaml that applies to them
#: (mypy with its pinned dependencies included), and ruff and typos at the
#: versions it pins.
HOOKS: Final = (
    "ruff-check",
    "ruff-format",
    "typos",
    "check-test-tethering",
    "check-buildkite-step-keys",
    "mypy",
    "check-spdx-header",
    "check-root-lazy-imports",
    "check-forbidden-imports",
    "check-torch-cuda-call",
    "validate-config",
    "check-boolean-context-manager",
    "check-trust-remote-code",
)

_VERSION = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*version\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


def tree_version(root: str) -> str | None:
    """The vLLM version of the tree under ``root`` (its ``vllm/_version.py``), if known."""
    try:
        with open(os.path.join(root, "vllm", "_version.py"), encoding="utf-8") as handle:
            found = _VERSION.search(handle.read())
    except (OSError, UnicodeDecodeError):
        return None
    return found.group(1) if found else None
