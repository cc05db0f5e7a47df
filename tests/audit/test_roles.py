"""Who builds a class decides what runs on it: a test's double is built by the
test, which calls what it calls; no engine runs its entry points."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.sources._cache import Cache

LAYER = textwrap.dedent("""
    from torch import nn

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.impl = nn.Identity()
            self.scale = 1.0
        def forward(self, x):
            return self.impl(x)
""")

DOUBLE = textwrap.dedent("""
    from torch import nn
    from pkg.layer import Attention

    class BareAttention(Attention):
        def __init__(self):
            nn.Module.__init__(self)
            self.backend = "stub"
            self.factor = self.scale * 2
""")


def _findings(root: Path, where: str) -> list[tuple[str, str, str]]:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "layer.py").write_text(LAYER)
    double = root / "pkg" / where
    double.parent.mkdir(parents=True, exist_ok=True)
    for folder in double.relative_to(root / "pkg").parents:
        (root / "pkg" / folder / "__init__.py").touch()
    double.write_text(DOUBLE)
    found = audit([str(root / "pkg")], cache=Cache(None, False)).findings
    return sorted((f.class_name.rsplit(".", 1)[-1], f.attribute, f.entry or "") for f in found)


@pytest.mark.parametrize("where", ["tests/test_attention.py", "test/doubles.py", "layer_test.py", "conftest.py"])
def test_a_double_in_a_test_module_is_checked_while_built_only(tmp_path: Path, where: str) -> None:
    # ``forward`` is never an entry point of a test's double; what its own
    # construction reads still fails in the test.
    assert _findings(tmp_path, where) == [("BareAttention", "scale", "__init__")]


def test_the_same_class_outside_tests_is_checked_from_its_entry_points(tmp_path: Path) -> None:
    assert _findings(tmp_path, "attention_stub.py") == [
        ("BareAttention", "impl", "forward"), ("BareAttention", "scale", "__init__"),
    ]
