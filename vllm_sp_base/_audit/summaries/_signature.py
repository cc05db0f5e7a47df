"""What a method's signature says of one run of it: the parameters after the
one that receives the instance, and those whose default is None that the
body never binds again (a call that leaves one out runs the body with it
None). A cut body holds no signature: it is read from the source, from the
``def`` line to the colon that ends the header."""

from __future__ import annotations

import ast
import io
import tokenize

from vllm_sp_base._audit.summaries._events import Parameters

_OPEN = frozenset("([{")
_CLOSE = frozenset(")]}")


def parameters(args: ast.arguments, instance: str, body: list[ast.stmt]) -> Parameters | None:
    """The ``Parameters`` event of a signature whose parameter ``instance``
    receives the instance; None where no default is None that ``body`` leaves
    as it came (``x = x or 3`` makes ``x`` another value)."""
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = [*zip(positional, defaults, strict=True), *zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    none = [a.arg for a, d in pairs if isinstance(d, ast.Constant) and d.value is None and a.arg != instance]
    if none:
        rebound = _bound_names(body)
        none = [name for name in none if name not in rebound]
    if not none:
        return None
    names = [a.arg for a in positional]
    after = names[names.index(instance) + 1:] if instance in names else names
    return Parameters(",".join(after), ",".join(none))


def header_parameters(text: str, instance: str, body: list[ast.stmt]) -> Parameters | None:
    """``parameters`` of the ``def`` that ``text`` starts with (its line, from
    its first character), read up to the colon that ends the header."""
    if "None" not in text:
        return None
    args = header_arguments(text)
    return None if args is None else parameters(args, instance, body)


def header_arguments(text: str) -> ast.arguments | None:
    """The arguments of the ``def`` that ``text`` starts with."""
    header = _header(text)
    if header is None:
        return None
    try:
        node = ast.parse(header.strip() + ":\n    pass\n").body[0]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return node.args if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def def_text(source: bytes, def_line: int, body_start: int, body_line: int) -> str:
    """The source from the start of the ``def`` line (``def_line``) to where
    its body starts (offset ``body_start``, on line ``body_line``)."""
    position = body_start
    for _ in range(body_line - def_line + 1):
        position = source.rfind(b"\n", 0, position)
        if position < 0:
            break
    return source[position + 1 : body_start].decode("utf-8", "replace")


def _header(text: str) -> str | None:
    """``text`` up to the colon that ends the ``def`` header it starts with."""
    depth = 0
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.OP:
                continue
            if token.string in _OPEN:
                depth += 1
            elif token.string in _CLOSE:
                depth -= 1
            elif token.string == ":" and depth == 0:
                row, col = token.start
                return text[: offsets[row - 1] + col]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    return None


def _bound_names(body: list[ast.stmt]) -> set[str]:
    """Every name the body binds, in it or in what it nests (a parameter of
    a nested function or lambda shadows one of the method's)."""
    names: set[str] = set()
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)):
                names.add(node.name or "")
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                names.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                names.add(node.rest)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                names.update(node.names)
    return names
