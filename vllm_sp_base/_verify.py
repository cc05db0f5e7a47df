"""Runtime check of a built model: every flag present, a bool, and consistent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vllm_sp_base._contract import SEQUENCE_PARALLEL_DEFAULTS
from vllm_sp_base._protocols import ModuleTree
from vllm_sp_base._readers import flags_read_by

Problem = Literal["missing", "not_bool", "disagrees"]
_MISSING = object()


@dataclass(frozen=True)
class FlagProblem:
    path: str
    attribute: str
    problem: Problem
    detail: str

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.attribute} {self.problem}: {self.detail}"


def _expects(module: object, flag: str, cache: dict[type, bool]) -> bool:
    """Whether ``module`` takes part in the contract for ``flag``; a model has
    many layers of one class, so the MRO walk is done once per class."""
    klass = type(module)
    if klass not in cache:
        cache[klass] = any(
            flag in vars(k) or flag in flags_read_by(k) for k in klass.__mro__[:-1]
        )
    return cache[klass] or flag in vars(module)


def _enclosing(path: str, owners: dict[str, bool]) -> tuple[str, bool] | None:
    while path:
        path = path.rpartition(".")[0]
        if path in owners:
            return path, owners[path]
    return None


def verify_sequence_parallel(model: ModuleTree) -> list[FlagProblem]:
    """Name every module whose sequence-parallel flag is missing, not a bool,
    or disagrees with the nearest enclosing module that also carries
    ``use_sequence_parallel`` (a model sharding for SP over a layer that is not
    gives wrong results silently)."""
    problems: list[FlagProblem] = []
    owners: dict[str, bool] = {}
    expects: dict[str, dict[type, bool]] = {flag: {} for flag in SEQUENCE_PARALLEL_DEFAULTS}
    for path, module in model.named_modules():
        for flag in SEQUENCE_PARALLEL_DEFAULTS:
            if not _expects(module, flag, expects[flag]):
                continue
            value = getattr(module, flag, _MISSING)
            if value is _MISSING:
                problems.append(FlagProblem(path, flag, "missing",
                                            f"{type(module).__name__} reads it but never gets it"))
                continue
            if not isinstance(value, bool):
                problems.append(FlagProblem(path, flag, "not_bool",
                                            f"{type(module).__name__} has {value!r}"))
                continue
            if flag != "use_sequence_parallel":
                continue
            enclosing = _enclosing(path, owners)
            if enclosing is not None and enclosing[1] != value:
                problems.append(FlagProblem(
                    path, flag, "disagrees",
                    f"{value} here but {enclosing[1]} on {enclosing[0] or '<root>'}"))
            owners[path] = value
    return problems
