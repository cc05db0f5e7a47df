"""Where the audited tree calls a method on an instance of a class it builds
(``semantics/_call_sites.py``): a call that may run after the build, in the
same scope, on the object built, is one; a call in a sibling branch, after
the variable is bound again (a comprehension's, a pattern's, a ``with``'s own
name), or on another module's class of the name is not."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.semantics import _call_sites
from vllm_sp_base._audit.semantics._call_sites import called_on_instances
from vllm_sp_base._audit.sources._cache import Cache


def _sites(source: str) -> dict[str, int]:
    # Here every spelling but ``threading.Runner`` names the audited class.
    found = called_on_instances("Runner", [("pkg/run.py", textwrap.dedent(source).encode())],
                                lambda path, spelled: spelled != "threading.Runner")
    return {method: line for method, (_, line) in found.items()}


@pytest.mark.parametrize(("source", "expected"), [
    ("r = Runner()\nr.step()\n", {"step": 2}),
    ("Runner(cfg).step()\n", {"step": 1}),
    ("def f():\n    r = mod.Runner()\n    if x:\n        r.step()\n", {"step": 4}),
    ("if x:\n    r = Runner()\nr.step()\n", {"step": 3}),  # may hold one after the if
    ("for _ in range(3):\n    r = Runner()\n    r.step()\n", {"step": 3}),
    ("try:\n    r = Runner()\nexcept E:\n    pass\nr.step()\n", {"step": 5}),
], ids=["variable", "built-and-called", "nested-test", "after-a-branch", "loop", "try"])
def test_a_call_that_may_run_after_the_build_is_a_site(source: str, expected: dict[str, int]) -> None:
    assert _sites(source) == expected


@pytest.mark.parametrize("source", [
    "if x:\n    r = Runner()\nelse:\n    r.step()\n",  # the other branch
    "r = Runner()\nr = Other()\nr.step()\n",  # bound again
    "r = Runner()\ndef f(r):\n    r.step()\n",  # another scope's r
    "r = Runner()\ng = lambda: r.step()\n",  # a lambda's body runs later, if ever
    "r = Other()\nr.step()\n",  # not the class
    "r = threading.Runner()\nr.step()\n",  # another module's class of the name
    "r = Runner()\n[r.step() for r in others]\n",  # the comprehension's own r
    "r = Runner()\nmatch x:\n    case {'k': r}:\n        r.step()\n",  # the pattern binds r
], ids=["sibling-branch", "rebound", "other-scope", "lambda", "other-class", "other-module",
        "comprehension", "match-capture"])
def test_a_call_on_something_else_is_no_site(source: str) -> None:
    assert _sites(source) == {}


@pytest.mark.parametrize(("source", "expected"), [
    ("r = Runner()\nn = len(r)\n", {"__len__": 2}),
    ("print(repr(Runner()))\n", {"__repr__": 1}),
    ("r = Runner()\nx = r[0]\nr[1] = x\ndel r[2]\n", {"__getitem__": 2, "__setitem__": 3, "__delitem__": 4}),
    ("r = Runner()\nfor x in r:\n    pass\n", {"__iter__": 2}),
    ("with Runner():\n    pass\n", {"__enter__": 1, "__exit__": 1}),
    ("r = Runner()\nn = len(r, 2)\n", {}),  # not the builtin's call
    ("r = Runner()\nn = len(other)\n", {}),
], ids=["len", "repr-of-a-build", "subscripts", "for", "with", "two-arguments", "another-object"])
def test_what_python_runs_on_an_instance_is_a_site(source: str, expected: dict[str, int]) -> None:
    found = called_on_instances("Runner", [("pkg/run.py", source.encode())], lambda path, spelled: True,
                                frozenset({"step", *expected}) if expected else frozenset({"step", "__len__"}))
    assert {method: line for method, (_, line) in found.items()} == expected


def test_the_name_with_binds_holds_what_enter_returns() -> None:
    # Python runs the build's __enter__ and __exit__; r is what __enter__ returned.
    assert _sites("with Runner() as r:\n    r.step()\n") == {"__enter__": 1, "__exit__": 1}


def test_an_item_or_attribute_assigned_leaves_the_name_holding_the_instance() -> None:
    assert _sites("r = Runner()\nr.x = 1\nr[0] = 2\nr.step()\n") == {"step": 4, "__setitem__": 3}


def test_a_site_in_a_branch_of_a_match_or_a_handler_after_the_build_counts() -> None:
    assert _sites("r = Runner()\nmatch x:\n    case 1:\n        r.step()\n") == {"step": 4}
    assert _sites("r = Runner()\ntry:\n    pass\nexcept E as e:\n    r.stop()\n") == {"stop": 5}


_CLASSES = """
class Exporter:
    def __init__(self):
        self.config = {}
    def save(self):
        return self.config
