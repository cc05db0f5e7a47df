"""A setting under which the class is never built (``semantics/_refused``):
a sub-module's ``__init__`` asserts, under the setting, an architecture test
the class's registered name fails; a flag the class binds to that setting is
then False on every built instance. Across modules, as sglang spells it; any
weaker link decides nothing."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.semantics._refused import _listed_architectures
from vllm_sp_base._audit.sources._cache import Cache

UTILS = textwrap.dedent("""
    from pkg.settings import server_args

    def is_prefill_cp():
        return server_args.enable_prefill_cp

    def is_nsa(config):
        architectures = config.get("architectures") if isinstance(config, dict) else config.architectures
        return architectures is not None and architectures[0] in ["DeepseekV32ForCausalLM"] and True
""")

ATTENTION = textwrap.dedent("""
    from torch import nn

    from pkg.utils import is_nsa, is_prefill_cp

    class Attention(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.use_nsa = is_nsa(config)
            self.prefill_cp = is_prefill_cp()
            if self.prefill_cp:
                assert self.use_nsa, "CP needs NSA"
""")

DEEPSEEK = textwrap.dedent("""
    from torch import nn

    from pkg.attention import Attention
    from pkg.utils import is_nsa, is_prefill_cp

    class DecoderLayer(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.self_attn = Attention(config=config)

    class DeepseekForCausalLM(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.use_nsa = is_nsa(config)
            self.prefill_cp = is_prefill_cp()
            self.layers = nn.ModuleList([DecoderLayer(config)])

        def forward(self, x):
            if self.prefill_cp:
                return x, self.use_nsa
            return x

    EntryClass = [DeepseekForCausalLM]
""")

LITE = textwrap.dedent("""
    from torch import nn

    from pkg.deepseek import DecoderLayer, DeepseekForCausalLM

    class LiteForCausalLM(DeepseekForCausalLM):
        def __init__(self, config):
            nn.Module.__init__(self)
            from pkg.utils import is_prefill_cp

            self.prefill_cp = is_prefill_cp()
            self.layers = nn.ModuleList([DecoderLayer(config)])

    EntryClass = LiteForCausalLM
""")


def _warned(tmp_path: Path, **changed: str) -> set[tuple[str, str]]:
    package = tmp_path / "pkg"
    package.mkdir()
    files = {"__init__": "", "settings": "server_args = None\n", "utils": UTILS, "attention": ATTENTION,
             "deepseek": DEEPSEEK, "lite": LITE, **changed}
    for name, text in files.items():
        (package / f"{name}.py").write_text(text)
    result = audit([str(package)], cache=Cache(None, False))
    return {(f.class_name.rsplit(".", 1)[-1], f.attribute) for f in result.findings}


def test_a_flag_on_a_setting_the_class_cannot_be_built_with_is_false(tmp_path: Path) -> None:
    assert _warned(tmp_path) == set()


@pytest.mark.parametrize("changed", [
    # the class's own name passes the architecture test
    {"utils": UTILS.replace('["DeepseekV32ForCausalLM"]', '["DeepseekV32ForCausalLM", "LiteForCausalLM"]')},
    # not registered: built for a config named otherwise
    {"lite": LITE.replace("EntryClass = LiteForCausalLM", "")},
    # the sub-module is built under a test
    {"deepseek": DEEPSEEK.replace("        self.self_attn = Attention(config=config)",
                                  "        if config.mla:\n            self.self_attn = Attention(config=config)")},
    # the assertion is of something else than the architecture
    {"attention": ATTENTION.replace("assert self.use_nsa,", "assert config.mla,")},
    # the flag is read from another setting than the one asserted under
    {"lite": LITE.replace("from pkg.utils import is_prefill_cp", "from pkg.utils import is_other").replace(
        "self.prefill_cp = is_prefill_cp()", "self.prefill_cp = is_other()"),
     "utils": UTILS + "\ndef is_other():\n    return server_args.other\n"},
    # the flag may be bound again before the assertion, or the method may return first
    {"attention": ATTENTION.replace("        if self.prefill_cp:\n",
                                    "        if config.tiny:\n            self.prefill_cp = False\n"
                                    "        if self.prefill_cp:\n")},
    {"attention": ATTENTION.replace("        if self.prefill_cp:\n",
                                    "        if config.tiny:\n            return\n        if self.prefill_cp:\n")},
], ids=["architecture-passes", "not-registered", "built-under-a-test", "asserts-something-else",
        "another-setting", "bound-again-first", "returns-first"])
def test_any_weaker_link_decides_nothing(tmp_path: Path, changed: dict[str, str]) -> None:
    assert _warned(tmp_path, **changed) == {("LiteForCausalLM", "use_nsa")}


@pytest.mark.parametrize(("test", "listed"), [
    ('config.architectures[0] in ["A", "B"]', {"A", "B"}),
    ('architectures[0] in ("A",)', {"A"}),
    ('archs[0] in ["A"]', {"A"}),  # archs bound from getattr(config, "architectures", None) below
    ('_hf_arch(config) in ("A",)', {"A"}),
    ('config.architectures[1] in ["A"]', None),
    ('config.model_type in ["A"]', None),
    ('config.architectures[0] in NAMES', None),
    ('config.architectures[0] in ["A", name]', None),
    ('other[0] in ["A"]', None),
    ('_other(config) in ("A",)', None),
])
def test_only_a_literal_list_of_names_is_an_architecture_test(test: str, listed: set[str] | None) -> None:
    tree = ast.parse(textwrap.dedent("""
        def _hf_arch(config):
            archs = config.get("architectures") if isinstance(config, dict) else getattr(config, "architectures", None)
            return archs[0] if archs else None
        def _other(config):
            return config.model_type
        def test(config):
            archs = getattr(config, "architectures", None)
            other = config.names
    """))
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "test")
    assert _listed_architectures(ast.parse(test, mode="eval").body, function, tree) == listed
