"""Property, checked by running the code: every ``error`` is a real
AttributeError, and every AttributeError that construction or ``forward``
raises for an attribute a skipped ``__init__`` sets is an ``error``.

Hypothesis writes small two-module class hierarchies as source: parent
``__init__`` run directly, skipped, run through ``super(X, self)``, through
``X.__init__(self)`` or from a helper; sets spelled directly or through
``setattr`` over a constant; reads while built, in ``forward``, through
``super().forward()``, by calling them (submodules), inside a handler that
re-raises, in a local function (called, or only stored), under a guard or a
condition that is never true; parent ``__init__`` bound by an import inside
``__init__``. A subprocess builds each class and calls ``forward``
(executing the generated code, never code under audit) to see what raises.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.rule import _candidates
from vllm_sp_base._audit.sources._cache import Cache

ATTRS = ("a", "b", "c")
RUNNER = textwrap.dedent(
    """
    import json, re, sys
    sys.path.insert(0, sys.argv[1])
    import m0, m1

    def failing(call):
        try:
            call()
        except AttributeError as error:
            found = re.search(r"attribute '(\\w+)'", str(error))
            return found.group(1) if found else "?"
        return None

    out = {}
    for module in (m0, m1):
        for name in module.NAMES:
            cls = getattr(module, name)
            built = []
            del m0.RAN[:]
            init = failing(lambda: built.append(cls()))
            result = {"init": init, "forward": None, "unset": [], "ran": list(m0.RAN)}
            if built:
                obj = built[0]
                result["unset"] = [a for a in %r if not hasattr(obj, a)]
                result["forward"] = failing(obj.forward)
            out[name] = result
    print(json.dumps(out))
    """ % (ATTRS,)
)

INITS = ("super", "skip", "grandparent", "super_of_parent", "helper", "local_parent", "local_skip")
FORWARDS = ("reads", "super", "guarded", "never", "calls", "reraise", "nested")


@dataclass
class Spec:
    base: int | None  # index of the single base, or None (the module base)
    mixin: bool  # a base-less mixin before the base, whose __init__ skips super
    init: str | None  # None or one of INITS
    sets: tuple[str, ...]
    forward: str | None  # None or one of FORWARDS
    reads: tuple[str, ...] = ()  # what forward reads
    early: str | None = None  # read while built, after the parent call
    loop: bool = False  # sets through ``for n in CONSTANT: setattr(self, n, ...)``
    spelling: str = "name"  # how the class names its base: "name" or an alias (SPELLINGS)
    new: bool = False  # ``__new__`` returns an instance of the base instead


# Module-level aliases the pre-scan must follow as the resolver does.
SPELLINGS = ("name", "assign", "in_block", "parenthesised", "import_as")


@st.composite
def hierarchies(draw: st.DrawFn) -> list[Spec]:
    count = draw(st.integers(2, 5))
    specs: list[Spec] = []
    attrs = st.lists(st.sampled_from(ATTRS), unique=True, max_size=2).map(tuple)
    for i in range(count):
        base = draw(st.none() | st.integers(0, i - 1)) if i else None
        init = draw(st.none() | st.sampled_from(INITS))
        if base is None and init in ("grandparent", "super_of_parent"):
            init = "skip"
        sets = draw(attrs) if init else ()
        forward = draw(st.none() | st.sampled_from(FORWARDS))
        specs.append(Spec(
            base, draw(st.booleans()) and base is not None, init, sets, forward,
            draw(attrs) if forward else (),
            draw(st.none() | st.sampled_from(ATTRS)) if init else None,
            draw(st.booleans()) and bool(sets),
            draw(st.sampled_from(SPELLINGS)),
            draw(st.booleans()) and base is not None and draw(st.booleans()),
        ))
    return specs


def _alias_lines(i: int, spec: Spec, start: int) -> tuple[str, list[str]]:
    """How class ``i`` spells its base, and the lines that bind that spelling."""
    base = f"C{spec.base}"
    alias = f"Alias{i}"
    if spec.base is None or spec.spelling == "name":
        return base, []
    if spec.spelling == "import_as":
        return (alias, [f"from m0 import {base} as {alias}"]) if spec.base < start else (base, [])
    return alias, {
        "assign": [f"{alias} = {base}"],
        "in_block": ["if True:", f"    {alias} = {base}"],
        "parenthesised": [f"{alias} = (", f"    {base}", ")"],
    }[spec.spelling]


def _home(index: int | None, specs: list[Spec]) -> str:
    """The module class ``index`` is written in (``Module`` for None)."""
    return "m0" if index is None or index < len(specs) // 2 else "m1"


def _init_lines(i: int, spec: Spec, specs: list[Spec]) -> list[str]:
    parent = f"C{spec.base}" if spec.base is not None else "Module"
    grand = "Module"
    if spec.base is not None and specs[spec.base].base is not None:
        grand = f"C{specs[spec.base].base}"
    call = {
        "super": "super().__init__()",
        "skip": "Module.__init__(self)",
        "grandparent": f"{grand}.__init__(self)",
        "super_of_parent": f"super({parent}, self).__init__()",
        "helper": f"self._init_{i}()",
        # Bound by an import inside ``__init__``: the parent's, or the module base's (a skip).
        "local_parent": f"from {_home(spec.base, specs)} import {parent} as Local; Local.__init__(self)",
        "local_skip": "from m0 import Module as Local; Local.__init__(self)",
    }[spec.init or "super"]
    lines = ["    def __init__(self):", f"        RAN.append('C{i}')", *(f"        {c}" for c in call.split("; "))]
    if spec.early:
        lines.append(f"        self.seen = self.{spec.early}")
    if spec.loop:
        lines += [f"        for name in NAMES_{i}:", f"            setattr(self, name, Sub({i}))"]
    else:
        lines += [f"        self.{attr} = Sub({i})" for attr in spec.sets]
    if spec.init == "helper":
        lines += [f"    def _init_{i}(self):", "        super().__init__()"]
    return lines


def _forward_lines(spec: Spec) -> list[str]:
    reads = "(" + "".join(f"self.{a}, " for a in spec.reads) + ")"
    if spec.forward == "reads":
        return ["    def forward(self):", f"        return {reads}"]
    if spec.forward == "super":
        return ["    def forward(self):", "        super().forward()", f"        return {reads}"]
    if spec.forward == "calls":  # a submodule is read by calling it
        calls = "(" + "".join(f"self.{a}(), " for a in spec.reads) + ")"
        return ["    def forward(self):", f"        return {calls}"]
    if spec.forward == "reraise":  # a handler that re-raises guards nothing
        return ["    def forward(self):", "        try:", f"            return {reads}",
                "        except Exception as error:", "            error.add_note('forward')", "            raise"]
    if spec.forward == "nested":  # a local function runs where called; a stored one never
        stored = "".join(f"self.{a}, " for a in ATTRS)
        return ["    def forward(self):", f"        def now(): return {reads}",
                f"        def later(): return ({stored})", "        self.later = later", "        return now()"]
    if spec.forward == "guarded":
        guarded = "".join(f'getattr(self, "{a}", None), ' for a in spec.reads)
        checked = "".join(f'(self.{a} if hasattr(self, "{a}") else None), ' for a in spec.reads)
        return ["    def forward(self):", f"        return ({guarded}{checked})"]
    return ["    def forward(self):", "        if self.marker:", f"            return {reads}", "        return ()"]


def _source(specs: list[Spec], start: int, stop: int) -> str:
    lines = [
        "RAN = []",
        "class Module:",
        "    def __init__(self):",
        "        self.training = True",
        "    def forward(self):",
        "        return ()",
        "",
        "class Sub:",
        "    def __init__(self, value):",
        "        self.value = value",
        "    def __call__(self):",
        "        return self.value",
        "",
        "class Mixin:",
        "    def __init__(self):",
        "        self.mixed = True",
        "",
    ]
    if start:
        lines[:17] = ["from m0 import RAN, Module, Mixin, Sub, " + ", ".join(f"C{i}" for i in range(start))]
    for i in range(start, stop):
        spec = specs[i]
        spelled, binding = _alias_lines(i, spec, start)
        lines += binding
        if spec.loop:
            lines.append(f"NAMES_{i} = {spec.sets!r}")
        bases = (["Mixin"] if spec.mixin else []) + ([spelled] if spec.base is not None else ["Module"])
        lines.append(f"class C{i}({', '.join(bases)}):")
        lines.append("    marker = 0")
        if spec.new:
            lines += ["    def __new__(cls):", f"        return C{spec.base}()"]
        if spec.init:
            lines += _init_lines(i, spec, specs)
        if spec.forward:
            lines += _forward_lines(spec)
        lines.append("")
    lines.append(f"NAMES = {[f'C{i}' for i in range(start, stop)]!r}")
    return "\n".join(lines) + "\n"


def _set_by_a_skipped_init(
    specs: list[Spec], mro_of: dict[str, list[str]], name: str, attr: str, ran: list[str]
) -> bool:
    """Whether an ``__init__`` in the class's MRO that did not run sets ``attr``:
    a crash on it is the rule's business only then."""
    return any(
        attr in specs[int(c[1:])].sets and specs[int(c[1:])].init and c not in ran
        for c in mro_of[name] if c.startswith("C")
    )


