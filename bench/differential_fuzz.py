"""The differential fuzzer's long run (#20's proof): generated projects
audited in the default mode, with ``--parse-all``, from a cold and a warm
cache (with files changed between and during runs), and built by Python.

    .venv/bin/python bench/differential_fuzz.py [CASES] [GROUP ...]

For each group of spellings (``tests/audit/differential_projects.py``'s
``FEATURES``, each on top of ``core``; and ``core`` with a file edited
between runs, a module shadowed in an earlier root, a file edited during
the first run), CASES projects (default 100). Prints the cases run, how
many were compared with Python, the disagreements by kind, and for each
kind a group shows, hypothesis's smallest reproducer, as source.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from audit.differential_projects import FEATURES, Project, module_source, projects
from audit.differential_runner import KINDS, Outcome, PythonOracle, differences

#: (group, features, change): what each run draws.
GROUPS: list[tuple[str, frozenset[str], str | None]] = [
    (name, frozenset() if name == "core" else frozenset({name}), None) for name in FEATURES
] + [(f"core+{how}", frozenset(), how) for how in ("edit", "shadow", "during")]


def _run(project: Project, oracle: PythonOracle) -> Outcome:
    with tempfile.TemporaryDirectory() as directory:
        return differences(project, Path(directory), oracle)


def survey(strategy: st.SearchStrategy[Project], cases: int, oracle: PythonOracle) -> tuple[int, int, Counter[str]]:
    """Runs ``cases`` projects; (cases, compared with Python, kind -> projects showing it)."""
    seen: Counter[str] = Counter()
    counts = [0, 0]

    @settings(max_examples=cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def each(project: Project) -> None:
        outcome = _run(project, oracle)
        counts[0] += 1
        counts[1] += outcome.compared_with_python
        seen.update(outcome.found.keys())

    each()
    return counts[0], counts[1], seen


def smallest(strategy: st.SearchStrategy[Project], kind: str, cases: int,
             oracle: PythonOracle) -> tuple[Project, str] | None:
    """Hypothesis's shrunk project showing ``kind``, and what differed."""
    failing: list[tuple[Project, str]] = []

    @settings(max_examples=cases, deadline=None, database=None, report_multiple_bugs=False,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def shows(project: Project) -> None:
        found = _run(project, oracle).found
        if kind in found:
            failing.append((project, found[kind]))
            raise AssertionError(kind)

    try:
        shows()
    except AssertionError:
        return failing[-1]  # hypothesis replays the smallest one last
    return None


def source(project: Project) -> str:
    parts = []
    for home in ("lib", "m0", "m1"):
        text = module_source(project, home)
        if text is not None:
            kept = [line for line in text.splitlines()
                    if line and line not in ("import contextlib", "FLAG = False")]
            parts.append(f"# {'late/' if home == 'lib' else 'src/'}{home}.py\n" + "\n".join(kept))
    if project.change is not None:
        changed = project.changed()
        home = project.classes[project.change.index].home
        where = "early/lib.py (new)" if project.change.how == "shadow" else home + ".py"
        parts.append(f"# then ({project.change.how}) {where} becomes\n" + str(module_source(changed, home)))
    return "\n".join(parts)


def main() -> None:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    wanted = set(sys.argv[2:])
    oracle = PythonOracle()
    total, compared, by_kind = 0, 0, Counter[str]()
    start = time.perf_counter()
    try:
        for group, features, change in GROUPS:
            if wanted and group not in wanted:
                continue
            strategy = projects(features, change)
            ran, with_python, seen = survey(strategy, cases, oracle)
            total, compared = total + ran, compared + with_python
            by_kind.update(seen)
            print(f"== {group}: {ran} cases, {with_python} compared with Python; "
                  f"disagreements: {dict(seen) or 'none'}", flush=True)
            for kind in seen:
                found = smallest(strategy, kind, cases, oracle)
                if found is not None:
                    project, detail = found
                    print(f"-- {group} / {kind}: {KINDS[kind]}\n{source(project)}\n   got: {detail}\n",
                          flush=True)
    finally:
        oracle.close()
    print(f"cases: {total} ({compared} compared with Python) in {time.perf_counter() - start:.0f} s")
    print("projects with each kind of disagreement:", dict(by_kind) or "none")


if __name__ == "__main__":
    main()
