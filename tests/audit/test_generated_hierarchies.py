"""Property: every AttributeError an inherited method raises is reported, and no
``error`` is reported where the method runs fine.

Hypothesis writes small two-module class hierarchies as source; a subprocess
executes that generated code (never code under audit) to see what crashes.
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

from vllm_sp_base._audit import _candidates
from vllm_sp_base._audit._cache import Cache
from vllm_sp_base._audit._engine import audit

ATTRS = ("a", "b", "c")
RUNNER = textwrap.dedent(
    """
    import json, re, sys
    sys.path.insert(0, sys.argv[1])
    import m0, m1
    out = {}
    for module in (m0, m1):
        for name in module.NAMES:
            cls = getattr(module, name)
            try:
                cls().forward()
                out[name] = None
            except AttributeError as error:
                out[name] = re.search(r"attribute '(\\w+)'", str(error)).group(1)
    print(json.dumps(out))
    """
)


@dataclass
class Spec:
    base: int | None  # index of the single base, or None
    mixin: bool  # a base-less mixin before the base, whose __init__ skips super
    init: str | None  # None, "super", "skip", "grandparent", "super_of_parent"
    sets: tuple[str, ...]
    forward: bool  # defines forward reading what its own __init__ sets
    spelling: str = "name"  # how the class names its base: "name" or an alias (SPELLINGS)


# Module-level aliases the pre-scan must follow as the resolver does.
SPELLINGS = ("name", "assign", "in_block", "parenthesised", "import_as")


@st.composite
def hierarchies(draw: st.DrawFn) -> list[Spec]:
    count = draw(st.integers(2, 5))
    specs: list[Spec] = []
    for i in range(count):
        base = draw(st.none() | st.integers(0, i - 1)) if i else None
        init = draw(st.sampled_from([None, "super", "skip", "grandparent", "super_of_parent"]))
        if base is None and init in ("grandparent", "super_of_parent"):
            init = "skip"
        sets = tuple(draw(st.lists(st.sampled_from(ATTRS), unique=True, max_size=2))) if init else ()
        specs.append(Spec(base, draw(st.booleans()) and base is not None, init, sets,
                          draw(st.booleans()) and bool(sets), draw(st.sampled_from(SPELLINGS))))
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


def _source(specs: list[Spec], start: int, stop: int) -> str:
    lines = ["class Mixin:", "    def __init__(self):", "        self.mixed = True", ""]
    if start:
        lines.insert(0, "from m0 import " + ", ".join(f"C{i}" for i in range(start)))
    for i in range(start, stop):
        spec = specs[i]
        spelled, binding = _alias_lines(i, spec, start)
        lines += binding
        bases = (["Mixin"] if spec.mixin else []) + ([spelled] if spec.base is not None else [])
        lines.append(f"class C{i}({', '.join(bases)}):" if bases else f"class C{i}:")
        lines.append("    marker = 0")
        if spec.init:
            lines.append("    def __init__(self):")
            parent = f"C{spec.base}" if spec.base is not None else "object"
            grand = f"C{specs[spec.base].base}" if spec.base is not None and specs[spec.base].base is not None else "object"
            call = {
                "super": "super().__init__()",
                "skip": "pass",
                "grandparent": f"{grand}.__init__(self)",
                "super_of_parent": f"super({parent}, self).__init__()",
            }[spec.init]
            lines.append(f"        {call}")
            lines += [f"        self.{attr} = {i}" for attr in spec.sets]
        if spec.forward:
            lines.append("    def forward(self):")
            lines.append(f"        return ({', '.join(f'self.{a}' for a in spec.sets)},)")
        lines.append("")
    lines.append(f"NAMES = {[f'C{i}' for i in range(start, stop)]!r}")
    return "\n".join(lines) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=hierarchies())
# C2 inherits C1's skip through an alias: only the alias makes it a candidate.
@example(specs=[Spec(None, False, "super", ("a",), True), Spec(0, False, "skip", (), False),
                Spec(1, False, None, (), False, "assign")])
def test_crashes_are_reported_and_errors_crash(specs: list[Spec], tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    root: Path = tmp_path_factory.mktemp("gen")
    split = len(specs) // 2
    (root / "m0.py").write_text(_source(specs, 0, split))
    (root / "m1.py").write_text(_source(specs, split, len(specs)))
    ran = subprocess.run([sys.executable, "-c", RUNNER, str(root)], capture_output=True, text=True)
    if ran.returncode != 0:  # a hierarchy Python itself rejects (MRO conflict): nothing to compare
        assert "TypeError" in ran.stderr or "MRO" in ran.stderr, ran.stderr
        return
    crashes: dict[str, str | None] = json.loads(ran.stdout)
    for parse_all in (False, True):
        result = audit([str(root)], cache=Cache(None, False), parse_all=parse_all)
        reported: dict[str, set[str]] = {}
        errors: set[str] = set()
        for finding in result.findings:
            name = finding.class_name.rsplit(".", 1)[-1]
            reported.setdefault(name, set()).add(finding.attribute)
            if finding.severity == "error":
                errors.add(name)
        for name, attr in crashes.items():
            if attr is not None and attr in ATTRS:
                assert attr in reported.get(name, set()), (name, attr, _source(specs, 0, len(specs)))
            if attr is None:
                assert name not in errors, (name, _source(specs, 0, len(specs)))
    # Each module's candidates checked in a process of its own: the same findings.
    alone = audit([str(root)], cache=Cache(None, False))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_candidates, "FILES_PER_PROCESS", 1)
        patch.setattr(_candidates, "processes", lambda: 2)
        assert audit([str(root)], cache=Cache(None, False)).findings == alone.findings
