"""``--fix`` checked by running the code: hypothesis writes the class
hierarchies of ``test_generated_hierarchies`` (parent ``__init__`` skipped in
each way it spells, sets read while built or from ``forward``), the audit
fixes them (unsafe fixes too: the generated parents build objects), and a
subprocess builds each class before and after (executing the generated code,
never code under audit): no AttributeError is left on an attribute whose
finding had a fix, no class fails that did not fail before, and each fixed
attribute holds what the skipped ``__init__`` would have set (the ``Sub``
its own class builds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.fix._apply import plan_result, render_fixes, write
from vllm_sp_base._audit.sources._cache import Cache

from .test_generated_hierarchies import RUNNER, Spec, _source, hierarchies


def _outcome(root: Path) -> dict[str, dict[str, object]] | None:
    ran = subprocess.run([sys.executable, "-c", RUNNER, str(root)], capture_output=True, text=True, check=False)
    if ran.returncode != 0:  # a hierarchy Python itself rejects (MRO conflict)
        assert "TypeError" in ran.stderr or "MRO" in ran.stderr, ran.stderr
        return None
    outcome: dict[str, dict[str, object]] = json.loads(ran.stdout)
    return outcome


VALUES = """
import json, sys
sys.path.insert(0, sys.argv[1])
import m0, m1
out = []
for name, attr in json.loads(sys.argv[2]):
    cls = getattr(m0, name, None) or getattr(m1, name)
    try:
        value = getattr(cls(), attr)
    except AttributeError:
        value = None
    out.append(getattr(value, "value", None))
print(json.dumps(out))
"""


def _values(root: Path, wanted: list[tuple[str, str]]) -> list[int | None]:
    """``C().attr.value`` for each (class, attribute): the index of the class
    whose ``__init__`` built the ``Sub`` it holds."""
    ran = subprocess.run([sys.executable, "-c", VALUES, str(root), json.dumps(wanted)],
                         capture_output=True, text=True, check=True)
    values: list[int | None] = json.loads(ran.stdout)
    return values


def _set_on_the_way(specs: list[Spec], class_name: str, skipped: str, attribute: str) -> bool:
    """Whether a class from ``class_name`` up its bases to ``skipped`` (not
    included) sets ``attribute`` itself."""
    index: int | None = int(class_name.rsplit(".", 1)[-1][1:])
    stop = int(skipped.rsplit(".", 1)[-1][1:])
    while index is not None and index != stop:
        if attribute in specs[index].sets:
            return True
        index = specs[index].base
    return False


def _check(specs: list[Spec], root: Path) -> None:
    split = len(specs) // 2
    (root / "m0.py").write_text(_source(specs, 0, split))
    (root / "m1.py").write_text(_source(specs, split, len(specs)))
    before = _outcome(root)
    if before is None:
        return
    result = audit([str(root)], cache=Cache(None, False))
    fixes = plan_result(result, [str(root)])
    rendered = render_fixes(fixes, unsafe=True)
    assert not rendered.problems, rendered.problems
    write(rendered, [str(root)])
    fixed: dict[str, set[str]] = {}
    for fix in rendered.applied:
        fixed.setdefault(fix.finding.class_name.rsplit(".", 1)[-1], set()).add(fix.finding.attribute)
    after = _outcome(root)
    source = "".join(p.read_text() + "# ----\n" for p in sorted(root.glob("m*.py")))
    assert after is not None, source
    # The same value as where the skipped __init__ ran: the Sub its class builds.
    # (Unless a class on the way sets it after, as its own __init__ may: then it holds that class's.)
    built = [f.finding for f in rendered.applied if after[f.finding.class_name.rsplit(".", 1)[-1]]["init"] is None
             and not _set_on_the_way(specs, f.finding.class_name, f.finding.skipped_init, f.finding.attribute)]
    wanted = [(f.class_name.rsplit(".", 1)[-1], f.attribute) for f in built]
    if wanted:
        expected = [int(f.skipped_init.rsplit(".", 1)[-1][1:]) for f in built]
        assert _values(root, wanted) == expected, (wanted, source)
    for name, seen in after.items():
        was = before[name]
        for entry in ("init", "forward"):
            failed = seen[entry]
            assert failed not in fixed.get(name, set()), (name, entry, failed, source)
            if was[entry] is None and (entry == "init" or was["init"] is None):
                assert failed is None, (name, entry, failed, source)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=hierarchies())
# The plain skip: forward reads what only the parent's __init__ set.
@example(specs=[Spec(None, False, "super", ("a",), "reads", ("a",)), Spec(0, False, "skip", (), None)])
# Read while built, after the subclass's own parent call.
@example(specs=[Spec(None, False, "super", ("c",), None), Spec(0, False, "skip", (), None, early="c")])
# A grandchild inherits the skip through an alias; the fix goes into the class that skips.
@example(specs=[Spec(None, False, "super", ("a",), "reads", ("a",)), Spec(0, False, "skip", (), None),
                Spec(1, False, None, (), None, spelling="assign")])
# A mixin skips the base; the class reads the attribute, then sets its own: the fix is the mixin's.
@example(specs=[Spec(None, False, "super", ("a",), None),
                Spec(0, True, "super", ("a",), "reads", early="a")])
def test_fixed_hierarchies_no_longer_raise(specs: list[Spec], tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    _check(specs, tmp_path_factory.mktemp("fix"))


def test_a_fixed_skip_stops_raising(tmp_path: Path) -> None:
    """The plain case, spelled out: it raised before, a fix is applied, it no longer raises."""
    specs = [Spec(None, False, "super", ("a", "b"), "reads", ("a", "b")), Spec(0, False, "skip", (), None)]
    (tmp_path / "m0.py").write_text(_source(specs, 0, 1))
    (tmp_path / "m1.py").write_text(_source(specs, 1, 2))
    before = _outcome(tmp_path)
    assert before is not None and before["C1"]["forward"] == "a"
    result = audit([str(tmp_path)], cache=Cache(None, False))
    rendered = render_fixes(plan_result(result, [str(tmp_path)]), unsafe=True)
    write(rendered, [str(tmp_path)])
    assert {f.finding.attribute for f in rendered.applied} == {"a", "b"}
    after = _outcome(tmp_path)
    assert after is not None and after["C1"]["forward"] is None
    assert not {"a", "b"} & set(after["C1"]["unset"])  # type: ignore[call-overload]
    assert _values(tmp_path, [("C1", "a"), ("C1", "b")]) == [0, 0]  # what C0.__init__ would have set
