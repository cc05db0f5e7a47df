"""One parse of a file's bytes for the checks that read source beyond the
summaries (who is built, what is set from outside, a processor's fields): the
same file is often asked about by several of them in a run. Callers only read
the tree."""

from __future__ import annotations

import ast
import functools


@functools.lru_cache(maxsize=8)
def parsed(data: bytes) -> ast.Module | None:
    """``data`` parsed, or None where it does not parse (or nests too deep to)."""
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
