"""A class as Python builds and runs it: its MRO with each entry's summary,
method lookup as ``self.m()``, ``super().m()``, ``super(X, self).m()`` and
``X.m(self)`` do it, a walk over what a method runs in order, and the
simulation of ``C(...)``.

Everything here is iterative: hierarchies thousands of classes deep walk in
bounded stack.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from vllm_sp_base._audit._model import (
    FALSE_LITERALS,
    REQUIREMENT_SEPARATOR,
    Assert,
    Call,
    ClassInfo,
    Event,
    Marker,
    Method,
    Read,
    Set,
    SetAny,
    SetEach,
    excludes,
    parse_local_import,
    requirements,
)
from vllm_sp_base._audit._project import ClassRef, MroEntry, Opaque, Project, Target


@dataclass(frozen=True, slots=True)
class Step:
    """One frame on the way to a read: ``method`` of the class at MRO index
    ``owner``, at ``line`` (the call it makes, or the read itself)."""

    owner: int
    method: str
    line: int


#: (MRO index, method) that a lookup found; the method is None where the
#: lookup ran into a base the source does not show (its code is unknown).
Found = tuple[int, Method | None]


class ClassModel:
    """``ref``'s MRO, each entry's summary, and method lookup along it."""

    def __init__(self, project: Project, ref: ClassRef) -> None:
        self.project = project
        self.ref = ref
        self.mro: list[MroEntry] = project.mro(ref)
        self.infos: list[ClassInfo | None] = [
            project.class_info(e) if isinstance(e, ClassRef) else None for e in self.mro
        ]
        self._index = {entry: i for i, entry in enumerate(self.mro)}
        self._properties: frozenset[str] | None = None

    @property
    def properties(self) -> frozenset[str]:
        """Names some class of the MRO defines as a property: reading one runs code."""
        if self._properties is None:
            self._properties = frozenset(
                name for info in self.infos if info is not None
                for name, method in info.methods.items() if method.is_property
            )
        return self._properties

    def lookup(self, name: str, start: int = 0) -> Found | None:
        """What ``name`` finds from ``mro[start]`` on; None where no class defines it."""
        mro, infos = self.mro, self.infos
        for i in range(start, len(mro)):
            info = infos[i]
            if info is not None:
                method = info.methods.get(name)
                if method is not None:
                    return i, method
            elif isinstance(mro[i], Opaque):
                return i, None
        return None

    def target(self, caller: int, call: Call) -> Found | None:
        """What ``call``, made by the method of ``mro[caller]``, runs."""
        if call.kind == "self":
            return self.lookup(call.name, 0)
        if call.kind == "super":
            return self.lookup(call.name, caller + 1)
        owner = self.mro[caller]
        if call.target is None or not isinstance(owner, ClassRef):
            return None
        resolved = self._resolve(owner, call)
        k = self._index.get(resolved) if isinstance(resolved, ClassRef) else None
        if k is None:
            # An unknown class's method, or a class outside the MRO: code we cannot follow.
            return None
        return self.lookup(call.name, k + 1 if call.kind == "super_of" else k)

    def outside_mro(self, caller: int, call: Call) -> bool:
        """Whether ``call`` names a class the source shows that is not in the MRO
        (``Other.__init__(self)``): what it runs on this instance is not a base's."""
        owner = self.mro[caller]
        if call.kind not in ("explicit", "super_of") or call.target is None or not isinstance(owner, ClassRef):
            return False
        resolved = self._resolve(owner, call)
        return isinstance(resolved, ClassRef) and resolved not in self._index

    def _resolve(self, owner: ClassRef, call: Call) -> Target | None:
        assert call.target is not None
        if call.imported is not None:
            return self.project.resolve_imported(owner.module, parse_local_import(call.imported), call.target)
        return self.project.resolve(owner.module, call.target)

    def constant(self, index: int, event: SetEach) -> tuple[str, ...] | None:
        """The strings ``event`` loops over: a class-level constant as the
        instance finds it, or the module-level one where ``mro[index]`` is defined."""
        name = event.constant
        if event.on_class:
            for cls in self.infos:
                if cls is not None and name in cls.class_attrs:
                    return cls.constants.get(name)
            return None
        owner = self.mro[index]
        module = self.project.module(owner.module) if isinstance(owner, ClassRef) else None
        return None if module is None else module.constants.get(name)

    def label_module(self, index: int) -> str:
        """The module ``mro[index]`` is defined in ("" for a base the source does not show)."""
        entry = self.mro[index]
        return entry.module if isinstance(entry, ClassRef) else ""

    def label(self, index: int) -> str:
        entry = self.mro[index]
        return entry.name if isinstance(entry, ClassRef) else entry.text

    def marked(self, name: str, kind: str) -> bool | None:
        """Whether the ``name`` the instance finds carries a ``kind`` marker;
        None where no known class defines it."""
        found = self.lookup(name, 0)
        if found is None or found[1] is None:
            return None
        return any(type(e) is Marker and e.kind == kind for e in found[1].events)


