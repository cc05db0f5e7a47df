"""The contract on a real device: a custom-``__init__`` subclass that reads the
class default, under ``torch.compile`` and CUDA graph capture, against CPU.

Needs nothing but torch and pytest (``make test-cuda`` on a stock PyTorch
image). The same checks run on CPU (eager compile backend, no graph capture)
in the ordinary test run, so the test logic itself is exercised everywhere;
the ``cuda`` ones are only reported as passing where a GPU ran them.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from vllm_sp_base._contract import SequenceParallelDefaults

HIDDEN = 64


class ShardingLayer(nn.Module, SequenceParallelDefaults):
    """A layer whose ``forward`` branches on the flag its ``__init__`` sets, as
    vLLM's DeepseekV32 layers do."""

    def __init__(self, use_sequence_parallel: bool) -> None:
        super().__init__()
        self.use_sequence_parallel = use_sequence_parallel
        self.proj = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x)
        if self.use_sequence_parallel:
            return y[: y.shape[0] // 2] * 2  # stands for "this rank's shard"
        return torch.relu(y)


class CustomInitLayer(ShardingLayer):
    """The bug class: its ``__init__`` skips the parent's and never sets the flag."""

    def __init__(self) -> None:
        nn.Module.__init__(self)
        self.proj = nn.Linear(HIDDEN, HIDDEN)


def _pair(device: str) -> tuple[nn.Module, nn.Module]:
    """The custom-init layer on CPU and a copy, same weights, on ``device``."""
    torch.manual_seed(0)
    cpu = CustomInitLayer().eval()
    return cpu, copy.deepcopy(cpu).to(device)


def _compiled_matches_cpu_without_recompiles(device: str, backend: str) -> None:
    from torch._dynamo.testing import CompileCounterWithBackend

    cpu, layer = _pair(device)
    assert "use_sequence_parallel" not in vars(layer) and layer.use_sequence_parallel is False
    torch._dynamo.reset()
    counter = CompileCounterWithBackend(backend)
    compiled = torch.compile(layer, backend=counter)
    torch.manual_seed(1)
    with torch.no_grad():
        for _ in range(5):
            x = torch.randn(8, HIDDEN)
            got = compiled(x.to(device)).cpu()
            torch.testing.assert_close(got, cpu(x), rtol=1e-4, atol=1e-4)
            assert got.shape == (8, HIDDEN)  # the non-SP path: no shard taken
    assert counter.frame_count == 1  # the class default is a constant to dynamo

    # An instance that sets the flag itself compiles to the same count: the
    # default costs nothing, and the guard on the flag still tells them apart.
    torch._dynamo.reset()
    torch.manual_seed(0)
    explicit = ShardingLayer(False).to(device).eval()
    explicit_counter = CompileCounterWithBackend(backend)
    compiled_explicit = torch.compile(explicit, backend=explicit_counter)
    with torch.no_grad():
        for _ in range(5):
            compiled_explicit(torch.randn(8, HIDDEN, device=device))
    assert explicit_counter.frame_count == counter.frame_count
    sharded = ShardingLayer(True).to(device).eval()
    with torch.no_grad():
        assert torch.compile(sharded, backend=backend)(torch.randn(8, HIDDEN, device=device)).shape == (
            4, HIDDEN)


def test_custom_init_layer_compiles_once_and_matches_eager_on_cpu() -> None:
    _compiled_matches_cpu_without_recompiles("cpu", "eager")


@pytest.mark.cuda
def test_custom_init_layer_compiles_once_and_matches_cpu_on_cuda() -> None:
    _compiled_matches_cpu_without_recompiles("cuda", "inductor")


@pytest.mark.cuda
def test_cuda_graph_of_the_flag_branching_forward_matches_cpu() -> None:
    cpu, layer = _pair("cuda")
    static_input = torch.zeros(8, HIDDEN, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(3):  # warm up outside the capture, as vLLM does
            layer(static_input)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        static_output = layer(static_input)
    torch.manual_seed(2)
    for _ in range(3):
        x = torch.randn(8, HIDDEN)
        static_input.copy_(x.to("cuda"))
        graph.replay()
        torch.cuda.synchronize()
        with torch.no_grad():
            torch.testing.assert_close(static_output.cpu(), cpu(x), rtol=1e-4, atol=1e-4)
