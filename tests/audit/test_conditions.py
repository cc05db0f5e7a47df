"""A conditional finding says what makes it happen: the feature that calls its
entry point, or the tests on the way to the read."""

from __future__ import annotations

import textwrap
from pathlib import Path

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.report._text import grouped
from vllm_sp_base._audit.sources._cache import Cache

SOURCE = textwrap.dedent("""
    from torch import nn

    class Base(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.use_cache = cfg.use_cache
            self.cache = {}
            self.moe_layers = []
            self.num_moe_layers = 2
            self.scale = 2

        def forward(self, x):
            if self.use_cache:
                self._remember(x)
            return x * self.scale

        def _remember(self, x):
            self.cache[x] = x

        def set_eplb_state(self, state):
            return [layer(state) for layer in self.moe_layers]

    class Child(Base):
        def __init__(self, cfg):
            nn.Module.__init__(self)
            self.use_cache = cfg.use_cache
            self.num_moe_layers = 2
""")


def test_each_finding_says_what_makes_it_happen(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    result = audit([str(tmp_path)], cache=Cache(None, False))
    said = {f.attribute: (f.severity, f.condition) for f in result.findings}
    assert said == {
        "scale": ("error", None),
        "cache": ("warning", "when self.use_cache"),  # the test in forward, not in _remember
        "moe_layers": ("warning", "with EPLB (--enable-eplb)"),
    }
    text = grouped(result)
    assert "(from Base.forward -> _remember, when self.use_cache)" in text
    assert "(from set_eplb_state, with EPLB (--enable-eplb))" in text
    (cache,) = [f for f in result.findings if f.attribute == "cache"]
    assert cache.message.endswith("AttributeError if that read is reached (when self.use_cache)")
    assert cache.to_json()["condition"] == "when self.use_cache"


def test_a_negated_test_reads_as_written(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        from torch import nn

        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.pooler = nn.Identity()
            def forward(self, x, get_embedding=False):
                if not get_embedding:
                    return x
                else:
                    return self.pooler(x)

        class Embedder(Base):
            def __init__(self):
                nn.Module.__init__(self)
    """))
    (finding,) = audit([str(tmp_path)], cache=Cache(None, False)).findings
    assert (finding.attribute, finding.severity, finding.condition) == ("pooler", "warning", "when get_embedding")


def test_a_guard_inside_the_read_is_said_after_the_first_test(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        from torch import nn

        class Base(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.on_cpu = cfg.on_cpu
                self.is_fp8 = cfg.is_fp8
                self.block_size = None
            def forward(self, x):
                if self.on_cpu:
                    return self.forward_cpu(x)
                return x
            def forward_cpu(self, x):
                return x, self.block_size if self.is_fp8 else None

        class Child(Base):
            def __init__(self, cfg):
                nn.Module.__init__(self)
                self.on_cpu = cfg.on_cpu
                self.is_fp8 = cfg.is_fp8
    """))
    (finding,) = audit([str(tmp_path)], cache=Cache(None, False)).findings
    assert (finding.attribute, finding.condition) == ("block_size", "when self.on_cpu, then self.is_fp8")
    assert finding.message.endswith("(when self.on_cpu, then self.is_fp8)")


def _gated(gates: int) -> str:
    """A read behind ``gates`` methods, each calling the next under its own test."""
    steps = "".join(
        f"""
            def step{i}(self, x):
                if self.gate{i}:
                    return self.step{i + 1}(x)
                return x"""
        for i in range(gates)
    )
    return textwrap.dedent(f"""
        from torch import nn

        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.block_size = None
            def forward(self, x):
                return self.step0(x){steps}
            def step{gates}(self, x):
                return x, self.block_size if self.is_fp8 else None

        class Child(Base):
            def __init__(self):
                nn.Module.__init__(self)
    """)


def test_the_gate_of_each_call_on_the_way_is_said(tmp_path: Path) -> None:
    # ``if use_amx(self.proj): return self.forward_cpu(x)`` between the first
    # test and the read's own: the gate a reader needs to know it is CPU-only.
    (tmp_path / "m.py").write_text(_gated(2))
    (finding,) = audit([str(tmp_path)], cache=Cache(None, False)).findings
    assert (finding.attribute, finding.condition) == (
        "block_size", "when self.gate0, then self.gate1, then self.is_fp8")


def test_a_long_way_says_its_first_and_last_tests(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(_gated(5))
    (finding,) = audit([str(tmp_path)], cache=Cache(None, False)).findings
    assert finding.condition == "when self.gate0, then ..., then self.gate4, then self.is_fp8"


def test_a_read_in_a_loop_under_no_test_says_the_loop(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        from torch import nn

        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([nn.Identity()])
                self.aux_layers = ()
            def forward(self, x):
                out = []
                for i, layer in enumerate(self.layers):
                    if i in self.aux_layers:
                        out.append(x)
                    x = layer(x)
                return x, [self.scale(o) for o in out]
            def scale(self, x):
                return x

        class Draft(Base):
            def __init__(self):
                nn.Module.__init__(self)
                self.layers = nn.ModuleList([nn.Identity()])
    """))
    (finding,) = audit([str(tmp_path)], cache=Cache(None, False)).findings
    assert (finding.attribute, finding.severity, finding.condition) == (
        "aux_layers", "warning", "when looping over enumerate(self.layers)")


def test_a_call_in_a_test_is_a_requirement_naming_the_attributes_passed() -> None:
    import ast

    from vllm_sp_base._audit.summaries._conditions import EnclosingTests

    tests = EnclosingTests("self", {})

    def needs(source: str, truth: bool = True) -> list[str]:
        return tests.requirements(ast.parse(source, mode="eval").body, truth)

    assert needs("uses_cp(batch)") == ["%uses_cp/1"]
    assert needs("uses_cp(batch, self.cp_enabled)", False) == ["!%uses_cp/2/1.cp_enabled"]
    assert needs("uses_cp(self.a.b, self.c)") == ["%uses_cp/2/1.c"]  # a chain is not passed on
    assert needs("uses_cp(*args)") == [] and needs("uses_cp(batch, on=True)") == []
    assert needs("self.ready and is_cp()") == ["ready", "%is_cp/0"]
