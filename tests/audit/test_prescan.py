"""The pre-scan: the compiled lexer (``lexer/scan.c``) reads strings, comments
and scopes exactly and over-approximates what the summaries would say; where
it is not sure, ``ast`` reads the file (``_exact``), and both say the same."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.prescan import _prescan
from vllm_sp_base._audit.prescan._exact import scan_by_ast
from vllm_sp_base._audit.prescan._prescan import scan
from vllm_sp_base._audit.prescan._scans import FileScan
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.summaries._syntax import BUILTINS_TAKING_SELF

pytestmark = pytest.mark.skipif(_prescan._lexer is None, reason="the C lexer is not built")


@dataclass(frozen=True)
class Case:
    source: str
    classes: tuple[tuple[str, tuple[str, ...], bool, bool, bool], ...] = ()  # name, bases, init, chains, sets
    aliases: tuple[tuple[str, str], ...] = ()
    imported: tuple[tuple[str, str], ...] = ()


CASES = (
    Case('s = """\nclass Fake(Base):\n    pass\n"""\n# class AlsoFake(Base):\n'),
    Case("class A(mod.Base, Mixin, metaclass=M, *more, **kw):\n    pass\n",
         (("A", ("Base", "Mixin"), False, False, False),)),
    Case("class A(Generic[T], make_base()):\n    x = 1\n", (("A", ("Generic", "make_base"), False, False, False),)),
    Case("class A(pkg . sub . Base):\n    pass\n", (("A", ("Base",), False, False, False),)),
    Case("class A((Base)):\n    pass\n", (("A", ("?",), False, False, False),)),
    Case("class A[T](Base):\n    pass\n", (("A", ("Base",), False, False, False),)),
    Case("class A(Base):\n    def __init__(self):\n        super().__init__()\n        self.x = 1\n",
         (("A", ("Base",), True, True, True),)),
    Case("class A(Base):\n    def __init__(this):\n        Base.__init__(this)\n",
         (("A", ("Base",), True, True, False),)),
    Case("class A(Base):\n    def __init__(self):\n        super(A, self).__init__()\n",
         (("A", ("Base",), True, True, False),)),
    Case("class A(Base):\n    def __init__(self):\n        super(Base, self).__init__()\n",
         (("A", ("Base",), True, False, False),)),
    Case("class A(Base, Other):\n    def __init__(self):\n        Base.__init__(self)\n",
         (("A", ("Base", "Other"), True, False, False),)),
    Case("class A(Base):\n    def __init__(self):\n        if x:\n            super().__init__()\n",
         (("A", ("Base",), True, False, False),)),
    # A body-level return or raise first: the parent's __init__ after it never runs.
    Case("class A(Base):\n    def __init__(self):\n        return\n        super().__init__()\n",
         (("A", ("Base",), True, False, False),)),
    Case("class A(Base):\n    def __init__(self):\n        raise E\n        Base.__init__(self)\n",
         (("A", ("Base",), True, False, False),)),
    # a nested return may end the body first (``if True: return``): no chain
    Case("class A(Base):\n    def __init__(self):\n        if x:\n            return\n        super().__init__()\n",
         (("A", ("Base",), True, False, False),)),
    # a nested raise builds no instance: the chain after it still counts
    Case("class A(Base):\n    def __init__(self):\n        if x:\n            raise E\n        super().__init__()\n",
         (("A", ("Base",), True, True, False),)),
    Case("class A(Base):\n    def __init__(self): super().__init__(); self.y = 2\n",
         (("A", ("Base",), True, True, True),)),
    Case("class A(Base):\n    def __init__(self):\n        setattr(self, 'x', 1)\n",
         (("A", ("Base",), True, False, True),)),
    # every __init__ must chain for the class to chain
    Case("class A(Base):\n    if x:\n        def __init__(self):\n            super().__init__()\n"
         "    else:\n        def __init__(self):\n            pass\n", (("A", ("Base",), True, False, False),)),
    # an __init__ nested in a method is not the class's
    Case("class A:\n    def m(self):\n        def __init__(self):\n            pass\n", (("A", (), False, False, False),)),
    Case("class Outer:\n    class Inner(Base):\n        def __init__(self):\n            pass\n"
         "    def __init__(self):\n        super().__init__()\n",
         (("Outer", (), True, True, False), ("Inner", ("Base",), True, False, False))),
    Case("Alias = pkg.Base\nSame = pkg.Same\nif TYPE_CHECKING:\n    Other: type = (\n        Thing\n    )\n"
         "x = 1; Short = Base\nif x: Inline = Base\nChained = Also = Base\n",
         aliases=(("Alias", "Base"), ("Other", "Thing"), ("Short", "Base"), ("Inline", "Base"))),
    Case("class C:\n    Hidden = Base\ndef f():\n    Local = Base\n", (("C", (), False, False, False),)),
    Case("from .sibling import Base as Renamed, Other\nfrom pkg.mod import (A as B,  # c\n    C)\n"
         "def f():\n    from x import Y as Z\n",
         aliases=(("Renamed", "Base"), ("B", "A"), ("Z", "Y")),
         imported=(("B", "pkg.mod"), ("C", "pkg.mod"), ("Z", "x"))),
    Case("class Ñame(Bäse):\n    pass\nﬁrst = Ñame\n", (("Ñame", ("Bäse",), False, False, False),),
         aliases=(("first", "Ñame"),)),  # identifiers as Python normalises them (NFKC)
)


def _as_case(found: FileScan) -> tuple[object, ...]:
    return (
        tuple((c.name, c.bases, c.has_init, c.init_chains, c.init_sets) for c in found.classes),
        tuple(found.aliases),
        tuple(found.imported),
    )


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_compiled_scan_reads_each_case_exactly(case: Case) -> None:
    assert _as_case(scan(case.source.encode())) == (case.classes, case.aliases, case.imported)


def _everything(found: FileScan, unknown: FileScan | None = None) -> tuple[object, ...]:
    """All a scan says; given ``unknown`` (the lexer's scan), each base the
    lexer calls "?" (``(Base)``: parentheses ``ast`` does not keep) as "?"."""
    classes = [
        (c.name, c.bases, c.written, c.has_init, c.init_chains, c.init_explicit, c.init_sets)
        for c in found.classes
    ]
    if unknown is not None and len(unknown.classes) == len(classes):
        classes = [
            (name, tuple("?" if u == "?" else b for u, b in zip(lexed.bases, bases)),
             tuple("?" if u == "?" else w for u, w in zip(lexed.written, written)), *flags)
            for lexed, (name, bases, written, *flags) in zip(unknown.classes, classes)
        ]
    return (classes, sorted(found.aliases), sorted(found.imported), sorted(found.modules))


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_the_ast_reading_says_what_the_lexer_says(case: Case) -> None:
    """Where the lexer is not sure, ``ast`` reads the file: the same fields."""
    source = case.source.encode()
    lexed = _prescan._lexer.scan(source)
    if lexed is None:  # a name past ASCII: the lexer refuses, and ``scan`` is the ast reading
        assert scan(source) == scan_by_ast(source)
    elif scan_by_ast(source).parses:  # (``class A[T]`` is Python 3.12)
        assert _everything(scan(source)) == _everything(scan_by_ast(source), scan(source))


def test_the_lexer_and_ast_agree_on_every_fixture(fixture_files: list[Path]) -> None:
    for path in fixture_files:
        data = path.read_bytes()
        if scan_by_ast(data).parses:
            assert _everything(scan(data)) == _everything(scan_by_ast(data), scan(data)), path


@pytest.mark.slow
def test_the_lexer_and_ast_agree_on_the_real_vllm_tree(vllm_files: list[Path]) -> None:
    for path in vllm_files:
        data = path.read_bytes()
        if scan_by_ast(data).parses:
            assert _everything(scan(data)) == _everything(scan_by_ast(data), scan(data)), path


@dataclass(frozen=True)
class Init:
    """One class's ``__init__`` as the pre-scan must read it (#20 items 1-4)."""

    source: str
    chains: bool
    explicit: bool
    sets: bool


INITS = {
    # A named base runs that base's __init__ whatever the MRO puts next.
    "explicit": Init("class L(A):\n    def __init__(self):\n        A.__init__(self)\n", True, True, False),
    "explicit dotted": Init("class L(m.A):\n    def __init__(self):\n        m . A.__init__(self)\n",
                            True, True, False),
    # ``nn.Module`` is not the header's ``Module`` (a project class of that name).
    "other class, same last name": Init(
        "class C(Module):\n    def __init__(self):\n        nn.Module.__init__(self)\n", False, False, False),
    # Setting through a helper that gets self, or through a super() method.
    "helper gets self": Init("class B(P):\n    def __init__(self):\n        super().__init__()\n"
                             "        B._setup(self)\n", True, False, True),
    "super method": Init("class B(P):\n    def __init__(self):\n        super().__init__()\n"
                         "        super()._setup()\n", True, False, True),
    "self in an f-string field": Init("class B(P):\n    def __init__(self):\n        super().__init__()\n"
                                      "        log(f'{self._setup()}')\n", True, False, True),
    # ``self`` handed to a function: the summaries follow a module-level one, so it may set.
    "self handed to a function": Init("class B(P):\n    def __init__(self):\n        super().__init__()\n"
                                      "        requires_backends(self, ['torch'])\n", True, False, True),
    "self handed to a builtin": Init("class B(P):\n    def __init__(self):\n        super().__init__()\n"
                                     "        print(self)\n", True, False, False),
    "self handed to the parent only": Init("class B(P):\n    def __init__(self, x):\n"
                                           "        P.__init__(self, x)\n", True, True, False),
    # Chaining on one branch of an expression is no chain.
    "conditional expression": Init("class C(B):\n    def __init__(self, f):\n"
                                   "        super().__init__() if f else nn.Module.__init__(self)\n",
                                   False, False, False),
    "call then more": Init("class C(B):\n    def __init__(self):\n        B.__init__(self) or g()\n",
                           False, False, False),
    # Identifiers Python folds by NFKC.
    "folded self": Init("class B(P):\n    def __init__(\uff53elf):\n        super().__init__()\n"
                        "        self.x = 1\n", True, False, True),
    "folded __init__": Init("class B(P):\n    def __\uff49nit__(self):\n        pass\n", False, False, False),
}


@pytest.mark.parametrize("name", INITS)
def test_each_init_is_read_as_python_runs_it(name: str) -> None:
    case = INITS[name]
    for found in (scan(case.source.encode()), scan_by_ast(case.source.encode())):
        (cls,) = found.classes
        assert cls.has_init
        assert (cls.init_chains, cls.init_explicit, cls.init_sets) == (case.chains, case.explicit, case.sets)


def test_a_class_defined_in_an_init_is_read_by_ast() -> None:
    """Its own ``__init__`` (and ``self``) are not the outer one's."""
    source = (b"class A(B):\n    def __init__(self):\n        class Inner:\n            def __init__(self):\n"
              b"                self.x = 1\n        super().__init__()\n")
    assert _prescan._lexer.scan(source) is None
    outer = scan(source).classes[0]
    assert (outer.name, outer.init_chains, outer.init_sets) == ("A", True, False)


def test_plain_imports_are_read_for_what_they_bind() -> None:
    source = b"import torch.nn as nn\nimport os.path, enum\ndef f():\n    import a.b.c as d\n"
    for found in (scan(source), scan_by_ast(source)):
        assert sorted(found.modules) == [("d", "a.b.c"), ("enum", "enum"), ("nn", "torch.nn"), ("os", "os")]


def test_a_file_that_does_not_parse_is_said_so() -> None:
    assert not scan(b"x = 'unterminated\n").parses
    assert scan(b"x = = 1\n").parses  # lexed: its grammar is the parser's to judge
    assert not scan(b"x = 1\n\0y = 2\n").parses  # CPython refuses a NUL anywhere in the source


def _classes_by_ast(source: bytes) -> list[tuple[str, tuple[str, ...]]]:
    def head(node: ast.expr) -> str:
        while isinstance(node, (ast.Subscript, ast.Call, ast.Attribute)):
            if isinstance(node, ast.Attribute):
                return node.attr
            node = node.value if isinstance(node, ast.Subscript) else node.func
        return node.id if isinstance(node, ast.Name) else "?"

    nodes = sorted((n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef)),
                   key=lambda n: (n.lineno, n.col_offset))
    return [(n.name, tuple(head(b) for b in n.bases if not isinstance(b, ast.Starred))) for n in nodes]


