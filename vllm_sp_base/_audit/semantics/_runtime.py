"""What an engine builds and calls: the entry points of a torch module and of
the plain classes it drives, and the check that gates each feature's entry
points. The rule asks it which methods run on a built instance of a class.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vllm_sp_base._audit.frameworks import Wrapper
from vllm_sp_base._audit.semantics._classes import ClassModel, Reached, Step
from vllm_sp_base._audit.semantics._modalities import (
    MODALITIES,
    supported_modalities,
    unsupplied_fields,
)
from vllm_sp_base._audit.semantics._parsed import method_node
from vllm_sp_base._audit.semantics._project import ClassRef
from vllm_sp_base._audit.summaries._conditions import LOCAL, input_key, key_of
from vllm_sp_base._audit.summaries._events import FALSE_LITERALS, ONE_OF, STATIC, Call, Known, Read
from vllm_sp_base._audit.summaries._summaries import python_name


@dataclass(frozen=True)
class Feature:
    """What turns a feature entry point on, said in the finding, and the
    attribute the engine checks on the built model before it calls it (vLLM's
    ``is_mixture_of_experts``: ``getattr(model, "num_moe_layers", 0) > 0``):
    a class whose construction does not set it never gets the call."""

    label: str
    needs: str | None = None
    for_drafts: bool = True  # False: the engine calls it on the target model only
    # False: a plain class's only (a tensor subclass's ``to``); a torch
    # module's method of that name is torch's, which its own state serves.
    for_modules: bool = True


_EPLB = Feature("with EPLB (--enable-eplb)", needs="num_moe_layers")
# The runner asks the target for the hidden states the draft reads, never the draft.
_EAGLE3 = Feature("with EAGLE-3 speculative decoding on this model", for_drafts=False)
_MROPE = Feature("with M-RoPE positions (the model's config uses M-RoPE)")
_ENCODER_GRAPHS = Feature("with encoder CUDA graphs")
_PRUNING = Feature("with multimodal pruning (--video-pruning-rate > 0)")
_PROFILING = Feature("with profiling (the server's /start_profile, or start_profile() on the engine or LLM)")
_WEIGHT_UPDATES = Feature("with weight updates (the server's /update_weights_from_tensor)")
_MOVED = Feature("when the tensor is moved (.to(), as model.to(device) does to what it holds)", for_modules=False)
# A torch module's ``save_pretrained`` is transformers' model's, which its own state serves.
_SAVED = Feature("when it is saved (save_pretrained)", for_modules=False)
# An optimizer's state is saved and loaded by every checkpointing loop, not on every step.
_CHECKPOINTED = Feature("when it is checkpointed (state_dict, load_state_dict)", for_modules=False)
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
    "start_profile": _PROFILING,  # a worker's: the executor's collective_rpc("start_profile")
    "stop_profile": _PROFILING,
    "update_weights_from_tensor": _WEIGHT_UPDATES,  # sglang's scheduler, on its draft worker else its TP worker
    "save_pretrained": _SAVED,  # a transformers pipeline's: a user saves it
    "state_dict": _CHECKPOINTED,  # an optimizer's: a torch module's is torch's, which its own state serves
    "load_state_dict": _CHECKPOINTED,
    "to": _MOVED,  # a tensor subclass's: torch's ``_to_copy`` dispatch calls it (torchao's quantized weights)
    **dict.fromkeys((
        "get_encoder_cudagraph_config", "get_input_modality", "get_max_frames_per_video",
        "get_encoder_cudagraph_budget_range", "get_encoder_cudagraph_item_specs",
        "select_encoder_cudagraph_items", "postprocess_encoder_output",
        "prepare_encoder_cudagraph_capture_inputs", "prepare_encoder_cudagraph_replay_buffers",
        "encoder_cudagraph_forward", "encoder_eager_forward",
    ), _ENCODER_GRAPHS),
}


#: What the engines call only on the target model, never on a draft (or the
#: models it builds): vLLM's ``set_aux_hidden_state_layers`` and sglang's
#: ``set_eagle3_layers_to_capture`` and ``set_dflash_layers_to_capture`` (its
#: model runner asks for them only where ``not self.is_draft_worker``,
#: ``srt/model_executor/model_runner.py``).
TARGET_ONLY = frozenset(
    {name for name, f in FEATURES.items() if not f.for_drafts}
    | {"set_eagle3_layers_to_capture", "set_dflash_layers_to_capture"}
)


#: How the engines name a speculative-decoding draft's architecture (vLLM's
#: ``_SPECULATIVE_DECODING_MODELS``: ``EagleLlamaForCausalLM``, ``DeepSeekMTP``,
#: ``DFlashQwen3ForCausalLM``; sglang's draft architectures:
#: ``LlamaForCausalLMEagle3``, ``DeepseekV3ForCausalLMNextN``) and the models
#: such a draft builds (``MistralLarge3EagleModel``).
DRAFT_NAME = re.compile(r"Eagle|EAGLE|NextN|Nextn|MTP|Mtp|Medusa|DFlash|Dflash|DSpark|Draft")
#: Keyword arguments of ``forward`` that an engine passes true only in a mode
#: it never runs a draft in: sglang's model runner passes ``get_embedding=True``
#: only when it serves an embedding model (``--is-embedding``), and its
#: scheduler then runs no draft (``srt/model_executor/model_runner.py``).
NOT_FOR_DRAFTS = ("get_embedding",)
#: The name vLLM's ``embed_multimodal`` loops give each input's modality.
MODALITY = f"{LOCAL}modality"


#: What the engine assigns on a built draft before it runs it: vLLM's proposer
#: shares the target's head (``self.model.lm_head = target_language_model.lm_head``
#: in ``load_model``, ``vllm/v1/spec_decode/llm_base_proposer.py``).
SET_ON_DRAFTS = frozenset({"lm_head"})

#: What an engine calls on a model it serves in a role a flag of the instance
#: says: sglang's encoder server (``--encoder-only``, EPD disaggregation,
#: ``srt/disaggregation/encoder/server.py``) loads the model and calls only its
#: encoder's methods (``get_{modality}_feature``, ...), never ``forward``; the
#: flag reaches the model as ``encoder_only`` (``get_disagg().encoder_only``,
#: ``config.encoder_only``).
ROLE_ENTRY_POINTS: dict[str, tuple[str, ...]] = {
    "encoder_only": (
        "load_weights", "get_image_feature", "get_video_feature", "get_audio_feature",
        "preprocess_mm_for_encoder", "encode_video_audio",
    ),
}


def entry_points_in_role(known: Known) -> tuple[str, ...] | None:
    """The entry points of the role that what is known of the instance says
    (``encoder_only`` true), or None where it says none."""
    for attr, calls in ROLE_ENTRY_POINTS.items():
        if any(test == "true" or (test == "==" and literal not in FALSE_LITERALS)
               for test, literal in known.get(attr, ())):
            return calls
    return None


def set_by_the_engine(model: ClassModel) -> frozenset[str]:
    """Attributes the engine assigns on a built instance of the class."""
    return SET_ON_DRAFTS if is_draft(model) else frozenset()


def is_draft(model: ClassModel) -> bool:
    """Whether the engine builds the class as a speculative-decoding draft (or inside one)."""
    return DRAFT_NAME.search(_name(model, 0)) is not None


def filled_on_this_instance(model: ClassModel, writers: frozenset[str] | None) -> bool:
    """Whether functions that fill an attribute from outside (``writers``;
    None: not known) may run on an instance of the class: on a draft, those
    the engine calls only on the target do not."""
    if writers is None:
        return True
    return bool(writers - TARGET_ONLY) if is_draft(model) else bool(writers)


def role_facts(model: ClassModel, tested: set[str]) -> Known:
    """What the role the engine gives the class decides of the tests on the
    way (``tested``): a draft fails ``if get_embedding:``; a model that
    declares which modalities it takes fails ``if modality == "video":`` for
    the others, and one that takes a single modality gets it at every start:
    vLLM's profiling run gives ``embed_multimodal`` a batch of the modality
    with the most tokens per item (``profile_run``, ``v1/worker/gpu_model_runner.py``),
    its only one; an input field its processor never supplies is None."""
    facts: Known = {}
    if is_draft(model):
        facts.update({f"{LOCAL}{name}": [("false", "")] for name in NOT_FOR_DRAFTS})
    if MODALITY in tested:
        supported = supported_modalities(model)
        if supported is not None and len(supported) == 1:
            only = next(iter(supported))
            facts[MODALITY] = [(ONE_OF, f"{only!r}|{only + 's'!r}")]
        elif supported is not None:
            facts[MODALITY] = [("!=", repr(spelled)) for name in MODALITIES if name not in supported
                               for spelled in (name, name + "s")]
    keys = {key for name in tested if (key := key_of(name)) is not None}
    if keys:
        facts.update({input_key(key): [("==", "None")] for key in unsupplied_fields(model, keys)})
    return facts


def feature(entry: str) -> Feature:
    return FEATURES.get(entry) or Feature(f"with the feature that calls {entry}")


def is_module(model: ClassModel) -> bool:
    """Whether the class is a torch module (``Module`` in its MRO, seen or not)."""
    return any(_name(model, index) == "Module" for index in range(len(model.mro)))


def _calls_reach_forward(model: ClassModel) -> bool:
    """Whether ``module(x)`` runs ``forward``: torch's ``Module.__call__`` does;
    a ``__call__`` a class of the source defines first in the MRO does where
    it calls ``self.forward`` or passes the call on to a base's ``__call__``."""
    found = model.lookup("__call__")
    if found is None or found[1] is None:
        return True  # torch's own, or a base the source does not show
    todo, seen = [found], {found[0:1] + ("__call__",)}
    while todo:
        index, method = todo.pop()
        if method is None:
            return True  # into code the source does not show
        for event in method.events:
            if (type(event) is Read and event.attr == "forward") or (type(event) is Call and (
                    event.name == "forward" or (event.name == "__call__" and event.kind != "self"))):
                return True
            if type(event) is Call and event.kind == "self" and (index, event.name) not in seen:
                seen.add((index, event.name))
                target = model.lookup(event.name)
                if target is not None:
                    todo.append(target)
    return False


