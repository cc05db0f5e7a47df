"""The proof on the real vLLM 0.33.0 source tree (the installed package, copied)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from vllm_runs import count, pytest_in

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.files._discover import installed_vllm
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._main import main
from vllm_sp_base._upstream.rewrite._vllm_tests import DEFAULTS_TEST_PATH as DEFAULTS_TEST
from vllm_sp_base._upstream.rewrite._vllm_tests import GATE_TEST_PATH as GATE_TEST

TESTS = Path(__file__).parent.parent
DOTS3 = "vllm/models/dots3_note/nvidia/model.py"
SEED_LINES = ("self.use_sequence_parallel = False", "self.use_sequence_parallel_moe = False")
# Independent of the codemod's own matcher: the hand re-derivation as vLLM writes it.
REDERIVATION = re.compile(
    r"(\w+)\.use_sequence_parallel_moe\s+and\s+\1\.pipeline_parallel_size\s*==\s*1"
)


def _copy_source_tree(source: Path, root: Path) -> None:
    """Python files are copied, everything else (the 800 MB of .so) is linked."""

    def copy(src: str, dst: str) -> object:
        return shutil.copy2(src, dst) if src.endswith(".py") else os.symlink(src, dst)

    shutil.copytree(source, root / "vllm", copy_function=copy,
                    ignore=shutil.ignore_patterns("__pycache__"))


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((root / "vllm").rglob("*.py"))
    }


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    installed = installed_vllm()
    if installed is None:
        pytest.skip("vLLM is not installed")
    base = tmp_path_factory.mktemp("upstream")
    trees = {name: base / name for name in ("original", "rewritten", "wide", "applied")}
    for name in ("original", "rewritten", "wide"):
        _copy_source_tree(Path(installed), trees[name])
    (trees["rewritten"] / "tests").mkdir()  # a checkout: --write adds vLLM tests there
    return {"installed": Path(installed), "out": base / "out", **trees}


def _run(*args: str) -> tuple[int, str]:
    import contextlib
    import io

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["upstream", *args])
    return code, stdout.getvalue()


@pytest.fixture(scope="module")
def runs(trees: dict[str, Path]) -> dict[str, tuple[int, str]]:
    """Dry run, --out, --write, a second --write, and the wide options, each captured."""
    before = _digest(trees["original"])
    results = {
        "dry": _run("--vllm-src", str(trees["original"])),
        "out": _run("--vllm-src", str(trees["original"] / "vllm"), "--out", str(trees["out"])),
    }
    assert _digest(trees["original"]) == before, "a dry run or --out changed the source tree"
    results["write"] = _run("--vllm-src", str(trees["rewritten"]), "--write")
    after = _digest(trees["rewritten"])
    results["again"] = _run("--vllm-src", str(trees["rewritten"]), "--write")
    assert _digest(trees["rewritten"]) == after, "a second --write changed the tree"
    results["wide"] = _run("--vllm-src", str(trees["wide"]), "--write", "--all-readers",
                           "--remove-redundant")
    return results


def _git(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(cwd.parent), "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)


@pytest.fixture(scope="module")
def applied(trees: dict[str, Path], runs: dict[str, tuple[int, str]]) -> Path:
    """A git repository of the original tree with the series applied by ``git am``."""
    repo = trees["applied"]
    _copy_source_tree(trees["installed"], repo)
    assert _git(repo, "init", "-q").returncode == 0
    _git(repo, "add", "-A", "vllm")
    assert _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm",
                "vLLM as released").returncode == 0
    patches = sorted(str(p) for p in trees["out"].glob("*.patch"))
    done = _git(repo, "am", "--keep-non-patch", *patches)
    assert done.returncode == 0, done.stdout + done.stderr
    return repo


def test_it_reports_what_it_changes_and_why(runs: dict[str, tuple[int, str]]) -> None:
    code, output = runs["dry"]
    assert code == 0
    summary = next(line for line in output.splitlines() if " file(s), +" in line)
    assert re.search(r"\b2 classes given the mixin\b", summary)
    assert re.search(r"\b6 re-derivations replaced\b", summary)
    assert re.search(r"\b0 redundant assignments removed\b", summary)
    assert re.search(r"\b1 gate added\b", summary) and re.search(r"\b1 contract module", summary)
    assert re.search(r"\b2 vLLM test files written\b", summary)
    # Each class is there for a reason a reviewer can check: a subclass that skips its __init__.
    assert ("57: DeepseekV32DecoderLayer inherits SequenceParallelDefaults: Dots3NoteDecoderLayer "
            "does not run DeepseekV32DecoderLayer.__init__") in output
    assert "DeepseekV32Model inherits SequenceParallelDefaults: Dots3NoteModel does not run" in output
    assert "patch 1/2: [Config] Add ParallelConfig.use_sequence_parallel_moe_without_pp" in output
    assert "patch 2/2: [Model] Class-level defaults" in output
    assert "vllm/models/common/sequence_parallel_defaults.py\n  1: new file: the contract" in output
    # No .buildkite/ in an installed vLLM: said, for the submitter to wire the tests.
    assert ".buildkite/test_areas/models_basic.yaml: not found: wire" in output
    assert output.strip().endswith("--out DIR writes the files and the patch series)")
    assert runs["out"][1].splitlines()[:-1] == output.splitlines()[:-1]


def test_the_wide_version_is_opt_in(runs: dict[str, tuple[int, str]], trees: dict[str, Path]) -> None:
    code, output = runs["wide"]
    assert code == 0
    summary = next(line for line in output.splitlines() if " file(s), +" in line)
    assert re.search(r"\b27 classes given the mixin\b", summary)
    assert re.search(r"\b3 redundant assignments removed\b", summary)
    assert "KimiLinearModel inherits SequenceParallelDefaults: reads a flag outside __init__" in output
    dots3 = (trees["wide"] / DOTS3).read_text()
    assert not any(line in dots3 for line in SEED_LINES)
    # By default the lines PR #52172 added on purpose stay.
    assert sum((trees["rewritten"] / DOTS3).read_text().count(line) for line in SEED_LINES) == 3


def test_a_second_run_changes_nothing(runs: dict[str, tuple[int, str]]) -> None:
    code, output = runs["again"]
    assert code == 0
    assert output.splitlines()[0].startswith("0 file(s), +0 -0 lines")


def test_git_am_applies_the_series_and_gives_the_rewritten_tree(
    trees: dict[str, Path], runs: dict[str, tuple[int, str]], applied: Path
) -> None:
    out = trees["out"]
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*.py"))
    assert "vllm/config/parallel.py" in written and DOTS3 not in written
    assert "vllm/models/common/sequence_parallel_defaults.py" in written
    assert "tests/config/test_parallel_sequence_parallel_gate.py" in written
    for relative in written:  # --out, --write and the series all give the same files
        assert (out / relative).read_bytes() == (trees["rewritten"] / relative).read_bytes()
        assert (applied / relative).read_bytes() == (out / relative).read_bytes()
    log = _git(applied, "log", "--format=%s%n%b%n--", "-2").stdout
    messages = [block for block in log.split("--\n") if block.strip()]
    assert [m.splitlines()[0] for m in messages] == [
        "[Model] Class-level defaults for the sequence-parallel flags",
        "[Config] Add ParallelConfig.use_sequence_parallel_moe_without_pp"]
    for message in messages:  # vLLM 0.33.0's PR template, its AGENTS.md trailer, no blank to fill
        sections = [line for line in message.splitlines() if line.startswith("## ")]
        assert sections == ["## Overview", "## Claims", "## Validation", "## Details"]
        assert "\nCo-authored-by: vllm-sp-base " in message and "AI assistance was used" in message
        assert "Signed-off-by: Your Name <you@example.com>" in message
        assert "fill in" not in message and "Test Result" not in message
        assert "previous patch" not in message  # each stands alone: vLLM squash-merges
    assert max(map(len, log.splitlines())) <= 80  # prose filled to 72; a path may run over
    assert "#52172" in log and "#48849" in log and "MagicMock" in messages[1]


def test_each_patch_applies_on_its_own(trees: dict[str, Path], applied: Path) -> None:
    release = _git(applied, "rev-list", "--max-parents=0", "HEAD").stdout.strip()
    for patch in sorted(trees["out"].glob("*.patch")):
        _git(applied, "checkout", "-q", release)
        done = _git(applied, "apply", "--check", str(patch))
        assert done.returncode == 0, (patch.name, done.stderr)
    _git(applied, "checkout", "-q", "-")


def test_the_generated_vllm_tests_pass_on_the_patched_tree_and_fail_without_it(
    trees: dict[str, Path], applied: Path
) -> None:
    tests = sorted(str(p.relative_to(applied)) for p in (applied / "tests").rglob("test_*.py"))
    assert tests == [GATE_TEST, DEFAULTS_TEST]
    log = _git(applied, "log", "--format=%b", "-2").stdout
    claimed = [int(n) for n in re.findall(r"-> (\d+) passed", log)]  # newest first
    assert claimed == [6, 9]  # both tests of patch 2 x 2 classes ...; 3 gate cases + 6 sites
    for path, passed in zip((DEFAULTS_TEST, GATE_TEST), claimed):
        done = pytest_in(applied, path)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        assert (count("passed", done.stdout), count("skipped", done.stdout)) == (passed, 0), path
    # On vLLM as released, the same tests fail: they test what the series adds.
    shutil.copytree(applied / "tests", trees["original"] / "tests")
    try:
        gate, defaults = (pytest_in(trees["original"], path) for path in tests)
    finally:
        shutil.rmtree(trees["original"] / "tests")
    assert count("failed", gate.stdout) == 9 and count("passed", gate.stdout) == 0
    assert "no attribute 'use_sequence_parallel_moe_without_pp'" in gate.stdout
    assert defaults.returncode != 0 and count("passed", defaults.stdout) == 0
    assert "No module named 'vllm.models.common.sequence_parallel_defaults'" in defaults.stdout


def _mutants(applied: Path) -> dict[str, tuple[str, str]]:
    """name -> (path, text): each rewritten site put back as it was, and the
    gate with one of its two conditions dropped. Found with regular
    expressions, independently of the codemod."""
    mutants: dict[str, tuple[str, str]] = {}
    gate = "self.use_sequence_parallel_moe and self.pipeline_parallel_size == 1"
    config = (applied / "vllm/config/parallel.py").read_text()
    assert config.count(f"return {gate}") == 1
    for kept in ("self.use_sequence_parallel_moe", "self.pipeline_parallel_size == 1"):
        mutants[f"gate is only {kept}"] = ("vllm/config/parallel.py",
                                          config.replace(f"return {gate}", f"return {kept}"))
    site = re.compile(r"(\w+(?:\.\w+)*)\.use_sequence_parallel_moe_without_pp\b")
    for path in sorted((applied / "vllm").rglob("*.py")):
        relative = str(path.relative_to(applied))
        text = path.read_text()
        if relative == "vllm/config/parallel.py":
            continue
        for n, found in enumerate(site.finditer(text)):
            receiver = found.group(1)
            old = f"({receiver}.use_sequence_parallel_moe and {receiver}.pipeline_parallel_size == 1)"
            line = text.count("\n", 0, found.start()) + 1
            mutants[f"{relative}:{line} reverted"] = (
                relative, text[:found.start()] + old + text[found.end():])
    return mutants


@pytest.mark.slow
def test_every_mutant_of_the_first_patch_fails_one_of_its_tests(applied: Path) -> None:
    """Each rewritten site reverted to the hand re-derivation, and each
    condition of the gate dropped: at least one test the series adds fails."""
    mutants = _mutants(applied)
    assert len(mutants) == 2 + 6
    survived = []
    for name, (relative, text) in mutants.items():
        path = applied / relative
        original = path.read_text()
        path.write_text(text)
        try:
            done = pytest_in(applied, "-x", GATE_TEST)
        finally:
            path.write_text(original)
        if done.returncode == 0 or count("failed", done.stdout) == 0:
            survived.append(f"{name}: {done.stdout.splitlines()[-1:]}")
    assert survived == []


def test_every_changed_file_compiles_and_no_rederivation_is_left(
    trees: dict[str, Path], runs: dict[str, tuple[int, str]]
) -> None:
    changed = sorted(p for p in trees["out"].rglob("*.py"))
    for path in changed:
        compile(path.read_text(), str(path), "exec")
    def sites(root: Path) -> dict[str, list[str]]:
        found = {str(p.relative_to(root)): REDERIVATION.findall(p.read_text())
                 for p in (root / "vllm").rglob("*.py")}
        return {path: names for path, names in found.items() if names}

    assert sum(map(len, sites(trees["original"]).values())) == 6
    # What is left is the gate's own definition, in ParallelConfig.
    assert sites(trees["rewritten"]) == {"vllm/config/parallel.py": ["self"]}


def test_audit_of_the_result_is_clean_for_the_flags_even_without_dots3_lines(
    trees: dict[str, Path], runs: dict[str, tuple[int, str]]
) -> None:
    def flag_findings() -> list[str]:
        result = audit([str(trees["rewritten"] / "vllm")], cache=Cache(None, False))
        return [f"{f.class_name}.{f.attribute}" for f in result.findings
                if f.attribute.startswith("use_sequence_parallel")]

    assert flag_findings() == []
    # The lines PR #52172 added by hand are now optional: without them, still clean.
    dots3 = trees["rewritten"] / DOTS3
    text = dots3.read_text()
    assert sum(text.count(line) for line in SEED_LINES) == 3
    dots3.write_text("\n".join(line for line in text.splitlines()
                               if line.strip() not in SEED_LINES) + "\n")
    try:
        assert flag_findings() == []
    finally:
        dots3.write_text(text)


@pytest.mark.slow
def test_changed_modules_import_and_the_gates_match_the_rewritten_config(
    trees: dict[str, Path], runs: dict[str, tuple[int, str]]
) -> None:
    modules = sorted(
        str(p.relative_to(trees["out"]).with_suffix("")).replace(os.sep, ".")
        for p in (trees["out"] / "vllm").rglob("*.py")
    )

    def scenario(root: Path, names: list[str]) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, str(TESTS / "upstream_scenario.py"), str(root), *names],
            capture_output=True, text=True, timeout=600, cwd=root,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        report: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
        return report

    contract = "vllm.models.common.sequence_parallel_defaults"
    original = scenario(trees["original"], [m for m in modules if m != contract])
    rewritten = scenario(trees["rewritten"], modules)
    assert rewritten["vllm"] == str(trees["rewritten"] / "vllm")
    imports = rewritten["imports"]
    assert isinstance(imports, dict) and isinstance(original["imports"], dict)
    assert imports.pop(contract) == "ok"
    # Every changed module that imports on CPU from the original tree still does;
    # the rest fail exactly as before (torchvision, ROCm-only code), not because of us.
    assert imports == original["imports"]
    assert imports["vllm.config.parallel"] == imports["vllm.models.deepseek_v32.nvidia.model"] == "ok"
    assert rewritten["gate_mismatches"] == [] and rewritten["layer_mismatches"] == []
    # The contract's classes, and the subclasses that skip their __init__, read defaults.
    assert [u for u in rewritten["unprovided"] if "DeepseekV32" in u or "Dots3" in u] == []
    assert rewritten["skipped_init"] == {
        name: {"use_sequence_parallel": False, "use_sequence_parallel_moe": False}
        for name in ("DeepseekV32DecoderLayer", "DeepseekV32Model",
                     "Dots3NoteDecoderLayer", "Dots3NoteModel")
    }


def test_every_changed_file_passes_vllms_ruff_format_and_check(
    trees: dict[str, Path], runs: dict[str, tuple[int, str]]
) -> None:
    # vLLM's pre-commit runs `ruff format` and `ruff check` with the settings
    # of its pyproject.toml: the patch must pass both on every file it changes.
    from vllm_sp_base._upstream.checks._ruff import VLLM_RUFF, ruff

    binary = ruff()
    assert binary is not None
    # The rewritten tree (what --out holds, in a whole package: ruff tells
    # vLLM's own imports from others by it) against the original.
    out, original = trees["rewritten"], trees["original"]
    changed = [str(p.relative_to(trees["out"])) for p in sorted(trees["out"].rglob("*.py"))]
    assert any(path.startswith("tests/") for path in changed)
    for root in (out, original):
        (root / "ruff.toml").write_text(VLLM_RUFF)
    try:
        formatted = subprocess.run(
            [binary, "format", "--check", "--config", "ruff.toml", *changed],
            cwd=out, capture_output=True, text=True, check=False)
        assert formatted.returncode == 0, formatted.stdout + formatted.stderr
        for relative in changed:  # no line the patch adds is longer than vLLM's 88
            kept = set((original / relative).read_text().splitlines()) if (original / relative).exists() else set()
            added = [line for line in (out / relative).read_text().splitlines() if line not in kept]
            assert all(len(line) <= 88 for line in added), relative

        def findings(root: Path) -> list[tuple[str, str]]:
            done = subprocess.run(
                [binary, "check", "--no-cache", "--config", "ruff.toml", "--output-format",
                 "json", "--exit-zero", *[c for c in changed if (root / c).exists()]],
                cwd=root, capture_output=True, text=True, check=True)
            return sorted((Path(f["filename"]).name, f["code"] or "") for f in json.loads(done.stdout))

        assert findings(out) == findings(original)  # lint: nothing the originals did not have
    finally:
        for root in (out, original):
            (root / "ruff.toml").unlink()
