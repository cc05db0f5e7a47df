"""``audit --fix``, ``--diff`` and ``--unsafe-fixes`` as a user runs them:
exit codes, what is written and where, each output format's fix, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_sp_base._main import main

PARENT = '''\
from torch import nn

from .util import make_norm


class Base(nn.Module):
    def __init__(self, config, quant_config=None):
        super().__init__()
        self.use_sequence_parallel = config.sp
        self.norm = make_norm(config)
        self.hidden_size = config.hidden_size
        self.quant_method = quant_config.method

    def forward(self, x):
        return self.norm(x) if self.use_sequence_parallel else (self.hidden_size, self.quant_method)
'''
UTIL = "def make_norm(config):\n    return config\n"
CHILD = '''\
from torch import nn

from .base import Base


class Child(Base):
    def __init__(self, config):
        nn.Module.__init__(self)
        self.extra = 1
'''


def _tree(root: Path) -> Path:
    package = root / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(PARENT)
    (package / "util.py").write_text(UTIL)
    (package / "child.py").write_text(CHILD)
    return package


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", "--no-cache", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_diff_changes_nothing_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    package = _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, "--diff", "pkg")
    assert code == 1
    assert (package / "child.py").read_text() == CHILD
    assert out.startswith("--- a/pkg/child.py\n+++ b/pkg/child.py\n")
    added = [line[1:].strip() for line in out.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == ["self.use_sequence_parallel = False", "self.hidden_size = config.hidden_size"]
    assert "would fix 2 findings in 1 file (1 more with --unsafe-fixes)" in err
    # The diff is a patch git applies, giving what --fix writes.
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "apply"], input=out, text=True, cwd=tmp_path, check=True)
    patched = (package / "child.py").read_text()
    (package / "child.py").write_text(CHILD)
    _run(capsys, "--fix", "pkg")
    assert (package / "child.py").read_text() == patched != CHILD
    # Nothing left to fix: an empty diff, exit 0 (the findings left have no safe fix).
    code, out, _ = _run(capsys, "--diff", "pkg")
    assert (code, out) == (0, "")


def test_fix_writes_safe_fixes_reports_the_rest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    package = _tree(tmp_path)
    concise = _run(capsys, "--format", "concise", str(package))[1].splitlines()
    assert sum(l.endswith(" [*]") for l in concise) == 2
    assert any("self.norm" in l and l.endswith("[unsafe fix]") for l in concise)
    code, out, err = _run(capsys, "--fix", "--format", "concise", str(package))
    child = (package / "child.py").read_text()
    assert "self.use_sequence_parallel = False\n        self.hidden_size = config.hidden_size\n" in child
    assert "make_norm" not in child  # unsafe: not without --unsafe-fixes
    assert "fixed 2 findings in 1 file (1 more with --unsafe-fixes)" in err
    assert code == 1  # what is left still fails the run
    # self.norm is read only when self.use_sequence_parallel: with it False, never.
    left = out.splitlines()
    assert len(left) == 1 and "self.quant_method" in left[0]
    assert left[0].endswith("[no fix: the value needs `quant_config`, which Child.__init__ does not have]")
    assert (package / "base.py").read_text() == PARENT  # only the class that skips is changed
    # Idempotent.
    _run(capsys, "--fix", str(package))
    assert (package / "child.py").read_text() == child
    assert not list(tmp_path.rglob(".vllm-sp-base-journal.json"))


def test_unsafe_fixes_add_the_import_the_copy_needs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    package = _tree(tmp_path)
    _run(capsys, "--fix", "--unsafe-fixes", str(package))
    child = (package / "child.py").read_text()
    assert "from pkg.util import make_norm\n" in child
    assert "self.norm = make_norm(config)" in child
    compile(child, "child.py", "exec")
    code, out, _ = _run(capsys, "--format", "json", str(package))
    assert [f["attribute"] for f in json.loads(out)["findings"]] == ["quant_method"]


def test_every_format_says_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    package = _tree(tmp_path)
    findings = json.loads(_run(capsys, "--format", "json", str(package))[1])["findings"]
    by_attribute = {f["attribute"]: f["fix"] for f in findings}
    assert {a: f["applicability"] for a, f in by_attribute.items()} == {
        "use_sequence_parallel": "safe", "hidden_size": "safe", "norm": "unsafe", "quant_method": "none"}
    assert "make_norm()" in by_attribute["norm"]["reason"]
    assert by_attribute["quant_method"]["message"] == (
        "the value needs `quant_config`, which Child.__init__ does not have")
    sarif = json.loads(_run(capsys, "--format", "sarif", str(package))[1])
    fixes = [r["properties"]["fix"]["applicability"] for r in sarif["runs"][0]["results"]]
    assert sorted(fixes) == ["none", "safe", "safe", "unsafe"]
    github = _run(capsys, "--format", "github", str(package))[1].splitlines()
    assert sum("safe fix: " in l for l in github) == 3 and sum("no fix: " in l for l in github) == 1
    full = _run(capsys, "--format", "full", str(package))[1].splitlines()
    assert all("; safe fix: " in l or "; unsafe fix: " in l or "; no fix: " in l for l in full)
    code, out, err = _run(capsys, str(package))
    assert "  safe fix (self.use_sequence_parallel): set self.use_sequence_parallel = False" in out
    assert "  no fix (self.quant_method): the value needs `quant_config`" in out
    assert err.splitlines()[-2] == "[*] 2 fixable with --fix (1 more with --unsafe-fixes)"


def test_fix_never_touches_a_file_outside_the_audited_paths(tmp_path: Path) -> None:
    """A fix whose class lies outside the paths --fix was given is no fix, and says why."""
    from vllm_sp_base._audit._engine import audit
    from vllm_sp_base._audit.fix._apply import plan_result, render_fixes
    from vllm_sp_base._audit.sources._cache import Cache

    package = _tree(tmp_path)
    result = audit([str(package)], cache=Cache(None, False))
    fixes = plan_result(result, [str(package / "base.py")])
    assert {f.status.applicability for f in fixes.values()} == {"none"}
    assert all("which this run did not audit" in f.status.message for f in fixes.values())
    assert not render_fixes(fixes, unsafe=True).texts


@pytest.mark.parametrize("argv, needle", [
    (["--fix", "--write-baseline", "b.json"], "--fix/--diff and --write-baseline"),
])
def test_bad_input_is_one_line_exit_2(argv: list[str], needle: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    package = _tree(tmp_path)
    code, _, err = _run(capsys, *argv, str(package))
    assert code == 2 and needle in err and err.count("\n") == 1, err
    assert (package / "child.py").read_text() == CHILD


def test_without_libcst_fix_is_one_line_exit_2(tmp_path: Path) -> None:
    package = _tree(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['libcst'] = None; "
         "from vllm_sp_base._main import main; sys.exit(main(sys.argv[1:]))",
         "audit", "--no-cache", "--fix", str(package)],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "need libcst" in done.stderr
    assert (package / "child.py").read_text() == CHILD


def test_a_write_that_fails_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """All or nothing: a write that fails midway leaves every file as it was."""
    from vllm_sp_base import _atomic

    package = _tree(tmp_path)
    (package / "other.py").write_text(CHILD.replace("Child", "Other"))
    monkeypatch.setattr(_atomic, "_write_journal", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left")))
    code, _, err = _run(capsys, "--fix", str(package))
    assert code == 2 and "nothing written" in err
    assert (package / "child.py").read_text() == CHILD
    assert (package / "other.py").read_text() == CHILD.replace("Child", "Other")
    assert not [p for p in package.iterdir() if p.name.startswith(".")]


def test_a_fix_that_cannot_be_planned_costs_the_report_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm_sp_base._audit.fix import _plan

    package = _tree(tmp_path)

    def broken(context: object, finding: object) -> None:
        raise AttributeError("odd source")

    monkeypatch.setattr(_plan, "plan_one", broken)
    code, out, _ = _run(capsys, "--format", "json", str(package))
    findings = json.loads(out)["findings"]
    assert code == 1 and len(findings) == 4
    assert {f["fix"]["message"] for f in findings} == {"no fix could be planned (AttributeError: odd source)"}