def _assert_classes_as_ast_sees_them(path: Path) -> None:
    data = path.read_bytes()
    found = scan(data)
    assert [(c.name, c.bases) for c in found.classes] == _classes_by_ast(data), path


def test_classes_and_bases_are_what_ast_sees_on_the_fixture_tree(fixture_files: list[Path]) -> None:
    for path in fixture_files:
        _assert_classes_as_ast_sees_them(path)


@pytest.mark.slow
def test_classes_and_bases_are_what_ast_sees_on_the_real_vllm_tree(vllm_files: list[Path]) -> None:
    for path in vllm_files:
        _assert_classes_as_ast_sees_them(path)


_PIECES = st.sampled_from([
    b'"', b"'", b'"""', b"'''", b"\\", b"\n", b"\r", b"\r\n", b"#", b"(", b")", b"[", b"]", b"{",
    b"}", b":", b";", b'f"', b"rb'", b"\\N{", b"def ", b"class ", b"async def ", b"__init__",
    b"\t", b"    ", b"\x00", b"\xff", b"from . import ", b" as ", b"=", b"self.", b"x", b"1",
    b"super().__init__()", b"A(B)",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=60).map(b"".join))
def test_any_bytes_are_scanned_or_refused_never_a_crash(source: bytes) -> None:
    found = _prescan._lexer.scan(source)
    assert found is None or len(found) == 4
    assert scan(source) is not None  # refused by the lexer: ast reads it
    for owners in (None, frozenset({"A"})):
        cut = _prescan._lexer.cut_bodies(source, (b"__init__",), owners)
        assert cut is None or cut[0].count(b"\n") == source.count(b"\n")


