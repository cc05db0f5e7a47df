"""A source-text pass over every file that finds which classes can possibly
have a finding, so only their files (and their ancestors') are parsed.

It is built to over-approximate: anything it cannot read precisely counts as a
candidate. ``--parse-all`` skips it, and a test shows both modes agree on the
real vLLM tree.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from vllm_sp_base._audit.prescan._exact import scan_by_ast
from vllm_sp_base._audit.prescan._scans import ClassScan, FileScan

try:
    from vllm_sp_base._audit import _lexer
except ImportError:  # not compiled here: ``ast`` reads each file
    _lexer = None  # type: ignore[assignment]


def scan(text: bytes) -> FileScan:
    """What the pre-scan needs of one module: lexed by ``lexer/scan.c`` where
    it is compiled and sure (exact: nothing in a string or comment counts),
    else parsed by ``ast`` (``_exact``): never a guess."""
    return scanned(text, _lexer.scan(text) if _lexer is not None else None)


def scanned(text: bytes, found: _lexer._Scanned | None) -> FileScan:
    """``scan(text)``, given what the compiled lexer found in it (None: it was
    not compiled, or was not sure: a name past ASCII, which Python folds by
    NFKC, or a source it cannot lex)."""
    if found is None or b"\0" in text:  # the lexer reads past a NUL; CPython refuses the file
        return scan_by_ast(text)
    classes, aliases, imported, modules = found
    return FileScan(
        [ClassScan(name, bases, tuple(map(_without_blanks, written)), *flags)
         for name, bases, written, *flags in classes],
        aliases, imported, modules,
    )


_BLANKS = re.compile(r"#[^\n]*|[\s\\]")


def _without_blanks(written: str) -> str:
    """``pkg . Base`` (or over lines, with comments) as ``pkg.Base``."""
    return written if written.replace(".", "").isidentifier() else _BLANKS.sub("", written)


#: ``read_and_scan(path, limit)``: a file's bytes and what the lexer finds in
#: them, read and lexed without the GIL (see ``lexer/read.c``); None where not compiled.
read_and_scan = getattr(_lexer, "read_and_scan", None)

#: ``spells_any(data, needles)``: whether the bytes hold one of ``needles``, searched without the GIL.
spells_any = getattr(_lexer, "spells_any", None)


def scan_releases_the_gil() -> bool:
    """Whether ``scan`` runs compiled, without the GIL: threads then scan in parallel."""
    return _lexer is not None


#: Bases outside the audited tree whose ``__init__`` sets no ``self.<attr>`` the
#: rule could see, so skipping them loses nothing (torch's Module assigns through
#: ``super().__setattr__``), by last name: what ``_unresolved`` does not name
#: when it cannot find them.
HARMLESS_EXTERNAL_BASES = frozenset(
    {
        "object", "ABC", "Generic", "Protocol", "NamedTuple", "TypedDict", "Enum",
        "IntEnum", "StrEnum", "Flag", "IntFlag", "Exception", "BaseException",
        "ValueError", "RuntimeError", "TypeError", "KeyError", "NotImplementedError",
        "str", "int", "float", "dict", "list", "tuple", "set", "frozenset", "Module",
    }
)

#: torch's ``nn.Module``: its ``__init__`` sets what its own methods read
#: (``register_buffer`` reads ``_buffers``), so a class that skips it is checked.
TORCH_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.Module", "torch.nn.modules.module.Module"})

#: Those bases by where they are defined: the pre-scan takes a base for one of
#: them only where the file's imports say it is that class (a project's own
#: ``Module``, or one imported from elsewhere, may set anything).
HARMLESS_QUALIFIED = frozenset(
    {f"builtins.{name}" for name in (
        "object", "Exception", "BaseException", "ValueError", "RuntimeError", "TypeError", "KeyError",
        "NotImplementedError", "str", "int", "float", "dict", "list", "tuple", "set", "frozenset")}
    | {f"{module}.{name}" for module in ("typing", "typing_extensions")
       for name in ("Generic", "Protocol", "NamedTuple", "TypedDict")}
    | {f"enum.{name}" for name in ("Enum", "IntEnum", "StrEnum", "Flag", "IntFlag")}
    | {"abc.ABC"} | TORCH_MODULE
)
_BUILTIN_NAMES = frozenset(q.split(".", 1)[1] for q in HARMLESS_QUALIFIED if q.startswith("builtins."))


#: The last names of those: a base named otherwise is no harmless class, whatever its imports.
_HARMLESS_LAST_NAMES = frozenset(q.rsplit(".", 1)[1] for q in HARMLESS_QUALIFIED)


def _known_bases(file_scan: FileScan) -> dict[str, frozenset[str]]:
    """For each base written in the file that may be a harmless class, the
    classes its imports make it (``torch.nn.Module`` for ``nn.Module`` after
    ``import torch.nn as nn``; every binding of its first name; empty where
    they do not say, or where its last name is none of theirs)."""
    known: dict[str, frozenset[str]] = {}
    bound: dict[str, set[str]] | None = None
    for cls in file_scan.classes:
        for written in cls.written:
            if written in known:
                continue
            if written.rpartition(".")[2] not in _HARMLESS_LAST_NAMES:
                known[written] = frozenset()
                continue
            if bound is None:
                bound = _bindings(file_scan)
            head, dot, rest = written.partition(".")
            if head not in bound:
                builtin = not dot and head in _BUILTIN_NAMES
                known[written] = frozenset({f"builtins.{head}"} if builtin else ())
                continue
            known[written] = frozenset(q.replace("{}", head) + dot + rest for q in bound[head])
    return known


def _bindings(file_scan: FileScan) -> dict[str, set[str]]:
    """What each name the file imports is bound to (``{}``: the imported name)."""
    bound: dict[str, set[str]] = defaultdict(set)
    for local, module in file_scan.imported:
        bound[local].add(f"{module}.{{}}")  # the imported name is filled in below
    for alias, original in file_scan.aliases:
        if alias in bound:
            bound[alias] = {q.replace("{}", original) for q in bound[alias]}
    for local, module in file_scan.modules:
        bound[local].add(module)
    return bound


@dataclass(frozen=True)
class Candidates:
    names: set[str]  # classes that can be constructed past a skipped __init__ that sets
    in_mros: frozenset[str]  # those and every name their bases and aliases lead to
    subclassed: frozenset[str] = frozenset()  # names some class header lists as a base (or aliases of them)


class _Class:
    """A class as one file writes it: its scan, and for each base (last name,
    harmless: that file's imports make it a harmless class from outside
    (``HARMLESS_QUALIFIED``), may be a class from outside the tree); whether a
    base is torch's Module itself."""

    __slots__ = ("bases", "scan", "torch_module")

    def __init__(self, scan: ClassScan, known: dict[str, frozenset[str]]) -> None:
        self.scan = scan
        what = [known[w] for w in scan.written]
        self.bases = [
            (name, bool(q) and q <= HARMLESS_QUALIFIED, "." in written or name == "?")
            for name, written, q in zip(scan.bases, scan.written, what)
        ]
        self.torch_module = any(q and q <= TORCH_MODULE for q in what)


