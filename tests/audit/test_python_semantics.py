"""The Python-semantics examples, executed: what the rule says of each agrees
with what Python does when the class is built and called.

Each example's classes are built (with no argument, else with ``1``) and
called as torch calls a module, ``module(x)``; an ``AttributeError`` on the
instance is what an ``error`` finding says happens. A VALID example raises
none; an INVALID one raises it for each class and attribute it expects."""

from __future__ import annotations

import re
import sys
import types

import pytest
import torch
from torch import nn

from vllm_sp_base._audit.rule._examples import Example
from vllm_sp_base._audit.rule._examples_python import INVALID, VALID

_MISSING = re.compile(r"'(\w+)' object has no attribute '(\w+)'")


def _namespace(example: Example) -> dict[str, object]:
    """The example run as a module named ``example`` (``@dataclass`` looks its
    module up in ``sys.modules``)."""
    module = types.ModuleType("example")
    sys.modules["example"] = module
    try:
        exec(compile(example.source, "example.py", "exec"), vars(module))  # noqa: S102 - our own examples
    finally:
        del sys.modules["example"]
    return vars(module)


def _executed(example: Example) -> set[tuple[str, str]]:
    """(class, attribute) of each AttributeError that building and calling
    the example's own module classes raises."""
    namespace = _namespace(example)
    failed: set[tuple[str, str]] = set()
    for value in list(namespace.values()):
        if not (isinstance(value, type) and issubclass(value, nn.Module) and value.__module__ == "example"):
            continue
        instance = None
        for args in ((), (1,)):
            try:
                instance = value(*args)
                break
            except (TypeError, NameError):  # not with these arguments; or never (``super(Undefined, self)``)
                continue
            except AttributeError as error:  # while it is built
                failed.add(_missing(error))
                break
        if instance is None:
            continue
        try:
            instance(torch.ones(1))
        except AttributeError as error:
            failed.add(_missing(error))
    return failed


def _missing(error: AttributeError) -> tuple[str, str]:
    found = _MISSING.search(str(error))
    assert found is not None, error
    return found.group(1), found.group(2)


@pytest.mark.parametrize("example", VALID, ids=lambda e: e.name)
def test_python_raises_nothing_where_the_rule_finds_nothing(example: Example) -> None:
    assert _executed(example) == set()


@pytest.mark.parametrize("example", [e for e in INVALID if any(s == "error" for _, _, s in e.expect)],
                         ids=lambda e: e.name)
def test_python_raises_where_the_rule_says_error(example: Example) -> None:
    expected = {(cls, attr) for cls, attr, severity in example.expect if severity == "error"}
    assert expected and expected <= _executed(example)


def test_a_plain_class_method_the_tree_calls_raises_where_it_calls_it() -> None:
    # A warning: the call site runs where the tree runs it; here main() does.
    (example,) = [e for e in INVALID if e.name == "plain-class-method-the-tree-calls"]
    namespace: dict[str, object] = {"__name__": "example"}
    exec(compile(example.source, "example.py", "exec"), namespace)  # noqa: S102 - our own examples
    main = namespace["main"]
    assert callable(main)
    with pytest.raises(AttributeError, match="'MyPipeline' object has no attribute 'config'"):
        main()


def test_an_abstract_methods_implementation_raises_on_the_input_its_test_names() -> None:
    # The interface's users call ``encode``; given a video, the copy that skipped the parent's __init__ raises.
    (example,) = [e for e in INVALID if e.name == "abstract-method-an-implementation-inherits"]
    namespace = _namespace(example)
    copied, full = namespace["CopiedEncoder"], namespace["InstructEncoder"]
    assert isinstance(copied, type) and isinstance(full, type)
    assert copied("m").encode({"text": 1}) == ["m"]
    assert full("m").encode({"video": 1}) == [2]
    with pytest.raises(AttributeError, match="'CopiedEncoder' object has no attribute 'fps'"):
        copied("m").encode({"video": 1})


def test_a_class_with_an_abstract_method_left_is_never_built() -> None:
    (example,) = [e for e in VALID if e.name == "abstract-method-no-class-implements"]
    unfinished = _namespace(example)["Unfinished"]
    assert isinstance(unfinished, type)
    with pytest.raises(TypeError, match="abstract"):
        unfinished()


def test_a_warning_example_raises_under_python_too() -> None:
    # The warning examples' reads are reached when their test holds; here it
    # always does, so Python raises where the rule warns.
    (example,) = [e for e in INVALID if e.name == "getattr-default-overridden-by-the-class"]
    assert _executed(example) == {("Child", "rate")}


@pytest.mark.parametrize(("name", "raises"), [
    ("a-dataclass-written-init-runs-no-parents", "'Alpaca' object has no attribute 'prepare_data_per_node'"),
    ("a-dataclass-sets-its-bases-fields-and-runs-post-init", None),
    ("dataclass-fields-with-no-class-attribute", "'Sub' object has no attribute 'items'"),
    ("dataclass-written-init-knows-its-own-mro", "'C' object has no attribute 'prepare_data_per_node'"),
])
def test_a_dataclass_runs_the_init_its_decorator_writes(name: str, raises: str | None) -> None:
    (example,) = [e for e in (*VALID, *INVALID) if e.name == name]
    main = _namespace(example)["main"]
    assert callable(main)
    if raises is None:
        main()
    else:
        with pytest.raises(AttributeError, match=raises):
            main()
