"""A class only ever stored on an instance, under an attribute nothing that
may hold that instance reads, is never built: it is not checked (sglang
0.5.6-0.5.9's ``self.model_cls = MistralLarge3Model``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.sources._cache import Cache

BASE = textwrap.dedent("""
    from torch import nn

    class DeepseekModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.first_k_dense_replace = 1
        def forward(self, x):
            return x * self.first_k_dense_replace

    class DeepseekForCausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = BUILD()
""")

EAGLE = textwrap.dedent("""
    from torch import nn
    from pkg.deepseek import DeepseekModel, DeepseekForCausalLM

    class MistralLarge3Model(DeepseekModel):
        def __init__(self):
            nn.Module.__init__(self)

    class MistralLarge3ForCausalLMEagle(DeepseekForCausalLM):
        def __init__(self):
            self.model_cls = MistralLarge3Model
            super().__init__()
""")


def _audit(root: Path, build: str, other: str = "") -> tuple[list[str], list[str]]:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "deepseek.py").write_text(BASE.replace("BUILD", build))
    (root / "pkg" / "eagle.py").write_text(EAGLE)
    (root / "pkg" / "other.py").write_text(other)
    result = audit([str(root / "pkg")], cache=Cache(None, False))
    return [f"{f.class_name.rsplit('.', 1)[-1]}.{f.attribute}" for f in result.findings], result.only_bases


def test_a_class_stored_where_nothing_reads_is_never_built(tmp_path: Path) -> None:
    # The parent builds its own model: nothing reads model_cls.
    findings, never = _audit(tmp_path, "DeepseekModel")
    assert findings == [] and never == ["pkg.eagle.MistralLarge3Model"]


def test_an_unrelated_class_reading_its_own_attribute_of_that_name_reads_another_object(tmp_path: Path) -> None:
    other = "class Pipeline:\n    def load(self):\n        return self.model_cls()\n"
    assert _audit(tmp_path, "DeepseekModel", other)[0] == []


@pytest.mark.parametrize(("build", "other"), [
    ("self.model_cls", ""),  # the parent builds what the subclass stores
    ("getattr(self, 'model_cls', DeepseekModel)", ""),
    ("DeepseekModel", "def build(lm):\n    return lm.model_cls()\n"),  # any other object may be one
])
def test_a_stored_class_some_code_may_read_is_checked(tmp_path: Path, build: str, other: str) -> None:
    findings, never = _audit(tmp_path, build, other)
    assert findings == ["MistralLarge3Model.first_k_dense_replace"] and never == []


LIBRARY_LOOKAHEAD = textwrap.dedent("""
    from torch.optim import Optimizer

    class Lookahead(Optimizer):  # for users to build: the tree never does
        def __init__(self, optimizer):
            self.optimizer = optimizer  # skips Optimizer.__init__
        def step(self, closure=None):
            return self.optimizer.step(closure)
""")

OTHER_LOOKAHEAD = textwrap.dedent("""
    class Lookahead:
        def __init__(self, k):
            self.k = k

    class Slow(Lookahead):  # this module's Lookahead, not the optimizer
        pass
""")


@pytest.mark.parametrize("parse_all", [False, True], ids=["default", "parse-all"])
def test_another_class_of_the_name_as_a_base_does_not_make_it_only_a_base(tmp_path: Path, parse_all: bool) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "optim.py").write_text(LIBRARY_LOOKAHEAD)
    (package / "other.py").write_text(OTHER_LOOKAHEAD)
    result = audit([str(package)], cache=Cache(None, False), parse_all=parse_all)
    assert {f.class_name for f in result.findings} == {"pkg.optim.Lookahead"} and not result.only_bases
    # Where the other module derives from the optimizer itself, it is only a base.
    (package / "other.py").write_text("from pkg.optim import Lookahead\n\nclass Slow(Lookahead):\n    pass\n")
    result = audit([str(package)], cache=Cache(None, False), parse_all=parse_all)
    assert "pkg.optim.Lookahead" in result.only_bases
