"""A source-text pass over every file that finds which classes can possibly
have a finding, so only their files (and their ancestors') are parsed.

It is built to over-approximate: anything it cannot read precisely counts as a
candidate. ``--parse-all`` skips it, and a test shows both modes agree on the
real vLLM tree.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from vllm_sp_base._audit.prescan._scans import ClassScan, FileScan

try:
    from vllm_sp_base._audit import _lexer
except ImportError:  # not compiled here: regular expressions read the text
    _lexer = None  # type: ignore[assignment]


def scan(text: bytes) -> FileScan:
    """What the pre-scan needs of one module: lexed by ``lexer/scan.c`` where
    it is compiled (exact: nothing in a string or comment counts), else read
    with the regular expressions of ``_prescan_patterns`` (which over-approximate)."""
    return scanned(text, _lexer.scan(text) if _lexer is not None else None)


def scanned(text: bytes, found: _lexer._Scanned | None) -> FileScan:
    """``scan(text)``, given what the compiled lexer found in it (None: it was
    not compiled, or could not lex ``text`` with certainty)."""
    if found is not None:
        classes, aliases, imported = found
        result = FileScan([ClassScan(*c) for c in classes], aliases, imported)
        return result if text.isascii() else _normalised(result)
    from vllm_sp_base._audit.prescan._patterns import scan_by_patterns

    if b"\r" in text:  # a lone carriage return ends a line too (CPython reads old Mac files)
        text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return scan_by_patterns(text)


#: ``read_and_scan(path, limit)``: a file's bytes and what the lexer finds in
#: them, read and lexed without the GIL (see ``lexer/read.c``); None where not compiled.
read_and_scan = getattr(_lexer, "read_and_scan", None)


def scan_releases_the_gil() -> bool:
    """Whether ``scan`` runs compiled, without the GIL: threads then scan in parallel."""
    return _lexer is not None


def _normalised(scanned: FileScan) -> FileScan:
    """Names as ``ast`` reads them: NFKC, as Python normalises identifiers."""

    def nfkc(name: str) -> str:
        return name if name.isascii() else unicodedata.normalize("NFKC", name)

    for cls in scanned.classes:
        cls.name = nfkc(cls.name)
        cls.bases = tuple(map(nfkc, cls.bases))
        cls.dotted_bases = tuple(map(nfkc, cls.dotted_bases))
    scanned.aliases = [(nfkc(a), nfkc(o)) for a, o in scanned.aliases]
    scanned.imported = [(nfkc(n), m) for n, m in scanned.imported]
    return scanned


#: Bases outside the audited tree whose ``__init__`` sets no ``self.<attr>`` the
#: rule could see, so skipping them loses nothing (torch's Module assigns through
#: ``super().__setattr__``). An audited class of the same name overrides this.
HARMLESS_EXTERNAL_BASES = frozenset(
    {
        "object", "ABC", "Generic", "Protocol", "NamedTuple", "TypedDict", "Enum",
        "IntEnum", "StrEnum", "Flag", "IntFlag", "Exception", "BaseException",
        "ValueError", "RuntimeError", "TypeError", "KeyError", "NotImplementedError",
        "str", "int", "float", "dict", "list", "tuple", "set", "frozenset", "Module",
    }
)


@dataclass(frozen=True)
class Candidates:
    names: set[str]  # classes that can be constructed past a skipped __init__ that sets
    in_mros: frozenset[str]  # those and every name their bases and aliases lead to
    subclassed: frozenset[str] = frozenset()  # names some class header lists as a base (or aliases of them)


def candidate_names(scans: Iterable[FileScan], audited_packages: set[str]) -> Candidates:
    """Names of every class that can be constructed past a skipped ``__init__``
    that would have set something, and the names their MROs can reach: the
    classes whose ``__init__`` the rule will read (their bodies are parsed with
    their modules, the others' when asked).

    Resolution is by bare name, so two classes that share a name are both
    candidates when either is: more parsing, never a missed finding.
    """
    children: dict[str, set[str]] = defaultdict(set)
    aliases: dict[str, set[str]] = defaultdict(set)
    by_name: dict[str, list[ClassScan]] = defaultdict(list)
    all_classes: list[ClassScan] = []
    installed_names: set[str] = set()  # imported from a package that is not audited
    for file_scan in scans:
        for local, module in file_scan.imported:
            if module.split(".", 1)[0] not in audited_packages:
                installed_names.add(local)
        for alias, original in file_scan.aliases:
            aliases[original].add(alias)
        for cls in file_scan.classes:
            by_name[cls.name].append(cls)
            all_classes.append(cls)
            for base in cls.bases:
                children[base].add(cls.name)
    alias_of: dict[str, set[str]] = defaultdict(set)
    for original, names in aliases.items():
        for alias in names:
            alias_of[alias].add(original)

    def close(names: set[str]) -> set[str]:
        todo = list(names)
        while todo:
            name = todo.pop()
            for nxt in children.get(name, set()) | aliases.get(name, set()):
                if nxt not in names:
                    names.add(nxt)
                    todo.append(nxt)
        return names

    may_set_memo: dict[str, bool] = {}

    def may_set_here(name: str) -> bool | None:
        """What ``name`` alone says: True/False, or None where its bases decide."""
        classes = by_name.get(name, [])
        if name in HARMLESS_EXTERNAL_BASES and not classes:
            return False
        if name == "?" or name in installed_names or (not classes and not alias_of.get(name)):
            return True  # may be an installed class, or an expression
        if any(c.init_sets or any(b not in HARMLESS_EXTERNAL_BASES for b in c.dotted_bases)
               for c in classes):
            return True
        return None

    def decided_by(name: str) -> list[str]:
        return [b for c in by_name.get(name, ()) for b in c.bases] + sorted(alias_of.get(name, ()))

    def may_set(name: str) -> bool:
        """Whether constructing a class called ``name`` may set a self attribute.
        Walked with a stack, not recursion: hierarchies thousands deep."""
        if name in may_set_memo:
            return may_set_memo[name]
        may_set_memo[name] = False  # cycles: what is on the stack adds nothing new
        here = may_set_here(name)
        if here is not None:
            may_set_memo[name] = here
            return here
        stack = [(name, iter(decided_by(name)))]
        while stack:
            current, pending = stack[-1]
            if may_set_memo[current]:  # decided: its caller is too
                stack.pop()
                if stack:
                    may_set_memo[stack[-1][0]] = True
                continue
            nxt = next(pending, None)
            if nxt is None:  # every base said no
                stack.pop()
                continue
            if nxt in may_set_memo:
                may_set_memo[current] = may_set_memo[nxt]
                continue
            may_set_memo[nxt] = False
            here = may_set_here(nxt)
            if here is not None:
                may_set_memo[nxt] = may_set_memo[current] = here
                continue
            stack.append((nxt, iter(decided_by(nxt))))
        return may_set_memo[name]

    non_chaining = close({c.name for c in all_classes if c.has_init and not c.init_chains})
    tainted: set[str] = set()
    for cls in all_classes:
        skips_own_bases = cls.has_init and not cls.init_chains
        if skips_own_bases and (
            any(may_set(b) for b in cls.bases)
            or any(b not in HARMLESS_EXTERNAL_BASES for b in cls.dotted_bases)
        ):
            tainted.add(cls.name)
        for i, base in enumerate(cls.bases[:-1]):
            later = cls.bases[i + 1 :]
            if base in non_chaining and (
                any(may_set(b) for b in later)
                or any(b not in HARMLESS_EXTERNAL_BASES for b in cls.dotted_bases if b in later)
            ):
                tainted.add(cls.name)
    names = close(tainted)
    todo = list(names)
    in_mros: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in in_mros:
            in_mros.add(name)
            todo += [base for cls in by_name.get(name, ()) for base in cls.bases]
            todo += alias_of.get(name, ())
    subclassed = set(children)
    subclassed.update(o for alias in children for o in alias_of.get(alias, ()))
    return Candidates(names, frozenset(in_mros), frozenset(subclassed))
