"""vLLM's pre-commit configuration, runnable where GitHub is not: its
``repo: local`` hooks as written, and its remote ruff and typos hooks as local
hooks installing the PyPI package at the revision vLLM pins (entry, arguments
and file types are those of the hooks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

_FROM_PYPI: dict[str, list[dict[str, Any]]] = {
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
#: The hooks declared from PyPI, in vLLM's order.
DECLARED = ("ruff-check", "ruff-format", "typos")


def write_config(tree: Path, target: Path) -> Path:
    """``tree``'s configuration, with the remote hooks above declared from PyPI, at ``target``."""
    vllm_config = yaml.safe_load((tree / ".pre-commit-config.yaml").read_text())
    repos = vllm_config["repos"]
    local = [repo for repo in repos if repo["repo"] == "local"]
    declared = []
    for repo in repos:
        for hook in _FROM_PYPI.get(repo["repo"], []):
            given = next(h for h in repo["hooks"] if h["id"] == hook["id"])
            version = repo["rev"].removeprefix("v")
            declared.append({**hook, "args": given.get("args", []),
                             "additional_dependencies": [f"{_PACKAGES[hook['id']]}=={version}"]})
    assert tuple(h["id"] for h in declared) == DECLARED
    target.write_text(json.dumps({**vllm_config, "repos": [{"repo": "local", "hooks": declared}, *local]}))
    return target
