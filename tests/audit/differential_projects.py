"""Small generated projects for the differential fuzzer (#20's proof):
class hierarchies over a few modules and search roots, written as source.

A ``Project`` is plain data; ``write`` lays it out as

    src/base0.py   the plain root ``Module`` (or nothing: ``torch.nn.Module``) and ``RAN``
    src/m0.py      audited classes
    src/m1.py      audited classes, importing m0's
    late/lib.py    classes outside the audited paths, on the search path
    early/         an earlier search root, empty until a module shadows ``late/``'s

Every ``__init__`` first appends its class's name to ``base0.RAN``, so the
executing side can tell which ``__init__``s ran. ``projects(features)``
draws one, with only the hostile spellings named in ``features`` (see
``FEATURES``): the test suite checks each group of spellings apart.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

from hypothesis import strategies as st

ATTRS = ("a", "b", "c")
HOMES = ("lib", "m0", "m1")
#: Names Python code may well use for its own classes, and that the audit
#: also knows as harmless external bases.
EXTERNAL_NAMES = ("Module", "Enum", "Generic")

#: What each feature lets the generator draw. ``core`` is always on.
FEATURES: dict[str, str] = {
    "core": "single inheritance over three modules and two search roots; super(), "
            "super(C, self), skips, helpers that chain, B.__init__(self); direct sets; forward "
            "and __init__ reads; plain aliases; base classes outside the audited paths",
    "multiple_inheritance": "two bases, diamonds: a skip or X.__init__(self) whose MRO's next "
                            "class is a sibling (#20 item 1)",
    "named_like_external": "audited classes named Module/Enum/Generic, skips through nn.Module (item 2)",
    "set_helpers": "attributes set through B._setup(self) and super()._setup() (item 3)",
    "nfkc": "def __init__(ｓelf), def __ｉnit__ (item 4)",
    "odd_sets": 'setattr (self, "\\x61", 1), vars(self)["a"], self.register_buffer (item 5)',
    "type_call": 'D = type("D", (C,), {}) (item 6)',
    "outside_external_names": "classes outside the audited paths named Module/Enum/Generic (item 7)",
    "slots": "__slots__ naming what __init__ sets (a miss)",
    "placement": "classes under if / with / for (a miss)",
    "made_by_function": "a class defined in a function, returned, bound by the call: C = make() (a miss)",
    "odd_chains": "super().__init__() if FLAG else Root.__init__(self); return before chaining (a miss)",
    "odd_aliases": "bases through annotated, tuple-unpacked and walrus aliases (a miss)",
    "property": "an inherited read through a property getter",
    # #35's Python semantics: each spelling below is what Python runs, so the
    # oracle's answer is the language's, not the rule's.
    "dead_chains": "a chain call that never runs: for _ in (): super().__init__(), if False:, "
                   "assert True, super().__init__(), a comprehension over ()",
    "guards": "forward's reads under contextlib.suppress(AttributeError), getattr(self, x, None), "
              "hasattr, try/except AttributeError",
    "mangling": "a class whose attributes are spelled self.__x (stored as _C__x)",
    "module_helpers": "an attribute set by a module-level function the __init__ calls: _set_a(self)",
    "class_level_sets": "a class attribute bound by a class decorator, a metaclass's __init__, "
                        "or C.x = ... after the body",
    "dunder_call": "a class whose __call__ does not reach forward: module() never runs it",
    "property_setter": "a property with a setter: self.x = v (in any __init__) stores _x_v",
    "plain_called": "plain classes (no torch, no framework) whose run() the tree calls on an instance "
                    "it builds: use_C() builds C and calls run(); the oracle does the same",
}

CORE_INITS = ("super", "super_explicit", "skip", "none", "helper")
DEAD_CHAINS = ("dead_loop", "dead_if", "dead_assert", "dead_comprehension")
GUARDS = ("suppress", "getattr", "hasattr", "try")
CLASS_LEVEL_SETS = ("decorator", "metaclass", "after_body")
CORE_SPELLINGS = ("name", "alias")
PLACEMENTS = ("if", "with", "for")


@dataclass(frozen=True)
class Cls:
    name: str
    home: str  # one of HOMES
    bases: tuple[int, ...]  # indices of earlier classes; () is the root
    init: str | None  # how __init__ chains (CORE_INITS, "named_base", "conditional", "return_first")
    sets: tuple[tuple[str, str], ...] = ()  # (attribute, spelling) set by __init__
    reads: tuple[str, ...] = ()  # what forward reads
    early: str | None = None  # read in __init__ after it chains
    spelling: str = "name"  # how its first base is spelled
    placement: str = "top"
    nfkc: str | None = None  # "self" or "init": the NFKC-folded spelling
    slots: bool = False
    type_call: bool = False  # ``D = type("D", (B,), {})``: no body
    prop: bool = False  # forward reads through a property
    mangled: bool = False  # its own sets and reads spelled self.__x
    guard: str | None = None  # how forward's reads are guarded (GUARDS)
    class_set: tuple[str, str] | None = None  # (attribute, how: CLASS_LEVEL_SETS) bound on the class
    call: bool = False  # defines a __call__ that does not reach forward
    setter: str | None = None  # an attribute it defines as a property with a setter (stored as _x_v)


@dataclass(frozen=True)
class Change:
    """What changes between (or during) runs: class ``index`` gets ``init``.
    ``how``: "edit" (its module rewritten), "shadow" (a copy of late/lib.py
    with the change appears in early/), "during" (its module rewritten while
    the first run reads it)."""

    how: str
    index: int
    init: str | None


@dataclass(frozen=True)
class Project:
    root: str  # "plain": base0.Module; "torch": nn.Module; "object": no framework at all
    classes: tuple[Cls, ...]
    change: Change | None = None

    def sets_of(self, built: str | None = None) -> dict[str, set[str]]:
        """Class name -> the attributes its ``__init__`` sets, as stored on an
        instance of ``built`` (a mangled name; a setter's store where a class
        of ``built``'s MRO defines the attribute as a property)."""
        setters: set[str] = set()
        if built is not None:
            index = next(i for i, c in enumerate(self.classes) if c.name == built)
            mro = c3({j: c.bases for j, c in enumerate(self.classes)}, index) or []
            setters = {self.classes[j].setter for j in mro if j >= 0 and self.classes[j].setter}
        return {c.name: {stored(c, a, setters) for a, _ in c.sets} for c in self.classes}

    def changed(self) -> Project:
        """The project after its change."""
        if self.change is None:
            return self
        classes = list(self.classes)
        cls = classes[self.change.index]
        init = self.change.init
        classes[self.change.index] = replace(cls, init=init, sets=() if init == "return_first" else cls.sets)
        return replace(self, classes=tuple(classes), change=None)


def stored(cls: Cls, attr: str, setters: Collection[str] = ()) -> str:
    """The name ``cls``'s code stores ``attr`` under: mangled in a mangled
    class; a property's store where a setter of the instance's class takes it."""
    if cls.mangled:
        return f"_{cls.name.lstrip('_')}__{attr}"
    return f"_{attr}_v" if attr in setters else attr


def c3(bases_of: dict[int, tuple[int, ...]], index: int) -> list[int] | None:
    """The class's MRO as Python computes it (-1: the root), None if Python refuses it."""
    def mro(i: int) -> list[int] | None:
        if i == -1:
            return [-1]
        parents = bases_of[i] or (-1,)
        seqs = [mro(p) for p in parents]
        if any(s is None for s in seqs):
            return None
        todo = [list(s) for s in seqs if s is not None] + [list(parents)]
        out = [i]
        while any(todo):
            for seq in todo:
                if seq and not any(seq[0] in other[1:] for other in todo):
                    head = seq[0]
                    break
            else:
                return None
            out.append(head)
            todo = [[x for x in seq if x != head] for seq in todo]
        return out
    return mro(index)


@st.composite
def projects(draw: st.DrawFn, features: frozenset[str] = frozenset(), change: str | None = None) -> Project:
    """A project drawing only on ``features`` (and ``core``); with ``change``
    ("edit", "shadow", "during") it also says what changes between runs."""
    on = features.__contains__
    root = "object" if on("plain_called") else draw(st.sampled_from(("plain", "torch")))
    # Few classes: in a larger project another class often makes the
    # pre-scan parse what a shortcut would have skipped, hiding the shortcut.
    outside = 1 if change == "shadow" or on("outside_external_names") else 0
    counts = {"lib": draw(st.integers(outside, 1)), "m0": draw(st.integers(1, 2)), "m1": draw(st.integers(0, 2))}
    # A feature's spellings drawn as often as the core's together: a run of
    # a few dozen projects meets each in the places where it matters.
    inits = (None, *CORE_INITS, "skip", "none", "named_base") + (
        ("conditional", "return_first") * 2 if on("odd_chains") else ()) + (
        DEAD_CHAINS if on("dead_chains") else ())
    spellings = ["direct"] + (["static_helper", "super_helper"] * 2 if on("set_helpers") else []) + (
        ["module_helper"] * 2 if on("module_helpers") else []) + (
        ["setattr_escape", "vars"] + (["register_buffer"] if root == "torch" else []) if on("odd_sets") else [])
    alias_spellings = CORE_SPELLINGS + (("annotated", "unpack", "walrus") if on("odd_aliases") else ())
    taken: set[str] = set()
    classes: list[Cls] = []
    slotted = False
    metaclassed = False
    # Half the projects start from a seed: a parent that sets and reads an
    # attribute, and a subclass that skips its __init__ (#20's base case),
    # which the feature's spellings then reach as often as any class.
    seed = counts["lib"] if draw(st.booleans()) else -1
    if seed >= 0 and (on("outside_external_names") or change == "shadow"):
        seed = 0
    for home in HOMES:
        for _ in range(counts[home]):
            i = len(classes)
            name = f"C{i}"
            role = _role(i - seed if seed >= 0 else -1, home, on("multiple_inheritance"))
            hostile = (home == "lib" and on("outside_external_names")) or (
                home != "lib" and on("named_like_external"))
            if hostile and draw(st.integers(0, 3)):
                free = [n for n in EXTERNAL_NAMES if n not in taken and not (root == "plain" and n == "Module")]
                # ``Module`` (under torch) the likeliest, and the seed's parent's name.
                free = free[:1] if role == "parent" else free[:1] * 2 + free
                if free:
                    name = draw(st.sampled_from(free))
            taken.add(name)
            # Bases: earlier classes this module can import (lib's only lib's).
            earlier = [j for j, c in enumerate(classes) if home != "lib" or c.home == "lib"]
            bases: tuple[int, ...] = ()
            if role == "child":  # under multiple inheritance: class D(Skipper, Parent)
                bases = (seed, seed + 1) if on("multiple_inheritance") else (seed,)
            # Under multiple inheritance more roots: siblings for the diamonds.
            elif not role and earlier and draw(st.integers(0, 1 if on("multiple_inheritance") else 3)):
                two = on("multiple_inheritance") and len(earlier) > 1 and draw(st.integers(0, 2)) > 0
                # The previous class first as often as not: chains, where skips matter.
                first = earlier[-1] if draw(st.booleans()) else draw(st.sampled_from(earlier))
                above = _ancestors(classes, (first,))
                rest = [j for j in earlier if j not in above] or [j for j in earlier if j != first]
                bases = (first, draw(st.sampled_from(rest))) if two and rest else (first,)
                if c3({**{j: c.bases for j, c in enumerate(classes)}, i: bases}, i) is None:
                    bases = bases[:1]
            if on("type_call") and bases and home != "lib" and not role and draw(st.booleans()):
                classes.append(Cls(name, home, bases, None, type_call=True))
                continue
            init = draw(st.sampled_from({
                "parent": ("super", "super_explicit", "helper"),
                "skipper": ("skip",),
                "child": (None, "super") if on("multiple_inheritance") else
                ("skip", "none") + (("conditional", "return_first") if on("odd_chains") else ())
                + (DEAD_CHAINS if on("dead_chains") else ()),
            }.get(role, inits)))
            if init == "named_base" and not bases:
                init = "skip"
            sets: tuple[tuple[str, str], ...] = ()
            if init and init != "return_first":
                # Often only what no ancestor sets: what a skip then loses is theirs alone.
                fresh = [a for a in ATTRS if a not in _ancestor_sets(classes, bases)]
                pool = fresh if fresh and draw(st.booleans()) else list(ATTRS)
                attrs = draw(st.lists(st.sampled_from(pool), unique=True, min_size=1, max_size=2))
                usable = [s for s in spellings if s != "super_helper" or bases]
                sets = tuple((a, draw(st.sampled_from(usable))) for a in attrs)
            # Reads of what only the ancestors set (where a skip can matter), or,
            # in a class with none, of its own (the parent a subclass may skip).
            own = {a for a, _ in sets}
            from_above = _ancestor_sets(classes, bases)
            inherited = sorted(from_above - own) or sorted(from_above) or sorted(own) or list(ATTRS)
            reads = tuple(draw(st.lists(st.sampled_from(inherited), unique=True, max_size=2,
                                        min_size=1 if role == "parent" else 0)))
            early = draw(st.none() | st.sampled_from([a for a in inherited if a not in own])) if init and [
                a for a in inherited if a not in own] else None
            slots = (on("slots") and not slotted and bool(sets) and all(s == "direct" for _, s in sets)
                     and draw(st.booleans()))
            slotted |= slots
            mangled = (on("mangling") and all(s == "direct" for _, s in sets) and draw(st.booleans()))
            class_set = None
            if on("class_level_sets") and draw(st.booleans()):
                how = draw(st.sampled_from(CLASS_LEVEL_SETS if not metaclassed and not
                                           _ancestors_metaclassed(classes, bases) else CLASS_LEVEL_SETS[::2]))
                # What an ancestor's __init__ sets: where a class attribute stands in for a skipped one.
                class_set = (draw(st.sampled_from(sorted(from_above) or list(ATTRS))), how)
                metaclassed |= how == "metaclass"
            setter = None
            if on("property_setter") and draw(st.booleans()):
                taken_setters = {c.setter for c in classes}
                # What this class or an ancestor sets: the setter then takes those sets.
                free_setters = [a for a in sorted(own | from_above) or ATTRS if a not in taken_setters]
                setter = draw(st.sampled_from(free_setters)) if free_setters else None
            classes.append(Cls(
                name, home, bases, init, sets, reads, early,
                spelling=draw(st.sampled_from(("name", *alias_spellings))) if bases else "name",
                placement=draw(st.sampled_from(
                    ("top", *(PLACEMENTS if on("placement") else ()), *(("function",) if on("made_by_function") else ())))),
                nfkc=draw(st.sampled_from((None, "self", "init"))) if on("nfkc") and init else None,
                slots=slots,
                prop=on("property") and bool(reads) and draw(st.booleans()),
                mangled=mangled,
                guard=draw(st.sampled_from(GUARDS)) if on("guards") and reads and draw(st.booleans()) else None,
                class_set=class_set,
                call=on("dunder_call") and draw(st.booleans()),
                setter=setter,
            ))
    found = None
    if change is not None:
        where = [i for i, c in enumerate(classes) if not c.type_call and (c.home == "lib") == (change == "shadow")]
        index = draw(st.sampled_from(where))
        new = draw(st.sampled_from([k for k in inits if k != classes[index].init
                                    and (k != "named_base" or classes[index].bases)]))
        found = Change(change, index, new)
    return Project(root, tuple(classes), found)


def _role(offset: int, home: str, multiple: bool) -> str:
    """A class's part in the seed (``offset``: its place after the seed's
    first class, -1 for none): "parent", "child"; under multiple inheritance
    a "skipper" first, the child's first base, whose ``Root.__init__(self)``
    skips its MRO's next class, the parent."""
    roles = ("skipper", "parent", "child") if multiple else ("parent", "child")
    if not 0 <= offset < len(roles) or (roles[offset] == "child" and home == "lib"):
        return ""
    return roles[offset]


def _ancestors(classes: list[Cls], bases: tuple[int, ...]) -> set[int]:
    """``bases`` and every class above them."""
    seen, todo = set(), list(bases)
    while todo:
        j = todo.pop()
        if j not in seen:
            seen.add(j)
            todo += classes[j].bases
    return seen


def _ancestors_metaclassed(classes: list[Cls], bases: tuple[int, ...]) -> bool:
    return any(classes[j].class_set and classes[j].class_set[1] == "metaclass"  # type: ignore[index]
               for j in _ancestors(classes, bases))


def _ancestor_sets(classes: list[Cls], bases: tuple[int, ...]) -> set[str]:
    return {a for j in _ancestors(classes, bases) for a, _ in classes[j].sets}


def write(project: Project, directory: Path) -> None:
    """Lays the project out under ``directory`` (see the module's docstring)."""
    for folder in ("src", "early", "late"):
        (directory / folder).mkdir(parents=True, exist_ok=True)
    (directory / "src" / "base0.py").write_text(base_source(project), encoding="utf-8")
    for home in HOMES:
        text = module_source(project, home)
        if text is not None:
            (directory / ("late" if home == "lib" else "src") / f"{home}.py").write_text(text, encoding="utf-8")


def module_path(directory: Path, home: str, shadow: bool = False) -> Path:
    folder = "early" if shadow else "late" if home == "lib" else "src"
    return directory / folder / f"{home}.py"


def base_source(project: Project) -> str:
    lines = ["RAN = []", ""]
    if project.root == "plain":
        lines += ["class Module:", "    def __init__(self):", "        RAN.append('Module')",
                  "        self.training = True", "", "    def forward(self):", "        return ()", ""]
    return "\n".join(lines) + "\n"


def module_source(project: Project, home: str) -> str | None:
    """The source of module ``home``, None if it holds no class."""
    mine = [i for i, c in enumerate(project.classes) if c.home == home]
    if not mine:
        return None
    root = {"plain": "Module", "torch": "nn.Module", "object": "object"}[project.root]
    lines = ["import contextlib", "from base0 import RAN" + (", Module" if project.root == "plain" else "")]
    if project.root == "torch":
        lines.append("from torch import nn")
    for other in HOMES[: HOMES.index(home)]:
        names = [c.name for c in project.classes if c.home == other]
        if names:
            lines.append(f"from {other} import {', '.join(names)}")
    lines += ["", "FLAG = False", ""]
    for i in mine:
        lines += _class_lines(project, i, root) + [""]
    # What Python builds; a quoted name also tells the audit the class is built.
    if project.root == "object":  # the tree builds each class and calls what it reads through
        lines += [line for i in mine if not project.classes[i].type_call and _runs(project, i)
                  for line in (f"def use_{project.classes[i].name}():", f"    return {project.classes[i].name}().run()", "")]
    lines.append(f"NAMES = {tuple(project.classes[i].name for i in mine)!r}")
    return "\n".join(lines) + "\n"


def _runs(project: Project, i: int) -> bool:
    """Whether class ``i`` or a class above it defines the method that reads."""
    return any(project.classes[j].reads for j in _ancestors(list(project.classes), (i,)))


def _base_names(project: Project, i: int, root: str) -> tuple[list[str], list[str]]:
    """How class ``i`` spells its bases, and the module-level lines binding an alias."""
    cls = project.classes[i]
    spelled = [project.classes[b].name for b in cls.bases] or [root]
    if not cls.bases or cls.spelling == "name":
        return spelled, []
    alias, first = f"_Base{i}", spelled[0]
    binding = {
        "alias": [f"{alias} = {first}"],
        "annotated": [f"{alias}: type = {first}"],
        "unpack": [f"{alias}, _unused{i} = {first}, None"],
        "walrus": [f"({alias} := {first})"],
    }[cls.spelling]
    return [alias, *spelled[1:]], binding


def _class_lines(project: Project, i: int, root: str) -> list[str]:
    cls = project.classes[i]
    bases, binding = _base_names(project, i, root)
    if cls.type_call:
        return binding + [f'{cls.name} = type("{cls.name}", ({", ".join(bases)},), {{}})']
    before, after, header_bases = _around(cls, i, bases)
    body: list[str] = []
    if cls.slots:
        body.append(f"__slots__ = {tuple(a for a, _ in cls.sets)!r}")
    if cls.init:
        body += _init_lines(project, i, root)
    # Helpers that subclasses reach through super()._setup_*(): defined here.
    for j, child in enumerate(project.classes):
        if child.bases and child.bases[0] == i:
            body += [line for a, how in child.sets if how == "super_helper"
                     for line in (f"def _setup_{a}_{j}(self):", f"    self.{a} = {j}")]
    if cls.setter:
        a = cls.setter
        body += ["@property", f"def {a}(self):", f"    return self._{a}_v",
                 f"@{a}.setter", f"def {a}(self, value):", f"    self._{a}_v = value"]
    if cls.call:
        body += ["def __call__(self):", "    return ()"]
    if cls.reads:
        reads = "(" + "".join(f"self.{_spelled(cls, a)}, " for a in cls.reads) + ")"
        entry = "run" if root == "object" else "forward"
        if cls.guard:
            body += [f"def {entry}(self):", f"    return self._guarded_{i}()",
                     f"def _guarded_{i}(self):", *("    " + line for line in _guarded(cls, reads))]
        elif cls.prop:
            body += ["@property", f"def view_{i}(self):", f"    return {reads}",
                     f"def {entry}(self):", f"    return self.view_{i}"]
        else:
            body += [f"def {entry}(self):", f"    return {reads}"]
    header = [f"class {cls.name}({', '.join(header_bases)}):"] + ["    " + line for line in body or ["pass"]]
    if cls.placement == "top":
        return binding + before + header + after
    if cls.placement == "function":
        return binding + [f"def _make_{i}():"] + ["    " + line for line in header] + [
            f"    return {cls.name}", f"{cls.name} = _make_{i}()"]
    opener = {"if": "if RAN is not None:", "with": "with contextlib.nullcontext():",
              "for": "for _ in range(1):"}[cls.placement]
    return binding + [opener] + ["    " + line for line in header]


def _spelled(cls: Cls, attr: str) -> str:
    """How ``cls``'s code spells ``self.<attr>``."""
    return f"__{attr}" if cls.mangled else attr


def _guarded(cls: Cls, reads: str) -> list[str]:
    """The lines of a method returning ``reads`` (``cls``'s) under its guard:
    Python raises AttributeError for a missing one, and the guard takes it."""
    if cls.guard == "suppress":
        return ["with contextlib.suppress(AttributeError):", f"    return {reads}", "return ()"]
    if cls.guard == "try":
        return ["try:", f"    return {reads}", "except AttributeError:", "    return ()"]
    names = [stored(cls, a) for a in cls.reads]
    if cls.guard == "getattr":
        return ["return (" + "".join(f"getattr(self, {n!r}, None), " for n in names) + ")"]
    return ["return (" + "".join(f"self.{_spelled(cls, a)} if hasattr(self, {n!r}) else None, "
                                 for a, n in zip(cls.reads, names, strict=True)) + ")"]


def _around(cls: Cls, i: int, bases: list[str]) -> tuple[list[str], list[str], list[str]]:
    """The module-level lines before and after class ``i``'s header (its
    helpers, decorator, metaclass, a class attribute bound after the body),
    and what its header lists in parentheses."""
    before = [line for attr, how in cls.sets if how == "module_helper"
              for line in (f"def _set_{attr}_{i}(obj):", f"    obj.{attr} = {i}")]
    after: list[str] = []
    if cls.class_set is not None:
        attr, how = cls.class_set
        if how == "decorator":
            before += [f"def _with_{attr}_{i}(cls):", f"    cls.{attr} = 0", "    return cls", f"@_with_{attr}_{i}"]
        elif how == "metaclass":
            before = [f"class _Meta{i}(type):", "    def __init__(cls, *args):", "        super().__init__(*args)",
                      f"        cls.{attr} = 0", *before]
            bases = [*bases, f"metaclass=_Meta{i}"]
        else:
            after.append(f"{cls.name}.{attr} = 0")
    return before, after, bases


def _init_lines(project: Project, i: int, root: str) -> list[str]:
    cls = project.classes[i]
    first = project.classes[cls.bases[0]].name if cls.bases else root
    chain = {
        "super": ["super().__init__()"],
        "super_explicit": [f"super({cls.name}, self).__init__()"],
        "named_base": [f"{first}.__init__(self)"],
        "skip": [f"{root}.__init__(self)"],
        "none": [],
        "helper": [f"self._chain_{i}()"],
        "conditional": [f"super().__init__() if FLAG else {root}.__init__(self)"],
        "return_first": ["return", "super().__init__()"],
        "dead_loop": ["for _ in ():", "    super().__init__()"],
        "dead_if": ["if False:", "    super().__init__()"],
        "dead_assert": ["assert True, super().__init__()"],
        "dead_comprehension": ["[super().__init__() for _ in ()]"],
    }[cls.init or "none"]
    name = {"init": "__ｉnit__"}.get(cls.nfkc or "", "__init__")
    me = {"self": "ｓelf"}.get(cls.nfkc or "", "self")
    lines = [f"def {name}({me}):", f"    RAN.append({cls.name!r})", *("    " + c for c in chain)]
    if cls.early:
        lines.append(f"    self.seen_{i} = self.{_spelled(cls, cls.early)}")
    for attr, how in cls.sets:
        lines.append("    " + {
            "direct": f"self.{_spelled(cls, attr)} = {i}",
            "module_helper": f"_set_{attr}_{i}(self)",
            "static_helper": f"{cls.name}._setup_{attr}(self)",
            "super_helper": f"super()._setup_{attr}_{i}()",
            "setattr_escape": f'setattr (self, "\\x{ord(attr):02x}", {i})',
            "vars": f'vars(self)["{attr}"] = {i}',
            "register_buffer": f'self.register_buffer("{attr}", None)',
        }[how])
    if cls.init == "helper":
        lines += [f"def _chain_{i}(self):", "    super().__init__()"]
    lines += [line for attr, how in cls.sets if how == "static_helper"
              for line in (f"def _setup_{attr}(self):", f"    self.{attr} = {i}")]
    return lines
