"""torch.compile of a small module that branches on the flag: the class default
costs no extra recompiles compared with an instance attribute.

    .venv/bin/python bench/compile_recompiles.py
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vllm_sp_base import SequenceParallelDefaults


class FromInstance(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.use_sequence_parallel = False
        self.proj = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.use_sequence_parallel:
            return self.proj(x).chunk(2)[0]
        return self.proj(x)


class FromClassDefault(SequenceParallelDefaults, nn.Module):
    def __init__(self) -> None:
        nn.Module.__init__(self)  # the custom-init pattern: the flag comes from the class
        self.proj = nn.Linear(16, 16)

    forward = FromInstance.forward


def count_compiles(module: nn.Module, steps: int = 20) -> int:
    torch._dynamo.reset()
    graphs = 0

    def counting_backend(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        nonlocal graphs
        graphs += 1
        return gm.forward

    compiled = torch.compile(module, backend=counting_backend)
    for step in range(steps):
        compiled(torch.randn(4 + step % 3, 16))  # a few shapes, as a server sees
    return graphs


def main() -> dict[str, int]:
    results = {
        "instance attribute": count_compiles(FromInstance()),
        "class default": count_compiles(FromClassDefault()),
    }
    for name, graphs in results.items():
        print(f"torch.compile graphs over 20 calls, flag from {name}: {graphs}")
    extra = results["class default"] - results["instance attribute"]
    print(f"extra recompiles with the class default: {extra}")
    return results


if __name__ == "__main__":
    main()