def _name(model: ClassModel, index: int) -> str:
    entry = model.mro[index]
    return python_name(entry.name) if isinstance(entry, ClassRef) else entry.text.rsplit(".", 1)[-1]


def _placeholder(model: ClassModel, drives: Sequence[tuple[str, Sequence[str]]], driven: Sequence[str]) -> bool:
    """Whether every driven method the class overrides (defines before the
    framework's class in its MRO) surely raises NotImplementedError, and it
    overrides one: a placeholder the framework never drives (torchrec's
    optimizers, which only name a fused one) or an abstract class. One that
    also overrides a method that works (a ``Trainer``'s ``train``) is driven."""
    names = {base.rsplit(".", 1)[-1] for base, _ in drives}
    framework = next((i for i in range(len(model.mro)) if _name(model, i) in names), None)
    if framework is None:
        return False
    overridden = [m for m in driven if (found := model.lookup(m, 0)) is not None and found[0] < framework]
    return bool(overridden) and all(model.marked(m, "not_implemented") for m in overridden)


def plain_entry_points(model: ClassModel, drives: Sequence[tuple[str, Sequence[str]]]) -> tuple[str, ...]:
    """The methods the engine calls on a plain class it drives (``drives``:
    base class -> its methods the engine calls), in that order. A dotted base
    (``torch.optim.optimizer.Optimizer``) says where the class lives; it is
    matched by its last name, as forks and vendored copies keep the name and
    not the module."""
    names = {_name(model, index) for index in range(len(model.mro))}
    return tuple(dict.fromkeys(
        method for base, methods in drives if base.rsplit(".", 1)[-1] in names for method in methods
    ))