@dataclass(slots=True)
class Executed:
    """One event as a walk meets it, with how it was reached."""

    event: Event
    owner: int  # MRO index of the method holding the event
    method: Method
    chain: tuple[Step, ...]  # the calls that led into ``method``
    conditional: bool  # the event, or a call on the way, sits under a condition
    caught: bool  # a call on the way is inside ``try ... except AttributeError``
    target: Found | None = None  # for a Call: what it runs
    condition: str | None = None  # the first test on the way that it runs under
    requires: str = ""  # what the tests on the way need of the instance (``Read.requires``)


def _joined(first: str, second: str) -> str:
    return f"{first}{REQUIREMENT_SEPARATOR}{second}" if first and second else first or second


#: What is known of the built instance: attribute (or ``a.b`` chain) -> the
#: tests it is known to pass, as (test, literal) (see ``requirements``).
Known = dict[str, list[tuple[str, str]]]


def _contradicts(requires: str, decided: Known) -> bool:
    """Whether something known of the instance fails a test the event needs."""
    return any(
        excludes(fact, (test, literal))
        for attr, test, literal in requirements(requires)
        for fact in decided.get(attr, ())
    )


def walk(
    model: ClassModel, start: tuple[int, Method], seen: dict[tuple[int, str], bool],
    conditional: bool = False, decided: Known | None = None,
) -> Iterator[Executed]:
    """Every event ``start`` runs, in execution order, calls followed into the
    methods they run. A method is entered again only where it was entered
    before under a condition and now runs surely (``seen``: (index, name) ->
    entered under a condition), so recursion ends and the walk stays linear.
    ``decided``: what is known of the built instance (``decided_constants``):
    what runs only under a test it fails is not run."""
    index, method = start
    key = (index, method.name)
    if key in seen and (not seen[key] or conditional):
        return
    seen[key] = conditional
    stack: list[tuple[int, Method, Iterator[Event], tuple[Step, ...], bool, bool, str | None, str]] = [
        (index, method, iter(method.events), (), conditional, False, None, "")
    ]
    while stack:
        index, method, events, chain, under, caught, why, needs = stack[-1]
        event = next(events, None)
        if event is None:
            stack.pop()
            continue
        surely = not (under or getattr(event, "conditional", False))
        if type(event) is Read or type(event) is Call:
            requires = _joined(needs, event.requires)
            if decided and requires and _contradicts(requires, decided):
                continue  # under a test the instance fails: never runs
            condition = why or event.condition
        else:
            requires, condition = needs, why
        if type(event) is not Call:
            yield Executed(event, index, method, chain, not surely, caught, None, condition, requires)
            if type(event) is Read and event.attr in model.properties:
                # Reading a property runs its getter, as a call would.
                getter = model.lookup(event.attr, 0)
                runs = getter[1] if getter is not None else None
                if getter is not None and runs is not None and runs.is_property:
                    key = (getter[0], runs.name)
                    if not (key in seen and (not seen[key] or not surely)):
                        seen[key] = not surely
                        stack.append((
                            getter[0], runs, iter(runs.events), (*chain, Step(index, method.name, event.line)),
                            not surely, caught, condition, requires,
                        ))
            continue
        found = model.target(index, event)
        yield Executed(event, index, method, chain, not surely, caught, found, condition, requires)
        callee = found[1] if found is not None else None
        if event.kind == "self" and callee is None:
            # No class the source shows defines it: ``self.norm(x)`` calls an
            # instance attribute (a submodule the parent's ``__init__`` set).
            read = Read(event.name, event.line, event.col, event.conditional, event.condition, event.requires)
            yield Executed(read, index, method, chain, not surely, caught or event.caught, None, condition, requires)
        if found is None or callee is None:
            continue
        callee_index = found[0]
        key = (callee_index, callee.name)
        if key in seen and (not seen[key] or not surely):
            continue
        seen[key] = not surely
        stack.append((
            callee_index, callee, iter(callee.events),
            (*chain, Step(index, method.name, event.line)), not surely, caught or event.caught,
            condition, requires,
        ))


