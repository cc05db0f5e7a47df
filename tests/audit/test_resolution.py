"""Bases the audit resolves without source: the standard library's C classes,
and torch where it is not installed (said once, with what was assumed)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.semantics._unresolved import TORCH_NOT_FOUND
from vllm_sp_base._audit.sources._cache import Cache

STDLIB = textwrap.dedent("""
    import threading
    from collections import OrderedDict
    from _thread import RLock

    class Local(threading.local):  # defined in C, exported from _thread
        def __init__(self):
            self.x = 1

    class Ordered(OrderedDict):
        def __init__(self):
            self.y = 1
""")

TORCH = textwrap.dedent("""
    import torch
    from torch import nn
    from torch.nn import Parameter

    class Norm(nn.LayerNorm):
        def __init__(self, n):
            nn.Module.__init__(self)

    class Weight(Parameter):
        def __init__(self):
            self.q = 1

    class Dense(torch.nn.Linear):
        def __init__(self):
            self.w = 1
""")

#: The running interpreter's import path without any site-packages: torch absent.
NO_TORCH = [p for p in sys.path if "site-packages" not in p and p]


@pytest.mark.parametrize("parse_all", [False, True])
def test_standard_library_classes_defined_in_c_are_not_unresolved(tmp_path: Path, parse_all: bool) -> None:
    (tmp_path / "m.py").write_text(STDLIB)
    result = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all)
    assert result.unresolved == [] and result.findings == []


def test_a_project_module_named_like_the_standard_library_is_not_taken_for_it(tmp_path: Path) -> None:
    # ``threading`` here is the project's own, and has no ``local``: that is unresolved.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "m.py").write_text(STDLIB.replace("import threading", "from pkg import threading"))
    (tmp_path / "pkg" / "threading.py").write_text("X = 1\n")
    result = audit([str(tmp_path)], cache=Cache(None, False))
    assert [u.base for u in result.unresolved] == ["threading.local"]


@pytest.mark.parametrize("parse_all", [False, True])
def test_bases_from_an_absent_torch_are_one_base_said_once(tmp_path: Path, parse_all: bool) -> None:
    (tmp_path / "m.py").write_text(TORCH)
    result = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all, import_path=NO_TORCH)
    assert {(u.base, u.reason) for u in result.unresolved} == {("torch", TORCH_NOT_FOUND)}
    assert sorted(u.class_name for u in result.unresolved) == ["m.Dense", "m.Norm", "m.Weight"]


def test_with_torch_installed_its_classes_are_checked(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "m.py").write_text(TORCH)
    result = audit([str(tmp_path)], cache=Cache(None, False))
    assert result.unresolved == []
    assert {(f.class_name, f.attribute) for f in result.findings} >= {("m.Norm", "weight"), ("m.Dense", "weight")}


FASTAI_LIKE = textwrap.dedent("""
    from torch import nn
    from fastcore.meta import PrePostInitMeta  # not installed where the audit runs

    class Module(nn.Module, metaclass=PrePostInitMeta):
        def __pre_init__(self, *args, **kwargs):
            super().__init__()
        def __init__(self):
            pass

    class Pool(Module):
        def __init__(self):
            self.ap = nn.AdaptiveAvgPool2d(1)  # Module.__init__ ran in __pre_init__, through the metaclass
        def forward(self, x):
            return self.ap(x)
""")


@pytest.mark.parametrize("parse_all", [False, True], ids=["default", "parse-all"])
def test_a_metaclass_the_source_does_not_show_is_said_and_its_classes_not_checked(
        tmp_path: Path, parse_all: bool) -> None:
    # Its __call__, unknown, builds the instances: what runs is not the __init__ chain alone.
    (tmp_path / "layers.py").write_text(FASTAI_LIKE)
    result = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all)
    assert result.findings == []
    said = {(u.class_name, u.base, u.reason) for u in result.unresolved}
    assert ("layers.Pool", "metaclass=PrePostInitMeta", "module fastcore.meta not found") in said


@pytest.mark.parametrize("parse_all", [False, True], ids=["default", "parse-all"])
def test_a_metaclass_is_said_only_where_it_hides_a_finding(tmp_path: Path, parse_all: bool) -> None:
    # Nothing to skip under an unseen metaclass, or the builtin spelled out: nothing to say, in either mode.
    (tmp_path / "plain.py").write_text(textwrap.dedent("""
        from fastcore.meta import PrePostInitMeta

        class Plain(metaclass=type):
            def __init__(self):
                self.x = 1

        class Base(metaclass=PrePostInitMeta):
            def __init__(self):
                self.x = 1
    """))
    result = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all)
    assert result.findings == [] and result.unresolved == []
