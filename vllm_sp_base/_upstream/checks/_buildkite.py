"""Which Buildkite step of the tree runs the series' test, and whether its
``source_file_dependencies`` cover every source file the series changes
(``tests/AGENTS.md``: "Make sure CI runs it"). Read from the tree's own
``.buildkite/test_areas/*.yaml``; nothing is assumed about a tree without one."""

from __future__ import annotations

import glob
import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Step:
    label: str
    key: str
    file: str  # relative to the tree's root
    uncovered: tuple[str, ...]  # changed source files its dependencies do not name
    entries: tuple[str, ...] = ()  # the dependencies that cover the changed source files

    def describe(self) -> str:
        return f'"{self.label}" (key {self.key}, {self.file})'


@dataclass
class Wiring:
    steps: list[Step] = field(default_factory=list)  # the steps that run the test
    problem: str | None = None  # why the pipeline (or a file of it) could not be read

    def covering(self) -> list[Step]:
        return [step for step in self.steps if not step.uncovered]


def _runs(command: str, test: str) -> bool:
    """Whether a step command's pytest run selects ``test`` (relative to ``tests/``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if "pytest" not in words:
        return False
    for word in words[words.index("pytest") + 1:]:
        path = word.split("::", 1)[0].rstrip("/")
        if path and not path.startswith("-") and (test == path or test.startswith(path + "/")):
            return True
    return False


def _covering(dependencies: Iterable[Any], source: str) -> str | None:
    """The dependency that covers ``source``, by Buildkite's rule: an entry
    names a file or a folder prefix; ``!`` excludes."""
    named: str | None = None
    for entry in map(str, dependencies):
        prefix = entry.removeprefix("!").rstrip("/")
        if prefix and (source == prefix or source.startswith(prefix + "/")):
            if entry.startswith("!"):
                return None
            named = named or entry
    return named


def _steps(document: Any) -> list[dict[str, Any]]:
    steps = document.get("steps", []) if isinstance(document, dict) else document
    return [step for step in steps or [] if isinstance(step, dict)]


def find_steps(root: str, test_path: str, sources: list[str]) -> Wiring:
    """The steps of ``root``'s pipeline running ``test_path`` (under ``tests/``),
    each with the ``sources`` its dependencies leave uncovered."""
    pipelines = sorted(glob.glob(os.path.join(root, ".buildkite", "test_areas", "*.yaml")))
    wiring = Wiring()
    if not pipelines:
        return wiring
    try:
        import yaml
    except ImportError:
        wiring.problem = "PyYAML is not installed (pip install './[upstream]')"
        return wiring
    test = test_path.removeprefix("tests/")
    for path in pipelines:
        try:
            with open(path, encoding="utf-8") as handle:
                document = yaml.safe_load(handle)
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
            wiring.problem = f"{os.path.relpath(path, root)}: {error}"
            continue
        for step in _steps(document):
            commands = step.get("commands") or []
            if isinstance(commands, str):
                commands = [commands]
            if any(_runs(str(c), test) for c in commands):
                dependencies = step.get("source_file_dependencies") or []
                covering = {s: _covering(dependencies, s) for s in sources}
                wiring.steps.append(Step(
                    str(step.get("label", "")), str(step.get("key", "")),
                    os.path.relpath(path, root).replace(os.sep, "/"),
                    tuple(s for s, entry in covering.items() if entry is None),
                    tuple(sorted({entry for entry in covering.values() if entry is not None})),
                ))
    return wiring
