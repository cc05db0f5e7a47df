"""What a method's signature says of one run of it: the parameters after the
one that receives the instance, and those whose default is None that the
body never binds again (a call that leaves one out runs the body with it
None). A cut body holds no signature: it is read from the source, from the
``def`` line to the colon that ends the header."""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize

from vllm_sp_base._audit.summaries._events import Parameters, Signature

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
        rebound = bound_names(body)
        none = [name for name in none if name not in rebound]
    if not none:
        return None
    names = [a.arg for a in positional]
    after = names[names.index(instance) + 1:] if instance in names else names
    return Parameters(",".join(after), ",".join(none))


def init_signature(args: ast.arguments) -> Signature:
    """The ``Signature`` of ``args``, the instance (its first parameter) left out."""
    positional = [a.arg for a in args.posonlyargs + args.args][1:]
    defaults = len(args.defaults)
    required = positional[: len(positional) - defaults] if defaults <= len(positional) else []
    keywords = [a.arg for a in args.args if a.arg in positional] + [a.arg for a in args.kwonlyargs]
    required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    rest = ("*" if args.vararg else "") + ("**" if args.kwarg else "")
    return Signature(",".join(positional), ",".join(keywords), ",".join(required), rest)


def header_parameters(text: str, instance: str, body: list[ast.stmt]) -> Parameters | None:
    """``parameters`` of the ``def`` that ``text`` starts with (its line, from
    its first character), read up to the colon that ends the header."""
    if "None" not in text:
        return None
    args = header_arguments(text)
    return None if args is None else parameters(args, instance, body)


def header_arguments(text: str) -> ast.arguments | None:
    """The arguments of the ``def`` that ``text`` starts with (shared: read them, never change them)."""
    header = _header(text)
    return None if header is None else _arguments(header.strip())


@functools.lru_cache(maxsize=1024)
def _arguments(header: str) -> ast.arguments | None:
    # One parse per distinct header: most ``__init__``s of a tree share a few
    # (``def __init__(self, config):``), and each one's signature is read.
    try:
        node = ast.parse(header + ":\n    pass\n").body[0]
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


_QUOTES_OR_COMMENT = frozenset("'\"#")
_PUNCTUATION = re.compile(r"[()\[\]{}:'\"#]")


def _header(text: str) -> str | None:
    """``text`` up to the colon that ends the ``def`` header it starts with."""
    # Most headers hold no string and no comment: brackets counted on the
    # characters say where it ends (tokenizing every header took a tenth of
    # the summaries' time); one with a quote or a ``#`` before its end is tokenized.
    depth = 0
    for match in _PUNCTUATION.finditer(text):
        char = match.group()
        if char in _QUOTES_OR_COMMENT:
            break
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
        elif depth == 0:  # the colon
            return text[:match.start()]
    return _tokenized_header(text)


def _tokenized_header(text: str) -> str | None:
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


def bound_names(body: list[ast.stmt]) -> set[str]:
    """Every name the body binds, in it or in what it nests (a parameter of
    a nested function or lambda shadows one of the method's). A walk of its
    own: ``ast.walk``'s generators took a sixth of the summaries' time."""
    names: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in _LEAVES:
            continue
        if isinstance(node, ast.Name):
            if type(node.ctx) is not ast.Load:
                names.add(node.id)
            continue
        if kind in _BINDS:  # rare: the exact checks only here
            if isinstance(node, ast.arg):
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
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                stack.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return names


#: Nodes with nothing below them that binds a name.
_LEAVES = frozenset({ast.Constant, ast.Load, ast.Store, ast.Del, ast.Pass, ast.Break, ast.Continue})
#: Nodes that bind a name other than an ``ast.Name`` target.
_BINDS = frozenset({
    ast.arg, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler, ast.alias,
    ast.MatchAs, ast.MatchStar, ast.MatchMapping, ast.Global, ast.Nonlocal,
})
