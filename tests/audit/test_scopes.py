"""Classes where Python binds them (blocks, functions, a redefinition), aliases
beyond ``Name = dotted.name``, and an ``__init__`` run only under a test: what
the findings say of them, in both modes (issue #20's misses)."""

from __future__ import annotations

import marshal
import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import AuditResult, audit
from vllm_sp_base._audit.semantics._project import ClassRef, Project
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.sources._stored import from_plain, to_plain
from vllm_sp_base._audit.sources._workers import summarize_or_reason
from vllm_sp_base._audit.summaries._summaries import ModuleInfo, attach_sources
from vllm_sp_base._audit.summaries._summarize import summarize

BASE = """
from torch import nn
class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2
    def forward(self, x):
        return x * self.scale
"""


def _audit(tmp_path: Path, source: str, parse_all: bool) -> AuditResult:
    (tmp_path / "m.py").write_text(BASE + textwrap.dedent(source))
    return audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all)


@pytest.mark.parametrize("parse_all", [False, True], ids=["default", "parse-all"])
def test_a_skip_under_a_test_says_the_opposite_test(tmp_path: Path, parse_all: bool) -> None:
    result = _audit(tmp_path, """
        class Child(Base):
            def __init__(self, full):
                if full and self.ready():
                    super().__init__()
                else:
                    nn.Module.__init__(self)
            def ready(self):
                return True
    """, parse_all)
    (finding,) = result.findings
    assert (finding.severity, finding.attribute, finding.skipped_init) == ("warning", "scale", "m.Base")
    assert finding.condition == "when not (full and self.ready())"
    assert finding.message.endswith("AttributeError if that read is reached (when not (full and self.ready()))")


def test_a_read_while_built_after_an_init_run_under_a_test_is_a_warning(tmp_path: Path) -> None:
    result = _audit(tmp_path, """
        class Child(Base):
            def __init__(self, full):
                super().__init__() if full else nn.Module.__init__(self)
                self.double = self.scale * 2
    """, parse_all=True)
    assert [(f.attribute, f.severity, f.entry, f.read_line, f.condition) for f in result.findings] == [
        ("scale", "warning", "__init__", 13, "when not full")]


@pytest.mark.parametrize("parse_all", [False, True], ids=["default", "parse-all"])
def test_a_class_in_a_function_is_named_as_python_names_it_and_its_noqa_counts(
    tmp_path: Path, parse_all: bool
) -> None:
    result = _audit(tmp_path, """
        def make():
            class Local(Base):
                def __init__(self):
                    nn.Module.__init__(self)
            class Quiet(Base):  # noqa: SPB001
                def __init__(self):
                    nn.Module.__init__(self)
            return Local(), Quiet()
    """, parse_all)
    assert [(f.class_name, f.line, f.col) for f in result.findings] == [("m.make.<locals>.Local", 11, 5)]
    assert result.suppressed == 1 and result.unused_noqa == []


@pytest.mark.parametrize("parse_all", [False, True], ids=["default", "parse-all"])
def test_a_base_a_function_imports_is_resolved_from_that_import(tmp_path: Path, parse_all: bool) -> None:
    result = _audit(tmp_path, """
        def make():
            from not_installed_anywhere.hooks import Hook
            class ToDevice(Hook):
                def __init__(self, device):
                    self.device = device
            return ToDevice
    """, parse_all)
    assert result.findings == []
    assert [(u.class_name, u.base, u.reason) for u in result.unresolved] == [
        ("m.make.<locals>.ToDevice", "Hook", "module not_installed_anywhere.hooks not found")]


@pytest.mark.parametrize("parse_all", [False, True], ids=["default", "parse-all"])
def test_class_b_of_b_skips_the_earlier_b_which_is_never_checked_alone(tmp_path: Path, parse_all: bool) -> None:
    result = _audit(tmp_path, """
        class Base(Base):
            def __init__(self):
                nn.Module.__init__(self)
        Base()
    """, parse_all)
    assert [(f.class_name, f.skipped_init, f.attribute) for f in result.findings] == [
        ("m.Base", "m.Base@3", "scale")]


def test_what_the_scopes_bind_comes_back_equal_from_the_cache() -> None:
    source = (BASE + textwrap.dedent("""
        class Slotted(Base):
            __slots__ = ("size",)
        def make():
            from torch import nn as torch_nn
            class Local(Base):
                def __init__(self):
                    torch_nn.Module.__init__(self)
            return Local
    """)).encode()
    for kind in (b"M", b"m"):
        summary = summarize_or_reason(source, "m.py", kind)
        assert isinstance(summary, ModuleInfo)
        assert summary.classes["Slotted"].slots == {"size"}
        local = summary.classes["make.<locals>.Local"]
        assert local.local_names == {"Local": "make.<locals>.Local"} and "torch_nn" in local.local_imports
        back = from_plain(marshal.loads(marshal.dumps(to_plain(summary))))
        assert isinstance(back, ModuleInfo)
        attach_sources(back, source, "m.py")
        assert back == summary


def test_a_qualified_class_name_finds_its_module_past_locals(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "m.py").write_text("def make():\n    class Child:\n        pass\n")

    def load(path: str, is_package: bool) -> ModuleInfo | None:
        return summarize(Path(path).read_bytes(), path, is_package)

    project = Project([str(tmp_path)], load)
    assert project.class_ref("pkg.m.make.<locals>.Child") == ClassRef("pkg.m", "make.<locals>.Child")
    assert project.class_ref("pkg.m.Missing") is None
    # No module named ``...<locals>`` was looked for (the run's record would keep it as missing).
    assert not any("<locals>" in module for module in project.resolved())
