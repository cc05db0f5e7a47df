"""``audit --fix``'s examples (fixit style): a module before, the same module
after ``--fix`` (``--unsafe-fixes`` where ``unsafe``), and what each finding's
fix is. ``tests/audit/test_fix.py`` is generated from them."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class FixExample:
    """``before`` and ``after`` dedented; ``fixes``: attribute -> applicability
    (safe, unsafe, none) of its finding's fix."""

    name: str
    before: str
    after: str
    fixes: tuple[tuple[str, str], ...]
    unsafe: bool = False  # ``after`` is with --unsafe-fixes

    def __post_init__(self) -> None:
        object.__setattr__(self, "before", textwrap.dedent(self.before).lstrip("\n"))
        object.__setattr__(self, "after", textwrap.dedent(self.after).lstrip("\n"))


#: A subclass whose ``def __init__`` a later ``__init__ = ...`` makes dead code:
#: no fix goes into it, so the module stays as it is.
_DEAD_DEF = """
        from torch import nn

        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1

            def forward(self):
                return self.w

        class Child(Base):
            def __init__(self):
                nn.Module.__init__(self)

            __init__ = nn.Module.__init__  # the def above is dead code: nothing to insert into
"""

EXAMPLES = (
    FixExample(
        "copy-after-parent-call",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, vllm_config, prefix=""):
                super().__init__()
                self.model_config = vllm_config.model_config

            def forward(self, x):
                return self.model_config.dtype

        class Child(Base):
            def __init__(self, vllm_config, prefix=""):
                nn.Module.__init__(self)  # keeps its own layers
                self.prefix = prefix
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, vllm_config, prefix=""):
                super().__init__()
                self.model_config = vllm_config.model_config

            def forward(self, x):
                return self.model_config.dtype

        class Child(Base):
            def __init__(self, vllm_config, prefix=""):
                nn.Module.__init__(self)  # keeps its own layers
                self.model_config = vllm_config.model_config
                self.prefix = prefix
        """,
        (("model_config", "safe"),),
    ),
    FixExample(
        # The parent call under a test: the copy goes after the whole statement.
        "after-a-parent-call-under-if",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.dtype = config.dtype

            def forward(self, x):
                return x.to(self.dtype)

        class Child(Base):
            def __init__(self, config):
                if config.legacy:
                    nn.Module.__init__(self)
                else:
                    super(Base, self).__init__()
                self.layers = []
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.dtype = config.dtype

            def forward(self, x):
                return x.to(self.dtype)

        class Child(Base):
            def __init__(self, config):
                if config.legacy:
                    nn.Module.__init__(self)
                else:
                    super(Base, self).__init__()
                self.dtype = config.dtype
                self.layers = []
        """,
        (("dtype", "safe"),),
    ),
    FixExample(
        # vLLM 0.33.0's fix of Exaone4_5_ForConditionalGeneration: the local the
        # value needs is computed by the subclass already, the same way.
        "copy-after-the-local-it-needs",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, *, vllm_config, prefix=""):
                super().__init__()
                multimodal_config = vllm_config.model_config.multimodal_config
                self.video_pruning_rate = multimodal_config.video_pruning_rate

            def forward(self, x):
                return self.video_pruning_rate

        class Child(Base):
            def __init__(self, *, vllm_config, prefix=""):
                nn.Module.__init__(self)
                multimodal_config = vllm_config.model_config.multimodal_config

                self.visual = multimodal_config
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, *, vllm_config, prefix=""):
                super().__init__()
                multimodal_config = vllm_config.model_config.multimodal_config
                self.video_pruning_rate = multimodal_config.video_pruning_rate

            def forward(self, x):
                return self.video_pruning_rate

        class Child(Base):
            def __init__(self, *, vllm_config, prefix=""):
                nn.Module.__init__(self)
                multimodal_config = vllm_config.model_config.multimodal_config
                self.video_pruning_rate = multimodal_config.video_pruning_rate

                self.visual = multimodal_config
        """,
        (("video_pruning_rate", "safe"),),
    ),
    FixExample(
        "copy-with-its-backward-slice",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                text = config.text_config
                size = text.hidden_size
                self.hidden_size = size

            def forward(self, x):
                return self.hidden_size

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                text = config.text_config
                size = text.hidden_size
                self.hidden_size = size

            def forward(self, x):
                return self.hidden_size

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
                text = config.text_config
                size = text.hidden_size
                self.hidden_size = size
        """,
        (("hidden_size", "safe"),),
    ),
    FixExample(
        "copy-the-if-that-refines-it",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.scale = 1.0
                if config.use_scale:
                    self.scale = config.scale

            def forward(self, x):
                return x * self.scale

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.scale = 1.0
                if config.use_scale:
                    self.scale = config.scale

            def forward(self, x):
                return x * self.scale

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
                self.scale = 1.0
                if config.use_scale:
                    self.scale = config.scale
        """,
        (("scale", "safe"),),
    ),
    FixExample(
        # vLLM PR #52172: the sequence-parallel flags off, in the subclass's __init__.
        "sequence-parallel-flags-off",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, vllm_config):
                super().__init__()
                self.use_sequence_parallel = vllm_config.parallel_config.use_sequence_parallel_moe

            def forward(self, x):
                return x if not self.use_sequence_parallel else None

        class Child(Base):
            def __init__(self, config):
                \"\"\"Own layers.\"\"\"
                nn.Module.__init__(self)
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, vllm_config):
                super().__init__()
                self.use_sequence_parallel = vllm_config.parallel_config.use_sequence_parallel_moe

            def forward(self, x):
                return x if not self.use_sequence_parallel else None

        class Child(Base):
            def __init__(self, config):
                \"\"\"Own layers.\"\"\"
                nn.Module.__init__(self)
                self.use_sequence_parallel = False
        """,
        (("use_sequence_parallel", "safe"),),
    ),
    FixExample(
        # The value needs a name the subclass lacks; the parent sets a literal
        # under that test and nowhere else: a class-level default.
        "class-level-default-for-a-literal",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, quant_config):
                super().__init__()
                if quant_config is None:
                    self.enable_pdmux = False

            def forward(self, x):
                return self.enable_pdmux

        class Child(Base):
            \"\"\"A model of its own.\"\"\"

            def __init__(self, config):
                nn.Module.__init__(self)
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, quant_config):
                super().__init__()
                if quant_config is None:
                    self.enable_pdmux = False

            def forward(self, x):
                return self.enable_pdmux

        class Child(Base):
            \"\"\"A model of its own.\"\"\"
            enable_pdmux = False

            def __init__(self, config):
                nn.Module.__init__(self)
        """,
        (("enable_pdmux", "safe"),),
    ),
    FixExample(
        "a-module-level-name-the-module-has",
        """
        import torch
        from torch import nn

        from .helpers import default_dtype

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.dtype = config.dtype or default_dtype

            def forward(self, x):
                return x.to(self.dtype)

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
                self.weight = torch.nn.Parameter(torch.empty(1))
        """,
        """
        import torch
        from torch import nn

        from .helpers import default_dtype

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.dtype = config.dtype or default_dtype

            def forward(self, x):
                return x.to(self.dtype)

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
                self.dtype = config.dtype or default_dtype
                self.weight = torch.nn.Parameter(torch.empty(1))
        """,
        (("dtype", "safe"),),
    ),
    FixExample(
        # The helper runs a method on the instance (torch's LRScheduler._initial_step
        # runs self.step()): more than the assignment, so unsafe.
        "a-helper-that-runs-a-method-is-unsafe",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self._reset()

            def _reset(self):
                self.count = 0
                self.step()

            def step(self):
                self.count += 1

            def forward(self, x):
                return self.count

        class Child(Base):
            def __init__(self):
                nn.Module.__init__(self)
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self._reset()

            def _reset(self):
                self.count = 0
                self.step()

            def step(self):
                self.count += 1

            def forward(self, x):
                return self.count

        class Child(Base):
            def __init__(self):
                nn.Module.__init__(self)
                self._reset()
        """,
        (("count", "unsafe"),),
        unsafe=True,
    ),
    FixExample(
        # The parent sets it in a helper; the helper also sets what the
        # subclass sets its own way: unsafe (Qwen3-VL's _init_video_pruning).
        "call-the-parents-helper",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, vllm_config):
                super().__init__()
                multimodal_config = vllm_config.multimodal_config
                self._init_video_pruning(multimodal_config)

            def _init_video_pruning(self, multimodal_config):
                self.video_pruning_method = multimodal_config.method
                self.video_pruning_rate = multimodal_config.rate

            def forward(self, x):
                return self.video_pruning_method, self.video_pruning_rate

        class Child(Base):
            def __init__(self, vllm_config):
                nn.Module.__init__(self)
                multimodal_config = vllm_config.multimodal_config
                self.video_pruning_rate = 0.5
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, vllm_config):
                super().__init__()
                multimodal_config = vllm_config.multimodal_config
                self._init_video_pruning(multimodal_config)

            def _init_video_pruning(self, multimodal_config):
                self.video_pruning_method = multimodal_config.method
                self.video_pruning_rate = multimodal_config.rate

            def forward(self, x):
                return self.video_pruning_method, self.video_pruning_rate

        class Child(Base):
            def __init__(self, vllm_config):
                nn.Module.__init__(self)
                multimodal_config = vllm_config.multimodal_config
                self._init_video_pruning(multimodal_config)
                self.video_pruning_rate = 0.5
        """,
        (("video_pruning_method", "unsafe"),),
        unsafe=True,
    ),
    FixExample(
        "call-the-parents-helper-safely",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, vllm_config):
                super().__init__()
                self._init_pruning(vllm_config.multimodal_config)

            def _init_pruning(self, multimodal_config):
                self.video_pruning_method = multimodal_config.method

            def forward(self, x):
                return self.video_pruning_method

        class Child(Base):
            def __init__(self, vllm_config):
                nn.Module.__init__(self)
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, vllm_config):
                super().__init__()
                self._init_pruning(vllm_config.multimodal_config)

            def _init_pruning(self, multimodal_config):
                self.video_pruning_method = multimodal_config.method

            def forward(self, x):
                return self.video_pruning_method

        class Child(Base):
            def __init__(self, vllm_config):
                nn.Module.__init__(self)
                self._init_pruning(vllm_config.multimodal_config)
        """,
        (("video_pruning_method", "safe"),),
    ),
    FixExample(
        # A submodule is built again: unsafe (new weights), applied only when asked.
        "a-submodule-is-unsafe",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.norm = nn.LayerNorm(config.hidden_size)

            def forward(self, x):
                return self.norm(x)

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.norm = nn.LayerNorm(config.hidden_size)

            def forward(self, x):
                return self.norm(x)

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
                self.norm = nn.LayerNorm(config.hidden_size)
        """,
        (("norm", "unsafe"),),
        unsafe=True,
    ),
    FixExample(
        # sglang PR #26041: the parent's literal default, without the block that
        # builds a module and changes it (unsafe: the subclass may need it changed).
        "the-first-literal-without-the-block-that-builds",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                self._shared_expert_tp1 = False
                if config.n_shared_experts:
                    self.shared_experts = nn.Linear(config.hidden_size, config.hidden_size)
                    self._shared_expert_tp1 = config.tp1

            def forward(self, x):
                return self._shared_expert_tp1

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
                self.shared_experts = None
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                self._shared_expert_tp1 = False
                if config.n_shared_experts:
                    self.shared_experts = nn.Linear(config.hidden_size, config.hidden_size)
                    self._shared_expert_tp1 = config.tp1

            def forward(self, x):
                return self._shared_expert_tp1

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
                self._shared_expert_tp1 = False
                self.shared_experts = None
        """,
        (("_shared_expert_tp1", "unsafe"),),
        unsafe=True,
    ),
    FixExample(
        # The parent builds it in a block with what the subclass builds its own
        # way (aphrodite's OpenCUA: the vision tower and its input norm).
        "no-fix-inside-a-block-the-subclass-replaces",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                with self._mark_tower_model(config):
                    self.visual = nn.Linear(config.size, config.size)
                    self.input_norm = nn.LayerNorm(config.size)

            def forward(self, x):
                return self.visual(self.input_norm(x))

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
                self.visual = nn.Identity()
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config):
                super().__init__()
                with self._mark_tower_model(config):
                    self.visual = nn.Linear(config.size, config.size)
                    self.input_norm = nn.LayerNorm(config.size)

            def forward(self, x):
                return self.visual(self.input_norm(x))

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
                self.visual = nn.Identity()
        """,
        (("input_norm", "none"),),
        unsafe=True,
    ),
    FixExample(
        "no-fix-without-the-name",
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config, quant_config):
                super().__init__()
                self.quant_method = quant_config.method

            def forward(self, x):
                return self.quant_method

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
        """,
        """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, config, quant_config):
                super().__init__()
                self.quant_method = quant_config.method

            def forward(self, x):
                return self.quant_method

        class Child(Base):
            def __init__(self, config):
                nn.Module.__init__(self)
        """,
        (("quant_method", "none"),),
        unsafe=True,
    ),
    FixExample("init-bound-again-below-its-def", _DEAD_DEF, _DEAD_DEF, (("w", "none"),)),
)
