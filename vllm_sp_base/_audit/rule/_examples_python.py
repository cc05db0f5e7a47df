"""SPB001's examples of Python's own semantics (fixit style): what Python
itself decides about a read, whatever the framework: dispatch through
``__call__``, name mangling, code that never runs or always runs, guards,
and classes held in class attributes. Each is checked by executing it in
``tests/audit/test_python_semantics.py`` as well as by the rule."""

from __future__ import annotations

from vllm_sp_base._audit.rule._examples import SCALED, Example

#: A parent ``__init__`` that runs ``set_pending`` only when given ``pending``
#: (its default None), and a subclass whose override reads what it has not
#: set yet; ``CALL`` is how the subclass runs the parent.
_PENDING = """
        from torch import nn
        class Base(nn.Module):
            def __init__(self, pending=None):
                super().__init__()
                if pending is not None:
                    self.set_pending(pending)
            def set_pending(self, pending):
                self.pending = pending
            def forward(self, x):
                return x
        class Scaled(Base):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        class Mixin:
            def set_pending(self, pending):
                self.bounds = pending * self.scale
        class Noisy(Mixin, Scaled):
            def __init__(self):
                CALL
                self.scale = 3
"""

#: A plain class whose ``save_pretrained`` reads what its ``__init__`` sets,
#: and a subclass that rewrites that ``__init__`` inline without it.
_PIPELINE = """
        class BasePipeline:  # no framework's: transformers' is Pipeline
            def __init__(self, model):
                self.model = model
                self.config = {"name": "base"}
            def save_pretrained(self, path):
                return path, self.config
            def run(self, x):
                return self.model(x)
            def __enter__(self):
                return self
            def __exit__(self, *exc):
                return False
        class MyPipeline(BasePipeline):
            def __init__(self, model):
                self.model = model  # the parent's __init__ inline, without config
"""

#: A torch module whose ``__init__`` sets what its ``forward`` reads.
_ENV = """
        from torch import nn
        class Env(nn.Module):
            def __init__(self, base):
                super().__init__()
                self.base = base
            def forward(self, x):
                return x * self.base
"""

#: A plain class whose ``__init__`` sets what its ``prepare`` reads (Lightning's
#: ``DataHooks``, whose ``prepare_data_per_node`` its ``Trainer`` reads).
_DATA_HOOKS = """
        from dataclasses import dataclass
        class DataHooks:
            def __init__(self):
                self.prepare_data_per_node = True
            def prepare(self):
                return self.prepare_data_per_node
"""


#: A plain pipeline that prepares itself on its first call, unless its flag says it is.
_PREPARE = "self.model = self.model.to(self.device)"
_PREPARED = f"""
        class Pipeline:
            def __init__(self, model):
                self.model = model
                self._prepared = False
                self.device = "cpu"
            def prepare(self):
                {_PREPARE}
            def __call__(self, x):
                if not self._prepared:
                    self.prepare()
                return self.model(x)
"""

#: A torch module whose ``__init__`` sets the ``dim`` its ``forward`` reads.
_DIM_PARENT = """
        from torch import nn
        class Parent(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.dim = dim
            def forward(self, x):
                return x * self.dim
"""

#: A torch module whose ``__init__`` sets what its own ``forward`` does not read.
_UNREAD = SCALED.replace("return x * self.scale", "return x")

#: A torch module whose subclass skips its ``__init__`` and runs ``setup``.
_SETUP = _UNREAD + """
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
                self.setup()
"""