_compiled_reader = pytest.mark.skipif(_prescan.read_and_scan is None, reason="lexer not compiled here")


@_compiled_reader
def test_reading_and_scanning_at_once_is_reading_then_scanning(
    fixture_files: list[Path], vllm_files: list[Path]
) -> None:
    assert _prescan.read_and_scan is not None
    for path in [*fixture_files, *vllm_files]:
        data, found, _, _ = _prescan.read_and_scan(str(path), 1 << 22)  # the digest: test_cache_write.py
        assert data == path.read_bytes(), path
        assert found == _prescan._lexer.scan(data), path


@_compiled_reader
def test_reading_and_scanning_says_what_it_could_not_read(tmp_path: Path) -> None:
    assert _prescan.read_and_scan is not None
    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * 100)
    assert _prescan.read_and_scan(str(big), 599) == (None, 600)
    assert _prescan.read_and_scan(str(big), 600)[0] == big.read_bytes()
    with pytest.raises(FileNotFoundError) as missing:
        _prescan.read_and_scan(str(tmp_path / "gone.py"), 1 << 22)
    assert missing.value.filename == str(tmp_path / "gone.py")
    with pytest.raises(IsADirectoryError):
        _prescan.read_and_scan(str(tmp_path), 1 << 22)
    refused = tmp_path / "refused.py"
    refused.write_bytes(b"x = 'unterminated\n")
    assert _prescan.read_and_scan(str(refused), 1 << 22)[:3] == (refused.read_bytes(), None, None)