def _may_set(here: Callable[[str], bool | None], decided_by: Callable[[str], list[str]]) -> Callable[[str], bool]:
    """``may_set(name)``: whether constructing a class called ``name`` may
    set a self attribute, as ``here`` says of each class and ``decided_by``
    names the bases that decide for it."""
    may_set_memo: dict[str, bool] = {}

    def may_set(name: str) -> bool:
        """Walked with a stack, not recursion: hierarchies thousands deep."""
        if name in may_set_memo:
            return may_set_memo[name]
        may_set_memo[name] = False  # cycles: what is on the stack adds nothing new
        said = here(name)
        if said is not None:
            may_set_memo[name] = said
            return said
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
            said = here(nxt)
            if said is not None:
                may_set_memo[nxt] = may_set_memo[current] = said
                continue
            stack.append((nxt, iter(decided_by(nxt))))
        return may_set_memo[name]

    return may_set


def candidate_names(scans: Iterable[FileScan], audited_packages: set[str]) -> Candidates:
    """Names of every class that can be constructed past a skipped ``__init__``
    that would have set something, and the names their MROs can reach: the
    classes whose ``__init__`` the rule will read (their bodies are parsed with
    their modules, the others' when asked).

    Resolution is by bare name, so two classes that share a name are both
    candidates when either is: more parsing, never a missed finding. A base is
    taken for a harmless class from outside only where its file's imports say
    so and no audited class has its name.
    """
    children: dict[str, set[str]] = defaultdict(set)
    aliases: dict[str, set[str]] = defaultdict(set)
    by_name: dict[str, list[_Class]] = defaultdict(list)
    all_classes: list[_Class] = []
    installed_names: set[str] = set()  # imported from a package that is not audited
    for file_scan in scans:
        for local, module in file_scan.imported:
            if module.split(".", 1)[0] not in audited_packages:
                installed_names.add(local)
        for alias, original in file_scan.aliases:
            aliases[original].add(alias)
        known = _known_bases(file_scan) if file_scan.classes else {}
        for scan in file_scan.classes:
            cls = _Class(scan, known)
            by_name[scan.name].append(cls)
            all_classes.append(cls)
            for base in scan.bases:
                children[base].add(scan.name)
    alias_of: dict[str, set[str]] = defaultdict(set)
    for original, names in aliases.items():
        for alias in names:
            alias_of[alias].add(original)

    def audited(name: str) -> bool:
        return name in by_name or name in alias_of

    def outside(name: str, harmless: bool, written_outside: bool) -> bool | None:
        """What a base says by itself: False a harmless class from outside,
        True one that may be any class from outside, None an audited name."""
        if harmless and not audited(name):
            return False
        if written_outside or name in installed_names or not audited(name):
            return True
        return None

    def close(names: set[str]) -> set[str]:
        todo = list(names)
        while todo:
            name = todo.pop()
            for nxt in children.get(name, set()) | aliases.get(name, set()):
                if nxt not in names:
                    names.add(nxt)
                    todo.append(nxt)
        return names

    def here(fields_aside: bool) -> Callable[[str], bool | None]:
        def may_set_here(name: str) -> bool | None:
            """What ``name`` alone says: True/False, or None where its bases decide
            (``fields_aside``: a dataclass's written ``__init__`` sets only what
            a dataclass below it sets too)."""
            classes = by_name.get(name, [])
            if name in _BUILTIN_NAMES and not audited(name) and name not in installed_names:
                return False  # ``Base = object`` (a TYPE_CHECKING stand-in): the builtin, no audited class
            if name == "?" or name in installed_names or not audited(name):
                return True  # may be an installed class, or an expression
            if any((c.scan.init_sets and not (fields_aside and c.scan.generated))
                   or any(outside(*base) for base in c.bases) for c in classes):
                return True
            return None
        return may_set_here

    def decided_by(name: str) -> list[str]:
        """The audited names whose classes decide for ``name`` (the others said already)."""
        return [b for c in by_name.get(name, ()) for b, *rest in c.bases if outside(b, *rest) is None] + sorted(
            alias_of.get(name, ()))

    may_set = _may_set(here(False), decided_by)
    may_set_beyond_fields = _may_set(here(True), decided_by)

    def base_may_set(name: str, harmless: bool, written_outside: bool) -> bool:
        said = outside(name, harmless, written_outside)
        return may_set(name) if said is None else said

    def base_may_set_beyond_fields(name: str, harmless: bool, written_outside: bool) -> bool:
        said = outside(name, harmless, written_outside)
        return may_set_beyond_fields(name) if said is None else said

    # Classes whose ``__init__`` may end the chain before the MRO's next
    # class: one that does not chain, or chains by naming its base (in
    # ``class D(L, R)``, ``L``'s ``Base.__init__(self)`` skips ``R``), or has a
    # base from outside that may not chain; and every class below them.
    non_chaining = close({
        c.scan.name for c in all_classes
        if (c.scan.has_init and (not c.scan.init_chains or c.scan.init_explicit))
        or any(outside(*base) for base in c.bases)
    })
    tainted: set[str] = set()
    for cls in all_classes:
        scan, bases = cls.scan, cls.bases
        skips = scan.has_init and not scan.init_chains
        skipped_sets = base_may_set_beyond_fields if scan.generated else base_may_set
        if skips and (cls.torch_module or any(skipped_sets(*base) for base in bases)):
            tainted.add(scan.name)
        for i, (base, harmless, written_outside) in enumerate(bases[:-1]):
            ends_chain = base in non_chaining or outside(base, harmless, written_outside)
            if ends_chain and any(base_may_set(*later) for later in bases[i + 1:]):
                tainted.add(scan.name)
    names = close(tainted)
    # A base bound where the pre-scan does not look (``A, B = Base, Other``,
    # ``(A := Base)``, a function's result) may be any class, a tainted one too.
    if names:
        names |= close({
            c.scan.name for c in all_classes
            if any(not written_outside and not harmless and not audited(base) and base not in installed_names
                   for base, harmless, written_outside in c.bases)
        })
    todo = list(names)
    in_mros: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in in_mros:
            in_mros.add(name)
            todo += [base for cls in by_name.get(name, ()) for base in cls.scan.bases]
            todo += alias_of.get(name, ())
    subclassed = set(children)
    subclassed.update(o for alias in children for o in alias_of.get(alias, ()))
    return Candidates(names, frozenset(in_mros), frozenset(subclassed))