VALID = (
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        class Wrapper(Base):
            def __init__(self):
                nn.Module.__init__(self)
            def __call__(self, x):  # module(x) never reaches forward
                return x
    """, name="call-overridden-without-forward"),
    Example(_DIM_PARENT + """
        class Mid(Parent):
            base_class = Parent
            def __init__(self, dim):
                self.base_class.__init__(self, dim)  # the class it holds: Parent
        class Leaf(Mid):
            base_class = Parent
    """, name="parent-init-through-a-class-attribute"),
    Example(_DIM_PARENT + """
        class Other(Parent):
            pass
        CHOICES = {"parent": Parent, "other": Other}
        class Mid(Other):
            def __init__(self, dim, kind="parent"):
                self.generation_class = CHOICES[kind]
                self.generation_class.__init__(self, dim)  # a class the instance was given: unknown here
    """, name="parent-init-through-an-instance-attribute"),
    Example("""
        from abc import ABC, abstractmethod
        class Encoder(ABC):
            def __init__(self):
                self.fps = 2
            @abstractmethod
            def encode(self, inputs):
                ...
            def encode_video(self, inputs):
                return [self.fps]
        class Unfinished(Encoder):
            def __init__(self):
                self.name = "x"  # never built: encode is still abstract, so Unfinished() raises TypeError
    """, name="abstract-method-no-class-implements"),
    Example("""
        from abc import ABC, abstractmethod
        class Runner(ABC):
            @abstractmethod
            def execute(self, batch):
                ...
        class DecodeRunner(Runner):
            def __init__(self):
                self.buffers = []
            def execute(self, batch):
                return self.buffers + batch
            def replay(self, batch):
                return batch
        class StepRunner(DecodeRunner):
            def __init__(self, step):
                self.step = step  # skips DecodeRunner.__init__, and is only ever replayed:
        def make_runners():
            return [StepRunner(step).replay([step]) for step in range(3)]  # the tree builds it: its calls say its uses
    """, name="abstract-method-of-a-class-the-tree-builds-and-never-calls"),
    Example("""
        from abc import ABC, abstractmethod
        class Config(ABC):
            @abstractmethod
            def get_name(self):
                ...
        class Fp8Config(Config):
            def __init__(self, mx=False):
                self.use_mx = mx
            def get_name(self):
                return "mxfp8" if self.use_mx else "fp8"
        class HybridConfig(Fp8Config):
            def __init__(self, fp8_config):
                self.__dict__.update(fp8_config.__dict__)  # every attribute the built Fp8Config holds
        CONFIGS = {"hybrid": HybridConfig}
    """, name="abstract-method-after-copying-another-instances-dict"),
    Example("""
        from abc import ABC, abstractmethod
        class Window(ABC):
            @abstractmethod
            def __iter__(self):
                ...
        class RangeWindow(Window):
            def __init__(self, n):
                self.ranges = list(range(n))
            def __iter__(self):
                return iter(self.ranges)
        class Diagonal(RangeWindow):
            def __init__(self, width):
                self.width = width  # RangeWindow.__init__ runs later, in init_size
            def init_size(self, n):
                super().__init__(n)
        def align(window, n):
            window.init_size(n)  # what users of a window do first (a method nothing calls runs nothing)
            return list(window)
    """, name="parent-init-run-by-a-later-setup-method"),
    Example("""
        from torch import nn
        class Imperceptible(nn.Module):
            def __init__(self, refine_steps=4):
                super().__init__()
                self.refine_steps = refine_steps
                self.masking = 0.5
            def forward(self, x):
                for _ in range(1, self.refine_steps + 1):  # runs only where refine_steps >= 1
                    x = x * self.masking
                return x
        class CarliniWagner(Imperceptible):
            def __init__(self):
                nn.Module.__init__(self)
                self.refine_steps = 0  # the refining stage never runs
    """, name="range-loop-over-a-zero-the-class-sets"),
    Example("""
        from typing import TYPE_CHECKING
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def _typed(self, x):
                return x * self.scale
            def forward(self, x):
                return x
            if TYPE_CHECKING:
                forward = _typed  # for the type checker only: at run time forward is the def above
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, name="class-body-arm-only-a-type-checker-takes"),
    Example("""
        from abc import ABC, abstractmethod
        from torch import nn
        class Sampler(nn.Module, ABC):
            def __init__(self):
                super().__init__()
                self.seed = 0
            def forward(self, x):
                return x + self.seed
            @abstractmethod
            def base_samples(self, x):
                ...
        class PairwiseSampler(Sampler):  # still abstract: PairwiseSampler() raises TypeError
            def __init__(self, n):
                nn.Module.__init__(self)
                self.n = n
    """, name="abstract-class-is-never-built"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.cache = {}
            def forward(self, x):
                if getattr(self, "cache", None) is not None:  # guards the read below
                    return self.cache.get(x, x)
                return x
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, name="getattr-with-a-default-guards"),
    Example("""
        import contextlib
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1
            def forward(self, x):
                with contextlib.suppress(AttributeError):
                    return x * self.w
                return x
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, name="read-under-suppress-attribute-error"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1
            def forward(self, x):
                return x * self.w
        class Child(Parent):
            def __init__(self):
                super(type(self), self).__init__()
    """, name="super-of-type-self"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.__scale = 2
            def forward(self, x):
                return x * self.__scale
        class Child(Parent):
            def __init__(self):
                super().__init__()
                self.__scale = 3  # Child's own: _Child__scale
    """, name="mangled-name-set-by-the-parent"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1
            def forward(self, x):
                if False:
                    return x * self.missing  # never runs
                return x * self.w
        class Child(Parent):
            def __init__(self):
                super().__init__()
                if True:
                    self.extra = 1
    """, name="constant-tests"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1
            def forward(self, x):
                return x * self.w
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
        Child.w = 5  # a class attribute, bound after the body
    """, name="class-attribute-bound-after-the-body"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self, use_fast=False):
                super().__init__()
                self.use_fast = use_fast
                self.rate = 0.1
            def forward(self, x):
                if getattr(self, "use_fast", False):  # False where nothing sets use_fast
                    return x * self.rate
                return x
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, name="getattr-default-decides-a-test"),
    Example("""
        from torch import nn
        def setup(module):
            module.w = 1
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1
            def forward(self, x):
                return x * self.w
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
                setup(self)  # a module-level function sets it on the instance
    """, name="module-function-sets-the-attribute"),
    Example(SCALED + """
        def with_scale(cls):
            cls.scale = 3
            return cls
        @with_scale  # a class attribute, bound by the decorator
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, name="a-class-decorator-sets-the-attribute"),
    Example(SCALED + """
        class Scaling(type):
            def __init__(cls, name, bases, namespace):
                super().__init__(name, bases, namespace)
                setattr(cls, "scale", 3)  # a class attribute of each class it builds
        class Child(Parent, metaclass=Scaling):
            def __init__(self):
                nn.Module.__init__(self)
        class Grandchild(Child):
            pass
    """, name="a-metaclass-init-sets-the-attribute"),
    Example("""
        from torch import nn
        class PrePostInitMeta(type):  # fastcore's: subclasses need not call super().__init__
            def __call__(cls, *args, **kwargs):
                res = cls.__new__(cls)
                if hasattr(res, "__pre_init__"):
                    res.__pre_init__(*args, **kwargs)
                res.__init__(*args, **kwargs)
                return res
        class Module(nn.Module, metaclass=PrePostInitMeta):
            def __pre_init__(self, *args, **kwargs):
                super().__init__()
            def __init__(self):
                pass
            def forward(self, x):
                return x
        class Scaled(Module):
            def __init__(self):
                self.proj = nn.Linear(1, 1)  # Module.__init__ ran in __pre_init__
            def forward(self, x):
                return self.proj(x)
    """, name="a-metaclass-call-builds-the-instance-its-own-way"),
    Example(SCALED + """
        import sys
        class Middle(Parent):
            def __init__(self):
                if sys.version_info >= (3, 11):  # both arms run Parent.__init__
                    super().__init__()
                else:
                    Parent.__init__(self)
        class Leaf(Middle):
            def __init__(self):
                if sys.version_info >= (3, 11):  # both arms run Middle.__init__
                    super().__init__()
                else:
                    Middle.__init__(self)
        class Top(Leaf):
            pass
    """, name="both-arms-of-one-test-run-the-parent-at-every-level"),
    Example(SCALED + """
        class PrePost(type):  # builds the instance its own way: __pre_init__ runs the parent's
            def __call__(cls, *args, **kwargs):
                res = cls.__new__(cls)
                res.__pre_init__()
                res.__init__(*args, **kwargs)
                return res
        class Counting(PrePost):
            def __call__(cls, *args, **kwargs):
                return super().__call__(*args, **kwargs)  # PrePost's, not type's
        class Child(Parent, metaclass=Counting):
            def __pre_init__(self):
                Parent.__init__(self)
            def __init__(self):
                self.shift = 1
    """, name="a-metaclass-call-that-hands-back-to-one-of-its-own"),
    Example(_DATA_HOOKS + """
        @dataclass
        class Alpaca(DataHooks):
            seed: int = 42
            def __post_init__(self):  # the written __init__ runs it: the parent's runs there
                super().__init__()
        @dataclass
        class Point:
            x: int = 0
            def norm(self):
                return self.x
        @dataclass
        class Point3(Point):  # its written __init__ sets Point's fields too
            z: int = 0
            def show(self):
                return self.norm() + self.z
        def main():
            return Alpaca().prepare(), Point3().show()
    """, name="a-dataclass-sets-its-bases-fields-and-runs-post-init"),
    Example("""
        import functools
        from torch import nn
        class PrePostInitMeta(type):
            def __new__(cls, name, bases, dct):
                x = super().__new__(cls, name, bases, dct)
                old_init = x.__init__
                @functools.wraps(old_init)
                def _init(self, *args, **kwargs):
                    self.__pre_init__()
                    old_init(self, *args, **kwargs)
                x.__init__ = _init  # every class it makes runs __pre_init__ first
                return x
        class Module(nn.Module, metaclass=PrePostInitMeta):
            def __pre_init__(self):
                super().__init__()
            def __init__(self):
                pass
            def forward(self, x):
                return x
        class Head(Module):
            def __init__(self):
                self.proj = nn.Identity()  # nn.Module.__init__ has run
            def forward(self, x):
                return self.proj(x)
    """, name="metaclass-new-binds-init-anew"),
    Example("""
        from torch import nn
        class Decoder(nn.Module):
            def __init__(self):
                super(SphDecoder, self).__init__()  # NameError: nothing is ever built
                self.proj = nn.Linear(2, 2)
            def forward(self, x):
                return self.proj(x)
    """, name="super-of-a-name-bound-nowhere"),
    Example("""
        import torch
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
            def forward(self, x):
                return x
        class Conv(Base):
            def __init__(self, channels, bias=True):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(channels))
            def forward(self, x):
                return x * self.weight
        class QuantizedConv(Conv):
            def __init__(self, channels=1, bias=True):
                super(Conv, self).__init__(channels, bias=bias)  # Base.__init__(self) takes neither: TypeError
                self.scale = 2
    """, name="init-called-with-arguments-it-does-not-take"),
    Example(_PREPARED.replace(_PREPARE, _PREPARE + """
                self._prepared = True  # what the subclass set too: the test still fails""") + """
        class ReadyPipeline(Pipeline):
            def __init__(self, model):
                self.model = model
                self._prepared = True
        def main():
            return ReadyPipeline(len)([1])
    """, name="test-the-class-constant-fails-though-another-method-sets-it-alike"),
    Example(_PREPARED + """
        class Loaded(Pipeline):
            def __init__(self, model):
                self.model = model
                self._prepared = False
        class Ready(Loaded):
            def __init__(self, model):
                super().__init__(model)
                self._prepared = True  # the last set wins: every build holds True
        def main():
            return Ready(len)([1])
    """, name="test-the-last-set-of-construction-fails"),
    Example("""
        class Pipeline:
            def __init__(self, model):
                self.model = model
                self._prepared = False
                self._collate = True
                self.device = "cpu"
            def prepare(self):
                return self.device
            def collate(self, x):
                return x, self.device
            def __call__(self, x):
                if not self._prepared:
                    self.prepare()
                if self._collate:
                    x = self.collate(x)
                return self.model(x)
        class Ready(Pipeline):
            def __init__(self, model):
                self.model = model
                self._prepared = True
                self._collate = False  # each test fails: device is never read
        def main():
            return Ready(len)([1])
    """, name="tests-the-class-constants-fail-one-after-another"),
    Example(SCALED + """
        import torch
        class Child(Parent):
            __init__ = Parent.__init__  # the parent's own: nothing skipped
            dtype = torch.float32  # a value, not a method
    """, name="init-bound-to-the-parents-in-the-class-body"),
    Example(_PIPELINE + """
        def main():
            pipe = MyPipeline(len)
            return pipe.run([1])  # the tree never calls save_pretrained on one
    """, name="plain-class-method-the-tree-never-calls"),
    Example(_PIPELINE + """
        def main(pipe, fresh):
            if fresh:
                pipe = MyPipeline(len)
                return pipe.run([1])
            else:
                return pipe.save_pretrained("out")  # another object: the build is in the other branch
    """, name="plain-class-method-called-in-a-sibling-branch"),
    Example("""
        from typing import TYPE_CHECKING
        from torch import nn
        class Real(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        if TYPE_CHECKING:
            class Base(nn.Module):  # for the type checker only: never built
                scale: int
                def __init__(self) -> None: ...
        else:
            Base = Real
        class Child(Base):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(1, 1)
    """, name="base-a-type-checking-stub-names-differently-at-run-time"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self._scale = 2
                self.offset = 1
            @property
            def scale(self):
                return self._scale
            @scale.setter
            def scale(self, value):
                self._scale = value
            def forward(self, x):
                return x * self.scale + self.offset
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
                self.scale = 3  # Child's own setter: it sets offset too
            @Parent.scale.setter
            def scale(self, value):
                self._scale = value
                self.offset = 0
    """, name="a-subclass-setter-of-the-parents-property"),
    Example("""
        from torch import nn
        class Strategy(nn.Module):
            def __init__(self, jitter=1.0):
                super().__init__()
                self._jitter = jitter
            @property
            def jitter(self):
                return self._jitter
            @jitter.setter
            def jitter(self, value):
                self._jitter = value
            def forward(self, x):
                return x * self.jitter
        class Child(Strategy):
            def __init__(self):
                nn.Module.__init__(self)
                self.jitter = 1e-4  # runs the setter, which sets _jitter
    """, name="set-through-a-property-setter"),
    Example(_ENV + """
        class ChatEnv(Env):
            def __init__(self):
                self._from_loader(self, 2)  # a class method given the instance runs Env.__init__
            @classmethod
            def _from_loader(cls, self, loader):
                Env.__init__(self, loader)
                return self
    """, name="a-class-method-given-the-instance-runs-the-parent-init"),
    Example(_PENDING.replace("CALL", "Base.__init__(self)  # pending left out: its default None skips set_pending"),
            name="an-argument-left-out-takes-its-default"),
    Example(SCALED + """
        class Child(Parent):
            def __init__(self):
                init = Parent.__init__  # a method bound to a local name runs where the name is called
                init(self)
        class Other(Parent):
            def __init__(self):
                init = super().__init__
                init()
    """, name="a-parent-init-bound-to-a-local-name"),
    Example(_ENV + """
        class ChatEnv(Env):
            def __init__(self):
                self._from_loader(self, 2)
            @classmethod
            def  _from_loader(cls, self, loader):  # def  spaced: the header is read as Python reads it
                Env.__init__(self, loader)
                return self
    """, name="a-class-method-header-spelled-loosely"),
)


INVALID = (
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.__scale = 2
            def forward(self, x):
                return x * self.__scale  # _Parent__scale
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
                self.__scale = 3  # sets _Child__scale, not _Parent__scale
    """, (("Child", "_Parent__scale", "error"),), name="mangled-name-the-child-spells-alike"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1
            def forward(self, x):
                return x * self.w
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
                for _ in ():
                    super().__init__()  # never runs
    """, (("Child", "w", "error"),), name="parent-init-in-a-loop-over-nothing"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1
            def forward(self, x):
                return x * self.w
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
                if True:
                    return
                super().__init__()  # never runs
    """, (("Child", "w", "error"),), name="parent-init-after-a-return-that-always-runs"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1
            def forward(self, x):
                return x * self.w
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
                assert True, super().__init__()  # the message of a passing assert is never built
    """, (("Child", "w", "error"),), name="parent-init-in-a-passing-asserts-message"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1
            def forward(self, x):
                return x * self.w
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
                [super(Child, self).__init__() for _ in ()]
    """, (("Child", "w", "error"),), name="parent-init-in-a-comprehension-over-nothing"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1
            def forward(self, x):
                while True:
                    return x * self.w  # runs on every call
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "w", "error"),), name="read-in-a-while-true"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1
            def forward(self, x):
                match x:
                    case _:
                        return x * self.w  # the first case always matches
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "w", "error"),), name="read-in-a-wildcard-case"),
    Example("""
        from torch import nn
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def forward(self, x):
                return x * self.scale
        class Wrapper(Base):
            def __init__(self):
                nn.Module.__init__(self)
            def __call__(self, x):
                return self.forward(x)  # module(x) still reaches forward
    """, (("Wrapper", "scale", "error"),), name="call-overridden-to-forward"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self, use_fast=False):
                super().__init__()
                self.use_fast = use_fast
                self.rate = 0.1
            def forward(self, x):
                if getattr(self, "use_fast", False):
                    return x * self.rate
                return x
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
                self.use_fast = True  # the test holds on every build: the read runs on every forward
    """, (("Child", "rate", "error"),), name="getattr-default-overridden-by-the-class"),
    Example("""
        import torch
        from torch import nn
        class Base(nn.Module):
            def __init__(self, channels, **kwargs):
                super().__init__()
            def forward(self, x):
                return x
        class Conv(Base):
            def __init__(self, channels, bias=True):
                super().__init__(channels)
                self.weight = nn.Parameter(torch.ones(channels))
            def forward(self, x):
                return x * self.weight
        class QuantizedConv(Conv):
            def __init__(self, channels=1, bias=True):
                super(Conv, self).__init__(channels, bias=bias)  # fits Base.__init__: built, without weight
    """, (("QuantizedConv", "weight", "error"),), name="init-called-with-arguments-it-takes"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.use_proj = cfg.use_proj
                self.gated = cfg.gated
                self.proj = nn.Identity()
            def forward(self, x):
                if self.use_proj and not self.gated:
                    x = self.proj(x)
                return x
        class Child(Parent):
            def __init__(self, cfg):
                nn.Module.__init__(self)
                self.use_proj = True  # both tests hold on every build: every forward reads proj
                self.gated = False
    """, (("Child", "proj", "error"),), name="tests-the-class-constants-pass"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.use_proj = cfg.use_proj
                self.proj = nn.Identity()
            def forward(self, x, extra=None):
                if self.use_proj or extra is not None:
                    x = self.proj(x)
                return x
        class Child(Parent):
            def __init__(self, cfg):
                nn.Module.__init__(self)
                self.use_proj = False  # the other arm of the ``or`` may still pass
    """, (("Child", "proj", "warning"),), name="or-test-the-class-constant-does-not-decide"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.use_proj = cfg.use_proj
                self.proj = nn.Identity()
            def forward(self, xs):
                for x in xs:
                    if self.use_proj:
                        x = self.proj(x)
                return xs
        class Child(Parent):
            def __init__(self, cfg):
                nn.Module.__init__(self)
                self.use_proj = True  # the test holds, yet the loop may run no time
    """, (("Child", "proj", "warning"),), name="test-the-class-constant-passes-in-a-loop"),
    Example("""
        from torch import nn
        def _init_scale(module):
            module.scale = 2
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                _init_scale(self)  # what sets scale: skipped with this __init__
            def forward(self, x):
                return x * self.scale
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "scale", "error"),), name="parent-sets-through-a-module-function"),
    Example(SCALED + """
        def registered(cls):
            cls.registered_as = cls.__name__
            return cls
        @registered  # binds another name
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "scale", "error"),), name="a-class-decorator-that-sets-another-name"),
    Example(SCALED + """
        class Scaling(type):
            def __call__(cls, *args):  # runs the class's __init__: sets nothing on the class
                return super().__call__(*args)
        class Child(Parent, metaclass=Scaling):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "scale", "error"),), name="a-metaclass-that-sets-nothing"),
    Example(SCALED + """
        class Counting(type):
            built = 0
            def __call__(cls, *args, **kwargs):
                Counting.built += 1  # before the instance: it is type.__call__'s, untouched
                return type.__call__(cls, *args, **kwargs)
        class Child(Parent, metaclass=Counting):
            def __init__(self):
                nn.Module.__init__(self)
        class Grandchild(Child):  # its metaclass is Child's
            pass
    """, (("Grandchild", "scale", "error"),), name="a-metaclass-call-that-hands-back-what-type-builds"),
    Example(SCALED + """
        class Singleton(type):
            _instances = {}
            def __call__(cls, *args, **kwargs):
                if cls not in cls._instances:  # stored, then handed back: type.__call__ built it
                    cls._instances[cls] = super().__call__(*args, **kwargs)
                return cls._instances[cls]
        class Child(Parent, metaclass=Singleton):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "scale", "error"),), name="a-singleton-metaclass"),
    Example(SCALED + """
        class Child(Parent, metaclass=type):  # the builtin: type.__call__
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "scale", "error"),), name="metaclass-type-spelled-out"),
    Example(_DATA_HOOKS + """
        from dataclasses import field
        @dataclass
        class Items:
            items: list = field(default_factory=list)  # no class attribute: the decorator deletes it
            def total(self):
                return len(self.items)
        class Sub(Items):
            def __init__(self):
                self.extra = 1
        def main():
            return Sub().total()
    """, (("Sub", "items", "warning"),),
        name="dataclass-fields-with-no-class-attribute"),
    Example(_DATA_HOOKS + """
        @dataclass
        class A(DataHooks):  # decorated with no __post_init__ in its MRO: none is called
            a: int = 1
        class C(A):
            def __post_init__(self):
                DataHooks.__init__(self)
        @dataclass
        class First:
            a: int = 1
        @dataclass
        class Second:
            b: int  # no default: no class attribute
            def run(self):
                return self.b
        class Both(First, Second):  # First's written __init__ sets First's fields only
            pass
        def main():
            return C().prepare(), Both().run()
    """, (("Both", "b", "warning"), ("C", "prepare_data_per_node", "warning")),
        name="dataclass-written-init-knows-its-own-mro"),
    Example(SCALED + """
        import sys
        class Middle(Parent):
            def __init__(self, fast=False):
                if fast:  # the arms below cover only a fast build
                    if sys.version_info >= (3, 11):
                        super().__init__()
                    else:
                        Parent.__init__(self)
                else:
                    nn.Module.__init__(self)
        class Leaf(Middle):
            def __init__(self):
                if sys.version_info >= (3, 11):
                    super().__init__()
                else:
                    Middle.__init__(self)
    """, (("Leaf", "scale", "warning"),), name="both-arms-of-a-test-under-another-test"),
    Example(_DATA_HOOKS + """
        @dataclass
        class Alpaca(DataHooks):  # litgpt 0.4.6's data modules: the written __init__ runs no parent's
            seed: int = 42
        def main():
            return Alpaca().prepare()
    """, (("Alpaca", "prepare_data_per_node", "warning"),), name="a-dataclass-written-init-runs-no-parents"),
    Example(SCALED + """
        class Child(Parent):
            __init__ = nn.Module.__init__  # Parent.__init__ never runs
    """, (("Child", "scale", "error"),), name="init-bound-to-modules-in-the-class-body"),
    Example(SCALED + """
        class Child(Parent):
            _init = __init__ = nn.Module.__init__
    """, (("Child", "scale", "error"),), name="init-bound-with-a-second-target"),
    Example(SCALED + """
        class Child(Parent):
            (__init__) = nn.Module.__init__
    """, (("Child", "scale", "error"),), name="init-bound-in-parentheses"),
    Example(SCALED + """
        class Child(Parent):
            size = 1; __init__ = nn.Module.__init__
    """, (("Child", "scale", "error"),), name="init-bound-after-a-semicolon"),
    Example(SCALED + """
        class Child(Parent):
            if True: __init__ = nn.Module.__init__
    """, (("Child", "scale", "error"),), name="init-bound-under-a-test-on-one-line"),
    Example(SCALED + """
        class Child(Parent):
            __init__: object = nn.Module.__init__
    """, (("Child", "scale", "error"),), name="init-bound-with-an-annotation"),
    Example(SCALED + """
        class Child(Parent): __init__ = nn.Module.__init__  # a one-line class
    """, (("Child", "scale", "error"),), name="init-bound-in-a-one-line-class"),
    Example(SCALED + """
        class Child(Parent):
            __getattr__ = nn.Module.__getattr__  # torch's own: it raises AttributeError
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "scale", "error"),), name="getattr-bound-to-torchs-in-the-class-body"),
    Example(_UNREAD + """
        def _scaled(module, x):
            return x * module.scale
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
            forward = _scaled  # the function runs as the method
        class Aliased(Parent):
            def __init__(self):
                nn.Module.__init__(self)
            def _impl(self, x):
                return x * self.scale
            forward = _impl
    """, (("Aliased", "scale", "error"), ("Child", "scale", "error")), name="forward-bound-in-the-class-body"),
    Example(_PIPELINE + """
        def main():
            pipe = MyPipeline(len)
            pipe.run([1])
            with MyPipeline(len) as other:  # another build: its calls count too
                other.run([2])
            return pipe.save_pretrained("out")  # a use of the class, not every one
    """, (("MyPipeline", "config", "warning"),), name="plain-class-method-the-tree-calls"),
    Example("""
        from abc import ABC, abstractmethod
        class Encoder(ABC):
            @abstractmethod
            def encode(self, inputs):  # what the tree calls on every encoder it is given
                ...
        class InstructEncoder(Encoder):
            def __init__(self, name, fps=2):
                self.name = name
                self.fps = fps
            def encode(self, inputs):
                if "video" in inputs:
                    return [self.fps]
                return [self.name]
        class CopiedEncoder(InstructEncoder):
            def __init__(self, name):
                self.name = name  # the parent's __init__ copied, without fps
    """, (("CopiedEncoder", "fps", "warning"),), name="abstract-method-an-implementation-inherits"),
    Example("""
        class Buffer:
            def __init__(self, size):
                self.items = []
                self.size = size
            def __len__(self):
                return len(self.items)
            def __getitem__(self, index):
                return self.items[index % self.size]
        class FixedBuffer(Buffer):
            def __init__(self, size):
                self.size = size  # the parent's __init__ inline, without items
        def main():
            buffer = FixedBuffer(3)
            return len(buffer)  # Python runs __len__ on it
    """, (("FixedBuffer", "items", "warning"),), name="plain-class-dunder-python-runs-for-the-tree"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2
            def __setstate__(self, state):
                self.__dict__.update(state)
                self.scale = 2  # runs on the copy pickle or copy builds, never on this instance
            def forward(self, x):
                return x * self.scale
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "scale", "error"),), name="set-in-setstate-is-not-set-on-a-built-instance"),
    Example("""
        from torch import nn
        class Strategy(nn.Module):
            def __init__(self):
                super().__init__()
                self._jitter = 1e-4
                self.points = 3
            @property
            def jitter(self):
                return self._jitter
            @jitter.setter
            def jitter(self, value):
                self._jitter = value * self.points  # the setter reads what it needs
            def forward(self, x):
                return x * self.jitter
        class Child(Strategy):
            def __init__(self):
                nn.Module.__init__(self)
                self.jitter = 1e-4  # runs the setter: self.points is not set yet
    """, (("Child", "points", "error"),), name="a-property-setter-runs-while-it-is-built"),
    Example(_ENV + """
        class Tool(Env):
            def __init__(self):
                nn.Module.__init__(self)
                type(self)._setup(self, 2)
            @staticmethod
            def _setup(instance, value):
                instance.other = value  # sets nothing Env.__init__ sets
    """, (("Tool", "base", "error"),), name="a-static-method-given-the-instance-sets-what-it-sets"),
    Example(_PENDING.replace("CALL", "Base.__init__(self, pending=1)  # set_pending reads scale before it is set"),
            (("Noisy", "scale", "warning"),), name="an-argument-passed-runs-what-it-gates"),
    Example("""
        from torch import nn
        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.sync = True
            @property
            def legacy_sync(self):
                return self.sync
            @legacy_sync.setter
            def legacy_sync(self, value):
                self.sync = value  # runs only where something assigns legacy_sync
            def forward(self, x):
                return x if self.sync else -x
        class Child(Parent):
            def __init__(self):
                nn.Module.__init__(self)
    """, (("Child", "sync", "error"),), name="a-setter-nothing-runs-sets-nothing"),
    Example(SCALED + """
        class Skips(Parent):
            def __init__(self):
                init = nn.Module.__init__
                init(self)  # runs torch's, not Parent's
    """, (("Skips", "scale", "error"),), name="a-grandparent-init-bound-to-a-local-name"),
    Example(_SETUP + """
            def setup(self, factor=None):
                if factor is None:
                    factor = 3  # bound again: the test below holds in this run
                if factor is not None:
                    self.out = factor * self.scale
    """, (("Child", "scale", "warning"),), name="a-left-out-parameter-bound-again"),
    Example(_SETUP + """
                self.setup(factor=3)  # the second run reads what the first skipped
            def setup(self, factor=None):
                if factor is not None:
                    self.out = factor * self.scale
    """, (("Child", "scale", "warning"),), name="a-method-run-again-with-the-parameter-given"),
)
