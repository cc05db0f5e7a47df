"""sglang: its model runner calls what vLLM's does on a model; its scheduler
drives its TP workers, speculative ones included (``srt/managers/tp_worker.py``,
``srt/speculative/eagle_worker.py``; the spec-v2 ``BaseSpecWorker``s of
``eagle_worker_v2.py`` as its model worker), and its draft worker, else its
TP worker, when a user updates weights (``/update_weights_from_tensor``,
``scheduler_update_weights_mixin.py``): a feature."""

from __future__ import annotations

from vllm_sp_base._audit.frameworks._model import Driven, Framework

SGLANG = Framework(
    "sglang",
    feature_entry_points=("update_weights_from_tensor",),
    driven=(
        Driven("sglang.srt.managers.tp_worker.BaseTpWorker", (
            "get_worker_info", "get_memory_pool", "forward_batch_generation", "update_weights_from_tensor",
        )),
        Driven("sglang.srt.speculative.base_spec_worker.BaseSpecWorker", (
            "forward_batch_generation", "update_weights_from_tensor",
        )),
    ),
)