def _mros(root: Path) -> dict[str, list[str]]:
    ran = subprocess.run(
        [sys.executable, "-c",
         "import json, sys; sys.path.insert(0, sys.argv[1]); import m0, m1; "
         "print(json.dumps({n: [k.__name__ for k in getattr(m, n).__mro__] "
         "for m in (m0, m1) for n in m.NAMES}))", str(root)],
        capture_output=True, text=True, check=True,
    )
    mros: dict[str, list[str]] = json.loads(ran.stdout)
    return mros


def _check(specs: list[Spec], root: Path) -> None:
    split = len(specs) // 2
    (root / "m0.py").write_text(_source(specs, 0, split))
    (root / "m1.py").write_text(_source(specs, split, len(specs)))
    source = _source(specs, 0, split) + "# ---- m1\n" + _source(specs, split, len(specs))
    ran = subprocess.run([sys.executable, "-c", RUNNER, str(root)], capture_output=True, text=True)
    if ran.returncode != 0:  # a hierarchy Python itself rejects (MRO conflict): nothing to compare
        assert "TypeError" in ran.stderr or "MRO" in ran.stderr, ran.stderr
        return
    outcome: dict[str, dict[str, object]] = json.loads(ran.stdout)
    mro_of = _mros(root)
    for parse_all in (False, True):
        result = audit([str(root)], cache=Cache(None, False), parse_all=parse_all)
        errors: dict[str, dict[str, str]] = {}  # class -> attribute -> entry
        for finding in result.findings:
            if finding.severity == "error":
                errors.setdefault(finding.class_name.rsplit(".", 1)[-1], {})[finding.attribute] = (
                    finding.entry or "")
        for name, seen in outcome.items():
            reported = errors.get(name, {})
            if any(specs[int(c[1:])].new for c in mro_of[name] if c.startswith("C")):
                # A __new__ of its MRO builds another class: that one is checked.
                assert not reported, (name, source)
                continue
            failed_init, failed_forward = seen["init"], seen["forward"]
            # Every error is real: construction raises, or the attribute is
            # missing on the built object and forward raises.
            ran = seen["ran"]
            assert isinstance(ran, list)
            for attr, entry in reported.items():
                if entry == "__init__":
                    assert failed_init is not None, (name, attr, source)
                elif failed_init is None:
                    assert attr in seen["unset"] and failed_forward is not None, (name, attr, source)
                else:  # building failed first, on an attribute no skipped __init__ sets (not this rule's)
                    assert not _set_by_a_skipped_init(specs, mro_of, name, str(failed_init), ran), (
                        name, attr, source)
            # Every crash on an attribute a skipped __init__ sets is an error.
            for failed, entry in ((failed_init, "__init__"), (failed_forward, "forward")):
                if isinstance(failed, str) and failed in ATTRS and _set_by_a_skipped_init(
                    specs, mro_of, name, failed, ran
                ):
                    assert reported.get(failed) == entry, (name, failed, entry, reported, source)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=hierarchies())
