"""The ``# noqa`` comments that apply to a class: on its header's lines, and
on its ``__init__``'s signature lines when they name a code."""

from __future__ import annotations

import ast
import re

_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\[[^\]]*\])?(?:[,\s]+[A-Z]+[0-9]+(?:\[[^\]]*\])?)*))?",
    re.IGNORECASE,
)
_CODE = re.compile(r"([A-Z]+[0-9]+)(?:\[([^\]]*)\])?", re.IGNORECASE)


def noqa_codes(text: str) -> tuple[str, ...] | None:
    """The codes of the ``# noqa`` comment in ``text``: None for none, () for a
    bare one (every code), else ``SPB001`` or ``SPB001[attr]`` per attribute."""
    match = _NOQA.search(text)
    if match is None:
        return None
    codes = match.group("codes")
    if not codes:
        return ()
    found: list[str] = []
    for code, attrs in _CODE.findall(codes):
        names = [a for a in re.split(r"[,\s]+", attrs) if a]
        found += [f"{code.upper()}[{a}]" for a in names] if names else [code.upper()]
    return tuple(found)


def _header_lines(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, lines: list[bytes]) -> range:
    """The lines of a ``class``/``def`` header, from its keyword to its colon
    (a header split over lines may carry its noqa on any of them). Read from
    the source lines, brackets counted, not from the body's position (a cut
    body moves); a bracket inside a string on a header line may end it early."""
    depth = 0
    for number in range(node.lineno, min(len(lines), node.lineno + 200) + 1):
        code = lines[number - 1].split(b"#", 1)[0]
        depth += sum(code.count(c) for c in b"([{") - sum(code.count(c) for c in b")]}")
        if depth <= 0 and code.rstrip().endswith(b":"):
            return range(node.lineno, number + 1)
    return range(node.lineno, node.lineno + 1)


def class_noqa(lines: list[bytes], node: ast.ClassDef) -> tuple[tuple[str, ...] | None, tuple[int, ...]]:
    """The ``noqa`` that applies to a class: from its header's lines (a bare
    one silences every code), and from its ``__init__``'s header lines when it
    names a code (a bare noqa there is another tool's, on a long signature).
    The union of the codes, and the lines that carry them."""
    wanted = [(line, True) for line in _header_lines(node, lines)]
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "__init__":
            wanted += [(line, False) for line in _header_lines(stmt, lines)]
    codes: set[str] = set()
    bare = False
    at: list[int] = []
    for line, bare_counts in wanted:
        if line > len(lines) or b"noqa" not in lines[line - 1].lower():
            continue
        found = noqa_codes(lines[line - 1].decode("utf-8", "replace"))
        if found is None or (not found and not bare_counts):
            continue
        at.append(line)
        bare = bare or not found
        codes.update(found)
    if not at:
        return None, ()
    return (() if bare else tuple(sorted(codes))), tuple(at)