def wrapper_reads(
    model: ClassModel, wrappers: Sequence[tuple[str, Wrapper]], wanted: set[str], entries: Sequence[str],
) -> dict[str, tuple[str, Reached]]:
    """What a framework's wrapper of a driven class's method reads before the
    method runs, of ``wanted``, where every load calls both the method and
    the driven class's own method that installs the wrapper (torch's
    ``Optimizer.zero_grad`` wraps ``step``): attribute -> (entry, read), the
    read at its line in the wrapper's definition, on the way in through the installer.
    """
    found: dict[str, tuple[str, Reached]] = {}
    for cls, wrapper in wrappers:
        if wrapper.method not in entries or not wanted:
            continue
        name = cls.rsplit(".", 1)[-1]
        owner = next((i for i, e in enumerate(model.mro) if isinstance(e, ClassRef) and _name(model, i) == name), None)
        installers = [] if owner is None else [
            found_here[1] for m in wrapper.installed_by
            if m in entries and (found_here := model.lookup(m)) is not None and found_here[0] == owner
            and found_here[1] is not None]
        if owner is None or not installers:
            continue  # not the framework's class, or the class's own override never installs it
        info = model.infos[owner]
        by = None if info is None else info.methods.get(wrapper.by) or info.methods.get(wrapper.by + STATIC)
        if by is None:
            continue  # not the framework's class as its source shows it (another version)
        installer = installers[0]
        chain = (Step(owner, installer.name, installer.line),)
        entry = model.mro[owner]
        node = method_node(model.project, entry, wrapper.by) if isinstance(entry, ClassRef) else None
        for attr in wrapper.reads:
            if attr in wanted and attr not in found:
                # The line that reads it, in the wrapper the method defines (its own line where unread).
                lines = [n.lineno for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr == attr] if node else []
                line = min(lines) if lines else by.line
                # Met after all the installer runs: a sure failure in it masks the read.
                found[attr] = (installer.name, Reached(attr, owner, wrapper.by, line, chain, False, order=_AFTER_ALL))
    return found


#: The order of a read met once a whole entry point has run.
_AFTER_ALL = 1 << 30


