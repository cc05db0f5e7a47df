"""The pytest files the series adds to vLLM's own ``tests/``: plain vLLM test
code that runs on CPU, rendered for the classes and names of this patch."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from vllm_sp_base._upstream._contract_module import CONTRACT_MODULE, FLAGS, MIXIN, SPDX_HEADER

GATE_TEST_PATH: Final = "tests/config/test_parallel_sequence_parallel_gate.py"
DEFAULTS_TEST_PATH: Final = "tests/models/test_sequence_parallel_defaults.py"


def gate_test(gate: str) -> str:
    """The table of ``ParallelConfig.<gate>`` over real configs."""
    return f'''{SPDX_HEADER}"""The model-level gate: SP-MoE with no pipeline parallelism."""

import itertools

import pytest

from vllm.config import ParallelConfig

LAYOUTS = list(itertools.product((False, True), (1, 2, 4), (1, 2), (1, 2)))


def _config(ep: bool, tp: int, dp: int, pp: int) -> ParallelConfig:
    return ParallelConfig(
        enable_expert_parallel=ep,
        tensor_parallel_size=tp,
        data_parallel_size=dp,
        pipeline_parallel_size=pp,
    )


@pytest.mark.parametrize(("ep", "tp", "dp", "pp"), LAYOUTS)
def test_is_sequence_parallel_moe_and_pp_1(ep: bool, tp: int, dp: int, pp: int):
    config = _config(ep, tp, dp, pp)
    expected = config.use_sequence_parallel_moe and pp == 1
    assert config.{gate} is expected


@pytest.mark.parametrize(("ep", "tp", "pp"), itertools.product((False, True), (1, 2, 4), (1, 2)))
def test_dp_1_never_enables_it(ep: bool, tp: int, pp: int):
    config = _config(ep, tp, 1, pp)
    assert not config.use_sequence_parallel_moe
    assert not config.{gate}


def test_on_with_ep_tp_and_dp_off_with_pp():
    assert _config(ep=True, tp=2, dp=2, pp=1).{gate}
    assert not _config(ep=True, tp=2, dp=2, pp=2).{gate}
    assert not _config(ep=False, tp=2, dp=2, pp=1).{gate}
    assert not _config(ep=True, tp=1, dp=2, pp=1).{gate}
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
        for module, names in sorted([(CONTRACT_MODULE, [MIXIN]), *by_module.items()])
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
    class CustomInit(base):
        def __init__(self) -> None:
            torch.nn.Module.__init__(self)

    return CustomInit


@pytest.mark.parametrize("base", CLASSES)
def test_inherits_the_defaults(base: type):
    assert issubclass(base, {MIXIN})
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
    assert "use_sequence_parallel" not in dict(on.named_buffers())
'''
