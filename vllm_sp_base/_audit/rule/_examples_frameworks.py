"""SPB001's examples of what the framework descriptions (``frameworks/``)
say (fixit style). torch: a module whose ``Module.__init__`` has not run yet
refuses a submodule, a parameter or a buffer (``cannot assign module before
Module.__init__() call``), each executed in
``tests/audit/test_torch_refusals.py`` as well as audited. transformers: a
``Pipeline`` is called, and saved when a user saves it."""

from __future__ import annotations

from vllm_sp_base._audit.rule._examples import SCALED, Example

#: A torch module whose ``__init__`` sets what its ``forward`` reads (``torch`` imported too).
_SCALED = """
        import torch""" + SCALED

#: A transformers-style pipeline base: ``__call__`` and ``save_pretrained``
#: read what its ``__init__`` sets (transformers#28162's shape, 4.36.2).
_PIPELINE = """
        class Pipeline:
            def __init__(self, model, tokenizer=None, image_processor=None):
                self.model = model
                self.tokenizer = tokenizer
                self.image_processor = image_processor
            def __call__(self, inputs):
                return self.model(self.tokenizer(inputs))
            def save_pretrained(self, save_directory):
                if self.image_processor is not None:
                    self.image_processor.save_pretrained(save_directory)
"""

#: A class whose ``__init__`` sets what ``run`` reads, and a subclass that
#: skips it and calls fastcore's ``store_attr`` (``CALL``) in its place.
_STORE_ATTR = """
        from fastcore.basics import store_attr
        class Lookahead:
            def __init__(self, opt, k):
                self.opt = opt
                self.k = k
            def run(self):
                return self.opt, self.k
        class Slow(Lookahead):
            def __init__(self, opt, k=6):
                CALL
        def main(opt):
            return Slow(opt).run()
"""

#: A torch dataset whose ``__init__`` sets what its ``__getitem__`` reads.
_GRAPHS = """
        from torch.utils.data import Dataset
        class Graphs(Dataset):
            def __init__(self, root, transform=None):
                self.root = root
                self.transform = transform
            def __getitem__(self, index):
                return self.transform(index) if self.transform else index
            def __len__(self):
                return 1
"""


VALID = (
    Example(_SCALED + """
        class Child(Parent):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(1, 1)  # after Module.__init__: a submodule
                self.register_buffer("mask", torch.ones(1))
                self.bias = nn.Parameter(torch.zeros(1))
    """, name="torch-state-assigned-after-module-init"),
    Example(_SCALED + """
        class Child(Parent):
            def __init__(self):
                self.size = int("2")  # a plain value: torch takes it before Module.__init__
                nn.Module.__init__(self)
                self.scale = 3
    """, name="torch-plain-value-assigned-before-module-init"),
    Example(_PIPELINE + """
        class SpeechPipeline(Pipeline):
            def __init__(self, model, tokenizer=None):
                super().__init__(model, tokenizer)
    """, name="transformers-pipeline-that-runs-the-base-init"),
    Example("""
        import torch
        from torch.optim import Optimizer
        class SGD(Optimizer):
            # Names a fused optimizer; never stepped (torchrec's placeholders).
            def __init__(self, params, **kwargs):
                self._params = params
                self._kwargs = kwargs
            @torch.no_grad()
            def step(self, closure=None):
                raise NotImplementedError
    """, name="torch-optimizer-placeholder-never-stepped"),
    Example("""
        from torch.optim import Optimizer
        class GradSurgery(Optimizer):
            def __init__(self, optimizer):
                self.optimizer = optimizer  # skips Optimizer.__init__; serves all torch calls itself
            def zero_grad(self, set_to_none=True):
                return self.optimizer.zero_grad(set_to_none)
            def step(self, closure=None):
                return self.optimizer.step(closure)
            def state_dict(self):
                return self.optimizer.state_dict()
            def load_state_dict(self, state_dict):
                self.optimizer.load_state_dict(state_dict)
    """, name="torch-optimizer-wrapper-that-saves-its-inner-state"),
    Example("""
        from torch.optim.lr_scheduler import LRScheduler
        class Constant(LRScheduler):
            def __init__(self, optimizer, lr):
                self.optimizer = optimizer  # skips LRScheduler.__init__; steps itself
                self.lr = lr
            def step(self, epoch=None):
                for group in self.optimizer.param_groups:
                    group["lr"] = self.lr
    """, name="torch-lr-scheduler-that-steps-itself"),
    Example(_GRAPHS + """
        class Cached(Graphs):
            def __init__(self, items):
                self.items = items  # skips Graphs.__init__; indexes its own items
            def __getitem__(self, index):
                return self.items[index]
            def __len__(self):
                return len(self.items)
    """, name="torch-dataset-that-indexes-itself"),
    Example("""
        class BaseEstimator:  # scikit-learn's: no __init__ of its own
            pass
        class Scaler(BaseEstimator):
            def __init__(self, with_mean=True):
                self.with_mean = with_mean  # sklearn's convention: skips nothing
            def fit(self, X):
                return self.with_mean
    """, name="sklearn-estimator-that-sets-its-own-parameters"),
    Example(_STORE_ATTR.replace("CALL", "store_attr()  # fastcore: sets every argument of the caller on self"),
            name="fastcore-store-attr-sets-the-arguments"),
)

