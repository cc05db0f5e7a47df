"""How the first patch's test reaches each rewritten site on CPU.

Every site sits in a layer's ``__init__`` (or a helper it calls) whose later
lines need a GPU and a distributed group. The test makes the new
``ParallelConfig`` property raise, builds the layer from a stand-in
``VllmConfig`` holding a real ``ParallelConfig``, and expects that exception:
the layer reached the property, so it takes its decision from it. A site
reverted to the hand re-derivation never reads it and the test fails.

Keyed by the site's file and the top-level class or function around it; each
value is (module to import, name to import it as, the call, in the test's
terms: ``_vllm_config(**hf_config)`` builds the stand-in).
"""

from __future__ import annotations

import ast
from typing import Final, NamedTuple


class SiteCall(NamedTuple):
    module: str
    alias: str
    call: str


SITE_CALLS: Final = {
    ("vllm/model_executor/models/deepseek_v2.py", "DeepseekV2DecoderLayer"): SiteCall(
        "vllm.model_executor.models.deepseek_v2", "deepseek_v2",
        'deepseek_v2.DeepseekV2DecoderLayer(_vllm_config(model_type="deepseek_v3", '
        'n_routed_experts=None), prefix="model.layers.0")',
    ),
    ("vllm/model_executor/models/interns2_mobius.py", "InternS2MobiusDecoderLayer"): SiteCall(
        "vllm.model_executor.models.interns2_mobius", "interns2_mobius",
        "interns2_mobius.InternS2MobiusDecoderLayer(_vllm_config(num_blocks=1), "
        'layer_type="full_attention", prefix="model.layers.0")',
    ),
    ("vllm/model_executor/models/qwen3_5.py", "Qwen3_5DecoderLayer"): SiteCall(
        "vllm.model_executor.models.qwen3_5", "qwen3_5",
        'qwen3_5.Qwen3_5DecoderLayer(_vllm_config(model_type="qwen3_5_moe_text"), '
        'layer_type="full_attention", prefix="model.layers.0")',
    ),
    ("vllm/model_executor/models/qwen3_next.py", "_should_use_sequence_parallel"): SiteCall(
        "vllm.model_executor.models.qwen3_next", "qwen3_next",
        "qwen3_next._should_use_sequence_parallel(_vllm_config(num_experts=8))",
    ),
    ("vllm/models/deepseek_v32/nvidia/model.py", "DeepseekV32DecoderLayer"): SiteCall(
        "vllm.models.deepseek_v32.nvidia.model", "deepseek_v32",
        'deepseek_v32.DeepseekV32DecoderLayer(vllm_config=_vllm_config(), prefix="model.layers.0")',
    ),
    ("vllm/models/deepseek_v32/nvidia/model.py", "DeepseekV32Model"): SiteCall(
        "vllm.models.deepseek_v32.nvidia.model", "deepseek_v32",
        'deepseek_v32.DeepseekV32Model(vllm_config=_vllm_config(vocab_size=16), prefix="model")',
    ),
}


def enclosing(source: str, line: int) -> str | None:
    """The top-level class or function of ``source`` around ``line``."""
    for node in ast.parse(source).body:
        if (
            isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            return node.name
    return None