# C2 inherits C1's skip through an alias: only the alias makes it a candidate.
@example(specs=[Spec(None, False, "super", ("a",), "reads", ("a",)), Spec(0, False, "skip", (), None),
                Spec(1, False, None, (), None, spelling="assign")])
# A draft: skips its parent's __init__, then reaches the parent's forward through super().
@example(specs=[Spec(None, False, "super", ("a",), "reads", ("a",)), Spec(0, False, "skip", (), "super", ())])
# The parent's __init__ run from a helper: nothing skipped.
@example(specs=[Spec(None, False, "super", ("b",), "reads", ("b",)), Spec(0, False, "helper", (), None)])
# A read while built of what the skipped parent sets.
@example(specs=[Spec(None, False, "super", ("c",), None), Spec(0, False, "skip", (), None, early="c")])
# Sets through setattr over a constant: nothing missing.
@example(specs=[Spec(None, False, "super", ("a",), "reads", ("a",)),
                Spec(0, False, "skip", ("a",), None, loop=True)])
# A submodule read by calling it, through a re-raising handler, in a local function.
@example(specs=[Spec(None, False, "super", ("a",), "calls", ("a",)), Spec(0, False, "skip", (), None)])
@example(specs=[Spec(None, False, "super", ("b",), "reraise", ("b",)), Spec(0, False, "skip", (), None)])
@example(specs=[Spec(None, False, "super", ("c",), "nested", ("c",)), Spec(0, False, "skip", (), None)])
# The skip and the parent's __init__ spelled through imports inside __init__.
@example(specs=[Spec(None, False, "super", ("a",), "reads", ("a",)), Spec(0, False, "local_skip", (), None)])
@example(specs=[Spec(None, False, "super", ("a",), "reads", ("a",)), Spec(0, False, "local_parent", (), None)])
def test_errors_crash_and_crashes_are_errors(specs: list[Spec], tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    root: Path = tmp_path_factory.mktemp("gen")
    _check(specs, root)
    # Each module's candidates checked in a process of its own: the same findings.
    alone = audit([str(root)], cache=Cache(None, False))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_candidates, "FILES_PER_PROCESS", 1)
        patch.setattr(_candidates, "processes", lambda: 2)
        assert audit([str(root)], cache=Cache(None, False)).findings == alone.findings
