"""Test stand-ins for a ``ParallelConfig`` that the first patch must update.

A test that hands model code ``SimpleNamespace(use_sequence_parallel_moe=...,
pipeline_parallel_size=...)`` fed a re-derivation; once that reads the new
property, a namespace raises ``AttributeError`` and a ``MagicMock`` answers a
truthy mock (the SP path, silently). Each stand-in that sets both attributes,
by keywords to ``SimpleNamespace``/``Mock``/``MagicMock`` or by assignments to
one object in one block, is given the property's value. So is a mock
standing in for ``parallel_config`` (``parallel_config=MagicMock(...)``, or
assigned to a ``parallel_config`` name or attribute) in a test that imports a
rewritten module: the old expression gave it ``False`` unless it set
``pipeline_parallel_size=1`` (a child mock is never ``== 1``). Nothing else is
touched. Source only, by line and column: the caller formats what changed.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from vllm_sp_base._audit.files._discover import discover
from vllm_sp_base._upstream._names import MOE_GATE, PIPELINE_SIZE

_MOCKS: Final = frozenset({"Mock", "MagicMock", "NonCallableMock"})
_FACTORIES: Final = _MOCKS | {"SimpleNamespace"}
_CONFIG_FIELD: Final = "parallel_config"


@dataclass(frozen=True)
class StandIn:
    line: int
    note: str


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _value(moe: ast.expr, pipeline: ast.expr) -> str:
    """The property's value for these two: folded where both are literals."""
    if isinstance(moe, ast.Constant) and isinstance(pipeline, ast.Constant):
        return repr(bool(moe.value) and pipeline.value == 1)
    return f"({ast.unparse(moe)} and {ast.unparse(pipeline)} == 1)"


def _blocks(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def _assigned(statement: ast.stmt) -> tuple[str, str, ast.expr] | None:
    """(target object's source, attribute, value) of ``X.attr = value``."""
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Attribute)
    ):
        target = statement.targets[0]
        return ast.unparse(target.value), target.attr, statement.value
    return None


def update(source: str, gate: str) -> tuple[str, list[StandIn]]:
    """``source`` with every stand-in given ``gate``, and what was done."""
    tree = ast.parse(source)
    lines = source.encode("utf-8").splitlines(keepends=True)
    inserts: list[tuple[int, int, bytes]] = []  # (0-based line, byte column, text)
    done: list[StandIn] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) in _FACTORIES:
            given = {k.arg: k.value for k in node.keywords if k.arg}
            if MOE_GATE in given and PIPELINE_SIZE in given and gate not in given:
                last = [*node.args, *(k.value for k in node.keywords)][-1]
                assert last.end_lineno is not None and last.end_col_offset is not None
                text = f", {gate}={_value(given[MOE_GATE], given[PIPELINE_SIZE])}"
                inserts.append((last.end_lineno - 1, last.end_col_offset, text.encode()))
                done.append(StandIn(node.lineno, f"stand-in {_name(node.func)}(...) given {gate}"))
    for call in _config_mocks(tree):
        given = {k.arg: k.value for k in call.keywords if k.arg}
        if gate in given or (MOE_GATE in given and PIPELINE_SIZE in given):
            continue  # the second: done above
        value = "False"  # a child mock is never == 1
        if PIPELINE_SIZE in given and MOE_GATE not in given:  # the MoE flag: a child mock, truthy
            pipeline = given[PIPELINE_SIZE]
            value = (repr(pipeline.value == 1) if isinstance(pipeline, ast.Constant)
                     else f"({ast.unparse(pipeline)} == 1)")
        assert call.end_lineno is not None and call.end_col_offset is not None
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if arguments:
            last = arguments[-1]
            assert last.end_lineno is not None and last.end_col_offset is not None
            where, text = (last.end_lineno - 1, last.end_col_offset), f", {gate}={value}"
        else:  # Mock(): inside the brackets
            where, text = (call.end_lineno - 1, call.end_col_offset - 1), f"{gate}={value}"
        inserts.append((*where, text.encode()))
        done.append(StandIn(call.lineno, f"mock parallel_config given {gate}={value}"))
    for block in _blocks(tree):
        found: dict[str, dict[str, ast.stmt]] = {}
        for statement in block:
            assigned = _assigned(statement)
            if assigned is not None:
                found.setdefault(assigned[0], {})[assigned[1]] = statement
        for target, attrs in found.items():
            if MOE_GATE in attrs and PIPELINE_SIZE in attrs and gate not in attrs:
                after = max((attrs[MOE_GATE], attrs[PIPELINE_SIZE]), key=lambda s: s.lineno)
                assert after.end_lineno is not None
                indent = lines[after.lineno - 1][: after.col_offset].decode("utf-8")
                added = f"{indent}{target}.{gate} = {target}.{MOE_GATE} and {target}.{PIPELINE_SIZE} == 1\n"
                inserts.append((after.end_lineno, 0, added.encode()))
                done.append(StandIn(after.lineno, f"stand-in {target} given {gate}"))
    for line, column, insert in sorted(inserts, reverse=True):
        if line == len(lines):
            lines.append(b"")
        lines[line] = lines[line][:column] + insert + lines[line][column:]
    return b"".join(lines).decode("utf-8"), sorted(done, key=lambda s: s.line)


def _config_mocks(tree: ast.AST) -> Iterator[ast.Call]:
    """Mock calls standing in for a ``parallel_config``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == _CONFIG_FIELD and _is_mock(keyword.value):
                    assert isinstance(keyword.value, ast.Call)
                    yield keyword.value
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _is_mock(node.value):
            assert isinstance(node.value, ast.Call)
            if _name(node.targets[0]) == _CONFIG_FIELD:
                yield node.value


def _is_mock(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _name(node.func) in _MOCKS


def candidates(root: str, modules: frozenset[str] = frozenset()) -> Iterator[str]:
    """Test files under ``root/tests`` that set both attributes somewhere, or
    mock a ``parallel_config`` and name one of ``modules`` (those with a
    rewritten site), found as the audit finds files (its excludes, no symlink
    loops)."""
    tests = os.path.join(root, "tests")
    if not os.path.isdir(tests):
        return
    for path in sorted(discover([tests]).files):
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        if MOE_GATE.encode() in data and PIPELINE_SIZE.encode() in data or (_CONFIG_FIELD.encode() in data and b"Mock(" in data
              and any(module.encode() in data for module in modules)):
            yield path
