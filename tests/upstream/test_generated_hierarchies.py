"""Property: the rewrite never changes a flag value an instance had, gives the
default to every instance that had none but reads it, and is idempotent.

Hypothesis writes small two-module hierarchies (our own code) in a ``vllm``
package; a subprocess constructs every class before and after the rewrite.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vllm_sp_base._upstream.series._build import build
from vllm_sp_base._upstream.series._output import write_tree

FLAG = "use_sequence_parallel"
RUNNER = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from vllm import gen0, gen1
    out = {}
    for module in (gen0, gen1):
        for name in module.NAMES:
            instance = getattr(module, name)()
            out[name] = getattr(instance, "FLAG", "missing")
    print(json.dumps(out))
    """
).replace("FLAG", FLAG)


@dataclass
class Spec:
    base: int | None
    init: str | None  # None, "super", "skip"
    value: str | None  # what __init__ assigns the flag: None (nothing), "False", "True", "cond"
    reads: bool  # defines a method reading the flag
    class_value: bool = False  # defines the flag at class level (True)


@st.composite
def hierarchies(draw: st.DrawFn) -> list[Spec]:
    specs: list[Spec] = []
    for i in range(draw(st.integers(2, 6))):
        base = draw(st.none() | st.integers(0, i - 1)) if i else None
        init = draw(st.sampled_from([None, "super", "skip"]))
        value = draw(st.sampled_from([None, "False", "True", "cond"])) if init else None
        class_value = draw(st.sampled_from([False, False, False, True]))
        specs.append(Spec(base, init, value, draw(st.booleans()), class_value))
    return specs


def _source(specs: list[Spec], start: int, stop: int) -> str:
    lines = [f"from vllm.gen0 import {', '.join(f'C{i}' for i in range(start))}"] if start else []
    for i in range(start, stop):
        spec = specs[i]
        lines.append(f"class C{i}(C{spec.base}):" if spec.base is not None else f"class C{i}:")
        lines.append(f"    {FLAG} = True" if spec.class_value else "    marker = 0")
        if spec.init:
            lines.append("    def __init__(self, on=True):")
            lines.append("        super().__init__()" if spec.init == "super" else "        object.__init__(self)")
            if spec.value == "cond":
                lines += ["        if on:", f"            self.{FLAG} = True"]
            elif spec.value:
                lines.append(f"        self.{FLAG} = {spec.value}")
        if spec.reads:
            lines += [f"    def forward{i}(self):", f"        return self.{FLAG}"]
        lines.append("")
    lines.append(f"NAMES = {[f'C{i}' for i in range(start, stop)]!r}")
    return "\n".join(lines) + "\n"


def _run(root: Path) -> dict[str, object] | None:
    ran = subprocess.run([sys.executable, "-c", RUNNER, str(root)], capture_output=True, text=True,
                         check=False)
    if ran.returncode != 0:
        return None
    result: dict[str, object] = json.loads(ran.stdout)
    return result


def _reads_in_mro(specs: list[Spec], i: int | None) -> bool:
    while i is not None:
        if specs[i].reads:
            return True
        i = specs[i].base
    return False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=hierarchies())
# A False after the parent's __init__ set True is an override: it stays.
@example(specs=[Spec(None, "skip", "True", True), Spec(0, "super", "False", False)])
# The seed: a subclass skipping the parent's __init__; its False is the default.
@example(specs=[Spec(None, "super", "cond", True), Spec(0, "skip", "False", False)])
# A class-level True between the mixin and the subclass wins over the mixin's False.
@example(specs=[Spec(None, None, None, True), Spec(0, None, None, False, True),
                Spec(1, "skip", "False", False)])
# A subclass (in another module) with a class-level True runs the parent's
# __init__, whose False is then no default: it stays.
@example(specs=[Spec(None, "super", "False", True), Spec(0, None, None, False, True)])
# The parent's False goes, so the subclass's False is redundant in the same run.
@example(specs=[Spec(None, "super", "False", True), Spec(0, "super", "False", False)])
def test_rewrite_keeps_values_and_fills_missing_ones(specs: list[Spec], tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    root: Path = tmp_path_factory.mktemp("gen")
    for package in ("vllm", "vllm/models", "vllm/models/common"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").touch()
    split = len(specs) // 2
    (root / "vllm/gen0.py").write_text(_source(specs, 0, split))
    (root / "vllm/gen1.py").write_text(_source(specs, split, len(specs)))
    before = _run(root)
    assert before is not None, _source(specs, 0, len(specs))

    first = build(str(root), all_readers=True, remove_redundant=True)
    assert first.problems == first.unreadable == first.unmade == []
    write_tree(str(root), first.files)
    after = _run(root)
    assert after is not None, [f.after for f in first.files]
    program = _source(specs, 0, len(specs))
    for i, name in enumerate(f"C{i}" for i in range(len(specs))):
        if before[name] != "missing":
            assert after[name] == before[name], (name, program)
        elif _reads_in_mro(specs, i):
            assert after[name] is False, (name, program)
    assert build(str(root), all_readers=True, remove_redundant=True).files == []  # idempotent
