"""SPB001: a read of an attribute that only a skipped ``__init__`` sets, on a
path Python runs: during construction, or from an entry point."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from vllm_sp_base._audit._options import (
    DEFAULT_ENTRY_POINTS,
    DEFAULT_FEATURE_ENTRY_POINTS,
    DEFAULT_PLAIN_ENTRY_POINTS,
    DEFAULT_REFUSALS,
    DEFAULT_WRAPPERS,
)
from vllm_sp_base._audit.frameworks import Refusal, Wrapper
from vllm_sp_base._audit.report._finding import Finding, Frame, Unresolved, display_path
from vllm_sp_base._audit.rule import _examples, _examples_frameworks, _examples_python
from vllm_sp_base._audit.semantics._built import called_by_name, method_called
from vllm_sp_base._audit.semantics._call_sites import entries_called
from vllm_sp_base._audit.semantics._chains import SkipAnswers
from vllm_sp_base._audit.semantics._chosen import chosen_facts
from vllm_sp_base._audit.semantics._classes import ClassModel, Reached
from vllm_sp_base._audit.semantics._construction import (
    Construction,
    construct,
    decided_constants,
    run_later,
    skipped_inits,
    would_set,
)
from vllm_sp_base._audit.semantics._dispatch import reach, unreached
from vllm_sp_base._audit.semantics._metaclass import OWN_CALL, UNSEEN, built_by_a_metaclass
from vllm_sp_base._audit.semantics._outside import filled_from_outside
from vllm_sp_base._audit.semantics._project import ClassRef, MroEntry, Opaque, Project
from vllm_sp_base._audit.semantics._refused import refused_settings
from vllm_sp_base._audit.semantics._runtime import (
    TARGET_ONLY,
    abstract_left,
    entry_points_for,
    entry_points_in_role,
    feature,
    filled_on_this_instance,
    is_draft,
    role_facts,
    set_by_the_engine,
    wrapper_reads,
)
from vllm_sp_base._audit.semantics._unresolved import unseen_getattr, unseen_metaclass
from vllm_sp_base._audit.summaries._conditions import EMPTY_SEQUENCES
from vllm_sp_base._audit.summaries._events import Known, defaulted, requirements
from vllm_sp_base._audit.summaries._summaries import bound_methods, python_name

#: How many times the reads left after a decided test are decided again (each
#: round a read under tests of other attributes may come first).
_DECIDING_ROUNDS = 4


class SkippedInitRead:
    """A class runs its own ``__init__`` and not a parent's (``nn.Module.__init__(self)``,
    ``super(Parent, self).__init__()``, no call at all), yet code that runs on
    it reads ``self.<attr>`` that only the skipped ``__init__`` sets.

    Construction and dispatch are simulated as Python runs them: the
    ``__init__`` chain however spelled, helpers on ``self``, ``super().m()``
    into overridden parents, properties and local functions where they run,
    guards (``hasattr``, ``getattr`` with a default, a handler that swallows
    AttributeError). A read is any use, calling included (``self.norm(x)``).
    What the engine calls on the built object is its engine model: a torch
    module's every-load entry points, a feature's only where the instance
    passes the engine's check for it (EPLB: ``num_moe_layers``), a plain class
    the engine drives (workers, proposers). A test the built instance always
    fails (``self.enable_pdmux = False``) hides what runs under it. A parent
    ``__init__`` run only under a test (``super().__init__() if flag else
    nn.Module.__init__(self)``) is skipped when it fails; an unset
    ``__slots__`` slot is no default.

    ``error``: the read runs during construction before anything set the
    attribute, or an every-load entry point (``forward``, ``load_weights``,
    ``embed_multimodal``, ...) reaches it on no condition; ``warning``:
    reached under a condition or a feature, which the finding names;
    ``note`` (``--show-unreachable`` only): no entry point reaches it.
    """

    CODE = "SPB001"

    VALID = _examples.VALID + _examples_python.VALID + _examples_frameworks.VALID
    INVALID = _examples.INVALID + _examples_python.INVALID + _examples_frameworks.INVALID

    def __init__(
        self,
        project: Project,
        in_scope: Callable[[str], bool],
        entry_points: Sequence[str] = DEFAULT_ENTRY_POINTS,
        show_unreachable: bool = False,
        feature_entry_points: Sequence[str] = DEFAULT_FEATURE_ENTRY_POINTS,
        plain_entry_points: Sequence[tuple[str, Sequence[str]]] = DEFAULT_PLAIN_ENTRY_POINTS,
        spelling: Callable[[str], list[tuple[str, bytes]]] | None = None,
        wrappers: Sequence[tuple[str, Wrapper]] = DEFAULT_WRAPPERS,
        refusals: Sequence[Refusal] = DEFAULT_REFUSALS,
        module_of: Callable[[str], str | None] | None = None,
        builders: Callable[[ClassRef], list[tuple[str, bytes]]] | None = None,
    ) -> None:
        self.project = project
        # name -> (path, bytes) of the audited files that spell it; None: not known
        # (then no list construction leaves empty is taken to stay empty).
        self.spelling = spelling
        self.in_scope = in_scope  # module name -> audited?
        self.entry_points = tuple(entry_points)
        self.show_unreachable = show_unreachable
        self.feature_entry_points = tuple(feature_entry_points)
        self.plain_entry_points = tuple(plain_entry_points)
        self.wrappers = tuple(wrappers)
        self.refusals = tuple(refusals)
        self.module_of = module_of  # an audited file's module name; None: not known (no call site is read)
        # (path, bytes) of the audited files that may build a class by a name; None: those that spell it.
        self.builders = builders
        self._may_skip = SkipAnswers(project)
        # Unresolved metaclasses met by ``check``, said by whoever reports unresolved bases.
        self.unseen_metaclasses: list[Unresolved] = []

    def check(self, ref: ClassRef) -> list[Finding]:
        if not self._may_skip(ref):
            return []
        model = ClassModel(self.project, ref)
        infos = model.infos
        if not any(i is not None and "__init__" in i.methods for i in infos[1:]):
            return []
        if model.marked("__new__", "returns_other"):
            return []  # C(...) builds other classes: they are checked
        if abstract_left(model):
            return []  # ``C()`` raises TypeError (an abstract method left): its subclasses are checked
        built_by = built_by_a_metaclass(self.project, model.mro)
        if built_by == OWN_CALL:
            return []  # what C(...) runs is the metaclass's __call__, not the __init__ chain alone
        if model.marked("__getattr__", "raises_attribute_error") is False or model.marked(
                "__getattr__", "delegates") or model.marked("__getattribute__", "answers_missing"):
            # A ``__getattr__`` that may answer (a delegate's ``getattr(self.worker,
            # name)``), or a ``__getattribute__`` that catches a failed lookup, serves
            # what the skipped ``__init__`` left unset: no read is sure to fail.
            return []
        if unseen_getattr(self.project, model.mro):
            return []  # so may one of a base the source does not show
        built = construct(model, self.refusals)
        findings = self._skipped(model, ref, built)
        if built.skipped_unless and not built.raises:
            findings += self._skipped_under_a_test(model, ref, built, {f.attribute for f in findings})
        if findings and built_by == UNSEEN:
            # Said where it matters, in either mode: what would be reported is unknown.
            self.unseen_metaclasses.append(unseen_metaclass(self.project, ref, self._path(ref)))
            return []
        return findings

    def _skipped(self, model: ClassModel, ref: ClassRef, built: Construction) -> list[Finding]:
        """What the ``__init__``s construction never runs leave unset, read."""
        skipped = skipped_inits(model, built)
        if skipped:
            later = run_later(model, skipped, self._method_called)
            skipped = [i for i in skipped if i not in later]
        if built.unknown_from is not None:
            # An ``__init__`` the source does not show ran (gpytorch's ``ExactGP``,
            # not installed): its own bases are unknown, so a class from outside
            # the audited tree that does not derive from it (torch's ``Module``)
            # may be one it runs, wherever the MRO computed without them puts it.
            unseen = model.mro[built.unknown_from]
            before = self._listed_before(model, unseen)
            skipped = [i for i in skipped if not self._may_be_a_base_of(model.mro[i], unseen, before)]
        skippers = _skippers(skipped, built, model.mro)
        if not any(isinstance(r, ClassRef) and self.in_scope(r.module) for r in skippers.values()):
            return []
        only_skipped: set[tuple[int, str]] = set()
        would = would_set(model, built, skipped, only_skipped)
        class_level = _class_level(model)
        candidates = set(would) - class_level
        if not candidates:
            return []
        early = {a: r for a, r in built.early_reads.items() if a in candidates}
        missing = candidates - built.sets - set(early)
        # Construction that always raises leaves no instance for anything to run on.
        entries, features = ((), ()) if built.raises else entry_points_for(
            model, self.entry_points, self.feature_entry_points, self.plain_entry_points,
            built.sets | class_level, built.sets_any, lambda: self._called_by_name(ref),
        )
        # Where construction sets names the source does not show, a use is too weak a witness.
        sites = {} if built.raises or built.sets_any else self._call_sites(model, ref, missing, (*entries, *features))
        features = (*features, *sites)  # where the tree calls it: a use, not every one
        reached = reach(model, missing, entries, features)
        tested = {attr for _, read in reached.values() for attr, _, _ in requirements(read.requires)}
        if reached:  # what it binds to None raises where it is used at once (``self.tower.config``)
            tested |= {attr for attr, values in built.values.items() if values == {"None"}}
        # What construction's constants and the engine's role for the class decide.
        decided: Known = {}
        for _ in range(_DECIDING_ROUNDS):
            decided = {
                **role_facts(model, tested), **self._constants(model, built, tested, only_skipped),
                **chosen_facts(model, built, tested, only_skipped, self.spelling),
                **refused_settings(model, built, tested, only_skipped, self.spelling),
            } if tested else {}
            if not decided:
                break
            reached = reach(model, missing, entries, features, decided)  # a test it always fails hides its reads
            # A read hidden so may leave one under other tests first: what decides those too.
            more = {attr for _, read in reached.values() for attr, _, _ in requirements(read.requires)} - tested
            if not more:
                break
            tested |= more
        for attr, hit in wrapper_reads(model, self.wrappers, missing, entries).items():
            if attr not in reached or reached[attr][1].conditional:
                reached[attr] = hit
        # Only now, for the few attributes left: it parses every method that may name them.
        asked = missing if self.show_unreachable else set(reached)
        if asked:
            every_load = frozenset(a for a, (entry, _) in reached.items() if entry not in features)
            set_later = (self._set_elsewhere(model, asked, only_skipped, every_load)
                         | (set_by_the_engine(model) & asked))
            missing -= set_later
            reached = {a: r for a, r in reached.items() if a not in set_later}
        if not (early or reached or self.show_unreachable):
            return []
        findings: list[tuple[str, str, Reached]] = []  # (severity, entry, read)
        for read in early.values():
            severity = "warning" if read.conditional else "error"
            findings.append((severity, "__init__", read))
        # Where building surely fails, nothing after it runs: the rest can wait.
        built_fails = any(severity == "error" for severity, _, _ in findings)
        for attr in sorted(missing):
            if attr in reached:
                entry, read = reached[attr]
                sure = not (read.conditional or built.sets_any or built_fails)
                findings.append(("error" if sure else "warning", entry, read))
        if self.show_unreachable:
            left = missing - set(reached)
            for read in unreached(model, left, only_skipped | set(built.executed)).values():
                findings.append(("note", "", read))
        masks = _masks(findings, built_fails)
        reported = []
        for severity, entry, read in sorted(findings, key=lambda f: f[2].attr):
            finding = self._finding(model, ref, severity, entry, read, would[read.attr], skippers, sites)
            if read.attr in masks:
                by, while_built = masks[read.attr]
                finding = dataclasses.replace(finding, masked_by=by, masked_while_built=while_built)
            reported.append(finding)
        return reported

    def _method_called(self, name: str) -> bool:
        """Whether an audited file calls a method ``name`` on some object (``window.init_size(n, m)``)."""
        return self.spelling is not None and method_called(name, self.spelling(name))

    def _called_by_name(self, ref: ClassRef) -> bool:
        """Whether an audited file calls the class by its name (``Runner(worker, step)``):
        one of those that bind its name or its module (the pre-scan says which)."""
        name = python_name(ref.name)
        if self.builders is not None:
            return called_by_name(name, self.builders(ref))
        return self.spelling is None or called_by_name(name, self.spelling(name))

    def _call_sites(
        self, model: ClassModel, ref: ClassRef, missing: set[str], entries: Sequence[str],
    ) -> dict[str, tuple[str, int]]:
        """What the tree calls on a plain class's instances, said where (``semantics/_call_sites.py``)."""
        spelling, module_of = self.spelling, self.module_of
        if spelling is None or module_of is None:
            return {}

        def texts() -> list[tuple[str, bytes]]:
            return self.builders(ref) if self.builders is not None else spelling(python_name(ref.name))

        sites = entries_called(model, missing, entries, texts, module_of)
        return {method: (self._shown(path), line) for method, (path, line) in sites.items()}

    def _shown(self, path: str) -> str:
        """``path`` as the report says the finding's other paths (below the working directory, relative)."""
        module = self.module_of(path) if self.module_of is not None else None
        located = self.project.module_file(module) if module is not None else None
        return display_path(located[0] if located and located[0] else path)

    def _may_be_a_base_of(self, entry: MroEntry, unseen: MroEntry, before: set[MroEntry]) -> bool:
        """Whether ``entry``, a class the source shows, may be a base of the
        unresolved ``unseen``: one from outside the audited tree that does not
        derive from it (a package's class may derive from another package's),
        nor from a base listed before it (``class C(nn.Linear, Base)``:
        ``nn.Linear`` comes before ``Base`` in any MRO)."""
        if not (isinstance(entry, ClassRef) and isinstance(unseen, Opaque) and not self.in_scope(entry.module)):
            return False
        ancestry = self.project.mro(entry)
        return unseen not in ancestry and not any(base in ancestry for base in before)

    def _listed_before(self, model: ClassModel, unseen: MroEntry) -> set[MroEntry]:
        """The bases some class of the MRO lists before ``unseen``."""
        found: set[MroEntry] = set()
        for entry in model.mro:
            if isinstance(entry, ClassRef):
                bases = self.project.bases(entry)
                if unseen in bases:
                    found.update(bases[: bases.index(unseen)])
        return found

    def _skipped_under_a_test(
        self, model: ClassModel, ref: ClassRef, built: Construction, reported: set[str]
    ) -> list[Finding]:
        """What an ``__init__`` run only under a test leaves unset when the test
        fails (``super().__init__() if flag else nn.Module.__init__(self)``),
        read: a warning, ``when not flag``. An attribute construction sets
        anywhere else (the other branch too) is not in question."""
        class_level = _class_level(model)
        findings: list[Finding] = []
        for index, (when, caller) in sorted(built.skipped_unless.items()):
            skipper = model.mro[caller]
            if not (isinstance(skipper, ClassRef) and self.in_scope(skipper.module)):
                continue
            lacks = {a: line for a, line in built.set_only_through(index).items()
                     if a not in class_level and a not in reported}
            if not lacks:
                continue
            entries, features = entry_points_for(
                model, self.entry_points, self.feature_entry_points, self.plain_entry_points,
                built.sets | class_level, built.sets_any,
            )
            # A read inside that ``__init__`` does not run when it does not.
            early = {a: ("__init__", r) for a, r in built.read_unless_set.items()
                     if a in lacks and index not in _inits_on_the_way(r)}
            knowing = self._knowing(model, built, index)
            in_role = None if knowing is None else entry_points_in_role(knowing)
            if in_role is not None:  # served in the role the failed test says: only its calls
                entries, features = in_role, ()
            reached = reach(model, set(lacks) - set(early), entries, features, knowing)
            every_load = frozenset(a for a, (entry, _) in reached.items() if entry not in features)
            set_later = (self._set_elsewhere(model, set(reached), set(built.executed), every_load)
                         | set_by_the_engine(model))
            reached = {a: r for a, r in reached.items() if a not in set_later} | early
            for attr in sorted(reached):
                entry, read = reached[attr]
                also = self._condition(entry, read, {})
                finding = self._finding(model, ref, "warning", entry, read, (index, *lacks[attr]), {index: skipper}, {})
                findings.append(dataclasses.replace(
                    finding, condition=f"when {when}" + (f", {also}" if also else "")))
                reported.add(attr)
        return findings

    def _knowing(self, model: ClassModel, built: Construction, index: int) -> Known | None:
        """What an instance built without the ``__init__`` at ``index`` holds
        (the test its call failed), where no method but ``__init__`` sets it again."""
        known = built.skipped_knowing.get(index)
        if known is None or self._set_elsewhere(model, set(known), set(built.executed)):
            return None
        return known

    def _constants(
        self, model: ClassModel, built: Construction, tested: set[str], only_skipped: set[tuple[int, str]]
    ) -> Known:
        """What construction decides of ``tested``: ``decided_constants``, less
        the lists it leaves empty that code outside the class may fill on this
        instance (an owner's ``self.model.layers_to_capture = [...]``)."""
        known = decided_constants(model, built, tested, only_skipped)
        for name in [n for n, facts in known.items()
                     if defaulted(n) is not None or any(lit in EMPTY_SEQUENCES for _, lit in facts)]:
            # The default of ``getattr(self, "a", default)`` holds only where
            # nothing outside the class binds ``a`` on this instance either.
            attr = spelled[0] if (spelled := defaulted(name)) is not None else name
            writers = None if self.spelling is None else filled_from_outside(attr, self.spelling(attr))
            if filled_on_this_instance(model, writers):
                del known[name]
        return known

    def _set_elsewhere(
        self, model: ClassModel, missing: set[str], only_skipped: set[tuple[int, str]],
        every_load: frozenset[str] = frozenset(),
    ) -> set[str]:
        """Attributes some other method of the MRO sets (a lazy setter, a
        ``setup()`` the runner calls first): a read of them may well run after.
        Not a setter the engine calls only on the target, on a draft; nor, for
        a read on every load (``every_load``), one the engine calls only with
        a feature on (EAGLE-3's ``set_eagle3_layers_to_capture``): with it
        off, nothing sets the attribute before the read."""
        names = [attr.encode() for attr in missing]
        not_run = TARGET_ONLY if is_draft(model) else frozenset()
        only_with_a_feature = frozenset(self.feature_entry_points) | TARGET_ONLY
        found: set[str] = set()
        for index, info in enumerate(model.infos):
            if info is None:
                continue
            for name, method in bound_methods(info):
                if (name == "__init__" or name in not_run or name in _NOT_BEFORE_A_READ
                        or (index, name) in only_skipped or not method.may_name(names)):
                    continue
                found.update(set(method.sets) - every_load if name in only_with_a_feature else method.sets)
        return found & missing

    def _finding(
        self,
        model: ClassModel,
        ref: ClassRef,
        severity: str,
        entry: str,
        read: Reached,
        set_at: tuple[int, int, int],
        skippers: dict[int, MroEntry],
        sites: dict[str, tuple[str, int]],
    ) -> Finding:
        cls = model.infos[0]
        assert cls is not None
        skip_index, set_index, set_line = set_at
        owner = model.mro[read.owner]
        skipped_ref, setter = model.mro[skip_index], model.mro[set_index]
        assert isinstance(owner, ClassRef) and isinstance(skipped_ref, ClassRef) and isinstance(setter, ClassRef)
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
            set_path=self._path(setter),
            skipped_by=str(skippers[skip_index]),
            entry=entry or None,
            chain=chain,
            condition=self._condition(entry, read, sites),
        )

    def _condition(self, entry: str, read: Reached, sites: dict[str, tuple[str, int]]) -> str | None:
        """What makes the read happen, where not every load does: the feature
        that calls the entry point, the tree's call of it, or the first test
        on the way."""
        if entry in sites:
            path, line = sites[entry]
            return f"called at {path}:{line}"
        if entry in self.feature_entry_points and entry not in self.entry_points:
            return feature(entry).label
        if not (read.condition and (read.conditional or read.passes)):
            return None
        # The first test on the way, the gates of the calls in between, and the
        # one nearest the read (``self.a if self.flag else None`` in a method a
        # branch calls); of a long way, the first and the last two.
        tests = [read.condition, *read.between, *([read.guard] if read.guard else [])]
        if len(tests) > _TESTS_SAID:
            tests = [tests[0], "...", *tests[-(_TESTS_SAID - 2):]]
        if read.passes:
            return "under " + ", then ".join(tests) + ", which it always passes"
        return "when " + ", then ".join(tests)

    def _path(self, entry: MroEntry) -> str:
        if not isinstance(entry, ClassRef):
            return entry.text
        located = self.project.module_file(entry.module)
        return located[0] if located else entry.module


