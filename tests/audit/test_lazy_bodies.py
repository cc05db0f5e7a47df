"""Summaries of cut modules: a method body is parsed when the rule first needs
it, and what comes out is what parsing the whole file gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.prescan import _prescan
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.summaries import _summarize
from vllm_sp_base._audit.summaries._summaries import BodyDoesNotParse, ModuleInfo
from vllm_sp_base._audit.summaries._summarize import summarize

from .test_fixtures import TREE, expected, got

pytestmark = pytest.mark.skipif(_summarize._lexer is None, reason="the C lexer is not built")


def _equal_both_ways(path: Path) -> None:
    data = path.read_bytes()
    package = path.name == "__init__.py"
    whole = summarize(data, str(path), package, cut=False)
    # comparing methods parses every cut body; no owner named: every __init__ cut too
    assert summarize(data, str(path), package) == whole, path
    assert summarize(data, str(path), package, inits_of=frozenset()) == whole, path


def test_the_cutter_is_compiled_where_the_readme_installs() -> None:
    # The Makefile builds it; without it the audit is correct but slow.
    assert _summarize._lexer is not None


def test_cut_and_whole_summaries_are_equal_on_the_fixture_tree(fixture_files: list[Path]) -> None:
    for path in fixture_files:
        _equal_both_ways(path)


@pytest.mark.slow
def test_cut_and_whole_summaries_are_equal_on_the_real_vllm_tree(vllm_files: list[Path]) -> None:
    for path in vllm_files:
        _equal_both_ways(path)


def test_a_method_is_parsed_only_when_asked_for() -> None:
    info = summarize(b"class A:\n    def m(self):\n        return self.a\n", "a.py", False)
    method = info.classes["A"].methods["m"]
    assert "unparsed" in repr(method)
    assert not method.may_name([b"b"]) and method.may_name([b"a"])
    assert [read.attr for read in method.reads] == ["a"]
    assert "unparsed" not in repr(method) and method.may_name([b"b"])


@pytest.mark.parametrize(("body", "named"), [
    ("return self.flag", True),
    ("return other.flag", True),  # another object's: cannot tell, so yes
    ("return (self.\n        flag)", True),
    ("return self.flags", True),  # a longer name: a byte search says yes
    ("return self.other", False),
    ("return 'fl' + 'ag'", False),  # a string spelled apart is no attribute
])
def test_may_name_says_no_only_where_the_name_is_not_spelled(body: str, named: bool) -> None:
    source = f"class A:\n    def m(self):\n        {body}\n"
    method = summarize(source.encode(), "a.py", False).classes["A"].methods["m"]
    assert method.may_name([b"flag"]) is named
    # and where it says no, the parsed method indeed neither reads nor sets it
    assert named or "flag" not in {r.attr for r in method.reads} | set(method.sets)


def test_may_name_is_conservative_where_bytes_cannot_tell() -> None:
    source = (
        "class A:\n"
        "    def built(self):\n        return getattr(self, 'fl' 'ag')\n"
        "    def escaped(self):\n        setattr(self, '\\x66lag', 1)\n"
        "    def spaced(self):\n        setattr (self, '\\x66lag', 1)\n"  # #20 item 5
        "    def through_vars(self):\n        vars(self)['\\x66lag'] = 1\n"
        "    def registered(self):\n        self.register_buffer('\\x66lag', None)\n"
        "    def in_a_registry(self):\n        self._buffers['\\x66lag'] = None\n"
        "    def normalised(self):\n        return self.ﬂag\n"  # NFKC: self.flag
    )
    info = summarize(source.encode(), "a.py", False)
    for name, method in info.classes["A"].methods.items():
        assert method.may_name([b"flag"]), name
        assert "flag" in {r.attr for r in method.reads} | set(method.sets), name


def test_a_body_that_does_not_parse_fails_each_time_it_is_asked_for() -> None:
    info = summarize(b"class A:\n    def m(self):\n        x = = self.a\n", "a.py", False)
    assert isinstance(info, ModuleInfo)
    method = info.classes["A"].methods["m"]
    for _ in range(2):
        with pytest.raises(BodyDoesNotParse, match=r"a\.py: does not parse \(line 3\)"):
            method.reads


_BROKEN_UNUSED = """\
class Module:
    pass


class Base(Module):
    def __init__(self):
        self.flag = False

    def forward(self):
        return self.flag

    def broken(self):
        x = = 1


class Child(Base):  # expect: SPB001 error flag
    def __init__(self):
        pass
"""


def test_a_syntax_error_in_a_body_the_rule_needs_is_one_diagnostic(tmp_path: Path) -> None:
    (tmp_path / "needed.py").write_text(_BROKEN_UNUSED.replace("x = = 1", "self.flag = = 1"))
    result = audit([str(tmp_path)], cache=Cache(None, False))
    assert not result.findings
    ((path, reason),) = result.diagnostics
    assert path.endswith("needed.py") and reason.startswith("does not parse (line 13)")


def test_a_syntax_error_in_a_body_never_needed_is_seen_with_parse_all(tmp_path: Path) -> None:
    (tmp_path / "unused.py").write_text(_BROKEN_UNUSED)
    fast = audit([str(tmp_path)], cache=Cache(None, False))
    assert got(fast) == expected(tmp_path) and not fast.diagnostics
    full = audit([str(tmp_path)], cache=Cache(None, False), parse_all=True)
    ((path, reason),) = full.diagnostics
    assert path.endswith("unused.py") and reason.startswith("does not parse (line 13)")


def test_without_the_compiled_lexer_the_findings_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    # No compiler where it was installed: regular expressions pre-scan, whole files are parsed.
    monkeypatch.setattr(_summarize, "_lexer", None)
    monkeypatch.setattr(_prescan, "_lexer", None)
    result = audit([str(TREE)], cache=Cache(None, False))
    assert got(result) == expected(TREE)
    assert result.suppressed == 2
