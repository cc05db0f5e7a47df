"""The gates accept vLLM 0.33.0's real ParallelConfig (Literal backend and all)."""

from __future__ import annotations

from typing import assert_type

from vllm.config import ParallelConfig
from vllm.models.deepseek_v32.nvidia.model import DeepseekV32Model

from vllm_sp_base import ParallelLayout, use_sequence_parallel, use_sequence_parallel_moe

config = ParallelConfig(tensor_parallel_size=2, data_parallel_size=2)
layout: ParallelLayout = config
assert_type(use_sequence_parallel_moe(config), bool)
assert_type(use_sequence_parallel(config), bool)

# vLLM 0.33.0 sets the flag only in __init__, so the class has no default yet:
# exactly the gap the contract closes upstream.
DeepseekV32Model.use_sequence_parallel  # type: ignore[misc]
use_sequence_parallel_moe(DeepseekV32Model)  # type: ignore[arg-type]
