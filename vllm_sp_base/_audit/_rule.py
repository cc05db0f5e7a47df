"""SPB001: a read of an attribute that only a skipped ``__init__`` sets, on a
path Python runs: during construction, or from an entry point."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from vllm_sp_base._audit._construction import (
    ClassModel,
    Construction,
    Reached,
    construct,
    decided_constants,
    may_skip_an_init,
    skipped_inits,
    would_set,
)
from vllm_sp_base._audit._dispatch import reach, unreached
from vllm_sp_base._audit._finding import Finding, Frame
from vllm_sp_base._audit._model import requirements
from vllm_sp_base._audit._options import (
    DEFAULT_ENTRY_POINTS,
    DEFAULT_FEATURE_ENTRY_POINTS,
    DEFAULT_PLAIN_ENTRY_POINTS,
)
from vllm_sp_base._audit._project import ClassRef, MroEntry, Project
from vllm_sp_base._audit._runtime import feature, gated, is_module, plain_entry_points


@dataclass(frozen=True)
class Example:
    """A module, dedented, and what the rule reports on it: (class, attribute, severity)."""

    source: str
    expect: tuple[tuple[str, str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", textwrap.dedent(self.source).lstrip("\n"))


class SkippedInitRead:
    """A class runs its own ``__init__`` and not a parent's (``nn.Module.__init__(self)``,
    ``super(Parent, self).__init__()``, no call at all), yet code that runs on
    it reads ``self.<attr>`` that only the skipped ``__init__`` sets.

    Construction and dispatch are simulated as Python runs them: the
    ``__init__`` chain however spelled, helpers on ``self``, ``super().m()``
    into overridden parents, guards (``hasattr``, ``getattr`` with a default,
    ``except AttributeError``).

    ``error``: the read runs during construction before anything set the
    attribute, or an entry point of a torch module (``forward``,
    ``load_weights``, ``__call__``, ...) reaches it on no condition;
    ``warning``: reached under a condition; ``note`` (``--show-unreachable``
    only): no entry point reaches it.
    """

    CODE = "SPB001"

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
    )

    INVALID = (
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
    )

    def __init__(
        self,
        project: Project,
        in_scope: Callable[[str], bool],
        entry_points: Sequence[str] = DEFAULT_ENTRY_POINTS,
        show_unreachable: bool = False,
        feature_entry_points: Sequence[str] = DEFAULT_FEATURE_ENTRY_POINTS,
        plain_entry_points: Sequence[tuple[str, Sequence[str]]] = DEFAULT_PLAIN_ENTRY_POINTS,
    ) -> None:
        self.project = project
        self.in_scope = in_scope  # module name -> audited?
        self.entry_points = tuple(entry_points)
        self.show_unreachable = show_unreachable
        self.feature_entry_points = tuple(feature_entry_points)
        self.plain_entry_points = tuple(plain_entry_points)

    def check(self, ref: ClassRef) -> list[Finding]:
        model = ClassModel(self.project, ref)
        infos = model.infos
        if not any(i is not None and "__init__" in i.methods for i in infos[1:]):
            return []
        if not may_skip_an_init(model):
            return []
        built = construct(model)
        skipped = skipped_inits(model, built)
        skippers = _skippers(skipped, built, model.mro)
        if not any(isinstance(r, ClassRef) and self.in_scope(r.module) for r in skippers.values()):
            return []
        only_skipped: set[tuple[int, str]] = set()
        would = would_set(model, built, skipped, only_skipped)
        class_level: set[str] = set()
        for info in infos:
            if info is not None:
                class_level |= info.class_attrs
        candidates = set(would) - class_level
        if not candidates:
            return []
        early = {a: r for a, r in built.early_reads.items() if a in candidates}
        missing = candidates - built.sets - set(early)
        if is_module(model):
            entries: Sequence[str] = self.entry_points
            # A feature's entry point is called only on a model that passes the
            # engine's check for it (EPLB: ``num_moe_layers`` set).
            features = gated(self.feature_entry_points, built.sets | class_level, built.sets_any)
        else:
            entries, features = plain_entry_points(model, self.plain_entry_points), []
        reached = reach(model, missing, entries, features)
        tested = {attr for _, read in reached.values() for attr, _, _ in requirements(read.requires)}
        decided = decided_constants(model, built, tested, only_skipped) if tested else {}
        if decided:  # a test the built instance always fails hides what runs under it
            reached = reach(model, missing, entries, features, decided)
        # Only now, for the few attributes left: it parses every method that may name them.
        asked = missing if self.show_unreachable else set(reached)
        if asked:
            set_later = self._set_elsewhere(model, asked, only_skipped)
            missing -= set_later
            reached = {a: r for a, r in reached.items() if a not in set_later}
        if not (early or reached or self.show_unreachable):
            return []
        if model.marked("__new__", "returns_other"):
            return []  # C(...) builds other classes: they are checked
        unsure = model.marked("__getattr__", "raises_attribute_error") is False  # it may answer
        findings: list[tuple[str, str, Reached]] = []  # (severity, entry, read)
        for read in early.values():
            severity = "warning" if read.conditional or unsure else "error"
            findings.append((severity, "__init__", read))
        # Where building surely fails, nothing after it runs: the rest can wait.
        built_fails = any(severity == "error" for severity, _, _ in findings)
        for attr in sorted(missing):
            if attr in reached:
                entry, read = reached[attr]
                sure = not (read.conditional or unsure or built.sets_any or built_fails)
                findings.append(("error" if sure else "warning", entry, read))
        if self.show_unreachable:
            left = missing - set(reached)
            for read in unreached(model, left, only_skipped | set(built.executed)).values():
                findings.append(("note", "", read))
        return [
            self._finding(model, ref, severity, entry, read, would[read.attr], skippers)
            for severity, entry, read in sorted(findings, key=lambda f: f[2].attr)
        ]

    def _set_elsewhere(
        self, model: ClassModel, missing: set[str], only_skipped: set[tuple[int, str]]
    ) -> set[str]:
        """Attributes some other method of the MRO sets (a lazy setter, a
        ``setup()`` the runner calls first): a read of them may well run after."""
        names = [attr.encode() for attr in missing]
        found: set[str] = set()
        for index, info in enumerate(model.infos):
            if info is None:
                continue
            for name, method in info.methods.items():
                if name == "__init__" or (index, name) in only_skipped or not method.may_name(names):
                    continue
                found.update(method.sets)
        return found & missing

    def _finding(
        self,
        model: ClassModel,
        ref: ClassRef,
        severity: str,
        entry: str,
        read: Reached,
        set_at: tuple[int, int],
        skippers: dict[int, MroEntry],
    ) -> Finding:
        cls = model.infos[0]
        assert cls is not None
        skip_index, set_line = set_at
        owner = model.mro[read.owner]
        skipped_ref = model.mro[skip_index]
        assert isinstance(owner, ClassRef) and isinstance(skipped_ref, ClassRef)
        chain = tuple(
            Frame(f"{model.label(step.owner)}.{step.method}", self._path(model.mro[step.owner]), step.line)
            for step in read.steps()
        )
        return Finding(
            code=self.CODE,
            severity=severity,
            path=self._path(ref),
            line=cls.line,
            col=cls.col + 1,
            class_name=str(ref),
            attribute=read.attr,
            method=f"{owner}.{read.method}",
            read_path=self._path(owner),
            read_line=read.line,
            skipped_init=str(skipped_ref),
            skipped_path=self._path(skipped_ref),
            set_line=set_line,
            skipped_by=str(skippers[skip_index]),
            entry=entry or None,
            chain=chain,
            condition=self._condition(entry, read),
        )

    def _condition(self, entry: str, read: Reached) -> str | None:
        """What makes the read happen, where not every load does: the feature
        that calls the entry point, or the first test on the way."""
        if entry in self.feature_entry_points and entry not in self.entry_points:
            return feature(entry).label
        return f"when {read.condition}" if read.condition and read.conditional else None

    def _path(self, entry: MroEntry) -> str:
        if not isinstance(entry, ClassRef):
            return entry.text
        located = self.project.module_file(entry.module)
        return located[0] if located else entry.module


def _skippers(skipped: Iterable[int], built: Construction, mro: list[MroEntry]) -> dict[int, MroEntry]:
    """For each skipped index, the class whose ``__init__`` ran last before it
    and did not run it (the class itself where none ran): one pass over the MRO."""
    wanted = set(skipped)
    found: dict[int, MroEntry] = {}
    last_ran = 0
    for index in range(max(wanted, default=-1) + 1):
        if index in wanted:
            found[index] = mro[last_ran]
        if built.ran_init(index):
            last_ran = index
    return found
