"""Fixture trees with the expected finding written next to the class line
(``# expect: SPB001 <severity> <attribute>; ...``), flake8-bugbear style."""

from __future__ import annotations

import gc
import os
import re
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import AuditResult, audit
from vllm_sp_base._audit.prescan._prescan import scan
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.summaries._summarize import summarize

TREE = Path(__file__).with_name("fixtures") / "tree"
EXPECT = re.compile(r"#\s*expect:\s*(.+)$")


def expected(tree: Path) -> set[tuple[str, int, str, str, str]]:
    found = set()
    for path in sorted(tree.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = EXPECT.search(line)
            if match:
                for item in match.group(1).split(";"):
                    code, severity, attribute = item.split()
                    found.add((str(path), number, code, severity, attribute))
    return found


def got(result: AuditResult) -> set[tuple[str, int, str, str, str]]:
    return {(f.path, f.line, f.code, f.severity, f.attribute) for f in result.findings}


@pytest.mark.parametrize("parse_all", [False, True], ids=["prefilter", "parse-all"])
def test_findings_are_exactly_the_inline_expectations(parse_all: bool) -> None:
    result = audit([str(TREE)], cache=Cache(None, False), parse_all=parse_all)
    assert got(result) == expected(TREE)
    assert result.suppressed == 2


def test_unparsable_file_is_one_diagnostic_and_the_rest_is_audited() -> None:
    result = audit([str(TREE)], cache=Cache(None, False), parse_all=True)
    (diagnostic,) = result.diagnostics
    assert diagnostic[0].endswith("broken_syntax.py")
    assert "does not parse (line 1)" in diagnostic[1]
    assert result.findings


def test_findings_name_the_read_and_the_skipped_init() -> None:
    result = audit([str(TREE / "app" / "models" / "dotted.py")], cache=Cache(None, False))
    by_class = {f.class_name.rsplit(".", 1)[-1]: f for f in result.findings if f.attribute == "depth"}
    finding = by_class["JumpsOverMiddle"]
    assert finding.skipped_init == "app.models.dotted.Middle"
    assert finding.method == "app.models.dotted.Middle.forward"
    assert (Path(finding.read_path).name, finding.read_line) == ("dotted.py", 16)
    assert finding.set_line == 13
    assert "Middle.forward reads it at" in finding.message


# Without a cache the pre-scan reads each file through the compiled lexer; with
# one, every file is read first (for the whole-run key): both say the same.
@pytest.mark.parametrize("cached", [False, True], ids=["no-cache", "cache"])
def test_bad_files_do_not_stop_the_run(tmp_path: Path, cached: bool) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "latin1.py").write_bytes(b"name = '\xe9t\xe9'\n")
    (package / "huge.py").write_bytes(b"x = 1\n" * (800 * 1024))
    (package / "loop").symlink_to(package, target_is_directory=True)
    (package / "dangling.py").symlink_to(tmp_path / "missing.py")
    (package / "good.py").write_text(
        "class Module:\n    pass\nclass A(Module):\n    def __init__(self):\n        self.a = 1\n    def forward(self):\n"
        "        return self.a\nclass B(A):\n    def __init__(self):\n        pass\n"
    )
    result = audit([str(package)], cache=Cache(str(tmp_path / "cache"), cached))
    reasons = {os.path.basename(p): r for p, r in result.diagnostics}
    assert reasons["huge.py"] == f"skipped: {6 * 800 * 1024} bytes is over the 4194304-byte limit"
    assert reasons["latin1.py"].startswith("not UTF-8")
    assert "over the" in reasons["huge.py"]
    assert reasons["loop"].startswith("symlink loop")
    assert reasons["dangling.py"] == "broken or looping symlink"
    assert [(f.class_name, f.attribute) for f in result.findings] == [("good.B", "a")]


def test_a_link_to_a_sibling_folder_is_the_same_files_not_a_loop(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "good.py").write_text(
        "class Module:\n    pass\nclass A(Module):\n    def __init__(self):\n        self.a = 1\n"
        "    def forward(self):\n        return self.a\nclass B(A):\n    def __init__(self):\n        pass\n"
    )
    (tmp_path / "alias").symlink_to(tmp_path / "pkg", target_is_directory=True)
    result = audit([str(tmp_path)], cache=Cache(None, False))
    assert result.diagnostics == [] and result.files == 1
    assert [(f.class_name, f.attribute) for f in result.findings] == [("alias.good.B", "a")]


