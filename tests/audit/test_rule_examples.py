"""Tests generated from the rule's own VALID/INVALID examples (fixit style).

Each example is one module, checked as the audit checks a tree: every class,
but the ones the module only ever names as a base (``only_a_base``)."""

from __future__ import annotations

import pytest

from vllm_sp_base._audit.rule._examples import Example
from vllm_sp_base._audit.rule._rule import SkippedInitRead
from vllm_sp_base._audit.semantics._built import only_a_base
from vllm_sp_base._audit.semantics._project import ClassRef, Project
from vllm_sp_base._audit.summaries._summaries import ModuleInfo
from vllm_sp_base._audit.summaries._summarize import summarize


def _check(example: Example) -> set[tuple[str, str, str]]:
    info = summarize(example.source, "example.py", False)

    def load(path: str, is_package: bool) -> ModuleInfo | None:
        return info if path.endswith("example.py") else None

    project = Project([], load)
    project.add_module("example", info)
    rule = SkippedInitRead(project, lambda module: module == "example")
    texts = [("example.py", example.source.encode())]
    return {
        (f.class_name.rsplit(".", 1)[-1], f.attribute, f.severity)
        for name in info.classes
        if not only_a_base(name, texts)
        for f in rule.check(ClassRef("example", name))
    }


@pytest.mark.parametrize("example", SkippedInitRead.VALID)
def test_valid(example: Example) -> None:
    assert _check(example) == set()


@pytest.mark.parametrize("example", SkippedInitRead.INVALID)
def test_invalid(example: Example) -> None:
    assert example.expect
    assert _check(example) == set(example.expect)
