"""vLLM: what its model runner calls on a model (``load_weights`` through the
loader; ``embed_input_ids`` and ``compute_logits`` on every text-generation
step, ``embed_multimodal`` for each multimodal input; see
``vllm/model_executor/models/interfaces_base.py``); what it calls only with a
feature on (EPLB, EAGLE-3 hidden states, M-RoPE, encoder CUDA graphs,
multimodal pruning: the ``MixtureOfExperts``, ``SupportsEagle3``,
``SupportsMRoPE``, ``SupportsEncoderCudaGraph`` and
``SupportsMultiModalPruning`` interfaces; its executor on a worker only when
profiling, ``start_profile``); and the plain classes it drives: its executor
the workers (``vllm/v1/worker/worker_base.py``), its model runner the
speculative-decoding proposer every step (``vllm/v1/spec_decode/llm_base_proposer.py``),
its scheduler and workers the KV connector a user picks with
``--kv-transfer-config``, each step and for each request
(``v1/core/sched/scheduler.py``, ``kv_connector_model_runner_mixin.py``;
``requires_kv_delivery`` is read as soon as the scheduler builds it)."""

from __future__ import annotations

from vllm_sp_base._audit.frameworks._model import Driven, Framework

VLLM = Framework(
    "vllm",
    module_entry_points=("load_weights", "embed_input_ids", "compute_logits", "embed_multimodal"),
    feature_entry_points=(
        "set_eplb_state", "update_physical_experts_metadata", "set_aux_hidden_state_layers",
        "get_eagle3_default_aux_hidden_state_layers", "get_mrope_input_positions",
        "recompute_mrope_positions", "get_encoder_cudagraph_config", "get_input_modality",
        "get_max_frames_per_video", "get_encoder_cudagraph_budget_range",
        "get_encoder_cudagraph_item_specs", "select_encoder_cudagraph_items",
        "postprocess_encoder_output", "prepare_encoder_cudagraph_capture_inputs",
        "prepare_encoder_cudagraph_replay_buffers", "encoder_cudagraph_forward",
        "encoder_eager_forward", "start_profile", "stop_profile",
    ),
    driven=(
        Driven("vllm.v1.worker.worker_base.WorkerBase", (
            "init_device", "load_model", "determine_available_memory", "initialize_from_config",
            "compile_or_warm_up_model", "execute_model", "sample_tokens", "start_profile", "stop_profile",
        )),
        Driven("vllm.v1.spec_decode.llm_base_proposer.SpecDecodeBaseProposer", ("load_model", "dummy_run", "propose")),
        Driven("vllm.distributed.kv_transfer.kv_connector.v1.base.KVConnectorBase_V1", (
            "requires_kv_delivery", "get_num_new_matched_tokens", "update_state_after_alloc",
            "build_connector_meta", "request_finished", "register_kv_caches", "bind_connector_metadata",
            "clear_connector_metadata", "start_load_kv", "wait_for_layer_load", "save_kv_layer",
            "wait_for_save", "get_finished",
        )),
    ),
)
