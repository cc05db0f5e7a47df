"""The differential fuzzer's runs: one generated project audited in every
mode, and executed by Python, and where they disagree.

Modes: the default (pre-scan), ``--parse-all``, a cold cache and a warm
one; with the project's ``Change``, a warm run after a file changed between
runs ("edit"), after a module appeared in an earlier search root
("shadow"), or after a file changed while the cold run read it ("during",
through the reader the audit calls). The audit runs in process (the API the
command calls); the generated code runs only in a subprocess.

Python's answer: a fork server (``PythonOracle``) imports torch once and
forks a child per project, which builds each audited class and calls its
``forward`` (or calls the instance, where a project class defines
``__call__``: ``module(x)``). Every project class gets a ``__getattr__`` that
records a read of a missing attribute and carries on, so one run sees every
such read, not only the first. A read counts when an ``__init__`` in the
class's MRO that sets the attribute had not run at that moment: the
AttributeError this rule is about. Under a guard (a ``_guarded_*`` method:
``contextlib.suppress``, ``getattr`` with a default, ``hasattr``, ``try``)
the read raises, as Python's would, and the guard decides; it is recorded
apart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from vllm_sp_base._audit._engine import AuditResult, audit
from vllm_sp_base._audit.sources import _sources
from vllm_sp_base._audit.sources._cache import Cache

from .differential_projects import HOMES, Project, module_path, module_source, write

SERVER = textwrap.dedent(
    r"""
    import importlib, json, os, signal, sys
    try:
        import torch.nn  # once, in the server: every project's child forks from here
    except ImportError:
        pass

    PROJECT = ("base0", "lib", "m0", "m1")

    class Stand:
        '''What a missing attribute reads as: anything done with it goes on.'''
        def __call__(self, *args, **kwargs):
            return self
        def __getattr__(self, name):
            return self

    def run(request):
        sys.path[:0] = request["path"]
        importlib.import_module("base0")
        ran = sys.modules["base0"].RAN
        state = {"phase": "__init__", "reads": [], "guarded": []}
        modules = [importlib.import_module(m) for m in request["modules"]]
        roots = tuple(os.path.realpath(p) for p in request["path"])
        classes = [v for m in list(sys.modules.values())
                   if os.path.realpath(getattr(m, "__file__", None) or "/").startswith(roots)
                   for v in vars(m).values() if isinstance(v, type) and v.__module__ == m.__name__]
        found = {}
        for cls in classes:
            found[cls] = next((k.__dict__["__getattr__"] for k in cls.__mro__ if "__getattr__" in k.__dict__), None)
        for cls, original in found.items():
            def record(self, name, original=original):
                if original is not None:
                    try:
                        return original(self, name)
                    except AttributeError:
                        pass
                if name.startswith("__"):
                    raise AttributeError(name)
                if sys._getframe(1).f_code.co_name.startswith("_guarded_"):
                    state["guarded"].append([state["phase"], name, list(ran)])
                    raise AttributeError(name)
                state["reads"].append([state["phase"], name, list(ran)])
                return Stand()
            cls.__getattr__ = record
        out = {}
        for module in modules:
            for name in module.NAMES:
                cls = getattr(module, name)
                del ran[:]
                state["phase"], state["reads"], state["guarded"] = "__init__", [], []
                mro = [k.__name__ if k.__module__ in PROJECT else "" for k in cls.__mro__]
                entry = {"mro": mro, "error": None}
                try:
                    built = cls()
                except Exception as error:
                    entry["error"] = repr(error)
                else:
                    state["phase"] = "forward"
                    called = any("__call__" in vars(k) for k in cls.__mro__ if k.__module__ in PROJECT)
                    try:
                        if request["root"] == "object":  # as the tree's use_C() does
                            if hasattr(type(built), "run"):
                                built.run()
                        elif called:
                            built()
                        else:
                            built.forward()
                    except Exception as error:  # the root's unimplemented forward, say
                        entry["forward_error"] = repr(error)
                entry["reads"], entry["guarded"] = state["reads"], state["guarded"]
                out[name] = entry
        return out

    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            signal.alarm(20)
            try:
                result = {"classes": run(request)}
            except BaseException as error:
                result = {"failed": repr(error)}
            with open(request["out"], "w") as out:
                json.dump(result, out)
            os._exit(0)
        os.waitpid(pid, 0)
        print("done", flush=True)
    """
)


class PythonOracle:
    """Builds a project's classes in a forked child of one long-lived server."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, cwd=tempfile.gettempdir(),
        )

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=30)

    def run(self, directory: Path, project: Project) -> dict[str, Any]:
        """Class name -> {"mro", "error", "reads": [[phase, attribute, ran]]}; raises on a broken project."""
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        out = directory / "python.json"
        modules = [h for h in HOMES if h != "lib" and module_source(project, h) is not None]
        request = {"path": [str(directory / d) for d in ("src", "early", "late")], "modules": modules,
                   "out": str(out), "root": project.root}
        _send(stdin, json.dumps(request))
        assert stdout.readline().strip() == "done"
        answer = json.loads(out.read_text())
        if "failed" in answer:
            raise RuntimeError(f"the generated project does not run: {answer['failed']}")
        classes: dict[str, Any] = answer["classes"]
        return classes


