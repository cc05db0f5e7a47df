"""The pre-scan by regular expressions: where the compiled lexer
(``lexer/scan.c``) is not built, or refuses a file it cannot lex.

Over-approximates: a class in a docstring counts, and anything it cannot read
precisely makes a candidate."""

from __future__ import annotations

import re

from vllm_sp_base._audit.prescan._scans import ClassScan, FileScan

# Every pattern starts with a literal, so ``re`` can skip ahead with a fast
# substring search instead of trying each position (10x on the vLLM tree).
_CLASS = re.compile(rb"class[ \t]+(\w+)[ \t]*(?:\[[^\]\n]*\])?[ \t]*([(:])")
_INIT = re.compile(rb"__init__[ \t]*\(")
_DEF_PREFIX = re.compile(rb"[ \t]*(?:async[ \t]+)?def[ \t]+")
# ``Alias = Original`` (or ``= (Original)`` over lines) binds a module name only
# at module level: at column 0, or indented inside a top-level ``if``/``try``/... block.
_ASSIGNMENT = (
    rb"(\w+)[ \t]*(?::[^=\n]*)?=[ \t]*\(?\s*([\w.]+)\s*\)?[ \t]*(?:#[^\n]*)?(?=\r?\n|\Z)"
)
_FIRST_LINE_ASSIGN = re.compile(_ASSIGNMENT)
_TOP_ASSIGN = re.compile(rb"\n" + _ASSIGNMENT)
_NESTED_ASSIGN = re.compile(rb"\n[ \t]+" + _ASSIGNMENT)
_COMPOUND = rb"(?:if|elif|else|try|except|finally|with|for|while|async|match)\b"
_FIRST_LINE_BLOCK = re.compile(_COMPOUND)
_TOP_BLOCK = re.compile(rb"\n" + _COMPOUND)
_TOP_STATEMENT = re.compile(rb"\n[^ \t\f\r\n#]")
_COMMENT = re.compile(rb"#[^\n]*")
_FROM_IMPORT = re.compile(rb"from[ \t]+(\.*\w[\w.]*|\.+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)")
_IMPORTED_NAME = re.compile(rb"(\w+)(?:\s+as\s+(\w+))?")
_OPENERS = re.compile(rb"[(\[{]")
_DOTTED = re.compile(rb"\w+(?:\s*\.\s*\w+)*")


def _matching_paren(text: bytes, start: int, limit: int = 4000) -> int:
    close = text.find(b")", start + 1, start + limit)
    if close > 0 and not _OPENERS.search(text, start + 1, close):
        return close  # no nesting: the usual class header or short signature
    depth = 0
    end = min(len(text), start + limit)
    for i in range(start, end):
        c = text[i]
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_bases(inner: bytes) -> tuple[tuple[str, ...], tuple[str, ...]]:
    inner = _COMMENT.sub(b"", inner) if b"#" in inner else inner
    if not _OPENERS.search(inner):
        return _bases_of(inner.split(b","))
    parts: list[bytes] = []
    depth = 0
    current = bytearray()
    for c in inner:
        ch = bytes((c,))
        if ch in b"([{":
            depth += 1
        elif ch in b")]}":
            depth -= 1
        if ch == b"," and depth == 0:
            parts.append(bytes(current))
            current = bytearray()
        else:
            current += ch
    parts.append(bytes(current))
    return _bases_of(parts)


