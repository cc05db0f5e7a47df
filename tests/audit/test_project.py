"""Whole-program resolution: details that decide speed, never findings, and
hierarchies deeper than Python's recursion limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.semantics._project import ClassRef, Project
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.summaries._summaries import ModuleInfo
from vllm_sp_base._audit.summaries._summarize import summarize


def _tree(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _project(root: Path, parsed: list[str], prune: bool) -> Project:
    def load(path: str, is_package: bool) -> ModuleInfo | None:
        parsed.append(Path(path).relative_to(root).as_posix())
        return summarize(Path(path).read_bytes(), path, is_package)

    text = (lambda path: Path(path).read_bytes()) if prune else (lambda path: None)
    return Project([str(root)], load, text=text)


STAR_FAN_OUT = {
    "zoo/__init__.py": "from .alpha import *\nfrom .beta import *\nfrom .gamma import *\n",
    "zoo/alpha/__init__.py": "from .config import *\nfrom .model import *\n",
    "zoo/alpha/config.py": "class AlphaConfig:\n    pass\n",
    "zoo/alpha/model.py": "class AlphaModel:\n    pass\n" + "x = 1\n" * 50,
    "zoo/beta.py": "class Wanted:\n    pass\n",
    "zoo/gamma.py": "class Wanted:\n    pass  # shadowed: star imports bind in order\n",
}


def test_star_imports_that_cannot_bind_the_name_are_not_parsed(tmp_path: Path) -> None:
    _tree(tmp_path, STAR_FAN_OUT)
    pruned: list[str] = []
    everything: list[str] = []
    found = _project(tmp_path, pruned, prune=True).lookup("zoo", "Wanted")
    assert found == _project(tmp_path, everything, prune=False).lookup("zoo", "Wanted")
    assert found == ClassRef("zoo.beta", "Wanted")
    assert "zoo/alpha/model.py" in everything and "zoo/alpha/config.py" in everything
    # alpha/__init__ star-imports, so it is read; its leaves do not spell the name.
    assert pruned == ["zoo/__init__.py", "zoo/alpha/__init__.py", "zoo/beta.py"]


@pytest.mark.parametrize("depth", [45, 1500])
def test_deep_hierarchies_are_walked_whole(tmp_path: Path, depth: int) -> None:
    # Past Python's recursion limit too: MROs and the pre-scan walk with a stack.
    lines = [
        "class Module:\n    pass\n",
        "class C0(Module):\n    def __init__(self):\n        self.a = 1\n"
        "    def forward(self):\n        return self.a\n",
    ]
    lines += [f"class C{i}(C{i - 1}):\n    pass\n" for i in range(1, depth)]
    lines.append(f"class Top(C{depth - 1}):\n    def __init__(self):\n        pass\n")
    (tmp_path / "deep.py").write_text("".join(lines))
    for parse_all in (False, True):
        found = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all).findings
        assert [(f.class_name, f.attribute, f.severity) for f in found] == [("deep.Top", "a", "error")]
