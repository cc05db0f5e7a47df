"""The simulation of ``C(...)``: what construction runs, what it leaves
unset (the ``__init__`` it skips and what they would set), and what is known
of the built instance."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vllm_sp_base._audit.frameworks import Refusal
from vllm_sp_base._audit.prescan._prescan import HARMLESS_EXTERNAL_BASES
from vllm_sp_base._audit.semantics._classes import ClassModel, Executed, Reached, nearest_test, walk
from vllm_sp_base._audit.semantics._parsed import unbound_in
from vllm_sp_base._audit.semantics._project import ClassRef, Opaque
from vllm_sp_base._audit.semantics._refusals import Refusing
from vllm_sp_base._audit.summaries._conditions import CALLED, EMPTY_SEQUENCES
from vllm_sp_base._audit.summaries._events import (
    DEFAULTED,
    FALSE_LITERALS,
    HELD,
    Assert,
    Call,
    Known,
    Marker,
    Read,
    Set,
    SetAny,
    SetEach,
    Signature,
    contradicts,
    defaulted,
    holds,
    requirements,
)
from vllm_sp_base._audit.summaries._summaries import Method, bound_methods


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
    # attribute -> the literal its last set binds where no set after it may
    # bind another (``self._prepared = False`` in the parent's ``__init__``,
    # then ``self._prepared = True`` in the child's): what a built instance holds.
    final: Known = field(default_factory=dict)
    asserted: list[tuple[str, str, str]] = field(default_factory=list)  # ``assert`` on no condition
    raises: bool = False  # it reaches a ``raise`` on no condition: nothing is ever built
    # ``__init__``s of the MRO that run only under a test (``super().__init__() if
    # flag else nn.Module.__init__(self)``): index -> (when it is skipped, the
    # MRO index of the class whose ``__init__`` calls it).
    skipped_unless: dict[int, tuple[str, int]] = field(default_factory=dict)
    # What an instance built without such an ``__init__`` is known to hold: the
    # ``__init__`` being built calls it under one test of an attribute it set
    # once before (``if self.encoder_only: nn.Module.__init__(self) else:
    # super().__init__(...)``), so where it did not run, that test failed.
    skipped_knowing: dict[int, Known] = field(default_factory=dict)
    # attribute -> (the ``__init__``s on the way, the innermost of them, (MRO
    # index of the method that sets it, line)). The set happens wherever that
    # innermost ``__init__`` runs, by whichever way: the walk enters it once.
    set_through: dict[str, list[tuple[frozenset[int], int, tuple[int, int]]]] = field(default_factory=dict)
    # Read while it is built where only ``__init__``s of ``skipped_unless`` set it so far.
    read_unless_set: dict[str, Reached] = field(default_factory=dict)

    def ran_init(self, index: int) -> bool:
        return (index, "__init__") in self.executed

    def set_only_through(self, index: int) -> dict[str, tuple[int, int]]:
        """Attributes construction sets only on a way through the ``__init__``
        at ``index`` (none set elsewhere, under a test or not): attribute ->
        where its first set is (MRO index of the method's class, line). What
        an instance built without it lacks."""
        found: dict[str, tuple[int, int]] = {}
        for attr, sets in self.set_through.items():
            if all(innermost in self.skipped_unless for _, innermost, _ in sets):
                lines = [line for inits, _, line in sets if index in inits]
                if lines:
                    found[attr] = lines[0]
        return found

    def may_have_run_init(self, index: int) -> bool:
        """It ran, or it lies past a base whose ``__init__`` we cannot see (which may chain on)."""
        return self.ran_init(index) or (self.unknown_from is not None and index > self.unknown_from)


def bound_once(
    model: ClassModel, built: Construction, attr: str, not_run: set[tuple[int, str]],
) -> tuple[int, str, int] | None:
    """Where construction binds ``attr`` once, on no condition, and no other
    method of the class may bind it after (``not_run``: methods that never
    run on the instance): (MRO index, method, line) of that set; else None."""
    if attr not in built.surely_set or built.sets_any:
        return None
    found = []
    for index, name in built.executed:
        info = model.infos[index]
        method = info.methods.get(name) if info is not None else None
        if method is not None:
            found += [(index, name, e.line) for e in method.events if type(e) is Set and e.attr == attr]
    if len(found) != 1:
        return None
    spelled = [attr.encode()]
    for index, info in enumerate(model.infos):
        if info is None:
            continue
        for name, method in bound_methods(info):
            if ((index, name) in built.executed or (index, name) in not_run or name in NOT_AFTER_CONSTRUCTION
                    or not method.may_name(spelled)):
                continue
            if attr in method.sets:
                return None
    return found[0]


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


def construct(model: ClassModel, refusals: Sequence[Refusal] = ()) -> Construction:
    """Simulate ``C(...)``: the ``__init__`` it finds, and everything that runs
    from there (parent ``__init__`` chains however spelled, helpers on self),
    in order; the reads of attributes nothing has set yet, what a framework's
    class refuses before its ``__init__`` ran (``refusals``) included."""
    built = Construction()
    found = model.lookup("__init__", 0)
    if found is None:
        return built
    if found[1] is None:
        built.unknown_from = found[0]
        return built
    init_calls: dict[int, list[Executed]] = {}
    sure_calls: set[int] = set()  # calls under a test construction decides true
    after_sets: dict[str, tuple[Reached, int]] = {}
    # What the sets so far bound on no condition to a literal: a test they fail
    # (``self.enable_pdmux = False`` then ``if self.enable_pdmux:``) hides its reads.
    so_far: Known = {}
    # A call of an ``__init__`` under one test of an attribute set once so far
    # (``_failed_test``) -> what the instance holds where that test failed.
    failing: dict[int, Known] = {}
    refusing = Refusing(model, refusals)
    for order, step in enumerate(walk(model, (found[0], found[1]), built.executed)):
        event = step.event
        for read in refusing.reads(step, built.sets):  # ``self.proj = nn.Linear(...)`` before ``Module.__init__``
            _meet_read(built, after_sets, so_far, step, read, order)
        if type(event) is Read:
            _meet_read(built, after_sets, so_far, step, event, order)
            continue
        if type(event) is Assert:
            if not step.conditional:
                built.asserted += requirements(event.requires)
            continue
        if type(event) is Marker:
            if event.kind == "raises" and not (event.conditional or step.conditional or step.caught):
                built.raises = True  # ``raise NotImplementedError(...)``: what follows never runs
                break
            continue
        if type(event) is Call:
            target = step.target
            if (event.name == "__init__" and target is not None and target[1] is not None
                    and not (event.conditional or step.conditional or step.caught)
                    and _refuses(target[1], event.passed)):
                built.raises = True  # ``__init__(self)`` given ``bias=bias``: TypeError, nothing after runs
                break
            if event.name == "__init__" and target is not None and target[1] is not None:
                init_calls.setdefault(target[0], []).append(step)
                known = _failed_test(step, found[0], built)
                if known is not None:
                    failing[id(step)] = known
                lacking = _lacking_tested(step)
                if lacking is not None and not _may_have(model, built, lacking):
                    sure_calls.add(id(step))  # ``if not hasattr(self, "weight"): super().__init__(...)``
            if (event.kind == "super_of" and target is None and event.target is not None
                    and not (event.conditional or step.conditional or step.caught)
                    and _names_nothing(model, step.owner, event.target)):
                built.raises = True  # ``super(Undefined, self)``: NameError, nothing after runs
                break
            unknown = None  # an __init__ the source does not show runs from this MRO index on
            if event.name == "__init__" and target is not None and target[1] is None:
                unknown = target[0]
            elif event.name == "__init__" and target is None:
                # ``Base.__init__(self)`` of a base that resolves to no class the source
                # shows; or an __init__ from outside the MRO: who is built is unclear.
                unknown = model.opaque_base(event)
                if unknown is None and (model.outside_mro(step.owner, event) or _held_unknown(event)):
                    unknown = 0
            if unknown is not None:
                built.unknown_from = unknown if built.unknown_from is None else min(unknown, built.unknown_from)
            continue
        names = _set_names(model, step)
        _bind(so_far, names, event.value if type(event) is Set and not step.conditional else None)
        if names is None:
            built.sets_any = True
        else:
            built.sets.update(names)
            on_the_way = [s.owner for s in step.chain if s.method == "__init__"]
            if step.method.name == "__init__":
                on_the_way.append(step.owner)
            inits = frozenset(on_the_way)
            innermost = on_the_way[-1] if on_the_way else -1
            for name in names:
                built.values.setdefault(name, set()).add(event.value if type(event) is Set else None)
                built.set_through.setdefault(name, []).append((inits, innermost, (step.owner, event.line)))
            if not step.conditional:
                built.surely_set.update(names)
    built.final = so_far
    built.skipped_unless = _run_under_a_test(init_calls, sure_calls)
    for index in built.skipped_unless:
        calls = init_calls[index]
        known = failing.get(id(calls[0])) if len(calls) == 1 else None
        if known is not None and all(len(built.set_through[attr]) == 1 for attr in known):
            built.skipped_knowing[index] = known  # nothing set the attribute again while built
    built.read_unless_set = {
        attr: read for attr, (read, before) in after_sets.items()
        if all(innermost in built.skipped_unless for _, innermost, _ in built.set_through[attr][:before])
    }
    return built


def _held_unknown(call: Call) -> bool:
    """``self.agent_class.__init__(self)`` where no class body binds
    ``agent_class`` to a class (a property setter picks it from a dict): it
    runs some class's ``__init__``, which one the source does not say."""
    return call.target is not None and call.target.startswith(HELD)


def _meet_read(
    built: Construction, after_sets: dict[str, tuple[Reached, int]], so_far: Known, step: Executed, event: Read,
    order: int,
) -> None:
    """Construction meets a read: the first of an attribute nothing set yet
    (or the first sure one), or the first after an ``__init__`` run under a
    test set it."""
    if so_far and step.requires and contradicts(step.requires, so_far):
        return
    first = built.early_reads.get(event.attr)
    if (
        not step.caught and not built.sets_any and event.attr not in built.sets
        and (first is None or (first.conditional and not step.conditional))
    ):  # the first read, or the first sure one
        built.early_reads[event.attr] = Reached(
            event.attr, step.owner, step.method.name, event.line, step.chain, step.conditional,
            step.condition, step.requires, nearest_test(event, step.condition), order=order)
    elif not step.caught and event.attr in built.set_through and event.attr not in after_sets:
        # The first read after something set it: it fails where only an
        # ``__init__`` run under a test set it, and that test failed.
        after_sets[event.attr] = (Reached(
            event.attr, step.owner, step.method.name, event.line, step.chain, step.conditional,
            step.condition, step.requires), len(built.set_through[event.attr]))


#: What an attribute known to fail a test passes: (test, literal) -> the fact.
_FAILED = {"true": "false", "false": "true", "==": "!=", "!=": "=="}


def _failed_test(step: Executed, built_index: int, built: Construction) -> Known | None:
    """What the instance holds where an ``__init__`` call, made under one test
    by the ``__init__`` being built (``built_index``), does not run: the test
    failed. Only a test of an attribute set once so far (the caller checks
    that nothing sets it again while it is built)."""
    event = step.event
    if type(event) is not Call or not event.sole_test or step.chain or step.owner != built_index or step.caught:
        return None
    needed = requirements(event.requires)
    if len(needed) != 1:
        return None
    attr, test, literal = needed[0]
    if not attr.isidentifier() or len(built.set_through.get(attr, ())) != 1:
        return None
    return {attr: [(_FAILED[test], literal)]}


def _bind(so_far: Known, names: tuple[str, ...] | None, literal: str | None) -> None:
    """``so_far`` after a set of ``names`` (None: any) to ``literal`` (None: a value not known)."""
    if names is None:
        so_far.clear()
        return
    for name in names:
        if literal is None:
            so_far.pop(name, None)
        else:
            so_far[name] = [("==", literal)]


#: The one test an ``__init__`` call may sit under that construction decides:
#: the attribute is not there yet (``make_weight``'s ``if not hasattr(self,
#: "weight"): super().__init__(...)``, run from ``__init__``).
_LACKING = re.compile(r"not \(hasattr\(self, '(\w+)'\)\)")


def _lacking_tested(step: Executed) -> str | None:
    """The attribute whose absence is the only test over ``step``, if that is so."""
    found = _LACKING.fullmatch(step.condition or "")
    return found.group(1) if found and step.requires == f"!{CALLED}hasattr/2" else None


def _may_have(model: ClassModel, built: Construction, name: str) -> bool:
    """Whether the instance may have ``name`` at this point of construction:
    set so far, a method, property or class attribute of the MRO, or a class
    the source does not show."""
    return (name in built.sets or built.sets_any or model.lookup(name, 0) is not None
            or any(info is not None and name in info.class_attrs for info in model.infos))


def _run_under_a_test(init_calls: dict[int, list[Executed]], sure: set[int]) -> dict[int, tuple[str, int]]:
    """The ``__init__``s every call of which runs under a test, none under its
    opposite (``if c: super().__init__(a) else: super().__init__(b)`` runs it
    surely): index -> (the opposite of the first call's test, its caller). A
    call under a loop or inside a ``try`` that swallows AttributeError has no
    test to oppose: it counts as run."""
    found: dict[int, tuple[str, int]] = {}
    for index, calls in init_calls.items():
        tests = {step.condition for step in calls}
        if None in tests or any(not step.conditional or step.caught or id(step) in sure for step in calls):
            continue
        if any(opposite(test) in tests for test in tests if test is not None):
            continue
        first = calls[0]
        assert first.condition is not None
        found[index] = (opposite(first.condition), first.owner)
    # The walk enters a method once: what an ``__init__`` first entered under
    # a test calls carries that test, though another branch ran it too. A
    # call on no condition of its own, from an ``__init__`` that surely runs, is sure.
    # So is one an ``__init__`` that surely runs calls on both arms of one of
    # its tests (``if v: super().__init__() else: Base.__init__(self)``).
    covering = {index: _callers_covering(init_calls[index]) for index in found}
    changed = True
    while changed:
        changed = False
        for index in list(found):
            if any(
                step.method.name == "__init__" and step.owner not in found
                and ((not step.event.conditional and not step.event.caught)  # type: ignore[union-attr]
                     or step.owner in covering[index])
                for step in init_calls[index]
            ):
                del found[index]
                changed = True
    return found


def _callers_covering(calls: list[Executed]) -> set[int]:
    """The ``__init__``s (MRO index) whose own calls among ``calls`` sit on
    both arms of one test, each under that test alone: wherever such a
    caller runs, one of them does."""
    own: dict[int, set[str]] = {}
    for step in calls:
        event = step.event
        if (step.method.name == "__init__" and type(event) is Call and event.sole_test and not event.caught
                and event.condition is not None):
            own.setdefault(step.owner, set()).add(event.condition)
    return {owner for owner, tests in own.items() if any(opposite(test) in tests for test in tests)}


def opposite(test: str) -> str:
    """The source of a test's opposite, as the enclosing tests spell an ``else``
    (``_conditions``): ``not x``, ``not (a and b)``, and back."""
    if test.startswith("not (") and test.endswith(")"):
        return test[5:-1]
    if test.startswith("not ") and " " not in test[4:]:
        return test[4:]
    return f"not ({test})" if " " in test else f"not {test}"


def _refuses(init: Method, passed: str | None) -> bool:
    """Whether a call that passed ``passed`` (``Call.passed``; None: out of
    sight) does not fit ``init``'s signature, where its summary has one."""
    signature = next((e for e in init.events[:2] if type(e) is Signature), None)
    return passed is not None and signature is not None and signature.refuses(passed)


def _names_nothing(model: ClassModel, owner: int, target: str) -> bool:
    """Whether ``target``'s first name is bound nowhere in the module of ``mro[owner]``."""
    entry = model.mro[owner]
    return isinstance(entry, ClassRef) and unbound_in(model.project, entry.module, target.split(".", 1)[0])


def _root(name: str) -> str:
    """The attribute a known name is about: ``a`` of ``a.b`` and of ``a?False``."""
    return name.split(".", 1)[0].partition(DEFAULTED)[0]


def decided_constants(
    model: ClassModel, built: Construction, names: set[str], not_run: set[tuple[int, str]]
) -> Known:
    """What is known of ``names`` (attributes, ``a.b`` chains) once the
    instance is built and no other method of the class sets them (or the
    first attribute of the chain): construction binds the attribute on no
    condition and only to literals (``self.enable_pdmux = False`` decides
    every ``if self.enable_pdmux:``), or asserts it on no condition (``assert
    self.config.rank is not None``); another method may bind it again, to a
    literal that passes the same tests. ``not_run``: methods that never run on
    the instance (what only a skipped ``__init__`` runs)."""
    known: Known = {}
    unknown_code = any(  # a base the source does not show may set anything, but a harmless one
        info is None and isinstance(entry, Opaque) and entry.text.rsplit(".", 1)[-1] not in HARMLESS_EXTERNAL_BASES
        for entry, info in zip(model.mro, model.infos))
    for name in names:
        spelled_default = defaulted(name)
        if spelled_default is not None:
            # ``getattr(self, "a", default)``: what construction binds to ``a``,
            # else, where nothing in the class sets ``a``, the default.
            attr, default = spelled_default
            facts = decided_constants(model, built, {attr}, not_run).get(attr, [])
            if not facts and not unknown_code and not built.sets_any and attr not in built.values and not any(
                    info is not None and attr in info.class_attrs for info in model.infos):
                facts = [("==", default)]
            if facts:
                known[name] = facts
            continue
        facts = [(test, literal) for attr, test, literal in built.asserted if attr == name]
        values = built.values.get(name, set())
        if name in built.final and not built.sets_any:
            facts += built.final[name]  # the last set wins, whatever the ones before bound
        elif values and not built.sets_any and name in built.surely_set and None not in values:
            literals = {v for v in values if v is not None}
            if len(literals) == 1:
                facts.append(("==", literals.pop()))
            elif len({v in FALSE_LITERALS for v in literals}) == 1:
                facts.append(("false" if next(iter(literals)) in FALSE_LITERALS else "true", ""))
        if facts:
            known[name] = facts
    if not known:
        return known
    roots = {_root(name): name for name in known}
    spelled = [root.encode() for root in roots]
    # An empty list stays empty only where nothing fills it (``self.layers.append``,
    # construction's own included): a method that takes an attribute of it may.
    sequences = {name for name, facts in known.items()
                 if any(literal in EMPTY_SEQUENCES for _, literal in facts)}
    for index, info in enumerate(model.infos):
        if info is None:
            continue
        # torch's own sets under computed names fill parameters, buffers and
        # submodules (``_load_from_state_dict``), never a flag of the model.
        torch = model.label_module(index).split(".", 1)[0] == "torch"
        for method_name, method in bound_methods(info):
            if (index, method_name) in not_run or not method.may_name(spelled):
                continue
            if sequences:
                filled = {e.attr for e in method.events if type(e) is Read and e.deref and e.attr in sequences}
                known = {n: f for n, f in known.items() if n not in filled}
            if (index, method_name) in built.executed or method_name in NOT_AFTER_CONSTRUCTION:
                continue
            for event in method.events:
                if type(event) is Set and event.attr in roots:
                    # Binding a literal every fact holds of keeps them (``prepare_model``
                    # setting ``self._model_prepare = True`` that construction set True).
                    known = {n: f for n, f in known.items() if _root(n) != event.attr or (
                        "." not in n and event.value is not None
                        and all(holds(test, literal, event.value) for test, literal in f))}
                elif type(event) in (SetAny, SetEach) and not torch:
                    return {}  # a set whose name the source does not show
    return known


#: Methods that do not set a built instance's attributes as it runs: other
#: ``__init__``, pickling and copying, the hook every ``self.a = v`` goes through.
NOT_AFTER_CONSTRUCTION = frozenset({
    "__init__", "__new__", "__setattr__", "__delattr__", "__setstate__", "__getstate__",
    "__reduce__", "__reduce_ex__", "__copy__", "__deepcopy__", "__init_subclass__",
})


def may_skip_an_init(model: ClassModel) -> bool:
    """Whether ``C(...)`` can skip a known ``__init__``, from the ``__init__``
    chain alone (bodies the cutter keeps parsed): no helper followed, so it runs
    fewer ``__init__`` than ``construct`` finds, and says False only where
    ``construct`` would find nothing skipped, surely or under a test."""
    ran: set[int] = set()
    found = model.lookup("__init__", 0)
    todo = [found] if found is not None else []
    while todo:
        index, method = todo.pop()
        if method is None or index in ran:
            continue
        ran.add(index)
        for call in method.init_calls:
            target = model.target(index, call)
            # ``super().__init__()`` past the last class that defines one (torch's
            # ``if self.call_super_init: super().__init__()``) runs ``object.__init__``:
            # skipping it leaves nothing unset.
            nothing_past = target is None and call.kind in ("super", "self")
            if not nothing_past and call.conditional and call.condition is not None and not call.caught:
                return True  # an __init__ that may run only under its test
            todo.append(target)  # type: ignore[arg-type]
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


def run_later(model: ClassModel, skipped: list[int], called: Callable[[str], bool]) -> set[int]:
    """Of ``skipped``, the ``__init__``s another method of the MRO runs on the
    instance where the tree calls that method (``called``: ``window.init_size(n,
    m)`` into ``super().__init__(n, m, ranges)``, darts' ``Itakura``): put off
    to the step its users take first, not skipped. A method nothing calls
    runs nothing (funasr's ``TriStageLR.init_schedule``). A dunder is left
    out: Python runs it where construction and the entry points say (a
    ``__post_init__`` the written ``__init__`` may never call)."""
    found: set[int] = set()
    for owner, info in enumerate(model.infos):
        if info is None:
            continue
        for name, method in bound_methods(info):
            if (name.startswith("__") and name.endswith("__")) or not method.spells(b"__init__"):
                continue
            runs = {target[0] for event in method.events if type(event) is Call and event.name == "__init__"
                    and (target := model.target(owner, event)) is not None and target[0] in skipped}
            if runs - found and called(name):
                found |= runs
    return found


def would_set(
    model: ClassModel, built: Construction, skipped: list[int], only_there: set[tuple[int, str]]
) -> dict[str, tuple[int, int, int]]:
    """Attributes the skipped ``__init__`` would have set: attribute -> (MRO
    index of that ``__init__``, MRO index of the class whose method sets it
    (a helper's, a parent's it chains to), line of the set), the first skipped ``__init__``
    in MRO order winning. What they run counts too (their helpers), attributed
    to the ``__init__`` that runs it; ``only_there`` receives the methods they
    run that construction does not."""
    found: dict[str, tuple[int, int, int]] = {}
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
                found.setdefault(attr, (index, step.owner, step.event.line))
    return found
