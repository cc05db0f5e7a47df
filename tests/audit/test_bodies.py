"""The body cutter (``lexer/bodies.c``): what it cuts parses back to exactly the
module it came from, and what it cannot lex with certainty it refuses."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_lexer = pytest.importorskip("vllm_sp_base._audit._lexer", reason="the C lexer is not built")
cut_bodies = _lexer.cut_bodies

# Each source must round-trip: the skeleton's AST is the module's own with each
# cut body emptied, and each body parses on its own to the statements it had.
ROUND_TRIP = (
    "def f(x):\n    return x\n",
    "class A:\n    def m(self):\n        return self.a\n\n    async def n(self):\n        await self.b\n",
    "@decorate(lambda: 1)\ndef f(x=lambda y: y, *, z: 'a:b' = {1: 2}) -> dict[str, int]:\n    pass\n",
    "def outer(self):\n    def inner():\n        return 1\n    class Local:\n        def m(self):\n            pass\n    return inner\n",
    "def one_line(self): return self.x\ndef two(self):\n    pass\n",
    'def doc(self):\n    """Text with def f(): and class X: in it\nat column 0\n    """\n    return 1\n',
    "def strings(self):\n    a = 'it''s'\n    b = \"a # not a comment\"\n    c = r'\\'' + b'\\x00' + rb\"\\\"\"\n    return a\n",
    "def fstrings(self):\n    x = f\"{self.a!r:>{self.width}} {{literal}} {'q'}\"\n"
    "    y = f'{ {\"k\": 1}[\"k\"] }' + f\"\\N{EM DASH}{self.b}\" + rf\"\\{self.c}\"\n    return x, y\n",
    "def continued(self, a,\n              b) \\\n        -> None:\n    x = 1 + \\\n        2\n    return x\n",
    "def comments(self):\n    x = 1\n# a comment at column 0 inside the body\n    return x\n\n\n",
    "def tabs(self):\n\tif self.a:\n\t\treturn 1\n\treturn 2\n",
    "def at_eof(self):\n    return self.a",
    "def brackets(self):\n    return [\n1,\n  2,\n        ]\n",
    "x = 1 if\"a\" else 2\ndef after(self):\n    return x\n",
    "class A:\n    def __init__(self):\n        self.a = 1\n    def m(self):\n        return self.a\n",
    "def form_feed(self):\n    return 1\n\x0c\ndef g():\n    pass\n",
    "async \\\n  def spread(self):\n    pass\n",
    "if True:\n    def in_block(self):\n        return 1\nelse:\n    def in_block(self):\n        return 2\n",
    "def only_comment_after_colon(self):  # type: () -> None\n    pass\n",
    "def windows(self):\r\n    x = 1\r\n\r\n    return x\r\nclass A:\r\n    pass\r\n",
    "def windows_continued(self, a,\r\n        b) \\\r\n        -> None:\r\n    x = 1 + \\\r\n        2\r\n"
    "    return 'a\\\r\nb', x\r\nasync \\\r\n  def g(self):\r\n    pass\r\n",
    "def commented(  # type: ignore[override]\n    self,\n    *,\n    k: int,\n) -> None:\n    return self.k\n",
    "def nested_triple(self):\n    return '''a\n''' + \"\"\"b\n\"\"\"\n",
)

# Not lexed with certainty: None, and the caller parses the whole file.
REFUSED = (
    "def f(self):\n    return 'unterminated\n",
    "def f(self):\n    return 1\rx = 2\n",  # a lone carriage return
    "def f(self):\n# only a comment: no body\nx = 1\n",
    "def f(self):\n    return (1,\n",
    "x = )\n",
    "def f(self):\n    return '''never closed\n",
)


def _without_cut_bodies(tree: ast.Module, keys: set[tuple[int, int]]) -> str:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if (node.lineno, node.col_offset) in keys:
                node.body = []
            # a signature is cut to its first parameter's name: all a summary reads
            first = (node.args.posonlyargs + node.args.args)[:1]
            node.args = ast.arguments([], [ast.arg(a.arg) for a in first], None, [], [], None, [])
            node.returns = None
        if isinstance(node, (ast.stmt, ast.excepthandler, ast.match_case)):
            node.end_lineno = node.end_col_offset = None  # where a block ends moves with its body
    return ast.dump(tree, include_attributes=True)


def assert_round_trip(source: str, keep: tuple[bytes, ...] = ()) -> list[tuple[int, ...]]:
    data = source.encode()
    found = cut_bodies(data, keep)
    assert found is not None, source
    skeleton, cuts = found
    assert skeleton.count(b"\n") == data.count(b"\n")
    keys = {(cut[0], cut[1]) for cut in cuts}
    assert len(keys) == len(cuts)
    assert _without_cut_bodies(ast.parse(skeleton), keys) == _without_cut_bodies(ast.parse(data), keys)
    bodies = {
        (node.lineno, node.col_offset): node.body
        for node in ast.walk(ast.parse(data))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    assert keys <= set(bodies)
    for line, col, start, end, first_line, non_ascii in cuts:
        alone = ast.parse(b"if 1:\n" + data[start:end])
        ast.increment_lineno(alone, first_line - 2)
        statements = alone.body[0].body  # type: ignore[attr-defined]
        assert ast.dump(ast.Module(statements, []), include_attributes=True) == ast.dump(
            ast.Module(bodies[(line, col)], []), include_attributes=True)
        assert bool(non_ascii) == any(b >= 0x80 for b in data[start:end])
    return cuts


@pytest.mark.parametrize("source", ROUND_TRIP)
def test_cut_modules_round_trip(source: str) -> None:
    assert_round_trip(source)


@pytest.mark.parametrize("source", REFUSED)
def test_what_it_cannot_lex_it_refuses(source: str) -> None:
    assert cut_bodies(source.encode(), ()) is None


def test_every_block_body_is_cut_once_and_kept_names_stay_whole() -> None:
    source = ROUND_TRIP[14]  # __init__ and m
    assert [cut[0] for cut in assert_round_trip(source)] == [2, 4]
    assert [cut[0] for cut in assert_round_trip(source, keep=(b"__init__",))] == [4]
    # a kept body keeps the defs nested in it
    nested = "class A:\n    def __init__(self):\n        def inner():\n            return self.x\n" \
        "        self.y = inner\n    def m(self):\n        pass\n"
    assert [cut[0] for cut in assert_round_trip(nested, keep=(b"__init__",))] == [6]
    # a body holds the defs nested in it: one cut, not three
    assert [cut[0] for cut in assert_round_trip(ROUND_TRIP[3])] == [1]
    # a one-line body is not a block: nothing to cut
    assert [cut[0] for cut in assert_round_trip(ROUND_TRIP[4])] == [2]


def test_with_owners_only_their_kept_methods_stay_whole() -> None:
    source = (
        "def __init__(self):\n    pass\n"  # not a method: cut
        "class A:\n    def __init__(self):\n        self.a = 1\n"  # A is an owner: whole
        "    class Inner:\n        def __init__(self):\n            pass\n"  # Inner is not: cut
        "    if True:\n        def m(self):\n            pass\n"  # not in keep: cut
        "class B:\n    def __init__(self):\n        self.b = 2\n"  # B is not: cut
    )
    cut_lines = [cut[0] for cut in assert_round_trip(source, keep=(b"__init__",))]
    assert cut_lines == [10]  # no owners given: every __init__ whole
    found = cut_bodies(source.encode(), (b"__init__",), frozenset({"A"}))
    assert found is not None
    assert [cut[0] for cut in found[1]] == [1, 7, 10, 13]
    with pytest.raises(TypeError, match="owners must be a set"):
        cut_bodies(source.encode(), (b"__init__",), ["A"])


def test_non_ascii_bodies_are_flagged() -> None:
    (cut,) = assert_round_trip("def f(self):\n    return self.ﬁeld\n")
    assert cut[5] == 1  # NFKC: ``self.ﬁeld`` reads ``field``


# Statements with the lexer's hard cases, for generated modules.
_STATEMENTS = st.sampled_from([
    "x = 1", "return self.a", "s = 'def f(): pass'", 's = "class A:"', "s = '''\nx:\n  '''",
    "t = f\"{self.a!r:{w}}\"", "t = f'{ {1: 2}[1] }'", "u = (1,\n2)", "v = [\n]  # ]",
    "w = 1 + \\\n    2", "# comment:\npass", "pass", "if self.a:\n    y = 1", "z = lambda: 0",
    "b = rb'\\''", "q = 'a' 'b'", "yield self.b", "await self.c",
])


@st.composite
def _modules(draw: st.DrawFn) -> str:
    lines: list[str] = []

    def function(indent: str, depth: int) -> None:
        head = draw(st.sampled_from(["def", "async def"]))
        lines.append(f"{indent}{head} f{len(lines)}(self, a: 'x:y' = {{1: 2}}):")
        inner = indent + draw(st.sampled_from(["    ", "  ", "\t"]))
        for _ in range(draw(st.integers(1, 4))):
            if depth < 2 and draw(st.booleans()):
                function(inner, depth + 1)
            else:
                lines.extend(inner + part for part in draw(_STATEMENTS).split("\n"))
        if draw(st.booleans()):
            lines.append("")

    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            lines.append(f"class C{len(lines)}:")
            for _ in range(draw(st.integers(1, 3))):
                function("    ", 1)
        else:
            function("", 0)
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n# end\n"]))


@settings(max_examples=150, deadline=None)
@given(_modules())
def test_generated_modules_round_trip(source: str) -> None:
    ast.parse(source)  # the generator writes valid Python only
    assert_round_trip(source)