def _send(stream: IO[str], line: str) -> None:
    stream.write(line + "\n")
    stream.flush()


def python_errors(project: Project, outcome: dict[str, Any]) -> frozenset[tuple[str, str]] | None:
    """(class, attribute) of each read that Python found missing and that an
    ``__init__`` of the class's MRO, not run at that moment, sets. None if a
    class could not be built for another reason (nothing to compare)."""
    errors = set()
    for name, seen in outcome.items():
        if seen["error"] is not None:
            return None
        sets = project.sets_of(name)
        counted = {phase: set() for phase in ("__init__", "forward")}
        for phase, attr, ran in seen["reads"]:
            if any(attr in sets.get(k, ()) and k not in ran for k in seen["mro"]):
                counted[phase].add(attr)
        # A read that fails while the class is built ends the building: forward never runs.
        errors.update((name, attr) for attr in counted["__init__"] or counted["forward"])
    return frozenset(errors)


Projection = tuple[tuple[str, ...], ...]


def python_guarded(project: Project, outcome: dict[str, Any]) -> frozenset[tuple[str, str]]:
    """(class, attribute) of each missing attribute Python read only under a
    guard, which took the AttributeError: no finding may name one."""
    found = set()
    for name, seen in outcome.items():
        sets = project.sets_of(name)
        plain = {attr for _, attr, _ in seen["reads"]}
        found.update((name, attr) for _, attr, _ in seen.get("guarded", ())
                     if attr not in plain and any(attr in sets.get(k, ()) for k in seen["mro"]))
    return frozenset(found)


def projection(result: AuditResult, with_diagnostics: bool = False) -> Projection:
    """What two runs must agree on: each finding's class, attribute,
    severity, entry point and skipped ``__init__``; for the cache's runs,
    the diagnostics and unresolved bases too."""
    rows = [("finding", f.class_name, f.attribute, f.severity, f.entry or "", f.skipped_init)
            for f in result.findings]
    if with_diagnostics:
        rows += [("diagnostic", os.path.basename(p), why) for p, why in result.diagnostics]
        rows += [("unresolved", u.base, str(u.line)) for u in result.unresolved]
    return tuple(sorted(rows))


def audit_findings(result: AuditResult) -> frozenset[tuple[str, str]]:
    return frozenset((f.class_name.rsplit(".", 1)[-1], f.attribute) for f in result.findings)


def audit_errors(result: AuditResult) -> frozenset[tuple[str, str]]:
    return frozenset((f.class_name.rsplit(".", 1)[-1], f.attribute) for f in result.findings
                     if f.severity == "error")


def run_audit(directory: Path, *, parse_all: bool = False, cache_dir: Path | None = None) -> AuditResult:
    search = [str(directory / "early"), str(directory / "late"), *sys.path]
    cache = Cache(str(cache_dir), True) if cache_dir is not None else Cache(None, False)
    return audit([str(directory / "src")], cache=cache, parse_all=parse_all, import_path=search)


