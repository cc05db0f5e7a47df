"""What the rule is asked: the entry points a runner calls on a module, and
whether reads nothing reaches are shown. Plain data, so the command and the
cache key read it without importing the rule."""

from __future__ import annotations

from dataclasses import dataclass

#: What vLLM's and sglang's model runners call on a model (``forward`` through
#: ``__call__``, ``load_weights`` through the loader; ``embed_input_ids`` and
#: ``compute_logits`` on every text-generation step, ``embed_multimodal`` for
#: each multimodal input; see ``vllm/model_executor/models/interfaces_base.py``).
#: They are the entry points of a module (a class with torch's ``Module`` in
#: its MRO): what calls a plain class's methods, and whether anything does
#: (a test double's), cannot be told from the class, so a plain class is
#: checked while it is built. Set with ``--entry-points``.
DEFAULT_ENTRY_POINTS = (
    "forward", "__call__", "load_weights", "embed_input_ids", "compute_logits", "embed_multimodal",
)
#: What vLLM's runner calls on a model only with a feature on (EPLB, EAGLE-3
#: hidden states, M-RoPE, encoder CUDA graphs, multimodal pruning: the
#: ``MixtureOfExperts``, ``SupportsEagle3``, ``SupportsMRoPE``,
#: ``SupportsEncoderCudaGraph`` and ``SupportsMultiModalPruning`` interfaces),
#: and its executor on a worker only when profiling (``start_profile``);
#: sglang's scheduler on a worker when a user updates weights from tensors;
#: torch on a tensor subclass when the tensor is moved (``to``: a plain class's
#: only, a torch module's ``to`` is torch's own).
#: A read reached only from these is at most a warning. Set with
#: ``--feature-entry-points``.
DEFAULT_FEATURE_ENTRY_POINTS = (
    "set_eplb_state", "update_physical_experts_metadata", "set_aux_hidden_state_layers",
    "get_eagle3_default_aux_hidden_state_layers", "get_mrope_input_positions",
    "recompute_mrope_positions", "get_encoder_cudagraph_config", "get_input_modality",
    "get_max_frames_per_video", "get_encoder_cudagraph_budget_range",
    "get_encoder_cudagraph_item_specs", "select_encoder_cudagraph_items",
    "postprocess_encoder_output", "prepare_encoder_cudagraph_capture_inputs",
    "prepare_encoder_cudagraph_replay_buffers", "encoder_cudagraph_forward",
    "encoder_eager_forward", "start_profile", "stop_profile", "update_weights_from_tensor", "to",
)


#: Plain (not torch) classes an engine builds and drives: a class with one of
#: these names in its MRO gets those methods as entry points (called on every
#: load; those also among the feature entry points, with that feature only:
#: a worker's ``start_profile``). vLLM's executor drives its workers (``vllm/v1/worker/worker_base.py``),
#: its model runner the speculative-decoding proposer every step
#: (``vllm/v1/spec_decode/llm_base_proposer.py``); its scheduler and workers
#: the KV connector a user picks with ``--kv-transfer-config``, each step and
#: for each request (``v1/core/sched/scheduler.py``, ``kv_connector_model_runner_mixin.py``;
#: ``requires_kv_delivery`` is read as soon as the scheduler builds it);
#: sglang's scheduler its TP workers, speculative ones included
#: (``srt/managers/tp_worker.py``, ``srt/speculative/eagle_worker.py``; the
#: spec-v2 ``BaseSpecWorker``s of ``eagle_worker_v2.py`` as its model worker),
#: and its draft worker, else its TP worker, when a user updates weights
#: (``/update_weights_from_tensor``, ``scheduler_update_weights_mixin.py``);
#: a training script its transformers ``Trainer`` (``trainer.train()``, then
#: ``trainer.save_model()``, as every example script does); torch a
#: ``torch.Tensor`` subclass's ``to`` (``_to_copy``: ``model.to(device)`` on
#: what holds torchao's quantized weights). Any other plain class is checked
#: while it is built only: what calls a test double's methods, and whether
#: anything does, cannot be told from the class.
DEFAULT_PLAIN_ENTRY_POINTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("WorkerBase", (
        "init_device", "load_model", "determine_available_memory", "initialize_from_config",
        "compile_or_warm_up_model", "execute_model", "sample_tokens", "start_profile", "stop_profile",
    )),
    ("SpecDecodeBaseProposer", ("load_model", "dummy_run", "propose")),
    ("KVConnectorBase_V1", (
        "requires_kv_delivery", "get_num_new_matched_tokens", "update_state_after_alloc", "build_connector_meta",
        "request_finished", "register_kv_caches", "bind_connector_metadata", "clear_connector_metadata",
        "start_load_kv", "wait_for_layer_load", "save_kv_layer", "wait_for_save", "get_finished",
    )),
    ("BaseTpWorker", ("get_worker_info", "get_memory_pool", "forward_batch_generation", "update_weights_from_tensor")),
    ("BaseSpecWorker", ("forward_batch_generation", "update_weights_from_tensor")),
    ("Trainer", ("train", "save_model")),
    ("Tensor", ("to",)),
)


@dataclass(frozen=True)
class RuleOptions:
    """What the rule is asked: where a model's code is entered from, and
    whether reads nothing reaches are shown."""

    entry_points: tuple[str, ...] = DEFAULT_ENTRY_POINTS
    show_unreachable: bool = False
    feature_entry_points: tuple[str, ...] = DEFAULT_FEATURE_ENTRY_POINTS
    plain_entry_points: tuple[tuple[str, tuple[str, ...]], ...] = DEFAULT_PLAIN_ENTRY_POINTS
