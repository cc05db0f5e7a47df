"""A setting under which the class is never built (``semantics/_refused``):
a sub-module's ``__init__`` asserts, under the setting, an architecture test
the class's registered name fails; a flag the class binds to that setting is
then False on every built instance, and so is a call of a function true only
under it (``semantics/_settings``), on an inner model only registered
classes build. Across modules, as sglang spells it; any weaker link decides
nothing."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.semantics._project import Project
from vllm_sp_base._audit.semantics._refused import _listed_architectures
from vllm_sp_base._audit.semantics._settings import needed_setting, parse_called
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.summaries._summaries import ModuleInfo
from vllm_sp_base._audit.summaries._summarize import summarize

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


# A function of the batch, true only with the setting (``semantics/_settings``).

_SETTINGS_MODULE = textwrap.dedent("""
    from pkg.flags import is_prefill_cp as imported_setting

    def is_prefill_cp():
        return server_args.enable_prefill_cp

    def is_other():
        return server_args.other
""")


@pytest.mark.parametrize(("body", "count", "needed"), [
    # the parameter left None takes the setting, and the true return needs it
    ("""
     def f(batch, enabled=None):
         if enabled is None:
             enabled = is_prefill_cp()
         if batch.meta is not None and enabled and batch.extend:
             return True
         else:
             return False
     """, 1, "m.is_prefill_cp"),
    ("def f(batch):\n    return batch.ready and is_prefill_cp()\n", 1, "m.is_prefill_cp"),
    ("def f(batch):\n    if not is_prefill_cp():\n        return False\n    return batch.ready\n", 1, "m.is_prefill_cp"),
    ("def f():\n    on = imported_setting()\n    if on:\n        return 1\n", 0, "pkg.flags.is_prefill_cp"),
    # given the parameter, the caller decides
    ("""
     def f(batch, enabled=None):
         if enabled is None:
             enabled = is_prefill_cp()
         return batch.ready and enabled
     """, 2, None),
    ("def f(batch, on):\n    return batch.ready and on\n", 2, "#1"),  # the caller's flag decides
    ("def f(batch, on=None):\n    return batch.ready and on\n", 1, None),  # left None
    ("def f(batch):\n    return batch.ready or is_prefill_cp()\n", 1, None),
    ("def f(batch):\n    on = is_prefill_cp()\n    on = batch.on\n    return batch.ready and on\n", 1, None),
    ("def f(batch):\n    for b in batch:\n        return b\n    return is_prefill_cp()\n", 1, None),
    ("def f(batch):\n    if batch.a:\n        return is_prefill_cp()\n    return batch.b and is_other()\n", 1, None),
    ("def f(batch):\n    return is_prefill_cp(batch)\n", 1, None),
    ("def f(batch):\n    if batch.ok:\n        return False\n", 1, None),  # never true: nothing to say
    ("def f(*batch):\n    return is_prefill_cp()\n", 1, None),
])
def test_a_setting_is_needed_only_where_every_true_return_runs_under_it(
    tmp_path: Path, body: str, count: int, needed: str | None,
) -> None:
    (tmp_path / "m.py").write_text(_SETTINGS_MODULE)

    def load(path: str, is_package: bool) -> ModuleInfo | None:
        return summarize(Path(path).read_bytes(), path, is_package)

    project = Project([str(tmp_path)], load, text=lambda path: Path(path).read_bytes())
    function = ast.parse(textwrap.dedent(body)).body[0]
    assert isinstance(function, ast.FunctionDef)
    assert needed_setting(project, "m", function, count) == needed


NSA_UTILS = textwrap.dedent("""
    from pkg.utils import is_prefill_cp

    def uses_prefill_cp(batch, enabled=None):
        if enabled is None:
            enabled = is_prefill_cp()
        if batch.meta is not None and enabled:
            return True
        else:
            return False
""")

MODEL = textwrap.dedent("""
    from torch import nn

    from pkg.attention import Attention
    from pkg.nsa import uses_prefill_cp

    class DeepseekModel(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.cp_size = 2
            self.layers = nn.ModuleList([Attention(config)])

        def forward(self, x, batch):
            if uses_prefill_cp(batch):
                return x, self.cp_size
            return x
""")

EAGLE = textwrap.dedent("""
    from torch import nn

    from pkg.attention import Attention
    from pkg.model import DeepseekModel

    class EagleModel(DeepseekModel):
        def __init__(self, config):
            nn.Module.__init__(self)
            self.layers = nn.ModuleList([Attention(config)])

    class EagleForCausalLM(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.model = EagleModel(config)

    EntryClass = [EagleForCausalLM]
""")


def _inner_warned(tmp_path: Path, **changed: str) -> set[tuple[str, str]]:
    return _warned(tmp_path, **{"deepseek": "", "lite": "", "nsa": NSA_UTILS, "model": MODEL, "eagle": EAGLE,
                                **changed})


def test_a_call_true_only_under_a_setting_every_build_refuses_is_false(tmp_path: Path) -> None:
    assert _inner_warned(tmp_path) == set()


@pytest.mark.parametrize("changed", [
    # the builder's name passes the architecture test
    {"utils": UTILS.replace('["DeepseekV32ForCausalLM"]', '["DeepseekV32ForCausalLM", "EagleForCausalLM"]')},
    # the inner model is named elsewhere: it may be built for another architecture
    {"other": "from pkg.eagle import EagleModel\n\nMODELS = [EagleModel]\n"},
    # built by a class that is not registered
    {"eagle": EAGLE.replace("EntryClass = [EagleForCausalLM]", "")},
    # the method binds the function's name itself
    {"model": MODEL.replace("        if uses_prefill_cp(batch):",
                            "        uses_prefill_cp = batch.uses\n        if uses_prefill_cp(batch):")},
    # the function is true without the setting
    {"nsa": NSA_UTILS.replace("batch.meta is not None and enabled", "batch.meta is not None or enabled")},
], ids=["architecture-passes", "named-elsewhere", "builder-not-registered", "name-bound-in-the-method",
        "true-without-the-setting"])
def test_any_weaker_link_to_the_call_decides_nothing(tmp_path: Path, changed: dict[str, str]) -> None:
    assert _inner_warned(tmp_path, **changed) == {("EagleModel", "cp_size")}


@pytest.mark.parametrize(("spelled", "parsed"), [
    ("uses_cp/1", ("uses_cp", 1, {})),
    ("uses_cp/2/1.cp_enabled", ("uses_cp", 2, {1: "cp_enabled"})),
    ("f/3/0.a/2.b", ("f", 3, {0: "a", 2: "b"})),
])
def test_a_call_requirement_names_the_attributes_passed(spelled: str, parsed: tuple[str, int, dict[int, str]]) -> None:
    assert parse_called(spelled) == parsed