def test_a_file_with_lone_carriage_returns_is_pre_scanned_as_python_reads_it(tmp_path: Path) -> None:
    # CPython reads "\r" alone as a line end; the compiled lexer refuses it and
    # ast reads the file: the class must not hide.
    source = (
        "class Base:\r    def __init__(self):\r        self.a = 1\r"
        "class Top(Base):\r    def __init__(self):\r        self.c = self.a\r"
    )
    (tmp_path / "m.py").write_bytes(source.encode())
    found = {
        parse_all: [(f.class_name, f.attribute) for f in audit(
            [str(tmp_path)], cache=Cache(None, False), parse_all=parse_all).findings]
        for parse_all in (False, True)
    }
    assert found[False] == found[True] == [("m.Top", "a")]


_STAND_IN = b"""
from abc import ABC
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    class Metadata(ABC):
        pass
else:
    Metadata = %s
class Child(Metadata):
    def __init__(self):
        self.x = 1
"""


@pytest.mark.parametrize(("stand_in", "candidate"), [
    (b"object", False),  # the builtin: its __init__ sets nothing
    (b"Other", True),  # a class of the tree, which may set what Child skips
])
def test_a_base_bound_to_a_builtin_stand_in_makes_no_candidate(stand_in: bytes, candidate: bool) -> None:
    other = scan(b"import torch.nn as nn\nclass Other(nn.Module):\n    def __init__(self):\n"
                 b"        super().__init__()\n        self.o = 1\n")
    chosen = _prescan.candidate_names([scan(_STAND_IN % stand_in), other], {"m"})
    assert ("Child" in chosen.names) is candidate


def test_a_builtin_name_imported_from_outside_is_no_builtin() -> None:
    rebound = scan(b"from elsewhere import object\n" + _STAND_IN % b"object")
    assert "Child" in _prescan.candidate_names([rebound], {"m"}).names


@pytest.mark.skipif(_prescan.spells_any is None, reason="lexer not compiled here")
@given(st.binary(max_size=300), st.lists(st.binary(min_size=1, max_size=6), min_size=1, max_size=3))
@settings(max_examples=300, deadline=None)
def test_spells_any_is_a_byte_search(data: bytes, needles: list[bytes]) -> None:
    # The end of a run reads for unused suppressions only files it says hold a marker.
    assert _prescan.spells_any is not None
    haystack = data[: len(data) // 2] + needles[0] + data[len(data) // 2:] if data[:1] == b"!" else data
    assert _prescan.spells_any(haystack, tuple(needles)) == any(n in haystack for n in needles)


# ``vars(self)`` and ``super(...)`` may set for reasons of their own (a setter named, a parent's method).
@pytest.mark.parametrize("name", [*sorted(BUILTINS_TAKING_SELF - {"vars", "super"}), "setup", "_init_weights"])
def test_a_function_handed_self_may_set_unless_a_builtin(name: str) -> None:
    # ``setup(self)`` runs a module-level function the summaries follow; the
    # compiled pre-scan and ``ast``'s agree on which names are builtins.
    source = f"class A(Base):\n    def __init__(self):\n        {name}(self)\n".encode()
    may_set = name not in BUILTINS_TAKING_SELF
    assert scan(source).classes[0].init_sets is may_set
    assert scan_by_ast(source).classes[0].init_sets is may_set