@dataclass(slots=True)
class Reached:
    """A read, and the calls that reach it from where a walk began."""

    attr: str
    owner: int
    method: str
    line: int
    chain: tuple[Step, ...]
    conditional: bool
    condition: str | None = None  # the first test on the way it runs under
    requires: str = ""  # what the tests on the way need of the instance

    def steps(self) -> tuple[Step, ...]:
        return (*self.chain, Step(self.owner, self.method, self.line))


@dataclass
class Construction:
    """What ``C(...)`` runs, and what it leaves unset."""

    executed: dict[tuple[int, str], bool] = field(default_factory=dict)  # (index, method) -> under a condition
    sets: set[str] = field(default_factory=set)  # every attribute it may set
    sets_any: bool = False  # it sets attributes whose names the source does not show
    # The first unknown base an ``__init__`` lookup ran into (0: construction
    # runs the ``__init__`` of a class outside the MRO: any may have run).
    unknown_from: int | None = None
    early_reads: dict[str, Reached] = field(default_factory=dict)  # read before anything set it
    # attribute -> the literals its sets bind (None: a value that is no literal).
    values: dict[str, set[str | None]] = field(default_factory=dict)
    surely_set: set[str] = field(default_factory=set)  # set on no condition
    asserted: list[tuple[str, str, str]] = field(default_factory=list)  # ``assert`` on no condition

    def ran_init(self, index: int) -> bool:
        return (index, "__init__") in self.executed

    def may_have_run_init(self, index: int) -> bool:
        """It ran, or it lies past a base whose ``__init__`` we cannot see (which may chain on)."""
        return self.ran_init(index) or (self.unknown_from is not None and index > self.unknown_from)


def _set_names(model: ClassModel, step: Executed) -> tuple[str, ...] | None:
    """The attributes a set event binds; None: any attribute."""
    event = step.event
    if type(event) is Set:
        return (event.attr,)
    if type(event) is SetEach:
        return model.constant(step.owner, event)
    if type(event) is SetAny:
        return None
    return ()


def construct(model: ClassModel) -> Construction:
    """Simulate ``C(...)``: the ``__init__`` it finds, and everything that runs
    from there (parent ``__init__`` chains however spelled, helpers on self),
    in order; the reads of attributes nothing has set yet."""
    built = Construction()
    found = model.lookup("__init__", 0)
    if found is None:
        return built
    if found[1] is None:
        built.unknown_from = found[0]
        return built
    for step in walk(model, (found[0], found[1]), built.executed):
        event = step.event
        if type(event) is Read:
            first = built.early_reads.get(event.attr)
            if (
                not step.caught and not built.sets_any and event.attr not in built.sets
                and (first is None or (first.conditional and not step.conditional))
            ):  # the first read, or the first sure one
                built.early_reads[event.attr] = Reached(
                    event.attr, step.owner, step.method.name, event.line, step.chain, step.conditional,
                    step.condition, step.requires)
            continue
        if type(event) is Assert:
            if not step.conditional:
                built.asserted += requirements(event.requires)
            continue
        if type(event) is Call:
            target = step.target
            if event.name == "__init__" and target is not None and target[1] is None:
                built.unknown_from = min(target[0], built.unknown_from or target[0])
            elif event.name == "__init__" and target is None and model.outside_mro(step.owner, event):
                built.unknown_from = 0  # an __init__ from outside the MRO: who is built is unclear
            continue
        names = _set_names(model, step)
        if names is None:
            built.sets_any = True
        else:
            built.sets.update(names)
            for name in names:
                built.values.setdefault(name, set()).add(event.value if type(event) is Set else None)
            if not step.conditional:
                built.surely_set.update(names)
    return built


