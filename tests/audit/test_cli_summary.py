"""What ``vllm-sp-base audit`` says beside the report: the summary on stderr
when the report goes to a file, the ``--statistics`` lines, the fixes line,
a bad ``fail-on`` value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_sp_base._audit._config import FORMATS
from vllm_sp_base._main import main

from .test_cli import UNRESOLVED, _run

BASE = """\
from torch import nn


def make_norm():
    return nn.LayerNorm(4)


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.extra = 1
        self.norm = make_norm()

    def forward(self, x):
        if x:
            return self.extra
        return x
"""
#: A warning (``self.extra`` read when ``x``), with a safe fix.
WARNS = """\
from torch import nn
from pkg.base import Base


class Child(Base):
    def __init__(self):
        nn.Module.__init__(self)
"""
#: An error (``self.norm``), whose one fix is unsafe (it builds the norm again).
FAILS = """\
from torch import nn
from pkg.base import Base


class Other(Base):
    def __init__(self):
        nn.Module.__init__(self)

    def forward(self, x):
        return self.norm(x)
"""


def _package(where: Path, **modules: str) -> Path:
    package = where / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(BASE)
    for name, text in modules.items():
        (package / f"{name}.py").write_text(text)
    return package


@pytest.mark.parametrize("form", FORMATS)
def test_a_report_written_to_a_file_leaves_the_summary_on_stderr_in_every_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, form: str
) -> None:
    # A CI step that keeps SARIF (or JSON) in a file and shows text in its log.
    package = _package(tmp_path, warns=WARNS, fails=FAILS, unresolved=UNRESOLVED)
    report = tmp_path / "report.out"
    code, out, err = _run(capsys, "--output-format", form, "--output-file", str(report), str(package))
    assert code == 1 and out == "" and report.read_text()
    lines = err.splitlines()
    assert lines[-1].startswith("Found 1 error and 1 warning in 2 classes") and lines[-1].endswith(
        "1 class with a custom __init__ not checked: 1 base could not be resolved."), err
    assert any("unresolved base DeepseekV2Model" in line for line in lines)
    # --quiet: what fails the run is still said, the summary is not.
    code, out, err = _run(capsys, "--output-format", form, "-o", str(report), "-q", str(package))
    assert "unresolved base DeepseekV2Model" in err and "Found" not in err


@pytest.mark.parametrize("form", ["json", "sarif", "github"])
def test_a_machine_format_on_stdout_is_the_whole_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, form: str
) -> None:
    package = _package(tmp_path, warns=WARNS, unresolved=UNRESOLVED)
    code, out, err = _run(capsys, "--output-format", form, str(package))
    assert code == 1 and out and err == ""


def test_a_stale_baseline_entry_is_said_when_the_json_report_goes_to_a_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    package = _package(tmp_path, warns=WARNS)
    baseline = tmp_path / "baseline.json"
    assert _run(capsys, "--write-baseline", str(baseline), str(package))[0] == 0
    data = json.loads(baseline.read_text())
    data["fingerprints"].append("SPB001:pkg.gone.Renamed:flag")
    baseline.write_text(json.dumps(data))
    code, out, err = _run(capsys, "--baseline", str(baseline), "--format", "json", "-o",
                          str(tmp_path / "r.json"), str(package))
    assert code == 0 and out == "" and "1 entry no finding matches any more" in err
    assert json.loads((tmp_path / "r.json").read_text())["findings"] == []


def test_statistics_name_each_severity_and_count_classes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    package = _package(tmp_path, warns=WARNS)
    code, out, _ = _run(capsys, "--statistics", str(package))
    assert (code, out) == (1, "    1  pkg.base.Base.__init__ skipped: 1 warning in 1 class\n")
    (package / "fails.py").write_text(FAILS)
    code, out, _ = _run(capsys, "--statistics", str(package))
    assert out == "    2  pkg.base.Base.__init__ skipped: 1 error and 1 warning in 2 classes\n"
    (counts,) = json.loads(_run(capsys, "--statistics", "--format", "json", str(package))[1])
    assert counts == {"skipped_init": "pkg.base.Base", "findings": 2, "classes": 2, "errors": 1,
                      "warnings": 1, "notes": 0}


def test_the_fixes_line_never_says_0_fixable(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    package = _package(tmp_path, fails=FAILS)
    err = _run(capsys, str(package))[2].splitlines()
    assert err[-2] == "No safe fixes (1 with --fix --unsafe-fixes)"
    (package / "warns.py").write_text(WARNS)
    err = _run(capsys, str(package))[2].splitlines()
    assert err[-2] == "[*] 1 fixable with --fix (1 more with --unsafe-fixes)"


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("errors", "'errors': choose from error, warning, unresolved, noqa (did you mean error?)"),
        ("error,warnings", "'warnings': choose from error, warning, unresolved, noqa (did you mean warning?)"),
        ("erorr", "'erorr': choose from error, warning, unresolved, noqa (did you mean error?)"),
        (",", "nothing given: choose from error, warning"),
    ],
)
def test_a_bad_fail_on_value_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: str, needle: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["audit", "--fail-on", value, str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1 and needle in err, err
    if value != ",":
        (tmp_path / "pyproject.toml").write_text(
            f"[tool.vllm-sp-base]\nfail-on = {json.dumps(value.split(','))}\n")
        code, _, err = _run(capsys, str(tmp_path))
        assert code == 2 and err.count("\n") == 1 and f"] fail-on: {needle}" in err, err


def test_many_unresolved_bases_are_one_line_unless_asked_and_silent_under_q_unless_failing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # sglang without its environment: a dozen bases not found would push the
    # findings off the screen, as mypy's and ruff's summaries never do.
    for n in range(12):
        (tmp_path / f"m{n}.py").write_text(
            f"from missing_pkg{n} import Base{n}\nfrom torch import nn\n\n\n"
            f"class C{n}(Base{n}):\n    def __init__(self):\n        nn.Module.__init__(self)\n")
    code, _, err = _run(capsys, str(tmp_path))
    said = [line for line in err.splitlines() if "unresolved base" in line]
    assert code == 1 and said == [
        "vllm-sp-base audit: unresolved base Base0: module missing_pkg0 not found; and 11 more "
        "unresolved bases (12 classes not checked in all; --show-unresolved lists them)"]
    code, _, err = _run(capsys, "--show-unresolved", str(tmp_path))
    assert code == 1 and sum("unresolved base" in line for line in err.splitlines()) == 12
    code, out, err = _run(capsys, "-q", "--fail-on", "error", str(tmp_path))
    assert (code, out, err) == (0, "", "")  # they fail nothing: nothing said
    code, _, err = _run(capsys, "-q", str(tmp_path))  # they fail the run: said, in one line
    assert code == 1 and len(err.splitlines()) == 1 and "11 more unresolved bases" in err
    code, out, err = _run(capsys, "--statistics", str(tmp_path))
    assert sum("unresolved base" in line for line in err.splitlines()) == 1


def test_a_misspelt_ignore_is_said_with_the_attribute_it_may_mean(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "m.py").write_text(
        "from torch import nn\n\n\nclass Base(nn.Module):\n    def __init__(self, cfg):\n"
        "        super().__init__()\n        self.use_sequence_parallel = cfg.sp\n"
        "        self.scale = cfg.scale\n\n    def forward(self, x):\n"
        "        return x * self.scale if self.use_sequence_parallel else x\n\n\n"
        "class Child(Base):  # vllm-sp-base: ignore[scale, use_sequnce_parallel]\n"
        "    def __init__(self, cfg):\n        nn.Module.__init__(self)\n\n\n"
        "class Other(Base):  # vllm-sp-base: ignore[use_sequnce_parallel]\n"
        "    def __init__(self, cfg):\n        nn.Module.__init__(self)\n")
    code, _, err = _run(capsys, "--format", "concise", str(tmp_path))
    said = [line.split(": ", 1)[1] for line in err.splitlines() if "unused" in line and "m.py:" in line]
    # Listed with a name that hid something, and alone: each said, with what it may mean.
    assert said == ["unused ignore: vllm-sp-base: ignore[use_sequnce_parallel] hides no finding of this "
                    "class; did you mean use_sequence_parallel?"] * 2
    assert code == 1


def test_findings_with_one_cause_are_one_block_under_the_class_that_skips(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # vLLM 0.33.0: Qwen3_5ForConditionalGeneration skips an __init__, and three
    # subclasses that inherit its __init__ fail on the same read: one fix, one block.
    (tmp_path / "m.py").write_text(
        "from torch import nn\n\n\nclass Base(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.method = 'x'\n\n    def forward(self):\n"
        "        return self.method\n\n\nclass Mid(Base):\n    def __init__(self):\n"
        "        nn.Module.__init__(self)\n\n\nclass A(Mid):\n    pass\n\n\nclass B(Mid):\n    pass\n\n\n"
        "class C(Mid):\n    def helper(self):\n        return 1\n")
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(capsys, ".")
    headers = [line for line in out.splitlines() if not line.startswith(" ")]
    # Mid is only a base (never built alone): the block is under the first class it reaches.
    assert code == 1 and len(headers) == 1 and headers[0].endswith("A skips Base.__init__ (m.py), via Mid"), out
    assert "  the same in 2 subclasses, one cause: B (m.py:22), C (m.py:26)" in out
    assert out.count("  fix: ") == 1
    # The other formats still say each class's finding.
    code, out, _ = _run(capsys, "--format", "concise", ".")
    assert len(out.splitlines()) == 3


def test_an_ignore_on_a_line_the_rule_does_not_read_says_where_it_counts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Put next to the related line in the __init__ body, the natural spot: the
    # name is right, the place is not; a "did you mean" naming itself misleads.
    (tmp_path / "m.py").write_text(
        "from torch import nn\n\n\nclass Base(nn.Module):\n    def __init__(self, cfg):\n"
        "        super().__init__()\n        self.hidden_size = cfg.h\n\n    def forward(self, x):\n"
        "        return self.hidden_size\n\n\nclass Child(Base):\n    def __init__(self, cfg):\n"
        "        nn.Module.__init__(self)\n        self.other = 1  # vllm-sp-base: ignore[hidden_size]\n")
    code, _, err = _run(capsys, "--format", "concise", str(tmp_path))
    (said,) = [line for line in err.splitlines() if "unused ignore" in line]
    assert "counts only on a `class` header's lines or its `def __init__` line" in said
    assert "did you mean" not in said and code == 1


def test_an_ignore_on_a_class_not_checked_past_an_unresolved_base_is_not_unused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The shipped workflow audits without vLLM installed: the class is not
    # checked there, so the ignore it needs where vLLM is installed is kept.
    (tmp_path / "m.py").write_text(
        "from not_installed_pkg.models import DeepseekV2Model\nfrom torch import nn\n\n\n"
        "class Plus(DeepseekV2Model):\n    def __init__(self, cfg):  # vllm-sp-base: ignore[hidden_size]\n"
        "        nn.Module.__init__(self)\n")
    code, _, err = _run(capsys, "--fail-on", "noqa", str(tmp_path))
    assert "unused" not in err and code == 0, err
