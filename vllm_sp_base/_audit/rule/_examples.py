"""SPB001's examples (fixit style): each a module, dedented, and what the rule
reports on it. ``tests/audit/test_rule_examples.py`` is generated from them."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    """A module, dedented, and what the rule reports on it: (class, attribute, severity)."""

    source: str
    expect: tuple[tuple[str, str, str], ...] = ()
    name: str = ""  # where a test names it (``tests/audit/test_rule_examples.py``)

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", textwrap.dedent(self.source).lstrip("\n"))


#: A torch module whose ``__init__`` sets what its ``forward`` reads, by another name.
SCALED = """
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
"""


#: A vLLM-style multimodal parent and two processing infos (the modality examples).
_MULTIMODAL = textwrap.dedent("""
        from torch import nn
        class Registry:
            def register_processor(self, processor, *, info, dummy_inputs):
                return lambda cls: cls
        MULTIMODAL_REGISTRY = Registry()
        class VLInfo:
            def get_supported_mm_limits(self):
                return {"image": None, "video": None}
        class ImageOnlyInfo(VLInfo):
            def get_supported_mm_limits(self):
                return {"image": None}
        class VLModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.video_pruning_rate = 0.5
            def embed_multimodal(self, **inputs):
                for modality in inputs:
                    if modality == "video":
                        return self.video_pruning_rate
                return None
""")


#: A model whose ``embed_multimodal`` reads its vision tower for images (the
#: examples of a model's only modality and one of several).
_IMAGE_MODEL = textwrap.dedent("""
        class ImageModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.vision_tower = nn.Identity()
            def embed_multimodal(self, **inputs):
                for modality in inputs:
                    if modality == "image":
                        return self.vision_tower(inputs[modality])
                return None
""")


#: A parent whose registered processor supplies a field its inputs are
#: checked for (the input-field examples), and one whose does not.
_FIELDS = textwrap.dedent("""
        from torch import nn
        class Registry:
            def register_processor(self, processor, *, info, dummy_inputs):
                return lambda cls: cls
        MULTIMODAL_REGISTRY = Registry()
        def image_fields(hf_inputs):
            return dict(pixel_values=hf_inputs.get("pixel_values"), grid=hf_inputs.get("grid"))
        class ImageProcessor:
            def _get_mm_fields_config(self, hf_inputs, kwargs):
                return image_fields(hf_inputs)
        class TimedProcessor(ImageProcessor):
            def _get_mm_fields_config(self, hf_inputs, kwargs):
                return dict(**super()._get_mm_fields_config(hf_inputs, kwargs), seconds_per_frame=None)
        @MULTIMODAL_REGISTRY.register_processor(TimedProcessor, info=None, dummy_inputs=None)
        class TimedModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.pruning_rate = 0.5
            def embed_multimodal(self, **inputs):
                seconds = inputs.get("seconds_per_frame")
                if seconds is None:
                    raise ValueError("seconds_per_frame is required")
                seconds = seconds.long()
                return self.pruning_rate * seconds
""")


#: A model whose ``forward`` captures the layers a list names, empty until
#: its owner's EAGLE-3 setter (called on the target only) fills it.
_CAPTURE = textwrap.dedent("""
        from torch import nn
        class DecoderModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList()
                self.layers_to_capture = []
                self.gather_aux = False
            def forward(self, x):
                aux = []
                for i, layer in enumerate(self.layers):
                    if i in self.layers_to_capture:
                        aux.append(x if self.gather_aux else layer(x))
                    x = layer(x)
                return x, aux
        class CausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.model = DecoderModel()
            def set_eagle3_layers_to_capture(self, layer_ids):
                self.model.layers_to_capture = [i + 1 for i in layer_ids]
