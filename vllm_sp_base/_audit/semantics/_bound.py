"""What construction binds an attribute to, read from source: the value of
the one ``self.<attr> = value`` construction runs, for the checks that
decide from that value (a factory's choice, a setting)."""

from __future__ import annotations

import ast

from vllm_sp_base._audit.semantics._classes import ClassModel
from vllm_sp_base._audit.semantics._construction import Construction, bound_once
from vllm_sp_base._audit.semantics._parsed import method_node
from vllm_sp_base._audit.semantics._project import ClassRef


def bound_value(
    model: ClassModel, built: Construction, attr: str, not_run: set[tuple[int, str]],
) -> tuple[ClassRef, ast.FunctionDef, ast.expr] | None:
    """(the class whose method binds it, that method, the value) where
    construction binds ``attr`` once, on no condition, and nothing binds it
    after (``bound_once``); None otherwise or where the source is not at hand."""
    found = bound_once(model, built, attr, not_run)
    if found is None:
        return None
    index, name, line = found
    owner = model.mro[index]
    assert isinstance(owner, ClassRef)
    function = method_node(model.project, owner, name)
    if function is None:
        return None
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if (isinstance(target, ast.Attribute) and target.attr == attr and target.lineno == line
                    and isinstance(target.value, ast.Name) and target.value.id == "self"):
                return owner, function, node.value
    return None
