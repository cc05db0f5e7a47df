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
#: ``SupportsEncoderCudaGraph`` and ``SupportsMultiModalPruning`` interfaces).
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
    "encoder_eager_forward",
)


@dataclass(frozen=True)
class Feature:
    """What turns a feature entry point on, said in the finding, and the
    attribute the engine checks on the built model before it calls it (vLLM's
    ``is_mixture_of_experts``: ``getattr(model, "num_moe_layers", 0) > 0``):
    a class whose construction does not set it never gets the call."""

    label: str
    needs: str | None = None


_EPLB = Feature("with EPLB (--enable-eplb)", needs="num_moe_layers")
_EAGLE3 = Feature("with EAGLE-3 speculative decoding on this model")
_MROPE = Feature("with M-RoPE positions (the model's config uses M-RoPE)")
_ENCODER_GRAPHS = Feature("with encoder CUDA graphs")
_PRUNING = Feature("with multimodal pruning (--video-pruning-rate > 0)")
#: The engine's gate for each default feature entry point (vLLM's model runner
#: and ``vllm/model_executor/models/interfaces.py``). A feature entry point not
#: listed here is said as "with the feature that calls NAME".
FEATURES: dict[str, Feature] = {
    "set_eplb_state": _EPLB,
    "update_physical_experts_metadata": _EPLB,
    "set_aux_hidden_state_layers": _EAGLE3,
    "get_eagle3_default_aux_hidden_state_layers": _EAGLE3,
    "get_mrope_input_positions": _MROPE,
    "recompute_mrope_positions": _PRUNING,  # only where pruning is on (gpu_model_runner)
    **dict.fromkeys((
        "get_encoder_cudagraph_config", "get_input_modality", "get_max_frames_per_video",
        "get_encoder_cudagraph_budget_range", "get_encoder_cudagraph_item_specs",
        "select_encoder_cudagraph_items", "postprocess_encoder_output",
        "prepare_encoder_cudagraph_capture_inputs", "prepare_encoder_cudagraph_replay_buffers",
        "encoder_cudagraph_forward", "encoder_eager_forward",
    ), _ENCODER_GRAPHS),
}


def feature(entry: str) -> Feature:
    return FEATURES.get(entry) or Feature(f"with the feature that calls {entry}")


@dataclass(frozen=True)
class RuleOptions:
    """What the rule is asked: where a model's code is entered from, and
    whether reads nothing reaches are shown."""

    entry_points: tuple[str, ...] = DEFAULT_ENTRY_POINTS
    show_unreachable: bool = False
    feature_entry_points: tuple[str, ...] = DEFAULT_FEATURE_ENTRY_POINTS