@contextmanager
def changing_while_read(target: Path, text: str) -> Iterator[None]:
    """While it lasts, the first time the audit reads ``target`` the file is
    rewritten with ``text`` right after the read (an editor saving mid-run)."""
    real_read, real_scan = _sources._read, _sources._read_and_scan
    done: list[bool] = []

    def after(path: str) -> None:
        if not done and os.path.realpath(path) == os.path.realpath(target):
            done.append(True)
            target.write_text(text, encoding="utf-8")

    def read(path: str) -> Any:
        found = real_read(path)
        after(path)
        return found

    def read_and_scan(path: str, *rest: Any) -> Any:
        found = real_scan(path, *rest)
        after(path)
        return found

    _sources._read, _sources._read_and_scan = read, read_and_scan  # type: ignore[assignment]
    try:
        yield
    finally:
        _sources._read, _sources._read_and_scan = real_read, real_scan  # type: ignore[assignment]


@dataclass
class Outcome:
    """The disagreements found on one project: kind -> detail."""

    found: dict[str, str] = field(default_factory=dict)
    compared_with_python: bool = False

    def add(self, kind: str, detail: object) -> None:
        self.found.setdefault(kind, str(detail))


#: Disagreement kinds, and what each means.
KINDS = {
    "default-vs-parse-all": "the default mode's findings differ from --parse-all's",
    "warm-vs-cold": "a warm cache run differs from the cold run on the same files",
    "edit-between-runs": "after a file changed between runs, the warm run differs from --no-cache",
    "shadow-between-runs": "after a module appeared in an earlier search root, the warm run differs",
    "edit-during-run": "after a file changed while the cold run read it, the warm run differs",
    "false-error": "both modes agree on an error Python does not raise",
    "miss": "both modes agree, Python raises an AttributeError they do not report (as an error or a warning)",
    "finding-on-a-guarded-read": "a finding (of any severity) on a read Python makes only under a guard",
}


def differences(project: Project, directory: Path, oracle: PythonOracle | None,
                modes: frozenset[str] = frozenset(KINDS)) -> Outcome:
    """Runs ``project`` (written under ``directory``) in every mode ``modes``
    asks about, and says where they disagree."""
    outcome = Outcome()
    write(project, directory)
    default = run_audit(directory)
    if "default-vs-parse-all" in modes or "miss" in modes or "false-error" in modes:
        whole = run_audit(directory, parse_all=True)
        if projection(default) != projection(whole):
            outcome.add("default-vs-parse-all", (projection(default), projection(whole)))
        elif oracle is not None and ("miss" in modes or "false-error" in modes):
            ran = oracle.run(directory, project)
            truth = python_errors(project, ran)
            guarded = python_guarded(project, ran) & audit_findings(default)
            if guarded:
                outcome.add("finding-on-a-guarded-read", sorted(guarded))
            if truth is not None:
                outcome.compared_with_python = True
                # A warning reports the read too (a skip under a test the audit
                # cannot decide, ``if FLAG``): only an error claims a sure crash.
                reported = audit_errors(default)
                if truth - audit_findings(default):
                    outcome.add("miss", sorted(truth - audit_findings(default)))
                if reported - truth:
                    outcome.add("false-error", sorted(reported - truth))
    if "warm-vs-cold" in modes:
        with tempfile.TemporaryDirectory() as cache:
            cold = run_audit(directory, cache_dir=Path(cache))
            warm = run_audit(directory, cache_dir=Path(cache))
            if projection(cold, True) != projection(warm, True):
                outcome.add("warm-vs-cold", (projection(cold, True), projection(warm, True)))
    if project.change is not None:
        _changed_runs(project, directory, outcome)
    return outcome


def _changed_runs(project: Project, directory: Path, outcome: Outcome) -> None:
    change = project.change
    assert change is not None
    after = project.changed()
    home = project.classes[change.index].home
    new_text = module_source(after, home)
    assert new_text is not None
    target = module_path(directory, home, shadow=change.how == "shadow")
    kind = {"edit": "edit-between-runs", "shadow": "shadow-between-runs", "during": "edit-during-run"}[change.how]
    with tempfile.TemporaryDirectory() as cache:
        if change.how == "during":
            with changing_while_read(target, new_text):
                run_audit(directory, cache_dir=Path(cache))
        else:
            run_audit(directory, cache_dir=Path(cache))
            target.write_text(new_text, encoding="utf-8")
        warm = run_audit(directory, cache_dir=Path(cache))
    fresh = run_audit(directory)
    if projection(warm, True) != projection(fresh, True):
        outcome.add(kind, (projection(warm, True), projection(fresh, True)))
