"""The default mode finds what ``--parse-all`` finds (#20 items 1-7): each case
is a project whose pre-scan once took a shortcut, audited in both modes, and
run by Python to show the finding is the AttributeError it raises."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.semantics._project import ClassRef

BASE = """
import torch.nn as nn
class B(nn.Module):
    def __init__(self):
        super().__init__()
        self.x = 1
    def forward(self):
        return self.x
"""


@dataclass(frozen=True)
class Case:
    files: dict[str, str]  # path under the audited folder -> source
    run: str  # Python that raises the AttributeError (imports from the audited folder)
    found: tuple[str, str]  # (class, attribute) both modes must report
    outside: dict[str, str] = field(default_factory=dict)  # a folder on the import path, not audited


CASES = {
    # 1: ``A.__init__(self)`` runs A's, skipping R, the MRO's next class in D.
    "named base in a diamond": Case({"m.py": """
        import torch.nn as nn
        class A(nn.Module):
            def __init__(self):
                super().__init__()
        class L(A):
            def __init__(self):
                A.__init__(self)
        class R(A):
            def __init__(self):
                super().__init__()
                self.r = 1
            def forward(self):
                return self.r
        class D(L, R):
            pass
        """}, "import m; m.D().forward()", ("m.D", "r")),
    # 2: ``nn.Module.__init__`` is not the project's own ``Module``.
    "same last name, other class": Case({"m.py": BASE + textwrap.dedent("""
        class Module(nn.Module):
            def __init__(self):
                super().__init__()
                self.y = 1
            def forward(self):
                return self.y
        class C(Module):
            def __init__(self):
                nn.Module.__init__(self)
        """)}, "import m; m.C().forward()", ("m.C", "y")),
    # 3: the parent sets through a helper that gets self, or a super() method.
    "set through a helper": Case({"m.py": """
        import torch.nn as nn
        class B(nn.Module):
            def __init__(self):
                super().__init__()
                B._setup(self)
            def _setup(self):
                self.x = 1
            def forward(self):
                return self.x
        class C(B):
            def __init__(self):
                nn.Module.__init__(self)
        """}, "import m; m.C().forward()", ("m.C", "x")),
    "set through super()": Case({"m.py": """
        import torch.nn as nn
        class P(nn.Module):
            def _setup(self):
                self.x = 1
        class B(P):
            def __init__(self):
                super().__init__()
                super()._setup()
            def forward(self):
                return self.x
        class C(B):
            def __init__(self):
                nn.Module.__init__(self)
        """}, "import m; m.C().forward()", ("m.C", "x")),
    # 4: identifiers Python folds by NFKC.
    "folded __init__": Case({"m.py": BASE + textwrap.dedent("""
        class C(B):
            def __\uff49nit__(self):
                nn.Module.__init__(self)
        """)}, "import m; m.C().forward()", ("m.C", "x")),
    "folded self": Case({"m.py": """
        import torch.nn as nn
        class B(nn.Module):
            def __init__(\uff53elf):
                super().__init__()
                B._setup(\uff53elf)
            def _setup(self):
                self.x = 1
            def forward(self):
                return self.x
        class C(B):
            def __init__(self):
                nn.Module.__init__(self)
        """}, "import m; m.C().forward()", ("m.C", "x")),
    # 7: a base named like a harmless one (``Module``) from a package outside the audited paths.
    "harmless name from outside": Case(
        {"m.py": """
        from extmod import Module
        class C(Module):
            def __init__(self):
                pass
        """},
        "import m; m.C().forward()", ("m.C", "x"),
        outside={"extmod.py": """
        class Module:
            def __init__(self):
                self.x = 1
            def forward(self):
                return self.x
        """}),
}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")


@pytest.mark.parametrize("name", CASES)
def test_both_modes_report_what_python_raises(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    audited, outside = tmp_path / "audited", tmp_path / "outside"
    _write(audited, case.files)
    _write(outside, case.outside)
    ran = subprocess.run(
        [sys.executable, "-c", case.run], cwd=tmp_path, capture_output=True, text=True,
        env={"PYTHONPATH": f"{audited}:{outside}", "PATH": "/usr/bin:/bin"}, timeout=120,
    )
    assert f"AttributeError: '{case.found[0].split('.')[-1]}' object has no attribute '{case.found[1]}'" in ran.stderr
    import_path = [str(outside), *sys.path]
    for parse_all in (False, True):
        result = audit([str(audited)], cache=Cache(None, False), parse_all=parse_all, import_path=import_path)
        assert [(f.class_name, f.attribute) for f in result.findings] == [case.found], parse_all


#: Sources CPython's tokenizer refuses (or that are indented where it raises
#: IndentationError): the pre-scan lexes every file, so the default mode says
#: each of them as --parse-all does, also where the error is in a function body.
UNPARSABLE = {
    "unclosed bracket": "x = (1,\n",
    "unterminated string": "x = 'a\n",
    "block with no body": "class A:\npass\n",
    "block at the end": "if x:\n",
    "unexpected indent": "x = 1\n    y = 2\n",
    "unindent to no level": "def f():\n    x = 1\n  y = 2\n",
    "in a method body": "class A:\n    def m(self):\n        return (\n",
}


def test_a_file_python_cannot_tokenize_is_said_in_both_modes(tmp_path: Path) -> None:
    for name, source in UNPARSABLE.items():
        (tmp_path / f"{name.replace(' ', '_')}.py").write_text(source)
    said = {}
    for parse_all in (False, True):
        result = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all)
        said[parse_all] = sorted(result.diagnostics)
    assert len(said[True]) == len(UNPARSABLE)
    assert said[False] == said[True]


def test_an_init_run_in_each_arm_sets_what_it_sets_in_both_modes(tmp_path: Path) -> None:
    # One arm runs the parent's __init__ (which runs nn.Module's), the other
    # nn.Module.__init__ itself: torch's attributes are set either way, so
    # register_buffer reads nothing missing. Python builds both arms.
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn


        class Base(nn.Module):
            def __init__(self, scale):
                super().__init__()
                self.scale = scale

            def forward(self, x):
                return x * self.scale


        class Child(Base):
            def __init__(self, scale, flag):
                if flag:
                    super().__init__(scale)
                else:
                    nn.Module.__init__(self)
                    self.scale = 1.0
                self.register_buffer("mask", torch.zeros(3))
    """))
    ran = subprocess.run([sys.executable, "-c", "from m import Child\nChild(2.0, True)(1.0)\nChild(2.0, False)(1.0)"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    for parse_all in (False, True):
        result = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all)
        assert result.findings == [], parse_all


def test_a_chain_that_runs_every_init_is_not_simulated_in_either_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # torch's Module.__init__ runs super().__init__() only under a test; what it
    # would skip is object.__init__, which sets nothing. A deep chain of
    # modules that all call super().__init__() needs no construction walk:
    # --parse-all had one per class, quadratic in the depth (#34 item 6).
    from vllm_sp_base._audit.rule import _rule

    (tmp_path / "m.py").write_text("from torch import nn\n\n\n" + "".join(
        f"class C{i}({f'C{i - 1}' if i else 'nn.Module'}):\n    def __init__(self):\n"
        f"        super().__init__()\n        self.a{i % 3} = {i}\n\n\n" for i in range(60)))
    walked: list[object] = []
    real = _rule.construct
    monkeypatch.setattr(_rule, "construct", lambda model: walked.append(model) or real(model))
    for parse_all in (False, True):
        assert audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all).findings == []
    assert walked == []


