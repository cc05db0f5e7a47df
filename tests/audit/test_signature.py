"""A method's signature read from a cut body's source (``summaries/_signature.py``):
where the header ends, and which names the body binds again."""

from __future__ import annotations

import ast
import textwrap

import pytest

from vllm_sp_base._audit.summaries._signature import bound_names, header_arguments, init_signature


@pytest.mark.parametrize(("text", "names"), [
    ("def f(self, x: int = 3) -> Dict[str, int]:\n    pass\n", ["self", "x"]),
    ("def f(self, a=lambda x: x, *, b=None):\n  pass\n", ["self", "a"]),
    ("def f(self, s='a:b)', c=None):\n pass\n", ["self", "s", "c"]),  # a string's colon and bracket
    ("def f(\n    self,  # the: (instance\n    c=None,\n) -> None:\n", ["self", "c"]),  # a comment's
    ("async def f(self, d={1: 2}):\n", ["self", "d"]),
])
def test_the_header_ends_at_its_own_colon(text: str, names: list[str]) -> None:
    found = header_arguments(text)
    assert found is not None and [a.arg for a in found.posonlyargs + found.args] == names


def test_every_way_a_body_binds_a_name_is_seen() -> None:
    body = ast.parse(textwrap.dedent("""
        a = 1
        b += 1
        for c, *d in x: pass
        with x as e: pass
        import f.g
        from h import i as j
        def k(l, *m, n=1, **o): pass
        class P: pass
        try: pass
        except E as q: pass
        match x:
            case {"r": s, **t}: pass
            case [*u]: pass
        global v
        (w := 1)
        lambda y: y
        del z
        print(read, x.attr, x[0])
        x.attr = 1
        x[0] = 2
    """)).body
    assert bound_names(body) == set("abcdefjklmnoPqstuvwyz")  # not h, i, g, x, read, E


@pytest.mark.parametrize(("header", "passed", "refused"), [
    ("def __init__(self): pass", "0:", False),
    ("def __init__(self): pass", "1:", True),  # too many positional arguments
    ("def __init__(self): pass", "0:bias", True),  # an unexpected keyword argument
    ("def __init__(self, a, b=1): pass", "0:", True),  # a is missing
    ("def __init__(self, a, b=1): pass", "1:b", False),
    ("def __init__(self, a, b=1): pass", "1:a", True),  # a given twice
    ("def __init__(self, a, /, b=1): pass", "0:a", True),  # positional only
    ("def __init__(self, *args): pass", "3:", False),
    ("def __init__(self, *args): pass", "0:x", True),
    ("def __init__(self, **kwargs): pass", "0:x", False),
    ("def __init__(self, **kwargs): pass", "1:", True),
    ("def __init__(self, *, k): pass", "0:", True),  # a keyword-only parameter with no default
    ("def __init__(self, *, k): pass", "0:k", False),
])
def test_a_call_that_does_not_fit_the_signature_is_refused(header: str, passed: str, refused: bool) -> None:
    function = ast.parse(header).body[0]
    assert isinstance(function, ast.FunctionDef)
    assert init_signature(function.args).refuses(passed) is refused
