"""retrofit_module on our own small modules: what it sets and what it leaves."""

from __future__ import annotations

import types
import warnings

import pytest
from torch import nn

from vllm_sp_base._plugin import retrofit_module


def _module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), vars(module))
    return module


SOURCE = """
from torch import nn

class Reader(nn.Module):
    def forward(self, x):
        return x if self.use_sequence_parallel else -x

class LambdaReader:
    def run(self):
        return (lambda: self.use_sequence_parallel_moe)()

class HasProperty:
    @property
    def use_sequence_parallel(self):
        return True
    def forward(self):
        return self.use_sequence_parallel

class InheritsProperty(HasProperty):
    def other(self):
        return self.use_sequence_parallel

class ReadsOtherObject:
    def run(self, parallel_config):
        return parallel_config.use_sequence_parallel_moe

class Slotted:
    __slots__ = ("use_sequence_parallel",)
    def run(self):
        return self.use_sequence_parallel
"""


def test_sets_defaults_only_where_own_methods_read_self_flag() -> None:
    module = _module("vllm.fake_models", SOURCE)
    done = retrofit_module(module)
    assert sorted((c, f) for _, c, f in done) == [
        ("LambdaReader", "use_sequence_parallel_moe"),
        ("Reader", "use_sequence_parallel"),
    ]
    custom = object.__new__(module.Reader)
    nn.Module.__init__(custom)
    assert custom.use_sequence_parallel is False
    assert isinstance(vars(module.HasProperty)["use_sequence_parallel"], property)
    assert "use_sequence_parallel" not in vars(module.InheritsProperty)
    assert not hasattr(module.ReadsOtherObject, "use_sequence_parallel_moe")


def test_second_call_changes_nothing() -> None:
    module = _module("vllm.fake_models2", SOURCE)
    assert retrofit_module(module)
    assert retrofit_module(module) == []


def test_moved_anchor_classes_warn_instead_of_crashing() -> None:
    moved = _module("vllm.models.deepseek_v32.nvidia.model", "X = 1\n")
    with pytest.warns(UserWarning, match="DeepseekV32DecoderLayer not found: this vLLM's classes moved"):
        retrofit_module(moved)


def test_classes_imported_from_elsewhere_are_left_to_their_own_module() -> None:
    module = _module("vllm.reexports", SOURCE + "\nfrom collections import OrderedDict\n")
    other = _module("vllm.other", "")
    vars(other)["Reader"] = module.Reader
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert retrofit_module(other) == []