def test_each_phase_is_timed_and_a_whole_run_cache_hit_has_none(tmp_path: Path) -> None:
    # With a cache or without, the pre-scan reads each file as it lexes it.
    phases = ["discover", "read and pre-scan", "candidates, their MROs, the rule"]
    cold = audit([str(TREE)], cache=Cache(str(tmp_path), True))
    assert list(cold.seconds) == phases
    assert all(seconds >= 0 for seconds in cold.seconds.values())
    warm = audit([str(TREE)], cache=Cache(str(tmp_path), True))
    assert warm.seconds == {}
    assert list(audit([str(TREE)], cache=Cache(None, False)).seconds) == phases
    assert list(audit([str(TREE)], cache=Cache(None, False), parse_all=True).seconds) == [
        "discover and read", "parse all", "candidates, their MROs, the rule"]
    assert got(warm) == got(cold)


def test_summarising_and_scanning_leave_no_reference_cycles() -> None:
    # The audit runs with the cyclic collector off: a cycle per file (a closure
    # that calls itself, say) would keep every file's AST alive until the end.
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    try:
        for path in sorted(TREE.rglob("*.py")):
            data = path.read_bytes()
            scan(data)
            if path.name != "broken_syntax.py":
                summarize(data, str(path), path.name == "__init__.py")
        assert gc.collect() == 0
    finally:
        if collecting:
            gc.enable()


def test_an_attribute_set_by_a_helper_names_the_init_that_runs_it(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "class Module:\n    pass\n"
        "class AudioMixin:\n    def _init_audio(self):\n        self.audio = 1\n"
        "class Root(Module, AudioMixin):\n"
        "    def __init__(self):\n        super().__init__()\n        self._init_audio()\n"
        "    def forward(self):\n        return self.audio\n"
        "class Model(Root):\n    def __init__(self):\n        Module.__init__(self)\n"
    )
    (finding,) = audit([str(tmp_path)], cache=Cache(None, False)).findings
    # Root.__init__ is what Model skips; the helper it would have run is a mixin's.
    assert (finding.skipped_init, finding.set_line, finding.skipped_by) == ("m.Root", 5, "m.Model")
    # The class that skips is the one named first: no "(via Model)" naming it again.
    assert "Model skips m.Root.__init__, which sets self.audio at" in finding.message


def test_a_set_in_another_file_is_placed_in_that_file(tmp_path: Path) -> None:
    """The line of a set is the file's of the method that holds it (a
    parent's ``__init__`` the skipped one chains to), not the skipped class's."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(
        "class Module:\n    pass\n"
        "class PreTrained(Module):\n"
        "    def __init__(self, config):\n        super().__init__()\n        self.config = config\n"
        "    def post_init(self):\n        return self.config\n")
    (package / "mixtral.py").write_text(
        "from pkg.base import PreTrained\n\n\n"
        "class Mixtral(PreTrained):\n    def __init__(self, config):\n        super().__init__(config)\n"
        "        self.post_init()\n")
    (package / "ernie.py").write_text(
        "from pkg.base import Module\nfrom pkg.mixtral import Mixtral\n\n\n"
        "class Ernie(Mixtral):\n    def __init__(self, config):\n        Module.__init__(self)\n"
        "        self.post_init()\n")
    (finding,) = audit([str(package)], cache=Cache(None, False)).findings
    assert (finding.skipped_init, finding.attribute) == ("pkg.mixtral.Mixtral", "config")
    assert (Path(finding.set_path).name, finding.set_line) == ("base.py", 6)
    assert Path(finding.skipped_path).name == "mixtral.py"
    assert "which sets self.config at pkg/base.py:6, but" in finding.message


def test_inputs_that_cannot_be_read_are_said_with_why(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text("class A:\n    pass\n")
    (package / "self").symlink_to(package / "self")  # a link that points to itself
    os.mkfifo(package / "fifo.py")
    (package / "zero.py").symlink_to("/dev/zero")
    closed = package / "closed"
    closed.mkdir()
    closed.chmod(0)
    try:
        result = audit([str(package)], cache=Cache(None, False))
        reasons = {os.path.basename(p): r for p, r in result.diagnostics}
        assert reasons["self"].startswith("cannot follow: ")
        assert reasons["fifo.py"] == reasons["zero.py"] == "not a regular file"
        if os.geteuid() != 0:  # root reads a mode-000 directory all the same
            assert reasons["closed"].startswith("cannot read: ")
        assert result.files == 1
        given = audit([str(package / "fifo.py")], cache=Cache(None, False))
        assert given.diagnostics == [(str(package / "fifo.py"), "not a regular file or a directory")]
    finally:
        closed.chmod(0o755)
