"""``vllm-sp-base upstream`` on small trees of our own: plan, output, safety, bad input."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._main import main
from vllm_sp_base._upstream.plan._plan import analyse
from vllm_sp_base._upstream.series import _output

V32 = "vllm/models/deepseek_v32/nvidia/model.py"
TEST = "tests/models/deepseek_v32/test_sequence_parallel.py"
AUTHOR = "Ada Lovelace <ada@example.org>"
# Toy classes under the names the patch anchors on; their bodies are ours, not vLLM's.
FILES = {
    "vllm/config/parallel.py": """\
        class ParallelConfig:
            @property
            def use_sequence_parallel_moe(self) -> bool:
                return self.data_parallel_size > 1
    """,
    "vllm/models/gate_user.py": """\
        def _use_sequence_parallel(pc: ParallelConfig, moe: bool):
            return pc.use_sequence_parallel_moe and pc.pipeline_parallel_size == 1 and moe
    """,
    # The CI step that runs the test file, as vLLM's pipeline declares one.
    ".buildkite/test_areas/models_basic.yaml": """\
        steps:
        - label: Basic Models Other
          key: basic-models-other
          source_file_dependencies:
          - vllm/
          - tests/models/deepseek_v32/test_sequence_parallel.py
          commands:
            - pytest -v -s models/test_utils.py models/deepseek_v32/test_sequence_parallel.py
    """,
    # What the series' test reuses from vLLM's own test file; bodies are ours.
    TEST: """\
        import torch
        from torch import nn

        from vllm.models.deepseek_v32.nvidia import model as deepseek_v32_model


        class _IdentityNorm(nn.Module):
            pass


        class _RecordingModule(nn.Module):
            pass


        def _mock_sequence_parallel_collectives(monkeypatch, module):
            pass
    """,
    V32: """\
        from torch import nn


        class DeepseekV32DecoderLayer(nn.Module):
            def __init__(self, on):
                super().__init__()
                self.use_sequence_parallel = on and cfg.pipeline_parallel_size == 1

            def forward(self, x):
                return x if self.use_sequence_parallel else -x


        class DeepseekV32Model(nn.Module):
            def forward(self, x):
                return self.use_sequence_parallel


        class Child(DeepseekV32DecoderLayer):
            def helper(self):
                return self.use_sequence_parallel


        class Note(DeepseekV32DecoderLayer):
            def __init__(self):
                nn.Module.__init__(self)
                self.use_sequence_parallel = False


        class Overrides(DeepseekV32DecoderLayer):
            def __init__(self):
                super().__init__(True)
                self.use_sequence_parallel = False


        class SetsTwice(DeepseekV32DecoderLayer):
            def __init__(self):
                nn.Module.__init__(self)
                setattr(self, "use_sequence_parallel", True)
                self.use_sequence_parallel = False


        class OwnProperty(nn.Module):
            @property
            def use_sequence_parallel(self):
                return False

            def forward(self):
                return self.use_sequence_parallel
    """,
}


def make_tree(root: Path, files: dict[str, str] = FILES) -> Path:
    for package in ("vllm", "vllm/config", "vllm/models", "vllm/models/common",
                    "vllm/models/deepseek_v32", "vllm/models/deepseek_v32/nvidia"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").touch()
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text))
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["upstream", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_plan_gives_defaults_to_roots_only_and_keeps_meaningful_assignments(tmp_path: Path) -> None:
    plan = analyse(str(make_tree(tmp_path)), remove_redundant=True)
    assert plan.missing == [] and plan.problems == []
    v32 = plan.edits[V32]
    # Child inherits the default; OwnProperty has the name already.
    assert sorted(v32.defaults) == ["DeepseekV32DecoderLayer", "DeepseekV32Model"]
    assert v32.defaults["DeepseekV32DecoderLayer"].flags == ("use_sequence_parallel",)
    # Note skips the parent's __init__: its False is the default. Overrides runs the
    # parent's, which sets the flag, so its False is a real override and stays;
    # so is SetsTwice's, which overrides its own setattr.
    assert [(r.cls, r.flag) for r in v32.redundant] == [("Note", "use_sequence_parallel")]
    # The hand-written gates are found, told apart, and not planned for change.
    assert [(g.path, g.line, g.rederives) for g in plan.gates] == [
        (V32, 7, False), ("vllm/models/gate_user.py", 2, True)]
    assert plan.gates[0].conditions == ("on", "pipeline_parallel_size == 1")
    assert "vllm/models/gate_user.py" not in plan.edits


def test_dry_run_write_and_second_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_tree(tmp_path)
    before = snapshot(root)
    code, out, _ = run(capsys, "--vllm-src", str(root))
    assert code == 0 and snapshot(root) == before
    assert "2 classes given class-level defaults" in out and "1 redundant assignments removed" in out
    assert "1 vLLM tests added" in out
    assert "vllm/models/gate_user.py:2: left as is: a hand-written sequence-parallel gate" in out
    assert out.rstrip().endswith("writes the files and the patch series)")
    code, out, err = run(capsys, "--vllm-src", str(root / "vllm"), "--write")
    assert code == 0 and "1 redundant assignments removed" in out, err
    text = (root / V32).read_text()
    assert "class DeepseekV32DecoderLayer(nn.Module):\n    use_sequence_parallel: bool = False\n" in text
    assert text.count("self.use_sequence_parallel = False") == 2  # Overrides, SetsTwice keep theirs
    assert "def test_subclass_skipping_init_runs_forward" in (root / TEST).read_text()
    after = snapshot(root)
    code, out, _ = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 0 and out.startswith("0 file(s), +0 -0 lines") and snapshot(root) == after


def test_a_tree_without_tests_is_rewritten_alone_but_gets_no_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {path: text for path, text in FILES.items() if not path.startswith("tests/")}
    root = make_tree(tmp_path / "tree", files)
    before = snapshot(root)
    code, out, err = run(capsys, "--vllm-src", str(root), "--out", str(tmp_path / "out"),
                         "--author", AUTHOR)
    assert code == 2 and out == "" and err.count("\n") == 1 and snapshot(root) == before
    assert "has no tests/ (an installed vLLM ships none)" in err and not (tmp_path / "out").exists()
    code, out, err = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 0 and "no tests/ under" in err and "0 vLLM tests added" in out


def test_moved_classes_are_named_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    moved = {**FILES, V32: "class Elsewhere:\n    pass\n"}
    root = make_tree(tmp_path, moved)
    before = snapshot(root)
    code, _, err = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 1 and snapshot(root) == before
    assert f"expected but not found (classes moved?): {V32}: class DeepseekV32Model" in err
    assert "nothing written" in err and "Traceback" not in err


def test_a_file_that_does_not_parse_is_named_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_tree(tmp_path)
    broken = root / "vllm/models/broken.py"
    broken.write_text("def use_sequence_parallel(:\n")
    before = snapshot(root)
    code, out, err = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 2 and out == ""  # all or nothing: the rest is not rewritten either
    assert err == ("vllm-sp-base upstream: error: vllm/models/broken.py: does not parse (line 1): "
                   "invalid syntax; nothing written\n")
    assert snapshot(root) == before


@pytest.mark.parametrize("make", ["missing", "not-vllm", "file"])
def test_bad_source_paths_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: str
) -> None:
    path = tmp_path / "src"
    if make == "not-vllm":
        path.mkdir()
    elif make == "file":
        path.write_text("")
    code, out, err = run(capsys, "--vllm-src", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"vllm-sp-base upstream: error: {path}: ")


def test_out_inside_the_package_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_tree(tmp_path)
    before = snapshot(root)
    code, _, err = run(capsys, "--vllm-src", str(root), "--out", str(root / "vllm" / "out"),
                       "--author", AUTHOR)
    assert code == 2 and "inside the vLLM package" in err and snapshot(root) == before


def test_an_interrupted_write_leaves_every_file_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path)
    before = snapshot(root)
    real_fsync, calls = os.fsync, []

    def interrupted_fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real_fsync(fd)

    monkeypatch.setattr(_output.os, "fsync", interrupted_fsync)
    code, _, err = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 130 and err.endswith("interrupted\n")
    assert snapshot(root) == before  # no file changed, no temporary file left behind


def test_a_file_linked_from_outside_the_tree_is_not_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_tree(tmp_path / "tree")
    outside = tmp_path / "outside.py"
    outside.write_text((root / V32).read_text())
    (root / V32).unlink()
    (root / V32).symlink_to(outside)
    code, _, err = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 2 and "resolves outside" in err
    assert "use_sequence_parallel: bool" not in outside.read_text()


def test_out_on_the_import_path_is_refused_so_nothing_shadows_vllm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "tree")
    out = tmp_path / "out"
    monkeypatch.syspath_prepend(str(out))
    code, _, err = run(capsys, "--vllm-src", str(root), "--out", str(out), "--author", AUTHOR)
    assert code == 2 and "would shadow the real vLLM" in err and not out.exists()


def test_write_needs_a_named_tree(capsys: pytest.CaptureFixture[str]) -> None:
    # Without --vllm-src a dry run reads the installed vLLM; --write would
    # rewrite site-packages: refused, one line, nothing read or written.
    code, out, err = run(capsys, "--write")
    assert code == 2 and out == "" and "--write rewrites a tree in place" in err and err.count("\n") == 1



@pytest.mark.parametrize("where", ["root", "above"])
def test_out_holding_the_tree_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    root = make_tree(tmp_path / "tree")
    before = snapshot(root)
    out = root if where == "root" else tmp_path
    code, _, err = run(capsys, "--vllm-src", str(root), "--out", str(out), "--author", AUTHOR)
    assert code == 2 and "holds the vLLM tree being read" in err and snapshot(root) == before


def test_a_file_not_formatted_before_is_left_so_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = dict(FILES)
    files[V32] = FILES[V32] + "        x = [ 1,2 ]\n"  # not ruff-formatted: its owners' business
    root = make_tree(tmp_path / "tree", files)
    code, out, err = run(capsys, "--vllm-src", str(root), "--diff")
    assert f"{V32}\n" in out
    assert "  not ruff-formatted before the patch: left unformatted" in out
    assert "+x = [1, 2]" not in out and code == 0, err


def test_ruff_never_touches_the_folder_the_command_runs_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The style step runs ruff on scratch copies, files named: a run with
    # nothing to change, and one with changes, leave an unformatted file in the
    # working directory as it was.
    here = tmp_path / "here"
    here.mkdir()
    (here / "mine.py").write_text("x = [ 1,2 ]\n")
    monkeypatch.chdir(here)
    root = make_tree(tmp_path / "tree")
    assert run(capsys, "--vllm-src", str(root), "--write")[0] == 0
    assert run(capsys, "--vllm-src", str(root), "--write")[0] == 0  # nothing left to change
    assert (here / "mine.py").read_text() == "x = [ 1,2 ]\n"


def test_the_series_is_signed_by_the_author_given_or_gits_and_refused_without_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "tree")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    code, out, err = run(capsys, "--vllm-src", str(root), "--out", str(tmp_path / "a"), "--no-test-run")
    assert code == 2 and out == "" and err.count("\n") == 1 and not (tmp_path / "a").exists()
    assert "no author for the series" in err and "user.email" in err
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Grace Hopper\n\temail = grace@example.org\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    code, _, err = run(capsys, "--vllm-src", str(root), "--out", str(tmp_path / "b"), "--no-test-run")
    (patch,) = sorted((tmp_path / "b").glob("*.patch"))
    text = patch.read_text()
    assert "From: Grace Hopper <grace@example.org>\n" in text
    assert "Signed-off-by: Grace Hopper <grace@example.org>\n" in text
    code, _, err = run(capsys, "--vllm-src", str(root), "--out", str(tmp_path / "c"),
                       "--author", AUTHOR, "--no-test-run")
    (patch,) = sorted((tmp_path / "c").glob("*.patch"))
    text = patch.read_text()
    assert f"From: {AUTHOR}\n" in text and f"Signed-off-by: {AUTHOR}\n" in text
    # GitHub shows a co-author only with an address.
    assert re.search(r"^Co-authored-by: [^<>]+ <[^<>@]+@[^<>]+>$", text, re.MULTILINE)
    code, out, err = run(capsys, "--vllm-src", str(root), "--author", "no email")
    assert code == 2 and out == "" and err.count("\n") == 1 and "expected 'Name <email>'" in err


def test_a_default_goes_where_a_subclass_skips_the_init_that_sets_the_flag(tmp_path: Path) -> None:
    files = {**FILES, "vllm/models/other.py": """\
        from torch import nn


        class Chained(nn.Module):
            def __init__(self):
                super().__init__()
                self.use_sequence_parallel = True

            def forward(self):
                return self.use_sequence_parallel


        class CallsSuper(Chained):
            def __init__(self):
                super().__init__()


        class Skipped(nn.Module):
            def __init__(self):
                super().__init__()
                self.use_sequence_parallel_moe = True

            def forward(self):
                return self.use_sequence_parallel_moe


        class Middle(Skipped):
            pass


        class SkipsIt(Middle):
            def __init__(self):
                nn.Module.__init__(self)
    """}
    root = str(make_tree(tmp_path, files))
    narrow = analyse(root).edits["vllm/models/other.py"]
    assert list(narrow.defaults) == ["Skipped"]  # Chained: CallsSuper runs its __init__
    assert narrow.defaults["Skipped"].why == "SkipsIt does not run Skipped.__init__, which sets it"
    assert narrow.defaults["Skipped"].flags == ("use_sequence_parallel_moe",)
    wide = analyse(root, all_readers=True).edits["vllm/models/other.py"]
    assert sorted(wide.defaults) == ["Chained", "Skipped"]
    assert wide.defaults["Chained"].why == "reads a flag outside __init__ (--all-readers)"


def test_the_ci_step_is_read_as_buildkite_reads_its_dependencies(tmp_path: Path) -> None:
    from vllm_sp_base._upstream.checks._buildkite import find_steps

    pipeline = tmp_path / ".buildkite" / "test_areas"
    pipeline.mkdir(parents=True)
    (pipeline / "models.yaml").write_text(textwrap.dedent("""\
        steps:
        - label: Covers
          key: covers
          source_file_dependencies: [vllm/, "!vllm/distributed/"]
          commands: [pytest -v -s models/deepseek_v32]
        - label: Excludes
          key: excludes
          source_file_dependencies: [vllm/, "!vllm/models/"]
          commands: ["pytest -v -s models/deepseek_v32/test_sequence_parallel.py::test_x"]
        - label: Elsewhere
          key: elsewhere
          source_file_dependencies: [vllm/]
          commands: [pytest -v -s models/other_test.py]
    """))
    wiring = find_steps(str(tmp_path), TEST, [V32])
    assert [(s.key, s.uncovered, s.entries) for s in wiring.steps] == [
        ("covers", (), ("vllm/",)), ("excludes", (V32,), ())]
    assert [s.key for s in wiring.covering()] == ["covers"]
    assert find_steps(str(tmp_path / "none"), TEST, [V32]).steps == []


def test_keep_redundant_keeps_the_lines_the_default_makes_redundant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_tree(tmp_path)
    code, out, err = run(capsys, "--vllm-src", str(root), "--write", "--keep-redundant")
    assert code == 0 and "0 redundant assignments removed" in out, err
    assert (root / V32).read_text().count("self.use_sequence_parallel = False") == 3  # Note keeps its own
