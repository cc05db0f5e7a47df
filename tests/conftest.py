from __future__ import annotations

import os

# vLLM must know it runs on CPU before it is imported; DP env vars would leak
# into ParallelConfig and change the gates under test.
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
for _name in ("VLLM_DP_SIZE", "VLLM_DP_RANK", "VLLM_PLUGINS"):
    os.environ.pop(_name, None)

import pytest  # noqa: E402


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU; this machine has none")
    for item in items:
        if item.get_closest_marker("cuda") is not None:  # not a keyword: tests/cuda/ is one
            item.add_marker(skip)
