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


HOOKED = textwrap.dedent('''
    from torch import nn

    class Linear(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = n
            self.bias = None
        def forward(self, x):
            return x * self.weight + (self.bias or 0)

    class Hooked(Linear):
        """Built by ``Hooked.from_linear`` only, which Hooked callers use."""
        def __init__(self):
            nn.Module.__init__(self)  # allocating the weight again is what it avoids
        @staticmethod
        def from_linear(m):
            hooked = Hooked()
            hooked.weight = m.weight
            hooked.bias = m.bias
            return hooked
''')


@pytest.mark.parametrize("caller", [
    "def swap(m):\n    return Hooked.from_linear(m)",
    'def swap(m):\n    """Swaps each Linear for a Hooked."""\n    return Hooked.from_linear(m)',
])
def test_a_class_built_through_its_own_factory_that_assigns_is_not_reported(tmp_path: Path, caller: str) -> None:
    (tmp_path / "m.py").write_text(HOOKED + "\n" + caller + "\n")
    result = audit([str(tmp_path)], cache=Cache(None, False))
    assert result.findings == []


@pytest.mark.parametrize("factory", [
    # ``cls()`` builds whatever class it is called on: out of sight of the name.
    "    @classmethod\n    def make(cls, m):\n        return cls()",
    "    def clone(self):\n        return type(self)()",
])
def test_a_factory_that_builds_through_cls_keeps_the_findings(tmp_path: Path, factory: str) -> None:
    (tmp_path / "m.py").write_text(HOOKED + factory + "\n\ndef swap(m):\n    return Hooked.make(m)\n")
    result = audit([str(tmp_path)], cache=Cache(None, False))
    assert {(f.class_name, f.attribute) for f in result.findings} == {("m.Hooked", "weight"), ("m.Hooked", "bias")}


def test_a_string_that_names_the_class_as_a_value_still_counts(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(HOOKED + '\nLAYERS = {"hooked": "Hooked"}\n')
    result = audit([str(tmp_path)], cache=Cache(None, False))
    assert {(f.class_name, f.attribute) for f in result.findings} == {("m.Hooked", "weight"), ("m.Hooked", "bias")}


def test_a_class_whose_own_factory_builds_another_is_never_built_here(tmp_path: Path) -> None:
    # The project's only way to it is ``Wrong.from_linear``, which returns a Hooked.
    wrong = textwrap.dedent('''
        class Wrong(Linear):
            def __init__(self):
                nn.Module.__init__(self)
            @staticmethod
            def from_linear(m):
                return Hooked.from_linear(m)

        def swap(m):
            return Wrong.from_linear(m)
    ''')
    (tmp_path / "m.py").write_text(HOOKED + wrong)
    result = audit([str(tmp_path)], cache=Cache(None, False))
    assert result.findings == []
