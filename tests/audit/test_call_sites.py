"""Where the audited tree calls a method on an instance of a class it builds
(``semantics/_call_sites.py``): a call that may run after the build, in the
same scope, is one; a call in a sibling branch, after the variable is bound
again, or in a test's file is not."""

from __future__ import annotations

import textwrap

import pytest

from vllm_sp_base._audit.semantics._call_sites import called_on_instances


def _sites(source: str, path: str = "pkg/run.py") -> dict[str, int]:
    found = called_on_instances("Runner", [(path, textwrap.dedent(source).encode())])
    return {method: line for method, (_, line) in found.items()}


@pytest.mark.parametrize(("source", "expected"), [
    ("r = Runner()\nr.step()\n", {"step": 2}),
    ("Runner(cfg).step()\n", {"step": 1}),
    ("with Runner() as r:\n    r.step()\n", {"step": 2}),
    ("def f():\n    r = mod.Runner()\n    if x:\n        r.step()\n", {"step": 4}),
    ("if x:\n    r = Runner()\nr.step()\n", {"step": 3}),  # may hold one after the if
    ("for _ in range(3):\n    r = Runner()\n    r.step()\n", {"step": 3}),
    ("try:\n    r = Runner()\nexcept E:\n    pass\nr.step()\n", {"step": 5}),
], ids=["variable", "built-and-called", "with", "nested-test", "after-a-branch", "loop", "try"])
def test_a_call_that_may_run_after_the_build_is_a_site(source: str, expected: dict[str, int]) -> None:
    assert _sites(source) == expected


@pytest.mark.parametrize("source", [
    "if x:\n    r = Runner()\nelse:\n    r.step()\n",  # the other branch
    "r = Runner()\nr = Other()\nr.step()\n",  # bound again
    "r = Runner()\ndef f(r):\n    r.step()\n",  # another scope's r
    "r = Runner()\ng = lambda: r.step()\n",  # a lambda's body runs later, if ever
    "r = Other()\nr.step()\n",  # not the class
], ids=["sibling-branch", "rebound", "other-scope", "lambda", "other-class"])
def test_a_call_on_something_else_is_no_site(source: str) -> None:
    assert _sites(source) == {}


def test_a_tests_calls_are_no_site() -> None:
    assert _sites("r = Runner()\nr.step()\n", path="pkg/tests/test_run.py") == {}
