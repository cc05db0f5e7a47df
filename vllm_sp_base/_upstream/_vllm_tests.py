"""The pytest files the series adds to vLLM's own ``tests/``: plain vLLM test
code that runs on CPU, rendered for the classes and names of this patch."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from vllm_sp_base._upstream._contract_module import FLAGS, SPDX_HEADER

GATE_TEST_PATH: Final = "tests/config/test_parallel_sequence_parallel_gate.py"
DEFAULTS_TEST_PATH: Final = "tests/models/deepseek_v32/test_sequence_parallel_defaults.py"


def gate_test(gate: str) -> str:
    """The table of ``ParallelConfig.<gate>`` over real configs."""
    return f'''{SPDX_HEADER}"""The model-level gate: SP-MoE with no pipeline parallelism."""

import itertools

import pytest

from vllm.config import ParallelConfig


@pytest.fixture(autouse=True)
def _no_dp_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("VLLM_DP_SIZE", raising=False)


def _config(ep: bool, tp: int, dp: int, pp: int) -> ParallelConfig:
    # "mp": no check of the world size against the GPUs this host has.
    return ParallelConfig(
        enable_expert_parallel=ep,
        tensor_parallel_size=tp,
        data_parallel_size=dp,
        pipeline_parallel_size=pp,
        distributed_executor_backend="mp",
    )


@pytest.mark.parametrize(
    ("ep", "tp", "dp", "pp"), itertools.product((False, True), (1, 2, 4), (1, 2), (1, 2))
)
def test_on_only_with_ep_tp_and_dp_and_without_pp(ep: bool, tp: int, dp: int, pp: int):
    # The default all2all backend is one SP-MoE runs with.
    expected = ep and tp > 1 and dp > 1 and pp == 1
    assert _config(ep, tp, dp, pp).{gate} is expected


@pytest.mark.parametrize(("tp", "pp"), itertools.product((2, 4), (1, 2)))
def test_dp_1_never_enables_it(tp: int, pp: int):
    assert not _config(ep=True, tp=tp, dp=1, pp=pp).{gate}


def test_it_is_sequence_parallel_moe_when_pp_is_1():
    for ep, tp, dp in itertools.product((False, True), (1, 2), (1, 2)):
        config = _config(ep, tp, dp, pp=1)
        assert config.{gate} is config.use_sequence_parallel_moe
'''


def defaults_test(classes: Iterable[tuple[str, str]]) -> str:
    """A subclass of each of ``classes`` ((module, name)) whose ``__init__`` calls
    only ``nn.Module.__init__`` reads ``False``; a value set per instance wins."""
    by_module: dict[str, list[str]] = {}
    for module, name in sorted(classes):
        by_module.setdefault(module, []).append(name)
    imports = "\n".join(
        f"from {module} import {', '.join(names)}" if len(names) == 1
        else f"from {module} import (\n" + "".join(f"    {n},\n" for n in names) + ")"
        for module, names in sorted(by_module.items())
    )
    listed = "".join(f"    {name},\n" for names in by_module.values() for name in names)
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
def test_value_set_per_instance_wins(base: type):
    on, off = _skipping_init(base)(), _skipping_init(base)()
    on.use_sequence_parallel = True
    assert on.use_sequence_parallel is True
    assert off.use_sequence_parallel is False
    assert base.use_sequence_parallel is False
'''
