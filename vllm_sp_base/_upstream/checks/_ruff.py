"""vLLM's own style on what the patch changes: ``ruff format`` and ``ruff
check`` with the settings of vLLM's ``pyproject.toml`` (0.33.0: line length
88, the rule selection below, docstring code formatted), run on the output by
the tool itself, as vLLM's pre-commit would.

Ruff only ever runs on copies in a scratch folder, on files named one by one:
nothing of the tree, or of the folder the command runs in, is touched.
A changed file that was ruff-formatted before the patch is formatted after it;
one that was not is left to its owners, said. Lint findings the patch adds
(present after, absent before) are said; none is fixed silently.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field

#: ``[tool.ruff]`` of vLLM 0.33.0's pyproject.toml (from its sdist), which
#: sets no line length: ruff's default, 88.
VLLM_RUFF = """\
line-length = 88

[lint]
select = ["D", "E", "F", "UP", "B", "ISC", "SIM", "I", "G", "INP"]
ignore = [
    "D100", "D101", "D102", "D103", "D104", "D105", "D106", "D107", "D205", "D209",
    "D301", "D400", "D401", "D404", "D415", "D203", "D213", "F405", "F403", "E731",
    "B905", "B007", "UP032", "UP042",
]

[lint.per-file-ignores]
"!vllm/**" = ["INP"]
"tests/**" = ["D417"]

[lint.pydocstyle]
ignore-var-parameters = true

[format]
docstring-code-format = true
"""


@dataclass
class Styled:
    texts: dict[str, str] = field(default_factory=dict)  # path -> the text to write
    unformatted: list[str] = field(default_factory=list)  # not formatted before: left so
    added: list[tuple[str, str]] = field(default_factory=list)  # (path, a lint finding the patch adds)


def ruff() -> str | None:
    """The ruff next to this Python, else on PATH."""
    import sys

    beside = os.path.join(os.path.dirname(sys.executable), "ruff")
    return beside if os.access(beside, os.X_OK) else shutil.which("ruff")


def style(before: dict[str, str | None], after: dict[str, str]) -> Styled:
    """``after`` formatted where ``before`` was (a new file always), and the
    lint findings ``after`` adds. Paths are relative to vLLM's root, with "/".
    Raises FileNotFoundError without ruff."""
    styled = Styled(texts=dict(after))
    if not after:
        return styled
    binary = ruff()
    if binary is None:
        raise FileNotFoundError("ruff")
    with tempfile.TemporaryDirectory(prefix="vllm-sp-base-style-") as scratch:
        old, new = os.path.join(scratch, "before"), os.path.join(scratch, "after")
        existed = {p: t for p, t in before.items() if t is not None}
        _lay_out(old, existed)
        _lay_out(new, after)
        unformatted = _unformatted(binary, old, sorted(existed))
        styled.unformatted = [p for p in after if p in unformatted]
        to_format = [p for p in after if p not in unformatted]
        if to_format:
            _run(binary, new, "format", "--config", "ruff.toml", *to_format)
        for path in to_format:
            with open(os.path.join(new, *path.split("/")), encoding="utf-8", newline="") as handle:
                styled.texts[path] = handle.read()
        added = _lint(binary, new, sorted(after)) - _lint(binary, old, sorted(existed))
        for (path, code, message), count in sorted(added.items()):
            styled.added.append((path, f"ruff {code} added by the patch ({count}x): {message}"))
    return styled


def _lay_out(root: str, texts: dict[str, str]) -> None:
    """The files under ``root`` with vLLM's ruff settings, in packages as in
    vLLM (an ``__init__.py`` in each folder: no file is linted as part of a
    namespace package)."""
    os.makedirs(root)
    with open(os.path.join(root, "ruff.toml"), "w", encoding="utf-8") as handle:
        handle.write(VLLM_RUFF)
    for path, text in texts.items():
        target = os.path.join(root, *path.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    for directory, _, names in os.walk(root):
        if directory != root and "__init__.py" not in names:
            open(os.path.join(directory, "__init__.py"), "w").close()


def _run(binary: str, root: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """ruff in the scratch folder ``root``; every call names its files."""
    return subprocess.run([binary, *argv], capture_output=True, text=True, check=False, cwd=root)


def _unformatted(binary: str, root: str, paths: list[str]) -> set[str]:
    """Of ``paths`` (under ``root``), those ``ruff format`` would change."""
    if not paths:
        return set()
    done = _run(binary, root, "format", "--check", "--config", "ruff.toml",
                "--output-format", "json", *paths)
    return {os.path.relpath(item["filename"], root).replace(os.sep, "/")
            for item in json.loads(done.stdout or "[]")}


def _lint(binary: str, root: str, paths: list[str]) -> Counter[tuple[str, str, str]]:
    """(path, code, message) of every ruff finding in ``paths``, counted."""
    if not paths:
        return Counter()
    done = _run(binary, root, "check", "--no-cache", "--config", "ruff.toml",
                "--output-format", "json", "--exit-zero", *paths)
    found: Counter[tuple[str, str, str]] = Counter()
    for item in json.loads(done.stdout or "[]"):
        path = os.path.relpath(item["filename"], root).replace(os.sep, "/")
        found[(path, item.get("code") or "", item["message"])] += 1
    return found