def gated(entries: Sequence[str], sets: set[str], anything: bool, draft: bool = False) -> list[str]:
    """The feature entry points the engine calls on an instance that has
    ``sets`` (what construction or the class gives it; ``anything``: names
    the source does not show): those whose feature check it passes, and on a
    draft only those the engine calls on drafts."""
    return [
        entry for entry in entries
        if ((needs := feature(entry).needs) is None or anything or needs in sets)
        and (feature(entry).for_drafts or not draft) and feature(entry).for_modules
    ]


def in_a_test(module: str) -> bool:
    """Whether ``module`` is a test's (``tests.``, ``test_x``, ``x_test``,
    ``conftest``): a class there is a double the test builds and calls what it
    calls; no engine runs its entry points."""
    parts = module.split(".")
    last = parts[-1]
    return (any(part in ("test", "tests") for part in parts[:-1])
            or last.startswith("test_") or last.endswith("_test") or last == "conftest")


def entry_points_for(
    model: ClassModel, entries: Sequence[str], features: Sequence[str],
    drives: Sequence[tuple[str, Sequence[str]]], has: set[str], anything: bool,
    built_in_sight: Callable[[], bool] = lambda: True,
) -> tuple[Sequence[str], Sequence[str]]:
    """What the engine calls on a built instance: (every-load entry points,
    feature entry points). A torch module gets ``entries`` and the features
    whose check an instance with ``has`` passes (``anything``: it sets names
    the source does not show); a plain class what ``drives`` says the engine
    calls on it (those among ``features`` as features: a worker's
    ``start_profile``; nothing where one of them surely raises
    NotImplementedError), and nothing for the others; a test's double nothing.
    A plain class the tree never builds by a call of its name
    (``built_in_sight``: it does) is used out of sight: the methods its
    interface declares abstract are features too (``abstract_interface``)."""
    first = model.mro[0]
    if isinstance(first, ClassRef) and in_a_test(first.module):
        return (), ()
    if is_module(model):
        if "forward" in entries and not _calls_reach_forward(model):
            entries = tuple(e for e in entries if e != "forward")
        return entries, gated(features, has, anything, is_draft(model))
    driven = plain_entry_points(model, drives)
    if _placeholder(model, drives, driven):
        return (), ()
    # Where construction sets names the source does not show (``self.__dict__.update(other.__dict__)``),
    # a use is too weak a witness, as a call site is; where the tree builds it, its call sites say its uses.
    declared = tuple(m for m in abstract_interface(model) if m not in driven)
    if anything or (declared and built_in_sight()):
        declared = ()
    return tuple(m for m in driven if m not in features), (*(m for m in driven if m in features), *declared)


def _abstract(model: ClassModel) -> dict[str, bool]:
    """Each name a class of the MRO declares ``@abstractmethod`` -> whether
    the instance finds an implementation of it (not an abstract one)."""
    names = {name for info in model.infos if info is not None
             for name, method in info.methods.items() if method.is_abstract}
    return {name: (found := model.lookup(name)) is not None and found[1] is not None and not found[1].is_abstract
            for name in sorted(names)}


def abstract_left(model: ClassModel) -> bool:
    """Whether the class is an ABC (``ABC`` or ``ABCMeta`` in its MRO) whose
    instance would find an ``@abstractmethod`` no class implements: Python
    refuses to build it (TypeError), so nothing it inherits runs on it."""
    abc = any(
        _name(model, index) == "ABC"
        or (info is not None and (info.metaclass or "").rsplit(".", 1)[-1] == "ABCMeta")
        for index, info in enumerate(model.infos)
    )
    return abc and not all(_abstract(model).values())


def abstract_interface(model: ClassModel) -> tuple[str, ...]:
    """The methods a class of the MRO declares ``@abstractmethod``, where the
    instance finds an implementation and no method of the MRO calls it on the
    instance: what the tree that declared the interface calls on its
    implementations from outside (mteb's ``AbsEncoder.encode``). A hook the
    MRO's own code calls (a template method's step) runs where that code
    runs, and is no entry point of its own. A use, not every one: which of
    them a use calls, the source does not say."""
    return tuple(
        name for name, implemented in _abstract(model).items()
        if implemented and not model.marked(name, "not_implemented") and not _called_on_the_instance(model, name)
    )


def _called_on_the_instance(model: ClassModel, name: str) -> bool:
    """Whether a method of the MRO calls ``self.<name>(...)`` (or ``super()``'s)."""
    spelled = f".{name}".encode()
    return any(
        type(event) is Call and event.kind in ("self", "super") and event.name == name
        for info in model.infos if info is not None
        for method in info.methods.values() if method.spells(spelled)
        for event in method.events
    )
