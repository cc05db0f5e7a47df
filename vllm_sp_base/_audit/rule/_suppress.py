"""Suppressions past a class's own ``# noqa: SPB001``, in forms that ruff and
flake8 read without complaint: one attribute with ``# vllm-sp-base:
ignore[attr, ...]`` (ruff calls ``# noqa: SPB001[attr]`` an invalid noqa
directive on every run), and a noqa on the class whose ``__init__`` skips
(the one the fix line names) for the findings it causes in its subclasses.
Read on the lines a noqa counts on: a class header's, and its ``__init__``'s
signature."""

from __future__ import annotations

import re

from vllm_sp_base._audit.summaries._summaries import ClassInfo

MARKER = b"vllm-sp-base:"
_IGNORE = re.compile(rb"#\s*vllm-sp-base:\s*ignore\[([^\]]*)\]")


def ignore_comment(line: bytes) -> tuple[str, ...] | None:
    """The attributes ``# vllm-sp-base: ignore[a, b]`` on ``line`` names."""
    match = _IGNORE.search(line)
    if match is None:
        return None
    return tuple(name for name in re.split(r"[,\s]+", match.group(1).decode("utf-8", "replace")) if name)


def _signature(lines: list[bytes], first: int) -> range:
    """The lines of the ``class``/``def`` statement starting at ``first``, up to
    the colon that ends it, its brackets counted."""
    depth = 0
    for number in range(first, min(len(lines), first + 200) + 1):
        code = lines[number - 1].split(b"#", 1)[0]
        depth += sum(map(code.count, (b"(", b"[", b"{"))) - sum(map(code.count, (b")", b"]", b"}")))
        if depth <= 0 and code.rstrip().endswith(b":"):
            return range(first, number + 1)
    return range(first, first + 1)


def ignored(cls: ClassInfo, text: bytes) -> dict[str, int]:
    """Attribute -> the line of the ``ignore`` comment naming it, on ``cls``'s
    header or its ``__init__``'s signature."""
    if MARKER not in text:
        return {}
    lines = text.splitlines()
    starts = [cls.line] + ([cls.methods["__init__"].line] if "__init__" in cls.methods else [])
    found: dict[str, int] = {}
    for start in starts:
        for number in _signature(lines, start):
            for name in ignore_comment(lines[number - 1]) or ():
                found.setdefault(name, number)
    return found
