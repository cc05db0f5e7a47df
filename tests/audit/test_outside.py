"""Attributes the project assigns from outside: where every build of a class
assigns them on the instance it built, a read after construction cannot fail."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.sources._cache import Cache

MODEL = textwrap.dedent("""
    from torch import nn

    class Base(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.config = cfg
            self.other = 1
        def forward(self, x):
            return self.config, self.other

    class Probe(Base):
        def __init__(self):
            nn.Module.__init__(self)

    class Built(Base):
        def __init__(self):
            nn.Module.__init__(self)
            self.early = self.config  # read while built: no later assignment helps
""")

TEST = textwrap.dedent("""
    from m import Built, Probe

    def test_probe():
        probe = Probe.__new__(Probe)
        probe.config = 1
        setattr(probe, "other", 2)
        probe.forward(1)

    def test_built():
        built = Built()
        built.other = 3
        built.forward(1)
""")


def _findings(tmp_path: Path, test: str) -> set[tuple[str, str, str]]:
    (tmp_path / "m.py").write_text(MODEL)
    (tmp_path / "test_m.py").write_text(test)
    result = audit([str(tmp_path)], cache=Cache(None, False))
    return {(f.class_name, f.attribute, f.entry or "") for f in result.findings}


def test_a_double_whose_every_build_assigns_what_it_reads_is_not_reported(tmp_path: Path) -> None:
    assert _findings(tmp_path, TEST) == {("m.Built", "config", "__init__")}


@pytest.mark.parametrize("elsewhere", [
    'REGISTRY = {"built": Built, "probe": Probe}',  # passed as a value: built out of sight
    'ARCHITECTURES = ["m:Built", "m:Probe"]',  # named in a string
    "def make():\n    return Built(), Probe()",  # a build that assigns nothing
])
def test_a_build_out_of_sight_keeps_the_findings(tmp_path: Path, elsewhere: str) -> None:
    assert _findings(tmp_path, TEST + elsewhere + "\n") == {
        ("m.Built", "config", "__init__"), ("m.Built", "other", "forward"),
        ("m.Probe", "config", "forward"), ("m.Probe", "other", "forward"),
    }