""")


#: sglang's shape: a method of the algorithm's enum chooses the draft
#: worker (``factory``, the examples' own), and a worker converts the same
#: setting again.
def _workers(factory: str, elsewhere: str = "") -> str:
    algorithm = textwrap.dedent("""
        from enum import Enum, auto
        class Algorithm(Enum):
            EAGLE = auto()
            EAGLE3 = auto()
            STANDALONE = auto()
            @classmethod
            def from_string(cls, name):
                return cls[name.upper()]
            def is_eagle(self):
                return self == Algorithm.EAGLE or self == Algorithm.EAGLE3
            def is_eagle3(self):
                return self == Algorithm.EAGLE3
            def is_standalone(self):
                return self == Algorithm.STANDALONE
    """)
    workers = textwrap.dedent("""
        class BaseTpWorker:
            def forward_batch_generation(self, batch):
                raise NotImplementedError
        class EagleWorker(BaseTpWorker):
            def __init__(self, args):
                self.algorithm = Algorithm.from_string(args.speculative_algorithm)
                self.use_aux_hidden_state = self.algorithm.is_eagle3()
            def forward_batch_generation(self, batch):
                if self.algorithm.is_eagle3() and self.use_aux_hidden_state:
                    return batch
                return None
        class StandaloneWorker(EagleWorker):
            def __init__(self, args):
                self.algorithm = Algorithm.from_string(args.speculative_algorithm)
    """)
    return algorithm + textwrap.indent(textwrap.dedent(factory), "    ") + workers + textwrap.dedent(elsewhere)


#: sglang's shape: a sub-module's ``__init__`` asserts, under a setting, an
#: architecture test the class's own name fails (LISTED: the names that pass).
_ASSERTING_ATTENTION = """
        from torch import nn
        def is_prefill_cp():
            return False
        def is_nsa(config):
            return config.architectures is not None and config.architectures[0] in [LISTED]
        class Attention(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.use_nsa = is_nsa(config)
                self.prefill_cp = is_prefill_cp()
                if self.prefill_cp:
                    assert self.use_nsa, "context parallel needs NSA"
"""


#: The examples vary the list and how the sub-module is built.
def _refusing(listed: str = '"DeepseekV32ForCausalLM"', build: str = "self.self_attn = Attention(config=config)") -> str:
    return textwrap.dedent(_ASSERTING_ATTENTION + """
        def make_layers(count, factory):
            return nn.ModuleList([factory(i) for i in range(count)])
        class DecoderLayer(nn.Module):
            def __init__(self, config):
                super().__init__()
                BUILD
        class DeepseekForCausalLM(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.use_nsa = is_nsa(config)
                self.prefill_cp = is_prefill_cp()
                self.layers = make_layers(config.num_hidden_layers, lambda idx: DecoderLayer(config))
            def forward(self, x):
                if self.prefill_cp:
                    return x, self.use_nsa
                return x
        class LiteForCausalLM(DeepseekForCausalLM):
            def __init__(self, config):
                nn.Module.__init__(self)
                self.prefill_cp = is_prefill_cp()
                self.layers = make_layers(config.num_hidden_layers, lambda idx: DecoderLayer(config))
        EntryClass = [DeepseekForCausalLM, LiteForCausalLM]
    """).replace("LISTED", listed).replace("BUILD", build)


def _refusing_inner(test: str = "uses_prefill_cp(batch)", answer: str = "batch.meta is not None and enabled",
                     named: str = "", builds: str = "self.model = InnerModel(config)") -> str:
    """An inner model built only by a registered class's ``__init__``; its
    inherited ``forward`` reads under a function of the batch that is true
    only with a setting every build of it refuses."""
    return textwrap.dedent(_ASSERTING_ATTENTION.replace("LISTED", '"DeepseekV32ForCausalLM"') + """
        def uses_prefill_cp(batch, enabled=None):
            if enabled is None:
                enabled = is_prefill_cp()
            if ANSWER:
                return True
            else:
                return False
        def uses_cp_flag(batch, enabled):
            return batch.meta is not None and enabled
        class DeepseekModel(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.cp_size = 2
                self.layers = nn.ModuleList([Attention(config)])
            def forward(self, x, batch):
                if TEST:
                    return x, self.cp_size
                return x
        class InnerModel(DeepseekModel):
            def __init__(self, config):
                nn.Module.__init__(self)
                self.prefill_cp = is_prefill_cp()
                self.chunked = config.chunked
                self.layers = nn.ModuleList([Attention(config)])
        class OuterForCausalLM(nn.Module):
            def __init__(self, config):
                super().__init__()
                BUILDS
            def forward(self, x, batch):
                return self.model(x, batch)
        EntryClass = [OuterForCausalLM]NAMED
    """.replace("TEST", test).replace("ANSWER", answer).replace("NAMED", named).replace("BUILDS", builds))


#: Modules on which the rule reports nothing.
def _skips_a_target_only_setter(name: str, skip: str = "nn.Module.__init__(self)") -> str:
    """A class named ``name`` that skips (``skip``) an ``__init__`` whose flag
    only a setter the engine calls on the target (EAGLE3's capture) sets again."""
    return f"""
        from torch import nn
        class Qwen2ForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.capture_aux_hidden_states = False
            def forward(self, x):
                if self.capture_aux_hidden_states:
                    return x, x
                return x
            def set_eagle3_layers_to_capture(self, layer_ids):
                self.capture_aux_hidden_states = True
        class {name}(Qwen2ForCausalLM):
            def __init__(self, full=False):
                {skip}
    """


VALID = (
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self.flag = False
            def forward(self):
                return self.flag
        class Child(Base):
            def __init__(self):
                super().__init__()  # runs the parent's __init__
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            flag = False  # a class-level default: the contract's fix
            def __init__(self):
                self.flag = True
            def forward(self):
                return self.flag
        class Child(Base):
            def __init__(self):
                pass
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self.flag = False
            def forward(self):
                return self.flag
        class Child(Base):
            def __init__(self):
                self._setup()  # sets it itself, through a helper
            def _setup(self):
                self.flag = True
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self._f = 1
            @property
            def flag(self):  # a property of that name
                return False
            def forward(self):
                return self.flag
        class Child(Base):
            def __init__(self):
                pass
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self.flag = False
            def forward(self):
                return self.flag
        class Child(Base):
            def __init__(self):
                Base.__init__(self=self)  # explicit, self by keyword
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self, size):
                self.size = size
            def forward(self):
                return self.size
        class Partitioned(Base):
            def __init__(self, size):
                self._init_partition(size)
            def _init_partition(self, size):
                super().__init__(size)  # the parent's __init__, run from a helper
        class Sharded(Partitioned):
            def __init__(self, size):
                super()._init_partition(size)  # and from the parent's helper
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self.scale = 2
            def forward(self):
                return self.scale
        class Factory(Base):
            def __new__(cls, kind):
                return Base()  # C(...) builds something else: checked as that
            def __init__(self, kind):
                pass
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self.cache = {}
            def lookup(self, key):
                return self.cache[key]
        class Double(Base):
            def __init__(self):
                pass
            def forward(self):
                return 0  # nothing that runs on a Double reads self.cache
    """),
    Example("""
        from torch import nn
        class Embedding(nn.Module):
            def __init__(self):
                self.weight = 1
            def forward(self):
                return self.weight
        class _Inert(Embedding):
            def __init__(self):
                pass  # only ever a base: the classes built from it are checked
        class Parallel(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = 2
        class Rebased(Parallel, _Inert):
            pass
    """),
    Example("""
        from torch import nn
        _COPIED = ("hidden", "heads")
        class Base(nn.Module):
            def __init__(self, cfg):
                self.hidden = cfg.hidden
                self.heads = cfg.heads
            def forward(self):
                return self.hidden * self.heads
        class Copy(Base):
            def __init__(self, other):
                for name in _COPIED:  # a computed but constant name
                    setattr(self, name, getattr(other, name))
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self, cfg):
                self.hidden = cfg.hidden
            def forward(self):
                return self.hidden
        class Offloaded(Base):
            _COPIED = ("hidden",)
            def __init__(self, source):
                nn.Module.__init__(self)
                for name in self._COPIED:  # a class-level constant
                    setattr(self, name, getattr(source, name))
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self.a = 1
                self.b = 2
                self.c = 3
                self.d = 4
            def forward(self):
                x = self.a if hasattr(self, "a") else 0
                y = self.b if "b" in self.__dict__ else 0
                z = getattr(self, "c", 0)
                try:
                    w = self.d
                except AttributeError:
                    w = 0
                return x + y + z + w
        class Guarded(Base):
            def __init__(self):
                pass
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self.table = {}
            def forward(self, x):
                return self.lookup(x)
            def lookup(self, x):
                return self.table[x]
        class Own(Base):
            def __init__(self):
                pass
            def forward(self, x):  # the only caller of lookup, overridden
                return x
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self.flag = False
            def forward(self):
                return self.flag
        class Frozen(Base):
            def __init__(self):
                object.__setattr__(self, "flag", True)  # other spellings of a set
        class Updated(Base):
            def __init__(self):
                self.__dict__.update({"flag": True})
    """),
    Example("""
        from torch import nn
        class Embedding(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter()
                self.scale = 1
            def forward(self, x):
                return self.weight[x] * self.scale
        class Holder(Embedding):
            def __init__(self):
                nn.Module.__init__(self)
                self._parameters["weight"] = nn.Parameter()  # served by Module.__getattr__
                self.register_buffer("scale", None)
    """),
    Example("""
        from torch import nn
        class Runner(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.enable_pdmux = cfg.pdmux
                self.stream_groups = []
            def forward(self):
                if self.enable_pdmux:
                    return self.stream_groups
                return None
        class Draft(Runner):
            def __init__(self):
                nn.Module.__init__(self)
                self.enable_pdmux = False  # decides the test: stream_groups is never read
    """),
    Example("""
        from torch import nn
        class Layer(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.layer_type = cfg.layer_type
                self.cache = cfg.cache
                self.linear_attn = nn.Identity()
                self.cache_proj = nn.Identity()
            def forward(self, x):
                if self.layer_type == "linear_attention":
                    x = self.linear_attn(x)
                if self.cache is not None and x:
                    x = self.cache_proj(x)
                return x
        class Draft(Layer):
            def __init__(self):
                nn.Module.__init__(self)
                self.layer_type = "full_attention"  # decides == and is None tests too
                self.cache = None
    """),
    Example("""
        from torch import nn
        class Attention(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.config = config
                if config.q_lora_rank is None:
                    self.linear_q_proj = nn.Identity()
                else:
                    self.linear_q_down_proj = nn.Identity()
            def forward(self, x):
                if self.config.q_lora_rank is None:
                    return self.linear_q_proj(x)
                return self.linear_q_down_proj(x)
        class Fused(Attention):
            def __init__(self, config):
                nn.Module.__init__(self)
                self.config = config
                assert self.config.q_lora_rank is not None  # decides the test in forward
                self.linear_q_down_proj = nn.Identity()
    """),
    Example("""
        class Cache:
            def __init__(self):
                self.table = {}
            def lookup(self, key):
                return self.table[key]
        class Double(Cache):
            def __init__(self):
                pass  # a plain class no engine drives: checked while built only
    """),
    Example("""
        from torch import nn
        class MoE(nn.Module):
            def __init__(self):
                super().__init__()
                self.moe_layers = []
                self.num_moe_layers = 0
            def set_eplb_state(self, state):
                return [layer(state) for layer in self.moe_layers]
        class Inner(MoE):
            def __init__(self):
                nn.Module.__init__(self)  # no num_moe_layers: the engine never runs EPLB on it
    """),
    Example("""
        class Module:
            def __init__(self):
                self.training = True
        class Base(Module):
            def __init__(self):
                Module.__init__(self)
                self.flag = False
            def forward(self):
                return self.flag and self.training
        class Child(Base):
            def __init__(self):
                from example import Base as Parent  # bound inside the method
                Parent.__init__(self)
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self.weight = 1
                self.impl = None
            def forward(self, x):
                def gemm(x):  # defined, stored, never called here
                    return self.weight * x
                self.gemm = gemm
                self.late = lambda: self.impl
                return x
        class Child(Base):
            def __init__(self):
                nn.Module.__init__(self)
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self.norm = None
            def norm_of(self, x):
                return x
            def forward(self, x):
                try:
                    return self.norm(x)
                except AttributeError:  # swallowed: the fallback runs
                    return self.norm_of(x)
        class Child(Base):
            def __init__(self):
                nn.Module.__init__(self)
    """),
    Example("""
        class BaseTpWorker:
            def __init__(self, args):
                self.max_total_num_tokens = args.tokens
            def get_worker_info(self):
                return self.max_total_num_tokens
        class PlaceholderWorker(BaseTpWorker):
            def __init__(self, args):
                raise NotImplementedError("pass --disable-overlap-schedule")  # never built
    """),
    Example("""
        from torch import nn
        class Base(nn.Module):
            __slots__ = ("scale",)
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        class Child(Base):
            scale = 1  # a class-level default, found before Base's slot
            def __init__(self):
                nn.Module.__init__(self)
    """, name="slot-with-a-default"),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        def make():
            class Base(nn.Module):  # the function's own Base: its Child derives from it
                scale = 1
                def forward(self, x):
                    return x * self.scale
            class Child(Base):
                def __init__(self):
                    nn.Module.__init__(self)
            return Child()
    """, name="local-class-shadows-a-module-class"),
    Example("""
        from torch import nn
        class Root(nn.Module):
            def __init__(self):
                super().__init__()
                self.size = 1
        class Base(Root):
            def __init__(self, scale=2):
                super().__init__()  # surely, however Base.__init__ was reached
                self.scale = scale
            def forward(self, x):
                return x * self.scale * self.size
        class Either(Base):
            def __init__(self, full):
                super().__init__() if full else Base.__init__(self, 1)  # both run it
        class Other(Base):
            def __init__(self, full):
                if full:
                    super().__init__()
                else:
                    nn.Module.__init__(self)
                    self.scale = self.size = 1  # the branch that skips sets them
    """, name="conditional-init-on-every-branch"),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        Plain, Model = nn.Module, Base  # each name its own value
        class Leaf(Plain):
            def __init__(self):
                nn.Module.__init__(self)
    """, name="tuple-alias-by-position"),
    Example("""
        from torch import nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        class Block(Block):
            scale = 1  # a class-level default
        class Child(Block):  # the second Block, which has it
            def __init__(self):
                nn.Module.__init__(self)
    """, name="redefined-class-is-the-latest"),
    Example("""
        from torch import nn
        class LlamaForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.pooler = nn.Identity()
                self.logits = nn.Identity()
            def forward(self, hidden, get_embedding=False):
                if not get_embedding:
                    return self.logits(hidden)
                return self.pooler(hidden)  # only an embedding-mode runner asks this
        class LlamaForCausalLMEagle3(LlamaForCausalLM):
            def __init__(self):
                nn.Module.__init__(self)  # a draft: the engine never runs it in embedding mode
                self.logits = nn.Identity()
    """, name="draft-never-in-embedding-mode"),
    Example("""
        from torch import nn
        class Tuner(nn.Module):
            def __init__(self, model, config):
                super().__init__()
                self.config = config
                self.inject()
            def inject(self):
                return self.config  # runs only inside Tuner.__init__, after the set
            def forward(self, x):
                return self.model(x)
        class Lora(Tuner):
            def __init__(self, model, config=None):
                if config is not None:
                    super().__init__(model, config)
                else:
                    nn.Module.__init__(self)
                self.model = model
    """, name="conditional-init-reads-what-it-set"),
    Example("""
        class WorkerBase:
            def __init__(self, config):
                self.model_config = config.model
            def execute_model(self, batch):
                return self.model_config(batch)
        class DelegateWorker(WorkerBase):
            def __init__(self, config):
                self.worker = WorkerBase(config)  # skips WorkerBase.__init__, but:
            def __getattr__(self, name):
                return getattr(self.worker, name)  # what it lacks, the delegate answers
    """, name="delegate-getattr-answers"),
    Example("""
        class Optimizer:
            def __init__(self, params):
                self.param_groups = list(params)
        class Wrapped(Optimizer):
            def __init__(self, base):
                self.base = base  # skips Optimizer.__init__, but:
                self.size = len(self.param_groups)
            def __getattribute__(self, name):
                try:
                    return super().__getattribute__(name)
                except AttributeError:
                    return self.base.__getattribute__(name)  # a failed lookup goes to the base
    """, name="delegate-getattribute-answers"),
    Example("""
        class Spec:
            def __init__(self, dtype):
                self.scalar_type = dtype
            @property
            def dtype(self):
                return self.scalar_type
        class ViewSpec(Spec):
            def __init__(self, base):
                self._base = base  # skips Spec.__init__, but:
                assert self.dtype == base.dtype
            def __getattribute__(self, name):
                if name in ("dtype", "scalar_type"):
                    return object.__getattribute__(self._base, name)  # these lookups go to the base
                return object.__getattribute__(self, name)
    """, name="getattribute-redirects-to-a-delegate"),
    Example("""
        from torch import nn
        from not_installed_anywhere import RemoteTrainer
        class Trainer(nn.Module):
            def __init__(self):
                super().__init__()
                self.scheduler = None
            def forward(self, x):
                return self.scheduler
        class PPO(RemoteTrainer, Trainer):
            def __init__(self):
                RemoteTrainer.__init__(self)  # code not shown: its super().__init__() may run Trainer's
                self.lr = self.scheduler
    """, name="unresolved-base-init-called"),
    Example("""
        from torch import nn
        from not_installed_anywhere import ExactGP
        class Model(nn.Module):
            pass
        class GP(Model, ExactGP):
            def __init__(self, x):
                ExactGP.__init__(self, x)  # code not shown: a torch module of its own may run nn.Module's
                self.to(x)
    """, name="unresolved-base-may-run-an-outside-init"),
    Example("""
        from torch import nn
        class LinearBase(nn.Module):
            def __init__(self):
                super().__init__()
                self.bias = None
            def forward(self, x):
                return x + self.bias
        class AscendLinearBase(LinearBase):
            def __init__(self):
                nn.Module.__init__(self)  # never built: a helper others run on themselves
                self.weight = None
        class AscendLinear(LinearBase):
            def __init__(self):
                AscendLinearBase.__init__(self)
                self.bias = 0
    """, name="init-helper-never-built"),
    Example("""
        from torch import nn
        class LlamaForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.lm_head = nn.Linear(8, 8)
            def compute_logits(self, hidden):
                return self.lm_head(hidden)
        class EagleLlamaForCausalLM(LlamaForCausalLM):
            def __init__(self):
                nn.Module.__init__(self)  # a draft: the proposer gives it the target's lm_head
    """, name="draft-head-shared-by-the-engine"),
    Example(SCALED + """
        class Distributed(Parent):
            '''Never built itself: see ``Distributed.__init__`` and build a subclass.'''
            def __init__(self):
                nn.Module.__init__(self)
        class Sharded(Distributed):
            def __init__(self):
                super().__init__()
                self.scale = 3
    """, name="base-a-docstring-names-is-only-a-base"),
    Example("""
        class Wrapped:
            def __init__(self, value):
                self.value = value
            def length(self):
                return len(self.value)
        class SequenceMethods(Wrapped):  # a namespace of methods, never built
            def __init__(self, items=()):
                self.value[:] = list(items)
        class ListMethods(SequenceMethods):
            def __new__(cls, items=()):
                return Wrapped(list(items))
        LOOKASIDES = {}
        def register(typ, methods):
            for name in dir(typ):
                if hasattr(methods, name):
                    LOOKASIDES[getattr(typ, name)] = getattr(methods, name)  # looks its methods up
        register(tuple, SequenceMethods)
        register(list, ListMethods)
    """, name="class-passed-only-to-have-its-methods-looked-up"),
    Example(_MULTIMODAL + textwrap.dedent("""
        @MULTIMODAL_REGISTRY.register_processor(None, info=ImageOnlyInfo, dummy_inputs=None)
        class ImageOnlyModel(VLModel):
            def __init__(self):
                nn.Module.__init__(self)  # the engine never gives it a video
    """), name="modality-the-model-does-not-take"),
    Example("""
        from torch import nn
        class GraphRunner(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.enable_pdmux = cfg.pdmux
                self.stream_groups = []
                self.capture()
            def capture(self):
                if not self.enable_pdmux:
                    return None
                return self.stream_groups
        class SingleStreamRunner(GraphRunner):
            def __init__(self, cfg):
                nn.Module.__init__(self)
                self.enable_pdmux = False  # set before the capture it runs while built
                self.capture()
    """, name="decided-while-built"),
    Example("""
        from torch import nn
        class VisionModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.vision_tower = nn.Identity()
                self.model_dtype = None
            def encoder_forward(self, pixels):
                vt = self.vision_tower
                return vt.patch_embedder(pixels).to(self.model_dtype)
            def forward(self, x):
                return self.encoder_forward(x)
        class TextOnly(VisionModel):
            def __init__(self):
                nn.Module.__init__(self)
                self.vision_tower = None  # vt.patch_embedder raises first: model_dtype is never read
    """, name="fails-first-on-a-none-component"),
    Example("""
        from torch import nn
        class Target(nn.Module):
            def __init__(self):
                super().__init__()
                self.aux_layers = ()
            def forward(self, x):
                return x
            def set_aux_hidden_state_layers(self, layers):
                self.aux_layers = layers + self.extra  # asked of the target only
        class EagleTarget(Target):
            def __init__(self):
                nn.Module.__init__(self)  # a draft: EAGLE-3's layers are set on the target
    """, name="draft-gets-no-target-feature"),
    Example(_FIELDS + textwrap.dedent("""
        @MULTIMODAL_REGISTRY.register_processor(ImageProcessor, info=None, dummy_inputs=None)
        class UntimedModel(TimedModel):
            def __init__(self):
                nn.Module.__init__(self)  # its processor has no seconds_per_frame: the ValueError comes first
    """), name="input-field-the-processor-never-supplies"),
    Example(_CAPTURE + textwrap.dedent("""
        class EagleDecoderModel(DecoderModel):
            def __init__(self):
                nn.Module.__init__(self)  # a draft: only a target's layers are captured
                self.layers = nn.ModuleList()
                self.layers_to_capture = []
    """), name="list-filled-only-on-the-target"),
    Example(_workers("""
        def create_worker(self, args):
            if self.is_eagle():
                return EagleWorker
            elif self.is_standalone():
                return StandaloneWorker  # chosen only for STANDALONE: never is_eagle3()
            raise ValueError(self)
    """), name="worker-chosen-for-another-value"),
    Example("""
        class Cache:
            def __init__(self):
                self.layers = []
            @property
            def max_batch_size(self):
                return len(self.layers)
        class HybridCache(Cache):
            max_batch_size = None  # hides Cache.max_batch_size: the instance reads a plain attribute
            def __init__(self, size):
                self.max_batch_size = size
                self.sizes = [self.max_batch_size] * 2
    """, name="property-a-subclass-hides"),
    Example(_refusing(), name="setting-the-class-is-never-built-with"),
    Example(_refusing_inner(), name="call-true-only-with-a-setting-no-build-survives"),
    Example(_refusing_inner(test="is_prefill_cp()"), name="setting-called-where-no-build-survives"),
    Example(_refusing_inner(test="uses_cp_flag(batch, self.prefill_cp)"), name="call-given-a-flag-of-the-setting"),
    Example(_refusing_inner(builds="""self.model_cls = InnerModel  # stored, then built by its own construction
                self.model = self.model_cls(config)"""), name="inner-model-stored-by-its-builder"),
    Example("""
        from torch import nn
        class Runner(nn.Module):
            def __init__(self):
                super().__init__()
                self.cache = None
            def init_cache(self, size):
                self.cache = [0] * size  # a setter the caller may run first
            def forward(self, x):
                return self.cache[x]
        class Custom(Runner):
            def __init__(self):
                nn.Module.__init__(self)
    """, name="lazy-setter-may-run-first"),
    Example("""
        from torch import nn
        class Positions(nn.Embedding):
            def __init__(self, num, dim):
                self.make_weight(num, dim)
            def make_weight(self, num, dim):
                if not hasattr(self, "weight"):  # true while built: Embedding.__init__ runs
                    super().__init__(num, dim)
                else:
                    self.weight = nn.Parameter(self.weight.new_zeros(num, dim))
    """, name="parent-init-while-the-attribute-is-lacking"),
    Example("""
        from torch import nn
        class Dataset(nn.Module):
            def __init__(self, path):
                super().__init__()
                self.records = []
        class Jsonl(Dataset):
            def __init__(self, path):
                if path.endswith(".json"):
                    super().__init__(path)
                elif path.endswith(".jsonl"):
                    super().__init__(None)  # every arm that goes on runs it
                    for line in open(path):
                        self.records.append(line)
                else:
                    raise ValueError(path)
    """, name="parent-init-in-every-arm-that-goes-on"),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.scales = {}
            def load_weights(self, weights):
                self.scales.update(weights)
        class Light(Base):
            def __init__(self, cfg):
                self.light = cfg.light
                if self.light:
                    nn.Module.__init__(self)
                else:
                    super().__init__(cfg)
            def load_weights(self, weights):
                if not self.light:  # where Base.__init__ was skipped, light is true
                    super().load_weights(weights)
    """, name="skipped-where-the-test-failed-so-its-opposite-holds"),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.lm_head = nn.Identity()
            def forward(self, x):
                return self.lm_head(x)
        class Omni(Base):
            def __init__(self, cfg):
                self.encoder_only = cfg.encoder_only
                if self.encoder_only:  # sglang's encoder server never calls forward
                    nn.Module.__init__(self)
                else:
                    super().__init__(cfg)
            def get_image_feature(self, items):
                return items
    """, name="encoder-only-role-runs-no-forward"),
    Example("""
        from torch.optim import Optimizer
        from not_installed_anywhere import GetAttr  # fastcore's: hands what the instance lacks to _default
        class Lookahead(Optimizer, GetAttr):
            _default = "opt"
            def __init__(self, opt):
                self.opt = opt  # skips Optimizer.__init__: zero_grad's reads go to GetAttr's __getattr__
    """, name="unresolved-base-may-answer-every-read"),
)


#: Modules and what the rule reports on each.
INVALID = (
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.flag = 1
            def forward(self):
                return self.flag
        class Child(Base):
            def __init__(self):
                self.ready = True
                self.setup()
            def setup(self):
                if not hasattr(self, "ready"):  # set above: the test fails while built
                    super().__init__()
    """, (("Child", "flag", "warning"),), name="parent-init-under-a-lacking-test-that-fails"),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.lm_head = nn.Identity()
                self.scales = {}
            def forward(self, x):
                return self.lm_head(x)
            def load_weights(self, weights):
                self.scales.update(weights)
        class Light(Base):
            def __init__(self, cfg):
                self.light = cfg.light
                if self.light:  # not a role an engine knows: forward runs
                    nn.Module.__init__(self)
                else:
                    super().__init__(cfg)
            def load_weights(self, weights):
                if self.light:
                    super().load_weights(weights)
    """, (("Light", "lm_head", "warning"), ("Light", "scales", "warning")),
        name="skipped-where-the-test-failed-reads-under-it"),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                if x is not None:
                    return x * self.scale  # every forward that goes on reads it
                else:
                    raise ValueError("no input")
        class Child(Base):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "scale", "error"),), name="read-where-the-else-raises"),
    Example("""
        import torch
        class PlainImpl(torch.Tensor):
            @staticmethod
            def __new__(cls, data):
                return torch.Tensor._make_wrapper_subclass(cls, data.shape)  # a cls, built
            def __init__(self, data):
                self.int_data = data
            def to(self, *args, **kwargs):  # torch's _to_copy calls it: model.to(device)
                return self.__class__(self.int_data.to(*args, **kwargs))
        class BlockSparseImpl(PlainImpl):
            @staticmethod
            def __new__(cls, values):
                return torch.Tensor._make_wrapper_subclass(cls, values.shape)
            def __init__(self, values):
                self.values = values
    """, (("BlockSparseImpl", "int_data", "warning"),), name="tensor-subclass-moved"),
    Example(_skips_a_target_only_setter("Qwen2ForCausalLMEagle"), (("Qwen2ForCausalLMEagle", "capture_aux_hidden_states", "error"),), name="draft-target-only-setter"),
    Example(_skips_a_target_only_setter("Qwen2Custom"), (("Qwen2Custom", "capture_aux_hidden_states", "error"),),
            name="feature-only-setter-does-not-run-first"),
    Example(_skips_a_target_only_setter("Qwen2Custom", "super().__init__() if full else nn.Module.__init__(self)"),
            (("Qwen2Custom", "capture_aux_hidden_states", "warning"),),
            name="feature-only-setter-does-not-run-first-under-a-test"),
    Example("""
        class Optimizer:
            def __init__(self, params):
                self.param_groups = list(params)
        class Logged(Optimizer):
            def __init__(self, base):
                self.size = len(self.param_groups)
            def __getattribute__(self, name):
                print(name)
                return super().__getattribute__(name)  # no fallback: the lookup still fails
    """, (("Logged", "param_groups", "error"),), name="getattribute-without-fallback"),
    Example("""
        class Module:
            pass
        class Base(Module):
            def __init__(self):
                Module.__init__(self)
                self.flag = False
            def forward(self):
                if self.flag:
                    return 1
                return 0
        class Child(Base):
            def __init__(self):
                Module.__init__(self)  # the seed: skips Base.__init__
    """, (("Child", "flag", "error"),)),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self.flag = False
            def forward(self, x):
                if x:
                    return self.flag  # reached under a condition
        class Child(Base):
            def __init__(self):
                pass
    """, (("Child", "flag", "warning"),)),
    Example("""
        from torch import nn
        class A(nn.Module):
            def __init__(self):
                self.flag = 1
        class B(A):
            def __init__(self):
                super().__init__()
                self.size = 2
            def load_weights(self):
                return self.size
        class C(B):
            def __init__(self):
                super(B, self).__init__()  # jumps over B.__init__
    """, (("C", "size", "error"),)),
    Example("""
        from torch import nn
        class Mixin:
            def __init__(self):
                self.extra = 1  # and no super().__init__()
        class Base(nn.Module):
            def __init__(self):
                self.flag = False
            def __call__(self):
                return self.flag
        class Both(Mixin, Base):
            pass
    """, (("Both", "flag", "error"),)),
    Example("""
        class Module:
            pass
        class Base(Module):
            def __init__(self, cfg):
                super().__init__()
                self.scale = cfg.scale
            def forward(self, x):
                return x * self.scale
        class Draft(Base):
            def __init__(self, cfg):
                Module.__init__(self)
            def forward(self, x):
                return super().forward(x) + 1  # an override that calls the parent
    """, (("Draft", "scale", "error"),)),
    Example("""
        from torch import nn
        class Grandparent(nn.Module):
            def __init__(self):
                pass
        class Parent(Grandparent):
            def __init__(self, cfg):
                super().__init__()
                self.cfg = cfg
        class Child(Parent):
            def __init__(self, cfg):
                super(Parent, self).__init__()
                self.layers = build(self.cfg)  # fails while it is built
    """, (("Child", "cfg", "error"),)),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                self.mode = "x"
            def forward(self, x):
                if x:
                    self.trace()
                return self.prepare()
            def trace(self):
                return self.mode
            def prepare(self):
                return self.mode  # the read that fails first on the common path
        class Child(Base):
            def __init__(self):
                pass
    """, (("Child", "mode", "error"),)),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = nn.Identity()
            def forward(self, x):
                return self.norm(x)  # calling a submodule reads it
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "norm", "error"),)),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList()
                self.proj = nn.Linear(1, 1)
                self.lock = None
                self.cache = {}
                self.scales = []
            def forward(self, x):
                with self.lock:
                    x = self.proj.weight @ x
                h = [m(x) for m in self.layers]
                return self.cache[0], h, {s: 1 for s in self.scales}
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "cache", "error"), ("Child", "layers", "error"), ("Child", "lock", "error"),
          ("Child", "proj", "error"), ("Child", "scales", "error"))),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.vision = None
            def forward(self, x):
                try:
                    return self.vision(x)
                except Exception as error:  # re-raised: no guard
                    error.add_note("while encoding")
                    raise
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "vision", "error"),)),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                def scaled(y):
                    return y * self.scale
                return scaled(x)  # a local function runs where it is called
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "scale", "error"),)),
    Example("""
        from torch import nn
        class MoE(nn.Module):
            def __init__(self):
                super().__init__()
                self.moe_layers = []
                self.num_moe_layers = 0
            def set_eplb_state(self, state):
                return [layer(state) for layer in self.moe_layers]
        class Outer(MoE):
            def __init__(self, layers):
                nn.Module.__init__(self)
                self.num_moe_layers = layers  # passes the engine's check: EPLB calls it
    """, (("Outer", "moe_layers", "warning"),)),
    Example("""
        from torch import nn
        class Runner(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.enable_pdmux = cfg.pdmux
                self.stream_groups = []
            def forward(self):
                if self.enable_pdmux:
                    return self.stream_groups
                return None
        class Draft(Runner):
            def __init__(self, cfg):
                nn.Module.__init__(self)
                self.enable_pdmux = cfg.pdmux  # a setting: the read happens when it is on
    """, (("Draft", "stream_groups", "warning"),)),
    Example("""
        class WorkerBase:
            def __init__(self, config):
                self.model_runner = config.runner
            def execute_model(self, batch):
                return self.model_runner.execute(batch)
        class Worker(WorkerBase):
            pass
        class DraftWorker(Worker):
            def __init__(self, config):
                self.config = config  # skips WorkerBase.__init__: the executor drives it
    """, (("DraftWorker", "model_runner", "error"),)),
    Example("""
        class WorkerBase:
            def __init__(self, config):
                self.profiler = config.profiler
            def start_profile(self):
                self.profiler.start()  # /start_profile reaches it through collective_rpc
        class XPUWorker(WorkerBase):
            def __init__(self, config):
                self.config = config  # skips WorkerBase.__init__
    """, (("XPUWorker", "profiler", "warning"),), name="worker-read-only-when-profiling"),
    Example("""
        from abc import ABC
        class BaseSpecWorker(ABC):
            pass
        class EAGLEWorkerV2(BaseSpecWorker):
            def __init__(self, server_args, tp_rank):
                self.tp_rank = tp_rank
            def forward_batch_generation(self, batch):
                return batch
            def update_weights_from_tensor(self, request):
                return request.serialized_named_tensors[self.tp_rank]  # /update_weights_from_tensor
        class StandaloneWorkerV2(EAGLEWorkerV2):
            def __init__(self, server_args, tp_rank):
                self.server_args = server_args  # skips EAGLEWorkerV2.__init__: the scheduler drives it
    """, (("StandaloneWorkerV2", "tp_rank", "warning"),), name="spec-worker-read-only-on-weight-updates"),
    Example("""
        class Trainer:
            def __init__(self, model, args):
                self.model = model
                self.args = args
            def train(self):
                for _ in range(self.args.epochs):
                    pass
                self.save_model()
            def save_model(self):
                return self.model
        class PPOTrainer(Trainer):
            def __init__(self, policy, args):
                self.policy = policy  # skips Trainer.__init__: a training script calls train()
                self.args = args
    """, (("PPOTrainer", "model", "error"),), name="trainer-train-saves-the-model"),
    Example("""
        import torch
        class Lookahead(torch.optim.Optimizer):
            def __init__(self, params, k=5):
                super().__init__(params, {"lr": 1e-3})
                self.k = k
            def step(self, closure=None):
                return self.k  # a training loop runs step() on every iteration
        class SlowLookahead(Lookahead):
            def __init__(self, params):
                torch.optim.Optimizer.__init__(self, params, {"lr": 1e-4})  # skips Lookahead.__init__
    """, (("SlowLookahead", "k", "error"),), name="optimizer-step-runs-every-iteration"),
    Example("""
        from torch import nn
        from not_installed_anywhere import ExactGP
        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        class GP(Scaled, ExactGP):
            def __init__(self, x):
                ExactGP.__init__(self, x)  # a package's class runs no __init__ of this tree's Scaled
    """, (("GP", "scale", "error"),), name="unresolved-base-runs-no-init-of-the-tree"),
    Example("""
        from torch import nn
        from not_installed_anywhere import Base
        class C(nn.Linear, Base):
            def __init__(self):
                Base.__init__(self)  # nn.Linear comes before Base in any MRO: Base runs no __init__ of it
    """, (("C", "bias", "error"), ("C", "weight", "error")), name="unresolved-base-runs-no-init-listed-before-it"),
    Example("""
        from torch.optim import Optimizer
        class Lookahead(Optimizer):
            def __init__(self, optimizer):
                self.optimizer = optimizer  # skips Optimizer.__init__, sets what zero_grad reads
                self.defaults = optimizer.defaults
                self.param_groups = optimizer.param_groups
            def step(self, closure=None):
                return self.optimizer.step(closure)  # torch's zero_grad wrapped it: the wrapper reads the hooks
            def state_dict(self):
                return self.optimizer.state_dict()
            def load_state_dict(self, state_dict):
                self.optimizer.load_state_dict(state_dict)
    """, (("Lookahead", "_optimizer_step_post_hooks", "error"), ("Lookahead", "_optimizer_step_pre_hooks", "error")),
        name="optimizer-step-wrapper-reads-the-hooks"),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.fuse_inside = False
                self.is_nextn = False
            def forward(self, x):
                if x and self.fuse_inside:  # raises first today, but a fix that copies the
                    return self.is_nextn    # parent's setting makes this read the next crash
                return x
        class Child(Base):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "fuse_inside", "warning"), ("Child", "is_nextn", "warning")), name="read-under-a-test-of-what-is-missing-too"),
    Example("""
        class KVConnectorBase_V1:
            def __init__(self, vllm_config, role):
                self._kv_transfer_config = vllm_config.kv_transfer_config
            @property
            def requires_kv_delivery(self):
                return self._kv_transfer_config.delivery  # the scheduler reads it once it built the connector
        class TPUConnector(KVConnectorBase_V1):
            def __init__(self, vllm_config, role):
                super().__init__(vllm_config, role)
        class TPUConnectorHMA(TPUConnector):
            def __init__(self, vllm_config, role):
                self.role_name = role  # skips both: picked with --kv-transfer-config
    """, (("TPUConnectorHMA", "_kv_transfer_config", "error"),), name="kv-connector-property-the-scheduler-reads"),
    Example("""
        from torch import nn
        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self._scale = 2
            @property
            def scale(self):  # reading self.scale runs this
                return self._scale
            def forward(self, x):
                return x * self.scale
        class Child(Scaled):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "_scale", "error"),)),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.y = 1
            def forward(self):
                return self.y
        class Early(Base):
            def __init__(self):
                nn.Module.__init__(self)
                return
                super().__init__()  # never runs
    """, (("Early", "y", "error"),)),
    Example("""
        from torch import nn
        class Root(nn.Module):
            scale = 1  # found after Base's slot: no default
        class Base(Root):
            __slots__ = ("scale",)  # raises AttributeError until __init__ sets it
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        class Child(Base):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "scale", "error"),), name="unset-slot"),
    Example("""
        import contextlib
        from torch import nn
        with contextlib.suppress(ImportError):
            class Base(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.scale = 2
                def forward(self, x):
                    return x * self.scale
        for _ in range(1):
            class Looped(Base):
                def __init__(self):
                    nn.Module.__init__(self)
        try:
            class Tried(Base):
                def __init__(self):
                    nn.Module.__init__(self)
        except ImportError:
            pass
        if __name__ == "__main__":
            class Main(Base):
                def __init__(self):
                    nn.Module.__init__(self)
    """, (("Looped", "scale", "error"), ("Main", "scale", "error"), ("Tried", "scale", "error")),
        name="classes-under-blocks"),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        def make():
            class Local(Base):
                def __init__(self):
                    nn.Module.__init__(self)
            class Inner(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.size = 1
                def forward(self):
                    return self.size
            class InnerChild(Inner):  # parent and child in the function
                def __init__(self):
                    nn.Module.__init__(self)
            return Local(), InnerChild()
    """, (("InnerChild", "size", "error"), ("Local", "scale", "error")), name="classes-in-a-function"),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        class Child(Base):
            def __init__(self, full):
                super().__init__() if full else nn.Module.__init__(self)  # Base's only when full
    """, (("Child", "scale", "warning"),), name="conditional-expression-skip"),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        Annotated: type = Base
        Unpacked, Other = Base, nn.Module
        class ViaAnnotation(Annotated):
            def __init__(self):
                nn.Module.__init__(self)
        class ViaTuple(Unpacked):
            def __init__(self):
                nn.Module.__init__(self)
        class ViaWalrus((Walrus := Base)):
            def __init__(self):
                nn.Module.__init__(self)
        class AfterWalrus(Walrus):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("AfterWalrus", "scale", "error"), ("ViaAnnotation", "scale", "error"),
          ("ViaTuple", "scale", "error"), ("ViaWalrus", "scale", "error")), name="aliases"),
    Example("""
        from torch import nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        class Block(Block):  # derives from the Block bound above
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Block", "scale", "error"),), name="class-redefined-from-itself"),
    Example("""
        from torch import nn
        class LlamaForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.pooler = nn.Identity()
                self.logits = nn.Identity()
            def forward(self, hidden, get_embedding=False):
                if not get_embedding:
                    return self.logits(hidden)
                else:
                    return self.pooler(hidden)
        class LlamaEmbeddingModel(LlamaForCausalLM):
            def __init__(self):
                nn.Module.__init__(self)  # a target: served in embedding mode, it reads the pooler
                self.logits = nn.Identity()
    """, (("LlamaEmbeddingModel", "pooler", "warning"),), name="target-in-embedding-mode"),
    Example("""
        from torch import nn
        class LlamaForCausalLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.lm_head = nn.Linear(8, 8)
            def compute_logits(self, hidden):
                return self.lm_head(hidden)
        class LlamaScorer(LlamaForCausalLM):
            def __init__(self):
                nn.Module.__init__(self)  # a target: nothing gives it a head
    """, (("LlamaScorer", "lm_head", "error"),), name="target-head-not-shared"),
    Example(_MULTIMODAL + textwrap.dedent("""
        @MULTIMODAL_REGISTRY.register_processor(None, info=VLInfo, dummy_inputs=None)
        class VideoModel(VLModel):
            def __init__(self):
                nn.Module.__init__(self)  # it takes videos: the read fails on the first one
    """), (("VideoModel", "video_pruning_rate", "warning"),), name="modality-the-model-takes"),
    Example(_MULTIMODAL + _IMAGE_MODEL + textwrap.dedent("""
        @MULTIMODAL_REGISTRY.register_processor(None, info=ImageOnlyInfo, dummy_inputs=None)
        class PatchedImageModel(ImageModel):
            def __init__(self):
                nn.Module.__init__(self)  # its only modality: the profiling run at every start reads it
    """), (("PatchedImageModel", "vision_tower", "error"),), name="modality-the-model-only-takes"),
    Example(_MULTIMODAL + textwrap.dedent("""
        class ImagesModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.vision_tower = nn.Identity()
                self.video_tower = nn.Identity()
            def embed_multimodal(self, **inputs):
                for modality in inputs:
                    if modality == "images":  # keyed in the plural
                        return self.vision_tower(inputs[modality])
                    if modality == "videos":
                        return self.video_tower(inputs[modality])
                return None
        @MULTIMODAL_REGISTRY.register_processor(None, info=ImageOnlyInfo, dummy_inputs=None)
        class PatchedImagesModel(ImagesModel):
            def __init__(self):
                nn.Module.__init__(self)  # images only: every start reads vision_tower, never video_tower
    """), (("PatchedImagesModel", "vision_tower", "error"),), name="modality-the-model-only-takes-in-the-plural"),
    Example(_MULTIMODAL + _IMAGE_MODEL + textwrap.dedent("""
        @MULTIMODAL_REGISTRY.register_processor(None, info=VLInfo, dummy_inputs=None)
        class PatchedVLModel(ImageModel):
            def __init__(self):
                nn.Module.__init__(self)  # images and videos: the profiling run may take videos
    """), (("PatchedVLModel", "vision_tower", "warning"),), name="modality-one-of-those-the-model-takes"),
    Example("""
        from torch import nn
        class VisionModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.vision_tower = nn.Identity()
                self.model_dtype = None
            def forward(self, pixels):
                if self.vision_tower is not None and pixels is not None:
                    pixels = self.vision_tower.embed(pixels)
                return pixels.to(self.model_dtype)
        class TextOnly(VisionModel):
            def __init__(self):
                nn.Module.__init__(self)
                self.vision_tower = None  # the guarded use never runs: model_dtype is read
    """, (("TextOnly", "model_dtype", "error"),), name="none-component-behind-a-guard"),
    Example(_FIELDS + textwrap.dedent("""
        @MULTIMODAL_REGISTRY.register_processor(TimedProcessor, info=None, dummy_inputs=None)
        class OwnTimedModel(TimedModel):
            def __init__(self):
                nn.Module.__init__(self)  # its processor supplies seconds_per_frame: the read runs
    """), (("OwnTimedModel", "pruning_rate", "error"),), name="input-field-the-processor-supplies"),
    Example(_FIELDS + textwrap.dedent("""
        from elsewhere import video_fields
        class HelperProcessor(ImageProcessor):
            def _get_mm_fields_config(self, hf_inputs, kwargs):
                return video_fields(hf_inputs)  # what it names is out of sight
        @MULTIMODAL_REGISTRY.register_processor(HelperProcessor, info=None, dummy_inputs=None)
        class HelperModel(TimedModel):
            def __init__(self):
                nn.Module.__init__(self)
    """), (("HelperModel", "pruning_rate", "error"),), name="input-fields-out-of-sight"),
    Example(_CAPTURE + textwrap.dedent("""
        class FlashDecoderModel(DecoderModel):
            def __init__(self):
                nn.Module.__init__(self)  # a target: its owner's setter fills the list
                self.layers = nn.ModuleList()
                self.layers_to_capture = []
    """), (("FlashDecoderModel", "gather_aux", "warning"),), name="list-filled-by-the-owner"),
    Example(_CAPTURE + textwrap.dedent("""
        class EagleDecoderModel(DecoderModel):
            def __init__(self):
                nn.Module.__init__(self)
                self.layers = nn.ModuleList()
                self.layers_to_capture = []
            def capture_last(self):
                self.layers_to_capture.append(len(self.layers) - 1)  # filled in place
    """), (("EagleDecoderModel", "gather_aux", "warning"),), name="list-filled-in-place"),
    Example(_workers("""
        def create_worker(self, args):
            if self.is_eagle3() or self.is_standalone():
                return StandaloneWorker  # chosen for EAGLE3 too: the read may run
            return EagleWorker
    """), (("StandaloneWorker", "use_aux_hidden_state", "warning"),), name="worker-chosen-for-the-value-it-tests"),
    Example(_workers("""
        def create_worker(self, args):
            if self.is_standalone():
                return StandaloneWorker
            return EagleWorker
    """, """
        def eagle3_worker(args):
            return StandaloneWorker(args)  # built outside the factory: any algorithm
    """), (("StandaloneWorker", "use_aux_hidden_state", "warning"),), name="worker-built-outside-the-factory"),
    Example(_workers("""
        def create_worker(self, args):
            if self.is_standalone():
                return StandaloneWorker
            return EagleWorker
    """, """
        def draft_algorithm(args):
            return Algorithm.from_string(args.draft_algorithm)  # a second setting: two values
    """), (("StandaloneWorker", "use_aux_hidden_state", "warning"),), name="algorithm-read-from-two-settings"),
    Example("""
        class Cache:
            def __init__(self):
                self.layers = []
            @property
            def max_batch_size(self):
                return len(self.layers)
        class HybridCache(Cache):
            def __init__(self, size):
                self.sizes = [self.max_batch_size] * 2  # the base's property runs
    """, (("HybridCache", "layers", "error"),), name="property-the-subclass-reads"),
    Example(_refusing(listed='"DeepseekV32ForCausalLM", "LiteForCausalLM"'),
            (("LiteForCausalLM", "use_nsa", "warning"),), name="setting-the-architecture-passes"),
    Example(_refusing(build="""if config.use_mla:
                    self.self_attn = Attention(config=config)"""),
            (("LiteForCausalLM", "use_nsa", "warning"),), name="sub-module-built-under-a-test"),
    Example(_refusing_inner(test="uses_prefill_cp(batch, batch.cp)"),
            (("InnerModel", "cp_size", "warning"),), name="call-given-the-setting-as-an-argument"),
    Example(_refusing_inner(answer="batch.meta is not None or enabled"),
            (("InnerModel", "cp_size", "warning"),), name="call-true-without-the-setting"),
    Example(_refusing_inner(named="\n        BUILDERS = {'inner': InnerModel}"),
            (("InnerModel", "cp_size", "warning"),), name="inner-model-built-out-of-sight"),
    Example(_refusing_inner(test="uses_cp_flag(batch, self.chunked)"),
            (("InnerModel", "cp_size", "warning"),), name="call-given-a-flag-of-something-else"),
)
