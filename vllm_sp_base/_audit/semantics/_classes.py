"""A class as Python builds and runs it: its MRO with each entry's summary,
method lookup as ``self.m()``, ``super().m()``, ``super(X, self).m()`` and
``X.m(self)`` do it, and a walk over what a method runs, in order.

Everything here is iterative: hierarchies thousands of classes deep walk in
bounded stack.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from vllm_sp_base._audit.semantics._project import (
    ClassRef,
    ModuleRef,
    MroEntry,
    Opaque,
    Project,
    Target,
)
from vllm_sp_base._audit.summaries._conditions import LOCAL
from vllm_sp_base._audit.summaries._events import (
    HELD,
    REQUIREMENT_SEPARATOR,
    SETTER,
    STATIC,
    Call,
    Event,
    Known,
    Marker,
    Parameters,
    Read,
    Set,
    SetEach,
    Signature,
    contradicts,
    parse_local_import,
)
from vllm_sp_base._audit.summaries._summaries import ClassInfo, Method


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
        self._generated: dict[int, Method] = {}

    @property
    def properties(self) -> frozenset[str]:
        """Names some class of the MRO defines as a property: reading one runs code."""
        if self._properties is None:
            self._properties = frozenset(
                name for info in self.infos if info is not None
                for name, method in info.methods.items() if method.is_property
            )
        return self._properties

    def class_attr_before(self, name: str, index: int) -> bool:
        """Whether a class before ``mro[index]`` binds ``name`` in its body
        (not as a method): Python finds that first, so what ``mro[index]``
        defines under the name (a property) is not what the instance reads."""
        return any(info is not None and name in info.class_attrs for info in self.infos[:index])

    def lookup(self, name: str, start: int = 0) -> Found | None:
        """What ``name`` finds from ``mro[start]`` on; None where no class defines it."""
        mro, infos = self.mro, self.infos
        for i in range(start, len(mro)):
            info = infos[i]
            if info is not None:
                method = info.methods.get(name)
                if method is not None:
                    return i, self._generated_init(i, method) if name == "__init__" and info.generated_init else method
            elif isinstance(mro[i], Opaque):
                return i, None
        return None

    def _generated_init(self, index: int, own: Method) -> Method:
        """The ``__init__`` ``@dataclass`` wrote for ``mro[index]``: it sets
        the fields of every dataclass of that class's own MRO (``own`` sets
        the class's own; a sibling of another base is none of them), then,
        where that MRO had a ``__post_init__`` when the class was decorated,
        runs ``self.__post_init__()`` (the instance's); no parent's
        ``__init__`` runs."""
        found = self._generated.get(index)
        if found is None:
            found = self._generated[index] = Method("__init__", own.line)
            found._events.extend(e for e in own.events if type(e) is not Signature)  # the fields are its parameters
            entry = self.mro[index]
            decorated = self.project.mro(entry) if isinstance(entry, ClassRef) else []
            infos = [self.project.class_info(e) if isinstance(e, ClassRef) else None for e in decorated[1:]]
            found._events.extend(
                Set(name, own.line, False) for info in infos
                if info is not None and info.fields is not None for name in info.fields)
            if any(info is not None and "__post_init__" in info.methods for info in (self.infos[index], *infos)):
                found._events.append(Call("self", None, "__post_init__", own.line, False))
        return found

    def target(self, caller: int, call: Call) -> Found | None:
        """What ``call``, made by the method of ``mro[caller]``, runs."""
        if call.kind == "self":
            if call.name.endswith(STATIC):  # given the instance: a regular method first found wins
                return _first(self.lookup(call.name, 0), self.lookup(call.name[: -len(STATIC)], 0))
            return self.lookup(call.name, 0)
        if call.kind == "super":
            return self.lookup(call.name, caller + 1)
        owner = self.mro[caller]
        if call.target is None or not isinstance(owner, ClassRef):
            return None
        if call.kind == "function":
            function = None if call.imported is not None else self.project.function(owner.module, call.target)
            return None if function is None else (caller, function)
        resolved = self._resolve(owner, call)
        if isinstance(resolved, ModuleRef) and call.kind == "explicit":  # ``helpers.setup(self)``
            function = self.project.function(resolved.name, call.name)
            return None if function is None else (caller, function)
        k = self._index.get(resolved) if isinstance(resolved, ClassRef) else None
        if k is None:
            # An unknown class's method, or a class outside the MRO: code we cannot follow.
            return None
        start = k + 1 if call.kind == "super_of" else k
        # ``Parent.m(self)``: a regular method, or a static or class method given the instance.
        return _first(self.lookup(call.name, start), self.lookup(call.name + STATIC, start))

    def outside_mro(self, caller: int, call: Call) -> bool:
        """Whether ``call`` names a class the source shows that is not in the MRO
        (``Other.__init__(self)``): what it runs on this instance is not a base's."""
        owner = self.mro[caller]
        if call.kind not in ("explicit", "super_of") or call.target is None or not isinstance(owner, ClassRef):
            return False
        resolved = self._resolve(owner, call)
        return isinstance(resolved, ClassRef) and resolved not in self._index

    def opaque_base(self, call: Call) -> int | None:
        """The MRO index of the unresolved base an explicit call names
        (``PPOTrainer.__init__(self)``, ``PPOTrainer`` a base the source does not show)."""
        if call.kind != "explicit" or call.target is None:
            return None
        return next((index for index, entry in enumerate(self.mro)
                     if isinstance(entry, Opaque) and entry.text == call.target), None)

    def _resolve(self, owner: ClassRef, call: Call) -> Target | None:
        assert call.target is not None
        if call.target.startswith(HELD):
            return self._held(call.target[len(HELD):])
        first, dot, rest = call.target.partition(".")
        info = self.infos[self._index[owner]]
        local = info.local_names if info is not None else {}
        if call.imported is None and first in local:  # a class its function defines
            return self.project.resolve(owner.module, local[first] + dot + rest)
        if call.imported is None and info is not None and first in info.local_imports:
            return self.project.resolve_imported(owner.module, info.local_imports[first], call.target)
        if call.imported is not None:
            return self.project.resolve_imported(owner.module, parse_local_import(call.imported), call.target)
        return self.project.resolve(owner.module, call.target)

    def _held(self, name: str) -> Target | None:
        """The class the instance finds under the class attribute ``name``
        (``base_class = Parent`` in its class or a base), resolved where that
        class body binds it; None where the first binding is no dotted name."""
        for entry, info in zip(self.mro, self.infos):
            if info is None:
                if isinstance(entry, Opaque):
                    return None
                continue
            if name in info.class_attrs:
                held = info.held.get(name)
                return None if held is None or not isinstance(entry, ClassRef) else self.project.resolve(
                    entry.module, held)
        return None

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
        seen: set[int] = set()
        while found is not None and found[1] is not None and found[0] not in seen:
            seen.add(found[0])
            alias = _aliased(found[1])
            if alias is None:
                break
            found = self.target(found[0], alias)  # ``__getattr__ = nn.Module.__getattr__``: torch's own
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
    requires: str = ""  # what the tests on the way need of the instance (``Read.requires``)
    # The innermost test of each call on the way that has one, outermost first,
    # and the event's own: every gate a reader must pass to get here.
    tests: tuple[str, ...] = ()
    # Where it is ``conditional``: requirements under which it surely runs
    # (every test on the way says all it needs); None: none are known.
    sure_when: tuple[str, ...] | None = None

    @property
    def condition(self) -> str | None:
        """The first test on the way that it runs under."""
        return self.tests[0] if self.tests else None


def _joined(first: str, second: str) -> str:
    return f"{first}{REQUIREMENT_SEPARATOR}{second}" if first and second else first or second


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
    # Each frame, and whether an exception it raises ends its caller too (the
    # call into it ran on no condition of the caller's and no handler catches it).
    partly_run: set[tuple[int, str, frozenset[str]]] = set()
    # Each frame's own: the parameters its call left at None (``@name == None``).
    stack: list[tuple[int, Method, Iterator[Event], tuple[Step, ...], bool, bool, tuple[str, ...], str, bool, Known,
                      tuple[str, ...] | None]] = [
        (index, method, iter(method.events), (), conditional, False, (), "", False, {}, None if conditional else ())
    ]
    while stack:
        index, method, events, chain, under, caught, why, needs, _, left_out, sure_when = stack[-1]
        event = next(events, None)
        if event is None:
            stack.pop()
            continue
        if type(event) is Parameters or type(event) is Signature:
            continue
        surely = not (under or getattr(event, "conditional", False))
        event_sure = sure_when if not getattr(event, "conditional", False) else None
        if type(event) is Read or type(event) is Call:
            if event.conditional and event.explained > 0 and sure_when is not None:
                event_sure = (*sure_when, *event.requires.split(REQUIREMENT_SEPARATOR)[:event.explained])
            requires = _joined(needs, event.requires)
            if decided and requires and contradicts(requires, decided):
                continue  # under a test the instance fails: never runs
            if left_out and event.requires and contradicts(event.requires, left_out):
                continue  # ``if X_pending is not None:`` where the call left X_pending out
            tests = _with_test(why, event.condition)
            if type(event) is Read and event.deref and decided and _none(decided, event):
                # ``self.a.b`` where the built instance holds None in ``a``: it
                # raises here, and up through every caller that cannot go on.
                while stack and stack.pop()[8]:
                    pass
                continue
        else:
            requires, tests = needs, why
        if type(event) is Call:
            found = model.target(index, event)
            yield Executed(event, index, method, chain, not surely, caught, found, requires, tests, event_sure)
            callee = found[1] if found is not None else None
            if event.kind == "self" and callee is None:
                # No class the source shows defines it: ``self.norm(x)`` calls an
                # instance attribute (a submodule the parent's ``__init__`` set).
                read = Read(event.name, event.line, event.col, event.conditional, event.condition, event.requires)
                yield Executed(read, index, method, chain, not surely, caught or event.caught, None, requires, tests,
                               event_sure)
            entered_caught = caught or event.caught
        else:
            yield Executed(event, index, method, chain, not surely, caught, None, requires, tests, event_sure)
            # Reading a property runs its getter, as a call would; assigning
            # one its setter (``self.x = v`` into ``@x.setter``).
            found = None
            if (type(event) is Read or type(event) is Set) and event.attr in model.properties:
                found = model.lookup(event.attr, 0)
                # ``@Parent.x.setter`` in a subclass: a property of its own (the
                # parent's getter, its setter), which assigning finds first.
                own = model.lookup(event.attr + SETTER, 0) if type(event) is Set else None
                if own is not None and found is not None and own[0] < found[0]:
                    found = own
                else:
                    if found is not None and model.class_attr_before(event.attr, found[0]):
                        found = None  # ``max_batch_size = None`` in a subclass hides the base's property
                    if found is not None and type(event) is Set:
                        found = _setter(model, found[0], event.attr)
            callee = found[1] if found is not None else None
            if callee is None or not (callee.is_property or callee.name.endswith(SETTER)):
                continue
            entered_caught = caught
        if found is None or callee is None:
            continue
        callee_index = found[0]
        key = (callee_index, callee.name)
        left_out = _left_out(event, callee)
        if left_out:
            # A run with parameters left at None may skip what another call
            # runs: entered once per set left out, and never taken as a sure run.
            partial = (callee_index, callee.name, frozenset(left_out))
            if partial in partly_run:
                continue
            partly_run.add(partial)
            seen.setdefault(key, True)
        else:
            if key in seen and (not seen[key] or not surely):
                continue
            seen[key] = not surely
        stack.append((
            callee_index, callee, iter(callee.events),
            (*chain, Step(index, method.name, event.line)), not surely, entered_caught,
            tests, requires, not (getattr(event, "conditional", True) or getattr(event, "caught", False)),
            left_out, event_sure,
        ))


def _left_out(event: Event, callee: Method) -> Known:
    """What ``callee``, run by ``event``, holds at None in the parameters the
    call leaves out (their default)."""
    if type(event) is not Call or event.passed is None or not callee.events:
        return {}
    signature = callee.events[0]
    if type(signature) is not Parameters:
        return {}
    return {f"{LOCAL}{name}": [("==", "None")] for name in signature.left_out(event.passed)}


def _first(a: Found | None, b: Found | None) -> Found | None:
    """Of two lookups, the one Python finds first in the MRO."""
    return a if b is None or (a is not None and a[0] <= b[0]) else b


def _aliased(method: Method) -> Call | None:
    """The call a method bound in a class body makes (``__getattr__ =
    nn.Module.__getattr__``: its one event, on its own line); None for a
    method with a body."""
    events = method.events
    if len(events) == 1 and type(events[0]) is Call and events[0].kind == "explicit" and (
            events[0].line == method.line):
        return events[0]
    return None


def _setter(model: ClassModel, index: int, name: str) -> tuple[int, Method] | None:
    """The setter of the property ``name`` that ``mro[index]`` defines, if it has one."""
    info = model.infos[index]
    setter = None if info is None else info.methods.get(name + SETTER)
    return None if setter is None else (index, setter)


def _with_test(tests: tuple[str, ...], test: str | None) -> tuple[str, ...]:
    """``tests`` and then ``test``, where it is one and not the last already."""
    return tests if test is None or (tests and tests[-1] == test) else (*tests, test)


def _none(decided: Known, read: Read) -> bool:
    """Whether the instance surely holds None in what ``read`` reads, read where it stands on no condition."""
    return not read.conditional and ("==", "None") in decided.get(read.attr, ())


def nearest_test(read: Read, first: str | None) -> str | None:
    """The read's own innermost test, where it is not the first on the way (``first``)."""
    return read.condition if read.condition is not None and read.condition != first else None


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
    # The test nearest the read, where it is not ``condition`` (``self.a if
    # self.flag else None``, ``algorithm.is_eagle3() and self.a``): what decides it last.
    guard: str | None = None
    # The tests between ``condition`` and ``guard``: the gates of the calls in
    # between (``if use_amx(self.proj): return self.forward_cpu(x)``).
    between: tuple[str, ...] = ()
    # Where the walk from its entry point met it (execution order): a read
    # met after one that surely fails never runs.
    order: int = 0
    # Under tests what is known of the built instance always passes (its own
    # constants, the only modality it takes): it runs on no condition.
    passes: bool = False

    def steps(self) -> tuple[Step, ...]:
        return (*self.chain, Step(self.owner, self.method, self.line))
