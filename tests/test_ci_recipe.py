"""The GitHub Actions recipe (examples/ci/vllm-sp-base.yml): valid for
SchemaStore's workflow schema (offline, vendored in tests/ci/), wired as code
scanning needs it, and its `run:` steps run as written on a project with a
finding: the job fails on a new finding and passes with the baseline, and
the SARIF it uploads is valid SARIF 2.1.0."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import yaml

ROOT = Path(__file__).parents[1]
RECIPE = ROOT / "examples" / "ci" / "vllm-sp-base.yml"


def _workflow() -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(RECIPE.read_text())
    # YAML 1.1 reads the key `on` as True; GitHub (and the schema) read "on".
    loaded["on"] = loaded.pop(True)
    return loaded


def _steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = _workflow()["jobs"]["audit"]["steps"]
    return steps


def test_the_workflow_is_valid_for_the_workflow_schema() -> None:
    schema = json.loads((ROOT / "tests" / "ci" / "github-workflow.schema.json").read_text())
    validator = jsonschema.Draft7Validator(schema)
    workflow = _workflow()
    validator.validate(workflow)
    broken = copy.deepcopy(workflow)
    del broken["jobs"]["audit"]["runs-on"]  # the check can fail: a job with no runner
    assert not validator.is_valid(broken)
    broken = copy.deepcopy(workflow)
    broken["jobs"]["audit"]["steps"][0]["uses"] = 3
    assert not validator.is_valid(broken)


def test_the_sarif_step_feeds_upload_sarif_with_the_permission_it_needs() -> None:
    job = _workflow()["jobs"]["audit"]
    assert job["permissions"]["security-events"] == "write"
    (upload,) = [s for s in job["steps"] if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    (sarif,) = [s for s in job["steps"] if "--output-format sarif" in s.get("run", "")]
    assert f"--output-file {upload['with']['sarif_file']}" in sarif["run"]
    # Written and uploaded even when the annotated audit before them failed the job.
    assert sarif["if"] == upload["if"] == "always()" and "--exit-zero" in sarif["run"]
    (tool,) = [s for s in job["steps"] if s.get("with", {}).get("repository") == "vllm-sp-base/vllm-sp-base"]
    assert any(s.get("run") == f"pip install ./{tool['with']['path']}" for s in job["steps"])


def test_the_comment_says_where_to_write_the_baseline_and_the_vllm_step_it_names_works() -> None:
    text = RECIPE.read_text()
    header = " ".join(l.lstrip("# ") for l in text.splitlines() if l.startswith("#"))
    assert "in the same environment as this job" in header and "--write-baseline" in header
    assert 'uncomment the "Install vLLM" step below (both lines' in header
    # Uncommented as the comment says, it is a valid step that runs before the audit.
    lines = text.splitlines()
    (start,) = [i for i, l in enumerate(lines) if l.strip() == "# - name: Install vLLM"]
    for i in (start, start + 1):
        lines[i] = lines[i].replace("# ", "", 1)
    enabled: dict[Any, Any] = yaml.safe_load("\n".join(lines))
    enabled["on"] = enabled.pop(True)
    schema = json.loads((ROOT / "tests" / "ci" / "github-workflow.schema.json").read_text())
    jsonschema.Draft7Validator(schema).validate(enabled)
    names = [s.get("name") for s in enabled["jobs"]["audit"]["steps"]]
    assert names.index("Install vLLM") == names.index("Install vllm-sp-base") + 1 < names.index("Audit")
    assert enabled["jobs"]["audit"]["steps"][names.index("Install vLLM")]["run"].startswith(
        "pip install --no-deps vllm==")


def _sh(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = cwd.parent / "bin"
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=300,
                          check=False, env={**os.environ, "VLLM_SP_BASE_CACHE_DIR": str(cwd.parent / "cache"),
                                            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})


def test_the_audit_steps_run_as_written(tmp_path: Path) -> None:
    # `pip install ./.vllm-sp-base` is tests/test_readme.py's `pip install ./`; here the
    # `vllm-sp-base` on PATH is this checkout's, and the steps after it run as written.
    (tmp_path / "bin").mkdir()
    command = tmp_path / "bin" / "vllm-sp-base"
    command.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m vllm_sp_base "$@"\n')
    command.chmod(0o755)
    project = tmp_path / "project"
    shutil.copytree(ROOT / "examples", project / "examples")
    audits = [s for s in _steps() if s.get("run", "").startswith("vllm-sp-base audit")]
    assert len(audits) == 2
    annotate, scan = (" ".join(s["run"].split()) for s in audits)
    assert _sh("vllm-sp-base audit . --write-baseline .vllm-sp-base-baseline.json", project).returncode == 0
    passed = _sh(annotate, project)
    assert (passed.returncode, passed.stdout) == (0, ""), passed.stderr
    # A new finding: annotated, and the job fails; the SARIF step still writes it, exit 0.
    new = (ROOT / "examples" / "dots3_note.py").read_text().replace("Dots3NoteModel", "Dots4Model")
    (project / "examples" / "dots4.py").write_text(new)
    failed = _sh(annotate, project)
    assert failed.returncode == 1 and failed.stdout.startswith("::error file=examples/dots4.py,line=")
    assert _sh(scan, project).returncode == 0
    from tests.audit.test_cli import _sarif_validator

    log = json.loads((project / "vllm-sp-base.sarif").read_text())
    _sarif_validator().validate(log)
    located = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert located == {"examples/dots4.py"}