def _bases_of(parts: list[bytes]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    bases: list[str] = []
    dotted: list[str] = []
    for part in parts:
        part = part.strip()
        if not part or re.match(rb"^\w+\s*=(?!=)", part) or part.startswith(b"*"):
            continue
        head = _DOTTED.match(part)
        if head is None:
            bases.append("?")  # an expression: unknown
            continue
        last = head.group().rsplit(b".", 1)[-1].strip().decode("ascii", "replace")
        bases.append(last)
        if b"." in head.group():
            dotted.append(last)
    return tuple(bases), tuple(dotted)


_SUPER_INIT = re.compile(rb"super\(([^)]*)\)\.__init__\(")
# An assignment to self, or a call of a self method that may assign in turn.
_SETS_SELF = re.compile(
    rb"self\.\w+\s*(?:\(|(?::[^=]*)?(?:[-+*/|&^%@]|//|\*\*|>>|<<)?=(?!=))|setattr\(\s*self\b"
    rb"|__setattr__\(|vars\(\s*self\b"
)
_EXPLICIT_INIT = re.compile(rb"([\w.]+)\.__init__\(\s*self\b")


_FIRST_STATEMENT = re.compile(rb"^([ \t\f]*)[^ \t\f\r\n#]", re.MULTILINE)
_DEDENTS: dict[int, re.Pattern[bytes]] = {}


def _dedent_after(indent: int) -> re.Pattern[bytes]:
    """The next statement line indented no deeper than ``indent``: where a body ends."""
    pattern = _DEDENTS.get(indent)
    if pattern is None:
        pattern = _DEDENTS[indent] = re.compile(rb"\n[ \t\f]{0,%d}[^ \t\f\r\n#]" % indent)
    return pattern


def _scan_init(text: bytes, match: re.Match[bytes], indent: int, cls: ClassScan) -> None:
    """Fill in ``cls.init_chains`` and ``cls.init_sets`` from the ``__init__`` at ``match``.

    It chains when it surely runs its parent's: a body-level
    ``super().__init__(``, ``super(Own, self)``, or ``Parent.__init__(self`` naming
    the only base. Anything else (conditional, other class, no call) is a skip."""
    cls.has_init = True
    close = _matching_paren(text, match.end() - 1)
    colon = text.find(b":", close) if close >= 0 else -1
    if colon < 0:
        cls.init_sets = True
        return
    line_end = text.find(b"\n", colon)
    if line_end < 0:
        line_end = len(text)
    same_line = _COMMENT.sub(b"", text[colon + 1 : line_end]).strip()
    if same_line:
        cls.init_chains = _chains(same_line, cls)
        cls.init_sets = b"self" in same_line
        return
    end = _dedent_after(indent).search(text, line_end)
    body = text[line_end + 1 : end.start() if end is not None else len(text)]
    cls.init_sets = b"self" in body and _SETS_SELF.search(body) is not None
    first = _FIRST_STATEMENT.search(body)
    if first is None:
        return
    body_indent = len(first.group(1))
    # A body-level ``return`` or ``raise`` ends the body: a call after it never runs.
    ends = next((m.start() for m in _ENDS_BODY.finditer(body) if len(m.group(1)) == body_indent), len(body))
    position = body.find(b"__init__", 0, ends)
    while position >= 0 and not cls.init_chains:
        begin = body.rfind(b"\n", 0, position) + 1
        stop = body.find(b"\n", position)
        line = body[begin : stop if stop >= 0 else len(body)]
        stripped = line.lstrip()
        if len(line) - len(stripped) == body_indent and _chains(stripped, cls):
            cls.init_chains = True
        position = body.find(b"__init__", position + 8, ends)


_ENDS_BODY = re.compile(rb"^([ \t]*)(?:return|raise)\b", re.MULTILINE)


def _chains(statement: bytes, cls: ClassScan) -> bool:
    match = _SUPER_INIT.match(statement)
    if match is not None:
        args = [a.strip() for a in match.group(1).split(b",")]
        return args == [b""] or (len(args) == 2 and args[0].decode() == cls.name)
    match = _EXPLICIT_INIT.match(statement)
    if match is not None and len(cls.bases) == 1:
        return match.group(1).rsplit(b".", 1)[-1].decode() == cls.bases[0]
    return False


def _module_level_aliases(text: bytes) -> list[tuple[str, str]]:
    """(alias, original's last name) of each ``Alias = dotted.Original`` a module binds."""
    found = list(_TOP_ASSIGN.finditer(text))
    first = _FIRST_LINE_ASSIGN.match(text)
    if first is not None:
        found.append(first)
    blocks = [m.start() + 1 for m in _TOP_BLOCK.finditer(text)]
    if _FIRST_LINE_BLOCK.match(text):
        blocks.append(0)
    for start in blocks:
        end = _TOP_STATEMENT.search(text, start + 1)
        found += _NESTED_ASSIGN.finditer(text, start, end.start() if end is not None else len(text))
    aliases = []
    for match in found:
        original = match.group(2).rsplit(b".", 1)[-1]
        if original != match.group(1):
            aliases.append((match.group(1).decode(), original.decode()))
    return aliases


def _line_start(text: bytes, offset: int) -> int:
    return text.rfind(b"\n", 0, offset) + 1


def scan_by_patterns(text: bytes) -> FileScan:
    classes: list[tuple[int, int, ClassScan]] = []  # (offset, indent, scan)
    for match in _CLASS.finditer(text):
        begin = _line_start(text, match.start())
        prefix = text[begin : match.start()]
        if prefix.strip():
            continue
        name = match.group(1).decode("ascii", "replace")
        bases: tuple[str, ...] = ()
        dotted: tuple[str, ...] = ()
        if match.group(2) == b"(":
            close = _matching_paren(text, match.end() - 1)
            inner = text[match.end() : close] if close > 0 else b"?"
            bases, dotted = _split_bases(inner)
        classes.append((match.start(), len(prefix), ClassScan(name, bases, dotted, False, False, False)))
    if classes:
        for match in _INIT.finditer(text):
            begin = _line_start(text, match.start())
            head = _DEF_PREFIX.fullmatch(text, begin, match.start())
            if head is None:
                continue
            indent = len(text[begin:match.start()]) - len(text[begin:match.start()].lstrip())
            owner = None
            for offset, class_indent, info in classes:
                if offset > match.start():
                    break
                if class_indent < indent:
                    owner = info
            if owner is not None:
                # Another ``__init__`` (under if/else): the class chains only if each does.
                init = ClassScan(owner.name, owner.bases, owner.dotted_bases, False, False, False)
                _scan_init(text, match, indent, init)
                owner.init_chains = init.init_chains and (owner.init_chains or not owner.has_init)
                owner.init_sets = owner.init_sets or init.init_sets
                owner.has_init = True
    aliases = _module_level_aliases(text)
    imported: list[tuple[str, str]] = []
    for match in _FROM_IMPORT.finditer(text):
        names = _IMPORTED_NAME.finditer(_COMMENT.sub(b"", match.group(2)).strip(b"()"))
        at_top = not text[_line_start(text, match.start()) : match.start()].strip()
        module = match.group(1).decode()
        for name in names:
            if name.group(2) and name.group(2) != name.group(1):
                aliases.append((name.group(2).decode(), name.group(1).decode()))
            if at_top and not module.startswith("."):  # a relative import stays in its package
                imported.append(((name.group(2) or name.group(1)).decode(), module))
    return FileScan([c for _, _, c in classes], aliases, imported)