class MyExporter(Exporter):
    def __init__(self):
        pass
"""


def _audited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> list[tuple[str, str | None]]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    monkeypatch.chdir(tmp_path)
    found = audit(["pkg"], cache=Cache(None, False)).findings
    return [(f.attribute, f.condition) for f in found]


def test_the_trees_call_is_said_where_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = _audited(tmp_path, monkeypatch, {
        "pkg/__init__.py": "", "pkg/export.py": _CLASSES,
        "pkg/app.py": "from pkg.export import MyExporter\n\n\ndef main():\n    e = MyExporter()\n    return e.save()\n",
    })
    assert found == [("config", f"called at {os.path.join('pkg', 'app.py')}:6")]


@pytest.mark.parametrize("caller", [
    ("pkg/tests/test_export.py", "from pkg.export import MyExporter\n\n\ndef test_save():\n    MyExporter().save()\n"),
    ("pkg/app.py", "import other\n\n\ndef main():\n    e = other.MyExporter()\n    return e.save()\n"),
], ids=["a-tests-call", "another-modules-class"])
def test_a_call_on_no_instance_of_the_audited_class_is_no_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caller: tuple[str, str],
) -> None:
    assert _audited(tmp_path, monkeypatch, {"pkg/__init__.py": "", "pkg/export.py": _CLASSES,
                                            caller[0]: caller[1]}) == []


@pytest.mark.parametrize(("source", "expected"), [
    ("r = Runner()\nr.step()\n", {"step": 2}),
    ("r = Runner()\nr . step()\n", {"step": 2}),  # spaces around the dot
    ("r = Runner()\n(r.\n step)()\n", {"step": 2}),  # the name on the next line
    ("r = Runner()\n(r.  # the step\n step)()\n", {"step": 2}),  # a comment before it
    ("r = Runner()\nr.\uff53tep()\n", {"step": 2}),  # a name Python folds by NFKC
    ("r = Runner()\nr.stop()\n", {}),  # a method the class does not have
    ("r = Runner()\nr.step_all()\n", {}),
], ids=["plain", "spaced", "next-line", "commented", "nfkc", "another-name", "a-longer-name"])
def test_only_the_methods_asked_for_are_looked_for_however_spelled(source: str, expected: dict[str, int]) -> None:
    found = called_on_instances("Runner", [("pkg/run.py", source.encode())], lambda path, spelled: True,
                                frozenset({"step"}))
    assert {method: line for method, (_, line) in found.items()} == expected


def test_a_long_comment_after_a_dot_is_read_once() -> None:
    # A rule of ``#`` after a dot (torch's own sources have such lines): each
    # way of splitting it into comments was tried once, exponentially many.
    source = "r = Runner()\nx = r." + "#" * 40 + "\nr.stop()\n"
    found = called_on_instances("Runner", [("pkg/run.py", source.encode())], lambda path, spelled: True,
                                frozenset({"step"}))
    assert found == {}


_ALONE = [
    "class Runner:\n    pass\n\ndef main():\n    r = Runner()\n# a comment at the margin\n    r.step()\n",
    "def main(\n    cfg,\n) -> None:\n    r = Runner(cfg)\n    r.step()\n",
    'class Box:\n    def run(self):\n        r = mod.Runner()\n        s = """\n        text"""\n        r.step()\n',
    "class BigRunner(Base):\n    def run(self):\n        r = BigRunner()\n        r.go()\n\ndef f():\n    Runner().step()\n",
]
_WHOLE = [
    "r = Runner()\nr.step()\n",  # at module level
    "r = Runner ()\nr.step()\n",  # a space before the parenthesis
    "def main():\n    r = (\nRunner())\n    r.step()\n",  # a build on a line left of the margin
    'class Box:\n    def run(self):\n        r = mod.Runner()\n        s = """\n  text"""\n        r.step()\n',  # a string's line left of the margin
]


@pytest.mark.parametrize("source", _ALONE + _WHOLE)
def test_a_function_parsed_alone_gives_the_sites_the_whole_file_gives(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = source.encode()
    alone = _call_sites._calls_in.__wrapped__(data, "Runner")
    assert [method for method, _, _ in alone] == ["step"]
    monkeypatch.setattr(_call_sites, "_functions_alone", lambda data, built: None)
    assert alone == _call_sites._calls_in.__wrapped__(data, "Runner")
    monkeypatch.undo()
    assert (_call_sites._functions_alone(data, b"Runner(") is not None) == (source in _ALONE)
