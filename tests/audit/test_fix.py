"""``audit --fix`` / ``--diff`` / ``--unsafe-fixes``, generated from the fix
examples (before and after, fixit style) and from the rule's INVALID examples:
what --fix writes, that it fixes what it says, finds nothing new, compiles,
and that a second --fix changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_sp_base._audit.fix._examples import EXAMPLES, FixExample
from vllm_sp_base._audit.rule._examples import INVALID, Example
from vllm_sp_base._main import main


def _audit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", "--no-cache", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _findings(capsys: pytest.CaptureFixture[str], path: Path) -> list[dict[str, object]]:
    code, out, err = _audit(capsys, "--format", "json", str(path))
    assert code in (0, 1), err
    findings: list[dict[str, object]] = json.loads(out)["findings"]
    return findings


def _fixes(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, str]:
    said = {}
    for finding in _findings(capsys, path):
        fix = finding["fix"]
        assert isinstance(fix, dict) and fix["message"]
        assert fix["applicability"] in ("safe", "unsafe", "none")
        assert ("reason" in fix) == (fix["applicability"] == "unsafe")
        said[str(finding["attribute"])] = str(fix["applicability"])
    return said


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_fix_example(example: FixExample, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "example.py"
    module.write_text(example.before)
    assert _fixes(capsys, module) == dict(example.fixes)
    flags = ["--unsafe-fixes"] if example.unsafe else []
    _audit(capsys, "--fix", *flags, str(module))
    assert module.read_text() == example.after
    compile(example.after, str(module), "exec")
    fixed = {a for a, applicability in example.fixes
             if applicability == "safe" or (example.unsafe and applicability == "unsafe")}
    left = {str(f["attribute"]) for f in _findings(capsys, module)}
    assert left == {a for a, _ in example.fixes} - fixed
    _audit(capsys, "--fix", *flags, str(module))
    assert module.read_text() == example.after  # idempotent


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_safe_fix_applies_no_unsafe_one(example: FixExample, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "example.py"
    module.write_text(example.before)
    _audit(capsys, "--fix", str(module))
    if any(a == "safe" for _, a in example.fixes):
        assert module.read_text() != example.before
    else:
        assert module.read_text() == example.before


def _invalid_with_fixes() -> list[Example]:
    return list(INVALID)


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("example", _invalid_with_fixes(), ids=[f"invalid{i}" for i in range(len(INVALID))])
def test_rule_invalid_examples_fixed(example: Example, unsafe: bool, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Each INVALID example of the rule with a fix: after --fix, none of the
    fixed findings is left and no new one appears; it compiles; a second
    --fix changes nothing."""
    module = tmp_path / "example.py"
    module.write_text(example.source)
    before = _findings(capsys, module)
    applied = {"safe", "unsafe"} if unsafe else {"safe"}
    fixed = {(f["class"], f["attribute"]) for f in before if f["fix"]["applicability"] in applied}  # type: ignore[index]
    if not fixed:
        pytest.skip("no fix for this example")
    flags = ["--unsafe-fixes"] if unsafe else []
    _audit(capsys, "--fix", *flags, str(module))
    after_text = module.read_text()
    compile(after_text, str(module), "exec")
    after = {(f["class"], f["attribute"]) for f in _findings(capsys, module)}
    assert not after & fixed, after_text
    assert after <= {(f["class"], f["attribute"]) for f in before}, after_text
    _audit(capsys, "--fix", *flags, str(module))
    assert module.read_text() == after_text


def test_a_dataclass_is_told_to_run_the_parent_from_post_init(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # @dataclass writes the __init__: there is no def to edit; __post_init__ is where the call goes.
    module = tmp_path / "example.py"
    module.write_text(
        "from dataclasses import dataclass\n\n\nclass Base:\n    def __init__(self):\n        self.ready = True\n\n"
        "    def prepare(self):\n        return self.ready\n\n\n@dataclass\nclass Alpaca(Base):\n    path: str = 'x'\n\n\n"
        "def main():\n    return Alpaca().prepare()\n")
    (finding,) = _findings(capsys, module)
    assert finding["fix"] == {"applicability": "none",
                              "message": "@dataclass writes Alpaca.__init__: call Base.__init__(self) from Alpaca.__post_init__"}
    _, out, _ = _audit(capsys, str(module))
    assert "fix: call Base.__init__ from Alpaca.__post_init__, or set self.ready there" in out