#: Methods Python runs on a built instance before none of its reads:
#: ``__setstate__`` runs on the instance unpickling or ``copy`` makes, never
#: on one its ``__init__`` built; ``__del__`` runs last.
_NOT_BEFORE_A_READ = frozenset({"__setstate__", "__del__"})

#: How many tests on the way to a read a finding's condition says, at most.
_TESTS_SAID = 4


def _masks(findings: list[tuple[str, str, Reached]], built_fails: bool) -> dict[str, tuple[str, bool]]:
    """For each read that one surely failing before it hides: attribute ->
    (the failing one's attribute, whether it fails while the instance is
    built). Building that surely fails hides every entry point's reads; an
    entry point's sure failure hides what its walk meets after it."""
    first: dict[str, Reached] = {}  # entry -> its earliest sure failure
    for severity, entry, read in findings:
        if severity == "error" and (entry not in first or read.order < first[entry].order):
            first[entry] = read
    built = first.get("__init__") if built_fails else None
    masks: dict[str, tuple[str, bool]] = {}
    for severity, entry, read in findings:
        if severity == "note":
            continue  # no entry point reaches a note
        if entry == "__init__":
            if built is not None and built.order < read.order:  # met after construction surely failed
                masks[read.attr] = (built.attr, True)
            continue
        if built is not None:
            masks[read.attr] = (built.attr, True)
        elif entry in first and first[entry].order < read.order:
            masks[read.attr] = (first[entry].attr, False)
    return masks


def _class_level(model: ClassModel) -> set[str]:
    """Names the instance finds on its class, as Python looks them up: the
    first class of the MRO that defines one decides, and a ``__slots__`` slot
    there is no value (it raises AttributeError until an ``__init__`` sets it)."""
    found: set[str] = set()
    slotted: set[str] = set()
    for info in model.infos:
        if info is not None:
            found |= info.class_attrs - slotted
            slotted |= info.slots - found
    return found


def _inits_on_the_way(read: Reached) -> set[int]:
    """The MRO indexes of the ``__init__``s a read during construction runs in."""
    found = {step.owner for step in read.chain if step.method == "__init__"}
    if read.method == "__init__":
        found.add(read.owner)
    return found


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
