"""The pytest files the series adds to vLLM's own ``tests/``: plain vLLM test
code that runs on CPU, rendered for the classes, sites and names of this series."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from vllm_sp_base._upstream._names import CONTRACT_MODULE, FLAGS, MIXIN, SPDX_HEADER
from vllm_sp_base._upstream.rewrite._site_calls import SiteCall

GATE_TEST_PATH: Final = "tests/config/test_parallel_sequence_parallel_gate.py"
DEFAULTS_TEST_PATH: Final = "tests/models/deepseek_v32/test_sequence_parallel_defaults.py"
#: (DP, PP, the gate): with EP and TP 2, SP-MoE is on exactly when DP > 1. One
#: case on, and one for each condition of the gate turning it off.
_GATE_CASES: Final = ((2, 1, True), (2, 2, False), (1, 1, False))
_GATE_CASES_SOURCE: Final = (
    "[\n        " + ",\n        ".join(map(repr, _GATE_CASES)) + ",\n    ],\n"
    '    ids=["sp-moe", "sp-moe-with-pp", "no-sp-moe"]'
)


def gate_test(gate: str, sites: Iterable[tuple[str, SiteCall]]) -> str:
    """``ParallelConfig.<gate>`` on the layouts that tell its two conditions
    apart, and each of ``sites`` ((test id, how to reach it)) reading it."""
    sites = sorted(set(sites))
    plain: dict[str, set[str]] = {}
    aliased: set[str] = set()
    for _, call in sites:
        package, _, name = call.module.rpartition(".")
        if call.alias == name:
            plain.setdefault(package, set()).add(name)
        else:
            aliased.add(f"from {package} import {name} as {call.alias}")
    imports = sorted([*(f"from {p} import {', '.join(sorted(n))}" for p, n in plain.items()), *aliased])
    params = "".join(f"        pytest.param(lambda: {c.call}, id={name!r}),\n" for name, c in sites)
    header = (("from types import SimpleNamespace\n\n" if sites else "")
              + "import pytest\n\nfrom vllm.config import ParallelConfig\n"
              + "".join(f"{line}\n" for line in imports))
    text = f'''{SPDX_HEADER}"""The model-level sequence-parallel gate and the layers that read it:
``ParallelConfig.{gate}``."""

{header}

@pytest.fixture(autouse=True)
def _no_dp_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("VLLM_DP_SIZE", raising=False)


def _parallel_config(dp: int = 2, pp: int = 1) -> ParallelConfig:
    # EP with TP 2 at the default all2all backend: SP-MoE is on when DP > 1.
    # "mp": no check of the world size against the GPUs this host has.
    return ParallelConfig(
        enable_expert_parallel=True,
        tensor_parallel_size=2,
        data_parallel_size=dp,
        pipeline_parallel_size=pp,
        distributed_executor_backend="mp",
    )


@pytest.mark.parametrize(
    ("dp", "pp", "expected"),
    {_GATE_CASES_SOURCE},
)
def test_on_with_sp_moe_and_without_pp(dp: int, pp: int, expected: bool):
    assert _parallel_config(dp, pp).{gate} is expected
'''
    if not sites:
        return text
    return text + f'''

class _GateRead(Exception):
    pass


def _vllm_config(**hf_config: object) -> SimpleNamespace:
    hf = SimpleNamespace(hidden_size=8, **hf_config)
    return SimpleNamespace(
        parallel_config=_parallel_config(),
        model_config=SimpleNamespace(hf_config=hf, hf_text_config=hf),
        quant_config=None,
        cache_config=None,
    )


@pytest.mark.parametrize(
    "build",
    [
{params}    ],
)
def test_layers_read_the_gate(monkeypatch: pytest.MonkeyPatch, build):
    # The rest of each __init__ needs a GPU: stop where the layer reads the gate.
    def read(self: ParallelConfig) -> bool:
        raise _GateRead

    monkeypatch.setattr(ParallelConfig, "{gate}", property(read))
    with pytest.raises(_GateRead):
        build()
'''


def gate_test_count(sites: int) -> int:
    """How many tests ``gate_test`` holds for this many sites."""
    return len(_GATE_CASES) + sites


def defaults_test_count(classes: int) -> int:
    """How many tests ``defaults_test`` holds for this many classes."""
    return 3 * classes


def defaults_test(classes: Iterable[tuple[str, str]]) -> str:
    """A subclass of each of ``classes`` ((module, name)) whose ``__init__`` calls
    only ``nn.Module.__init__`` reads ``False``; a value set per instance wins."""
    by_module: dict[str, list[str]] = {}
    for module, name in sorted(classes):
        by_module.setdefault(module, []).append(name)
    listed = "".join(f"    {name},\n" for names in by_module.values() for name in names)
    by_module.setdefault(CONTRACT_MODULE, []).append(MIXIN)  # the type of the classes' defaults
    imports = "\n".join(
        f"from {module} import {', '.join(names)}" if len(names) == 1
        else f"from {module} import (\n" + "".join(f"    {n},\n" for n in names) + ")"
        for module, names in sorted(by_module.items())
    )
    flags = ", ".join(f'"{flag}"' for flag in sorted(FLAGS))
    return f'''{SPDX_HEADER}"""Model classes read the sequence-parallel flags even when a subclass's
``__init__`` skips theirs (it calls ``nn.Module.__init__`` directly)."""

import pytest
import torch

{imports}

FLAGS = ({flags})
CLASSES = [
{listed}]


def _skipping_init(base: type) -> type:
    class CustomInit(base):  # type: ignore[valid-type,misc]
        def __init__(self) -> None:
            torch.nn.Module.__init__(self)

    return CustomInit


@pytest.mark.parametrize("base", CLASSES)
def test_class_level_defaults(base: type):
    for flag in FLAGS:
        assert getattr(base, flag) is False


@pytest.mark.parametrize("base", CLASSES)
def test_subclass_skipping_init_reads_false(base: type):
    module = _skipping_init(base)()
    for flag in FLAGS:
        assert getattr(module, flag) is False


@pytest.mark.parametrize("base", CLASSES)
def test_value_set_per_instance_wins(base: type[{MIXIN}]):
    on, off = _skipping_init(base)(), _skipping_init(base)()
    on.use_sequence_parallel = True
    assert on.use_sequence_parallel is True
    assert off.use_sequence_parallel is False
    assert base.use_sequence_parallel is False
'''
