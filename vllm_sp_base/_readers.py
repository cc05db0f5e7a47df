"""Which contract flags a live class's own methods read on ``self`` (bytecode only)."""

from __future__ import annotations

import dis
from collections.abc import Iterator
from types import CodeType, FunctionType
from typing import Final

from vllm_sp_base._contract import SEQUENCE_PARALLEL_DEFAULTS

FLAGS: Final = frozenset(SEQUENCE_PARALLEL_DEFAULTS)
_LOAD_SELF: Final = frozenset({"LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_FAST_CHECK"})
_READ_ATTR: Final = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


def _codes(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


def _self_reads(code: CodeType, self_name: str, wanted: frozenset[str]) -> set[str]:
    found: set[str] = set()
    for inner in _codes(code):
        # Cheap pre-check: most code objects never name a flag at all.
        if wanted.isdisjoint(inner.co_names):
            continue
        previous_loads_self = False
        for ins in dis.get_instructions(inner):
            if previous_loads_self and ins.opname in _READ_ATTR and ins.argval in wanted:
                found.add(ins.argval)
            previous_loads_self = ins.opname in _LOAD_SELF and ins.argval == self_name
    return found


def flags_read_by(cls: type, flags: frozenset[str] = FLAGS) -> frozenset[str]:
    """The flags that methods defined on ``cls`` itself read as ``self.<flag>``."""
    found: set[str] = set()
    # Runs over every class of every vLLM module at plugin load: C-level checks first.
    for value in vars(cls).values():
        kind = type(value)
        if kind is property:
            value = value.fget
            kind = type(value)
        if kind is not FunctionType:
            continue
        code = value.__code__
        if flags.isdisjoint(code.co_names) and not _nested_mentions(code, flags):
            continue
        if code.co_argcount:
            found |= _self_reads(code, code.co_varnames[0], flags)
    return frozenset(found)


def _nested_mentions(code: CodeType, flags: frozenset[str]) -> bool:
    for const in code.co_consts:
        if type(const) is CodeType and (
            not flags.isdisjoint(const.co_names) or _nested_mentions(const, flags)
        ):
            return True
    return False


def defined_in_mro(cls: type, name: str) -> bool:
    """Whether any class of ``cls``'s MRO (but ``object``) defines ``name`` at class level."""
    return any(name in vars(klass) for klass in cls.__mro__[:-1])
