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

from vllm_sp_base._audit._cache import Cache
from vllm_sp_base._audit._cli import installed_vllm
from vllm_sp_base._audit._engine import audit
from vllm_sp_base._main import main
from vllm_sp_base._upstream._output import PATCH_NAME

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
    original, rewritten, out = base / "original", base / "rewritten", base / "out"
    _copy_source_tree(Path(installed), original)
    _copy_source_tree(Path(installed), rewritten)
    return {"installed": Path(installed), "original": original, "rewritten": rewritten, "out": out}


@pytest.fixture(scope="module")
def runs(trees: dict[str, Path]) -> dict[str, tuple[int, str]]:
    """Dry run, --out, --write, then a second --write, each captured."""
    import contextlib
    import io

    def run(*args: str) -> tuple[int, str]:
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            code = main(["upstream", *args])
        return code, stdout.getvalue()

    before = _digest(trees["original"])
    results = {
        "dry": run("--vllm-src", str(trees["original"])),
        "out": run("--vllm-src", str(trees["original"] / "vllm"), "--out", str(trees["out"])),
    }
    assert _digest(trees["original"]) == before, "a dry run or --out changed the source tree"
    results["write"] = run("--vllm-src", str(trees["rewritten"]), "--write")
    after = _digest(trees["rewritten"])
    results["again"] = run("--vllm-src", str(trees["rewritten"]), "--write")
    assert _digest(trees["rewritten"]) == after, "a second --write changed the tree"
    return results


def test_it_reports_what_it_changes_and_counts(runs: dict[str, tuple[int, str]]) -> None:
    code, output = runs["dry"]
    assert code == 0
    summary = output.strip().splitlines()[-2]
    assert re.search(r"\b6 re-derivations replaced\b", summary)
    assert re.search(r"\b3 redundant assignments removed\b", summary)
    assert re.search(r"\b1 gate added\b", summary) and re.search(r"\b1 contract module", summary)
    assert "57: DeepseekV32DecoderLayer inherits SequenceParallelDefaults" in output
    assert "DeepseekV32Model inherits SequenceParallelDefaults" in output
    assert output.strip().endswith("changes the tree, --out DIR writes the files and a patch)")
    assert runs["out"][1].splitlines()[:-1] == output.splitlines()[:-1]


def test_a_second_run_changes_nothing(runs: dict[str, tuple[int, str]]) -> None:
    code, output = runs["again"]
    assert code == 0
    assert output.splitlines()[0].startswith("0 file(s), +0 -0 lines")


def test_out_holds_vllm_layout_and_a_patch_git_accepts(
    trees: dict[str, Path], runs: dict[str, tuple[int, str]]
) -> None:
    out = trees["out"]
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*.py"))
    assert "vllm/config/parallel.py" in written and DOTS3 in written
    assert "vllm/models/common/sequence_parallel_defaults.py" in written
    for relative in written:  # --out and --write produce the same files
        assert (out / relative).read_bytes() == (trees["rewritten"] / relative).read_bytes()
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(trees["original"].parent)}
    check = subprocess.run(["git", "apply", "--check", str(out / PATCH_NAME)],
                           cwd=trees["original"], env=env, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_every_changed_file_compiles_and_no_rederivation_is_left(
    trees: dict[str, Path], runs: dict[str, tuple[int, str]]
) -> None:
    changed = sorted(p for p in trees["out"].rglob("*.py"))
    for path in changed:
        compile(path.read_text(), str(path), "exec")
    def sites(root: Path) -> dict[str, list[str]]:
        found = {str(p.relative_to(root)): REDERIVATION.findall(p.read_text())
                 for p in root.rglob("*.py")}
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

    dots3 = trees["rewritten"] / DOTS3
    text = dots3.read_text()
    assert not any(line in text for line in SEED_LINES), "the codemod left the Dots3 lines"
    assert flag_findings() == []
    # The seed's two lines, as PR #52172 had them, are now optional: put back or not, clean.
    original = (trees["original"] / DOTS3).read_text()
    assert sum(original.count(line) for line in SEED_LINES) == 3
    assert flag_findings() == []


@pytest.mark.slow
def test_changed_modules_import_and_the_gates_match_the_rewritten_config(
    trees: dict[str, Path], runs: dict[str, tuple[int, str]]
) -> None:
    modules = sorted(
        str(p.relative_to(trees["out"]).with_suffix("")).replace(os.sep, ".")
        for p in trees["out"].rglob("*.py")
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
    assert sum(v == "ok" for v in imports.values()) >= 14
    assert rewritten["gate_mismatches"] == [] and rewritten["layer_mismatches"] == []
    assert rewritten["unprovided"] == []
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
    from vllm_sp_base._upstream._style import VLLM_RUFF, ruff

    binary = ruff()
    assert binary is not None
    # The rewritten tree (what --out holds, in a whole package: ruff tells
    # vLLM's own imports from others by it) against the original.
    out, original = trees["rewritten"], trees["original"]
    changed = [str(p.relative_to(trees["out"])) for p in sorted(trees["out"].rglob("*.py"))]
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