INVALID = (
    Example("""
        from torch.optim import Optimizer
        class Fused(Optimizer):
            def __init__(self, params, fused=True):
                self.fused = fused
            def step(self, closure=None):
                if self.fused:
                    return None  # stepped by the fused kernel: no placeholder
                raise NotImplementedError
            def state_dict(self):
                return {}
            def load_state_dict(self, state_dict):
                pass
    """, (("Fused", "_optimizer_step_post_hooks", "error"), ("Fused", "_optimizer_step_pre_hooks", "error"),
          ("Fused", "defaults", "error"), ("Fused", "param_groups", "error")),
        name="torch-optimizer-that-raises-only-past-an-early-return"),
    Example("""
        from torch.optim import Optimizer
        class GradSurgery(Optimizer):  # pytorch_optimizer's PCGrad, OrthoGrad before 3.4.0
            def __init__(self, optimizer):
                self.optimizer = optimizer  # skips Optimizer.__init__
            def zero_grad(self, set_to_none=True):
                return self.optimizer.zero_grad(set_to_none)
            def step(self, closure=None):
                return self.optimizer.step(closure)
    """, (("GradSurgery", "_optimizer_load_state_dict_post_hooks", "warning"),
          ("GradSurgery", "_optimizer_load_state_dict_pre_hooks", "warning"),
          ("GradSurgery", "_optimizer_state_dict_post_hooks", "warning"),
          ("GradSurgery", "_optimizer_state_dict_pre_hooks", "warning"),
          ("GradSurgery", "defaults", "warning"), ("GradSurgery", "param_groups", "warning"),
          ("GradSurgery", "state", "warning")),
        name="torch-optimizer-checkpointed-without-its-state"),
    Example("""
        from torch.optim.lr_scheduler import LRScheduler
        class TriStageLR(LRScheduler):  # funasr 1.4.16's
            def __init__(self, optimizer, warmup_steps):
                self.optimizer = optimizer
                self.warmup_steps = warmup_steps
            def init_schedule(self, max_update):  # what runs LRScheduler.__init__: nothing calls it
                super().__init__(self.optimizer)
            def get_lr(self):
                return [group["lr"] for group in self.optimizer.param_groups]
    """, (("TriStageLR", "_step_count", "error"), ("TriStageLR", "last_epoch", "warning")),
        name="torch-lr-scheduler-stepped-without-its-init"),
    Example(_GRAPHS + """
        class LinkGraphs(Graphs):  # cogdl 0.6's OGBLDataset
            def __init__(self, root, name):
                self.name = name  # skips Graphs.__init__: no transform
    """, (("LinkGraphs", "transform", "error"),), name="torch-dataset-indexed-without-its-init"),
    Example("""
        class BaseEstimator:
            pass
        class Pipeline(BaseEstimator):
            def __init__(self, steps, memory=None):
                self.steps = steps
                self.memory = memory
            def fit(self, X, y=None):
                return self.memory, self.steps
        class Rocket(Pipeline):  # tsai 1.0.1's MiniRocketClassifier: Pipeline.__init__ never runs
            def __init__(self, steps):
                self.steps = steps
    """, (("Rocket", "memory", "error"),), name="sklearn-pipeline-fit-without-its-init"),
    Example(_STORE_ATTR.replace("CALL", 'store_attr("opt")  # only the named argument'),
            (("Slow", "k", "warning"),), name="fastcore-store-attr-of-some-arguments"),
    Example("""
        from fastcore.basics import store_attr
        class Lookahead:
            def __init__(self, opt, k):
                store_attr()  # sets opt and k: the pre-scan takes it for a set
            def run(self):
                return self.opt, self.k
        class Slow(Lookahead):
            def __init__(self, opt):
                self.opt = opt
        def main(opt):
            return Slow(opt).run()
    """, (("Slow", "k", "warning"),), name="fastcore-store-attr-in-the-skipped-init"),
    Example(_PIPELINE + """
        class SpeechPipeline(Pipeline):
            def __init__(self, model, tokenizer=None):
                self.model = model  # the base's __init__ rewritten inline, without image_processor
                self.tokenizer = tokenizer
    """, (("SpeechPipeline", "image_processor", "warning"),), name="transformers-pipeline-saved-without-its-state"),
    Example(_SCALED + """
        class Child(Parent):
            def __init__(self):
                self.proj = nn.Linear(1, 1)  # torch refuses: Module.__init__ never ran
    """, (("Child", "_modules", "error"), ("Child", "scale", "warning")),
        name="torch-submodule-assigned-before-module-init"),
    Example(_SCALED + """
        class Child(Parent):
            def __init__(self):
                self.register_buffer("mask", torch.ones(1))  # torch refuses: Module.__init__ never ran
    """, (("Child", "_buffers", "error"), ("Child", "_non_persistent_buffers_set", "warning"),
          ("Child", "scale", "warning")), name="torch-buffer-registered-before-module-init"),
    Example(_SCALED + """
        class Child(Parent):
            def __init__(self, bias):
                if bias:
                    self.bias = nn.Parameter(torch.zeros(1))  # torch refuses where it runs
    """, (("Child", "_parameters", "warning"), ("Child", "scale", "error")),
        name="torch-parameter-assigned-before-module-init"),
)
