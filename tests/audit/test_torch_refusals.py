"""The torch refusal examples, executed: where the rule says a module reads
``_modules``, ``_buffers`` or ``_parameters`` while it is built, building it
raises torch's ``cannot assign ... before Module.__init__() call``; where it
finds nothing, building raises nothing."""

from __future__ import annotations

import pytest
from torch import nn

from vllm_sp_base._audit.rule._examples import Example
from vllm_sp_base._audit.rule._examples_frameworks import INVALID, VALID

#: What ``Module.__init__`` sets that torch looks for before it takes a submodule,
#: a buffer or a parameter.
_REFUSED = {"_modules", "_buffers", "_parameters"}


def _refused(example: Example) -> set[str]:
    """The example's module classes that torch refuses while they are built,
    with no argument, ``1`` or ``True`` (what a test runs under)."""
    namespace: dict[str, object] = {"__name__": "example"}
    exec(compile(example.source, "example.py", "exec"), namespace)  # noqa: S102 - our own examples
    refused: set[str] = set()
    for value in list(namespace.values()):
        if not (isinstance(value, type) and issubclass(value, nn.Module) and value.__module__ == "example"):
            continue
        for args in ((), (True,)):
            try:
                value(*args)
            except TypeError:
                continue
            except AttributeError as error:
                assert "before Module.__init__() call" in str(error), error
                refused.add(value.__name__)
            break
    return refused


@pytest.mark.parametrize("example", [e for e in VALID if e.name.startswith("torch-")], ids=lambda e: e.name)
def test_torch_refuses_nothing_where_the_rule_finds_nothing(example: Example) -> None:
    assert _refused(example) == set()


@pytest.mark.parametrize("example", [e for e in INVALID if any(a in _REFUSED for _, a, _ in e.expect)],
                         ids=lambda e: e.name)
def test_torch_refuses_each_class_the_rule_says_reads_its_state(example: Example) -> None:
    said = {cls for cls, attr, _ in example.expect if attr in _REFUSED}
    assert said and _refused(example) == said