def decided_constants(
    model: ClassModel, built: Construction, names: set[str], not_run: set[tuple[int, str]]
) -> Known:
    """What is known of ``names`` (attributes, ``a.b`` chains) once the
    instance is built and no other method of the class sets them (or the
    first attribute of the chain): construction binds the attribute on no
    condition and only to literals (``self.enable_pdmux = False`` decides
    every ``if self.enable_pdmux:``), or asserts it on no condition (``assert
    self.config.rank is not None``). ``not_run``: methods that never run on
    the instance (what only a skipped ``__init__`` runs)."""
    known: Known = {}
    for name in names:
        facts = [(test, literal) for attr, test, literal in built.asserted if attr == name]
        values = built.values.get(name, set())
        if values and not built.sets_any and name in built.surely_set and None not in values:
            literals = {v for v in values if v is not None}
            if len(literals) == 1:
                facts.append(("==", literals.pop()))
            elif len({v in FALSE_LITERALS for v in literals}) == 1:
                facts.append(("false" if next(iter(literals)) in FALSE_LITERALS else "true", ""))
        if facts:
            known[name] = facts
    if not known:
        return known
    roots = {name.split(".", 1)[0]: name for name in known}
    spelled = [root.encode() for root in roots]
    for index, info in enumerate(model.infos):
        if info is None:
            continue
        # torch's own sets under computed names fill parameters, buffers and
        # submodules (``_load_from_state_dict``), never a flag of the model.
        torch = model.label_module(index).split(".", 1)[0] == "torch"
        for method_name, method in info.methods.items():
            if (
                (index, method_name) in built.executed or (index, method_name) in not_run
                or method_name in _NOT_AFTER_CONSTRUCTION or not method.may_name(spelled)
            ):
                continue
            for event in method.events:
                if type(event) is Set and event.attr in roots:
                    known = {n: f for n, f in known.items() if n.split(".", 1)[0] != event.attr}
                elif type(event) in (SetAny, SetEach) and not torch:
                    return {}  # a set whose name the source does not show
    return known


#: Methods that do not set a built instance's attributes as it runs: other
#: ``__init__``, pickling and copying, the hook every ``self.a = v`` goes through.
_NOT_AFTER_CONSTRUCTION = frozenset({
    "__init__", "__new__", "__setattr__", "__delattr__", "__setstate__", "__getstate__",
    "__reduce__", "__reduce_ex__", "__copy__", "__deepcopy__", "__init_subclass__",
})


def may_skip_an_init(model: ClassModel) -> bool:
    """Whether ``C(...)`` can skip a known ``__init__``, from the ``__init__``
    chain alone (bodies the cutter keeps parsed): no helper followed, so it runs
    fewer ``__init__`` than ``construct`` finds, and says False only where
    ``construct`` would find nothing skipped."""
    ran: set[int] = set()
    found = model.lookup("__init__", 0)
    todo = [found] if found is not None else []
    while todo:
        index, method = todo.pop()
        if method is None or index in ran:
            continue
        ran.add(index)
        for call in method.init_calls:
            todo.append(model.target(index, call))  # type: ignore[arg-type]
        todo = [t for t in todo if t is not None]
    return any(
        info is not None and "__init__" in info.methods and index not in ran
        for index, info in enumerate(model.infos)
    )


def skipped_inits(model: ClassModel, built: Construction) -> list[int]:
    """MRO indexes of the known ``__init__`` that ``C(...)`` does not run."""
    return [
        index for index, info in enumerate(model.infos)
        if info is not None and "__init__" in info.methods and not built.may_have_run_init(index)
    ]


def would_set(
    model: ClassModel, built: Construction, skipped: list[int], only_there: set[tuple[int, str]]
) -> dict[str, tuple[int, int]]:
    """Attributes the skipped ``__init__`` would have set: attribute -> (MRO
    index of that ``__init__``, line of the set), the first skipped ``__init__``
    in MRO order winning. What they run counts too (their helpers), attributed
    to the ``__init__`` that runs it; ``only_there`` receives the methods they
    run that construction does not."""
    found: dict[str, tuple[int, int]] = {}
    # What construction ran sets what it sets. One ``seen`` for every skipped
    # ``__init__``: what an earlier one runs is already blamed on it (the first
    # wins), so a later one walks only what is new (a chain stays linear).
    seen = dict.fromkeys(built.executed, False)
    for index in skipped:
        info = model.infos[index]
        assert info is not None
        for step in walk(model, (index, info.methods["__init__"]), seen):
            only_there.add((step.owner, step.method.name))
            for attr in _set_names(model, step) or ():  # a name not shown: nothing to blame
                found.setdefault(attr, (index, step.event.line))
    return found