def files_reached(scans: dict[str, FileScan], names: set[str]) -> dict[str, set[str]]:
    """For each file that defines a class of ``names``, the audited files its
    classes' bases may be defined in, by bare name and transitively (what
    checking it will summarise, as far as the pre-scan can tell): files that
    share them are best checked by one process."""
    defined: dict[str, list[str]] = defaultdict(list)
    bases: dict[str, set[str]] = defaultdict(set)
    for path, file_scan in scans.items():
        for cls in file_scan.classes:
            defined[cls.name].append(path)
            bases[cls.name].update(cls.bases)
        for alias, original in file_scan.aliases:
            bases[alias].add(original)
    reached: dict[str, set[str]] = {}
    memo: dict[str, frozenset[str]] = {}

    def above(name: str) -> frozenset[str]:
        """The files defining ``name``'s bases, and theirs (a stack: hierarchies run deep)."""
        if name in memo:
            return memo[name]
        seen, todo, files = {name}, [name], set[str]()
        while todo:
            for base in bases.get(todo.pop(), ()):
                if base not in seen:
                    seen.add(base)
                    todo.append(base)
                    files.update(defined.get(base, ()))
        memo[name] = frozenset(files)
        return memo[name]

    for path, file_scan in scans.items():
        mine = [cls.name for cls in file_scan.classes if cls.name in names]
        if mine:
            reached[path] = set().union(*(above(name) for name in mine)) - {path}
    return reached