def _chain(skipping_at: int | None, depth: int) -> str:
    """A chain of modules, each ``__init__`` running ``super().__init__()``
    except the one at ``skipping_at`` (``nn.Module.__init__(self)``); the
    root's ``forward`` reads what the root's ``__init__`` sets. Every class
    is built, so none is only a base."""
    classes = ["class C0(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.a = 0\n\n"
               "    def forward(self):\n        return self.a\n\n\n"]
    for i in range(1, depth):
        chained = "nn.Module.__init__(self)" if i == skipping_at else "super().__init__()"
        classes.append(f"class C{i}(C{i - 1}):\n    def __init__(self):\n        {chained}\n\n\n")
    built = ", ".join(f"C{i}()" for i in range(depth))
    return "from torch import nn\n\n\n" + "".join(classes) + f"def build_all():\n    return [{built}]\n"


def test_a_chain_shares_one_answer_to_whether_an_init_may_be_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whether C(...) may skip an __init__ was a walk of the whole chain per
    # class: --parse-all was quadratic in the depth (#34 item 6). A class whose
    # only base call is super().__init__() skips what its base skips, so the
    # chain builds one model for it: that of its top, torch's Module.
    from vllm_sp_base._audit.rule import _rule
    from vllm_sp_base._audit.semantics import _chains

    (tmp_path / "m.py").write_text(_chain(None, 300))
    built: list[ClassRef] = []
    real = _chains.ClassModel
    for module in (_chains, _rule):  # the answer's models and the rule's own
        monkeypatch.setattr(module, "ClassModel", lambda project, ref: built.append(ref) or real(project, ref))
    assert audit([str(tmp_path)], cache=Cache(None, False), parse_all=True).findings == []
    assert [str(ref) for ref in built] == ["torch.nn.modules.module.Module"]


def test_every_class_below_a_skipping_link_of_a_chain_is_found(tmp_path: Path) -> None:
    # The answer shared along the chain is the link's: C20 runs
    # nn.Module.__init__ and not C19's, so C20 and each class below it are
    # built without C0's ``a``, and the classes above are not.
    (tmp_path / "m.py").write_text(_chain(20, 40))
    ran = subprocess.run([sys.executable, "-c", "import m\nm.C19()()\nm.C39()()"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "AttributeError: 'C39' object has no attribute 'a'" in ran.stderr
    for parse_all in (False, True):
        found = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all).findings
        assert sorted((f.class_name, f.attribute) for f in found) == sorted(
            (f"m.C{i}", "a") for i in range(20, 40)), parse_all


def test_a_link_that_binds_the_class_its_base_runs_is_walked_itself(tmp_path: Path) -> None:
    # C has one base and no __init__, yet skips what Base does not: Base's
    # ``self.parent.__init__(self)`` finds C's ``parent``, torch's Module, and
    # never runs Mixin's. The answer shared along a chain must not be Base's.
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        import torch.nn as nn
        class Mixin(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = 1
        class Base(Mixin):
            parent = Mixin
            def __init__(self):
                self.parent.__init__(self)
            def forward(self, x):
                return self.w
        class C(Base):
            parent = nn.Module
        def build():
            return Base(), C()
    """))
    ran = subprocess.run([sys.executable, "-c", "import m\nm.Base()(1)\nm.C()(1)"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "AttributeError: 'C' object has no attribute 'w'" in ran.stderr
    for parse_all in (False, True):
        found = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all).findings
        assert [(f.class_name, f.attribute) for f in found] == [("m.C", "w")], parse_all
