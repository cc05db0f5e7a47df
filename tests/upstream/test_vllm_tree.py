"""The proof on vLLM 0.33.0's source distribution (``tests/``, ``.buildkite/``
included; downloaded once and cached, ``bench/upstream_releases.source_tree``).

Every statement of fact in the series' message is checked here against the
tree, independently of the code that wrote it: the classes against the diff,
the subclasses and #52172's lines against the release's source, the counts of
readers and gates against a scan of our own, the CI step against the tree's
Buildkite pipeline, and the quoted test outcome against runs of the test on the
patched tree and on every mutant of it (the release included).
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from vllm_runs import count, pytest_in

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._main import main
from vllm_sp_base._upstream._names import TEST_PATH

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))

from upstream_releases import source_tree  # noqa: E402

TESTS = Path(__file__).parent.parent
V32 = "vllm/models/deepseek_v32/nvidia/model.py"
DOTS3 = "vllm/models/dots3_note/nvidia/model.py"
SEED_LINES = ("self.use_sequence_parallel = False", "self.use_sequence_parallel_moe = False")
AUTHOR = "Ada Lovelace <ada@example.org>"
FLAGS = ("use_sequence_parallel", "use_sequence_parallel_moe")
#: What the series copies of the source distribution to work on.
_PARTS = ("vllm", "tests", ".buildkite", "pyproject.toml")


def _copy(source: Path, root: Path) -> None:
    for part in _PARTS:
        if (source / part).is_dir():
            shutil.copytree(source / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source / part, root / part)


def _git(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(cwd.parent), "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["upstream", *args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    sdist = source_tree("0.33.0")
    assert sdist is not None
    base = tmp_path_factory.mktemp("upstream")
    trees = {name: base / name for name in ("original", "rewritten", "wide", "applied")}
    for name in trees:
        _copy(sdist, trees[name])
    return {"sdist": sdist, "out": base / "out", **trees}


@pytest.fixture(scope="module")
def runs(trees: dict[str, Path]) -> dict[str, tuple[int, str, str]]:
    """Dry run, --out (which runs the test), --write, a second --write, and the wide options."""
    results = {
        "dry": _run("--vllm-src", str(trees["original"])),
        "out": _run("--vllm-src", str(trees["original"] / "vllm"), "--out", str(trees["out"]),
                    "--author", AUTHOR),
        "write": _run("--vllm-src", str(trees["rewritten"]), "--write"),
    }
    after = {p: p.read_bytes() for p in (trees["rewritten"] / "vllm").rglob("*.py")}
    results["again"] = _run("--vllm-src", str(trees["rewritten"]), "--write")
    assert {p: p.read_bytes() for p in (trees["rewritten"] / "vllm").rglob("*.py")} == after
    results["wide"] = _run("--vllm-src", str(trees["wide"]), "--write", "--all-readers")
    results["keep"] = _run("--vllm-src", str(trees["original"]), "--keep-redundant")
    return results


@pytest.fixture(scope="module")
def patch(trees: dict[str, Path], runs: dict[str, tuple[int, str, str]]) -> str:
    code, _, err = runs["out"]
    assert code == 0, err
    (found,) = sorted(trees["out"].glob("*.patch"))
    return found.read_text()


@pytest.fixture(scope="module")
def message(patch: str) -> str:
    """The commit message as prose: lines unfilled, so a sentence reads whole."""
    body = patch.split("\n\n", 1)[1].split("\n---\n", 1)[0]
    body = re.sub(r"\n  (?=\S)", " ", body)  # a bullet's continued lines
    return re.sub(r"(?<=\S)\n(?=[^\n\s#<-])", " ", body)


@pytest.fixture(scope="module")
def applied(trees: dict[str, Path], patch: str) -> Path:
    """A git repository of the release with the series applied by ``git am``."""
    repo = trees["applied"]
    for argv in (("init", "-q"), ("add", "-A", "-f"),
                 ("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "release")):
        assert _git(repo, *argv).returncode == 0
    done = _git(repo, "am", "--keep-non-patch", *map(str, sorted(trees["out"].glob("*.patch"))))
    assert done.returncode == 0, done.stdout + done.stderr
    return repo


def test_it_reports_what_it_changes_and_why(runs: dict[str, tuple[int, str, str]]) -> None:
    code, output, _ = runs["dry"]
    assert code == 0
    summary = next(line for line in output.splitlines() if " file(s), +" in line)
    assert re.search(r"\b2 classes given class-level defaults, 2 redundant assignments removed\b", summary)
    assert re.search(r"\b1 vLLM tests added\b", summary)
    assert ("57: DeepseekV32DecoderLayer: class-level use_sequence_parallel = False: "
            "Dots3NoteDecoderLayer does not run DeepseekV32DecoderLayer.__init__") in output
    assert "patch 1/1: [Model] Class-level use_sequence_parallel default for DeepseekV32 classes" in output
    assert sum("left as is: a hand-written sequence-parallel gate" in line for line in output.splitlines()) == 12
    assert output.strip().endswith("--out DIR writes the files and the patch series)")


def test_without_a_source_tree_the_series_is_refused_in_one_line() -> None:
    # The installed vLLM ships no tests/ or .buildkite/: a series written from it
    # could neither carry its test nor name the CI step that runs it.
    code, out, err = _run("--out", "/nonexistent/out", "--author", AUTHOR)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "has no tests/ (an installed vLLM ships none)" in err and "--vllm-src" in err


def test_the_wide_version_is_opt_in(runs: dict[str, tuple[int, str, str]], trees: dict[str, Path]) -> None:
    code, output, err = runs["wide"]
    assert code == 0, err
    summary = next(line for line in output.splitlines() if " file(s), +" in line)
    assert re.search(r"\b27 classes given class-level defaults, 2 redundant assignments removed\b", summary)
    assert "KimiLinearModel: class-level use_sequence_parallel = False: reads a flag outside __init__" in output
    # The two use_sequence_parallel lines go; use_sequence_parallel_moe, which no
    # parent of Dots3NoteDecoderLayer reads or is given a default for, stays.
    dots3 = (trees["wide"] / DOTS3).read_text()
    assert SEED_LINES[0] not in dots3 and dots3.count(SEED_LINES[1]) == 1
    # By default the use_sequence_parallel lines PR #52172 added go too.
    assert (trees["rewritten"] / DOTS3).read_text().count(SEED_LINES[0]) == 0


def test_keep_redundant_leaves_the_subclasses_alone(runs: dict[str, tuple[int, str, str]]) -> None:
    code, output, err = runs["keep"]
    assert code == 0, err
    summary = next(line for line in output.splitlines() if " file(s), +" in line)
    assert re.search(r"\b2 classes given class-level defaults, 0 redundant assignments removed\b", summary)
    assert DOTS3 not in output.splitlines()


def test_a_second_run_changes_nothing(runs: dict[str, tuple[int, str, str]]) -> None:
    code, output, _ = runs["again"]
    assert code == 0 and output.splitlines()[0].startswith("0 file(s), +0 -0 lines")


def test_git_am_applies_the_series_and_gives_the_rewritten_tree(
    trees: dict[str, Path], applied: Path, patch: str
) -> None:
    out = trees["out"]
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*.py"))
    assert written == [TEST_PATH, V32, DOTS3]
    for relative in written:  # --out, --write and the series all give the same files
        assert (out / relative).read_bytes() == (trees["rewritten"] / relative).read_bytes()
        assert (applied / relative).read_bytes() == (out / relative).read_bytes()
    # index lines name the release's blobs, so `git am -3` can fall back.
    for path, before in re.findall(r"^diff --git a/(\S+) .*\nindex ([0-9a-f]{40})\.\.", patch, re.MULTILINE):
        assert _git(applied, "rev-parse", f"HEAD~1:{path}").stdout.strip() == before
    log = _git(applied, "log", "--format=%s%n%b", "-1").stdout
    assert log.splitlines()[0] == "[Model] Class-level use_sequence_parallel default for DeepseekV32 classes"
    sections = [line for line in log.splitlines() if line.startswith("## ")]
    assert sections == ["## Overview", "## Claims", "## Validation", "## Details"]
    assert "<summary> Pull Request Checklist </summary>" in log
    assert "- [x] AI assistance was used during the creation of this PR." in log
    assert re.search(r"^Co-authored-by: vllm-sp-base <\S+@\S+>$", log, re.MULTILINE)
    assert f"\nSigned-off-by: {AUTHOR}\n" in log and "example.com>" not in log


def test_the_classes_named_are_the_classes_the_diff_changes(patch: str, message: str) -> None:
    diff = patch.split("\n---\n", 1)[1]
    changed = re.findall(r"^ class (\w+)\(.*\n(?:[ +].*\n)*?\+    use_sequence_parallel: bool = False$",
                         diff, re.MULTILINE)
    assert sorted(changed) == ["DeepseekV32DecoderLayer", "DeepseekV32Model"]
    assert "`DeepseekV32DecoderLayer` and `DeepseekV32Model` (calling" in message
    assert f"Of the other 27, {len(changed)} have a subclass whose own `__init__` skips theirs" in message
    assert diff.count("\n+    use_sequence_parallel: bool = False\n") == len(changed)


def test_the_subclasses_named_skip_their_parents_init_and_set_the_flag_by_hand(
    trees: dict[str, Path], message: str
) -> None:
    # "`Dots3NoteDecoderLayer` and `Dots3NoteModel` skip the `__init__` ... (calling
    # `nn.Module.__init__(self)`)"; "#52172 set the flag in each subclass".
    assert "`Dots3NoteDecoderLayer` and `Dots3NoteModel` skip the `__init__`" in message
    tree = ast.parse((trees["original"] / DOTS3).read_text())
    for name in ("Dots3NoteDecoderLayer", "Dots3NoteModel"):
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
        init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        source = ast.unparse(init)
        assert "nn.Module.__init__(self)" in source and "super().__init__" not in source
        assert "self.use_sequence_parallel = False" in source


def _readers(root: Path) -> dict[str, int]:
    """A scan of our own: classes whose methods other than ``__init__`` read
    ``self.<flag>``, counted per flag and in all, and those whose body or a
    base's (found by name) defines what they read at class level."""
    bodies: dict[str, tuple[set[str], list[str]]] = {}  # class -> (flags defined, base names)
    reading: list[tuple[str, set[str]]] = []
    for path in (root / "vllm").rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "use_sequence_parallel" not in text:
            continue
        for cls in (n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ClassDef)):
            defined = {t.id for item in cls.body if isinstance(item, (ast.Assign, ast.AnnAssign))
                       for t in (item.targets if isinstance(item, ast.Assign) else [item.target])
                       if isinstance(t, ast.Name)}
            defined |= {item.name for item in cls.body if isinstance(item, ast.FunctionDef)
                        and any(ast.unparse(d) == "property" for d in item.decorator_list)}
            bodies[cls.name] = (defined & set(FLAGS), [ast.unparse(b).split(".")[-1] for b in cls.bases])
            read = {node.attr for method in cls.body
                    if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.name != "__init__"
                    for node in ast.walk(method)
                    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
                    and isinstance(node.value, ast.Name) and node.value.id == "self" and node.attr in FLAGS}
            if read:
                reading.append((cls.name, read))

    def defines(name: str, depth: int = 0) -> set[str]:
        if name not in bodies or depth > 20:
            return set()
        own, bases = bodies[name]
        return own.union(*(defines(b, depth + 1) for b in bases))

    counts = {"all": len(reading), "class-level": sum(read <= defines(name) for name, read in reading)}
    for flag in FLAGS:
        counts[flag] = sum(flag in read for _, read in reading)
    return counts


def test_the_count_of_readers_is_the_trees(trees: dict[str, Path], message: str) -> None:
    counts = _readers(trees["original"])
    assert (f"in this tree {counts['all']} classes read `self.use_sequence_parallel` or "
            "`self.use_sequence_parallel_moe` in a method other than `__init__` "
            f"({counts['use_sequence_parallel']} read `self.use_sequence_parallel`). "
            f"{counts['class-level']} already define what they read at class level (a class "
            f"attribute or a property). Of the other {counts['all'] - counts['class-level']}, ") in message


def test_the_gates_counted_are_the_trees(trees: dict[str, Path], message: str) -> None:
    # A scan of our own: every `pipeline_parallel_size == 1` whose statement or
    # function names sequence parallelism, and which of them also read
    # `use_sequence_parallel_moe` right next to it.
    gates = rederiving = 0
    for path in (trees["original"] / "vllm").rglob("*.py"):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for n, line in enumerate(lines):
            if re.search(r"\.pipeline_parallel_size == 1\b", line) and any(
                    "sequence_parallel" in above for above in lines[max(0, n - 10):n + 1]):
                gates += 1
                rederiving += "use_sequence_parallel_moe" in lines[n - 1]
    assert (gates, rederiving) == (12, 6)
    assert (f"Not changed: the tree's {gates} hand-written sequence-parallel gates (a "
            f"`pipeline_parallel_size == 1` in a sequence-parallel condition; {rederiving} re-derive "
            f"`use_sequence_parallel_moe and pipeline_parallel_size == 1`, {gates - rederiving} spell "
            "out conditions of their own)") in message


def test_the_ci_step_named_runs_the_test_and_covers_the_change(trees: dict[str, Path], message: str) -> None:
    found = re.search(r"is run by the Buildkite step \"([^\"]+)\" \(key (\S+), (\S+)\), whose "
                      r"`source_file_dependencies` cover (.*?) \(through `(\S+)`\)", message)
    assert found is not None, message
    label, key, file, sources, entry = found.groups()
    assert re.findall(r"`(\S+?)`", sources) == [V32, DOTS3] and all(s.startswith(entry) for s in (V32, DOTS3))
    steps = yaml.safe_load((trees["original"] / file).read_text())["steps"]
    step = next(s for s in steps if s.get("key") == key)
    assert step["label"] == label
    assert any(TEST_PATH.removeprefix("tests/") in command.split() for command in step["commands"])
    assert entry in step["source_file_dependencies"]
    assert not any(s.startswith(d[1:]) for s in (V32, DOTS3)
                   for d in step["source_file_dependencies"] if d.startswith("!"))


def test_the_existing_tests_it_cites_set_the_flag_to_true(trees: dict[str, Path], message: str) -> None:
    cited = re.search(r"\(`(test_\w+)`, which sets it to `True` on an instance, passes with this change\)",
                      message)
    assert cited is not None, message
    tree = ast.parse((trees["original"] / TEST_PATH).read_text())
    test = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == cited.group(1))
    source = ast.unparse(test)
    assert "DeepseekV32DecoderLayer" in source and ".use_sequence_parallel = True" in source


def _mutants(applied: Path) -> dict[str, str]:
    """name -> the text of the model file: as patched, as released, and with
    each class's default dropped or turned on. Found with a regular
    expression, independently of the codemod."""
    text = (applied / V32).read_text()
    default = re.compile(r"^(class (DeepseekV32\w+)\(.*\):\n(?:    .*\n)*?)    use_sequence_parallel: "
                         r"bool = False\n(\n(?=    def ))?", re.MULTILINE)
    found = list(default.finditer(text))
    assert [m.group(2) for m in found] == ["DeepseekV32DecoderLayer", "DeepseekV32Model"]

    def dropped(m: re.Match[str]) -> str:
        # The blank line the default brought after a class header goes with it.
        opens_body = m.group(1).count("\n") == 1
        return m.group(1) + ("" if opens_body else m.group(3) or "")

    mutants = {"patched": text, "released": default.sub(dropped, text)}
    # Dropping the model's default fails as the release does (its forward reads first).
    layer = found[0]
    mutants["DeepseekV32DecoderLayer default dropped"] = text[:layer.start()] + dropped(layer) + text[layer.end():]
    for m in found:
        cls = m.group(2)
        mutants[f"{cls} default True"] = (text[:m.start()] + m.group(1) + "    use_sequence_parallel: "
                                          "bool = True\n" + (m.group(3) or "") + text[m.end():])
    return mutants


@pytest.mark.slow
def test_the_quoted_outcome_holds_and_every_mutant_fails_the_test(
    trees: dict[str, Path], applied: Path, message: str
) -> None:
    """The test file on the patched tree and on each mutant (the release among
    them), each in a copy: the patched one passes as quoted, every mutant fails,
    the release with the quoted error."""
    mutants = _mutants(applied)
    assert mutants["released"] == (trees["original"] / V32).read_text()

    def outcome(item: tuple[str, str]) -> tuple[str, subprocess.CompletedProcess[str]]:
        name, text = item
        root = scratch / name.replace(" ", "-")
        shutil.rmtree(root, ignore_errors=True)
        for part in ("vllm", "tests"):
            shutil.copytree(applied / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
        (root / V32).write_text(text)
        try:
            return name, pytest_in(root, TEST_PATH)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    # Out of the sdist, and one per run: two runs on one machine share the sdist.
    scratch = trees["sdist"].parent / f"mutants-{os.getpid()}"
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            done = dict(pool.map(outcome, mutants.items()))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    patched = done.pop("patched")
    assert (count("passed", patched.stdout), count("failed", patched.stdout)) == (3, 0), patched.stdout[-3000:]
    assert "with it: 3 passed" in message
    survived = [name for name, run in done.items() if count("failed", run.stdout) == 0]
    assert survived == []
    released = done["released"].stdout
    assert "without this change: 1 failed, 2 passed" in message
    assert (count("failed", released), count("passed", released)) == (1, 2)
    quoted = re.search(r"without this change: 1 failed, 2 passed\s+(E .*?)\s+with it", message)
    assert quoted is not None
    error = re.sub(r"^E\s+", "", quoted.group(1))  # pytest's E line, as quoted
    assert error == "AttributeError: '_OwnInitModel' object has no attribute 'use_sequence_parallel'"
    assert re.search(rf"^E\s+{re.escape(error)}$", released, re.MULTILINE)


def test_audit_of_the_result_is_clean_for_the_flags_without_dots3_lines(
    trees: dict[str, Path], runs: dict[str, tuple[int, str, str]]
) -> None:
    # The lines PR #52172 added by hand are gone, and the audit finds no class
    # that can reach a read of the flag without it.
    assert (trees["rewritten"] / DOTS3).read_text().count(SEED_LINES[0]) == 0
    result = audit([str(trees["rewritten"] / "vllm")], cache=Cache(None, False))
    assert [f"{f.class_name}.{f.attribute}" for f in result.findings
            if f.attribute == "use_sequence_parallel"] == []


def test_the_lines_removed_set_false_in_subclasses_of_the_classes_given_the_default(
    trees: dict[str, Path], patch: str, message: str
) -> None:
    # "No change for `Dots3NoteDecoderLayer` and `Dots3NoteModel`: each removed
    # line set `False`, the value the class-level default now gives."
    claim = re.search(r"No change for `(\w+)` and `(\w+)`: each removed line set `False`, the value "
                      r"the class-level default now gives\.", message)
    assert claim is not None, message
    diff = patch.split("\n---\n", 1)[1]
    removed = re.findall(r"^-(\s+)(self\.\w+ = \w+)$", diff, re.MULTILINE)
    assert [line for _, line in removed] == [SEED_LINES[0]] * 2
    tree = ast.parse((trees["original"] / DOTS3).read_text())
    for name in claim.groups():
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
        (base,) = [ast.unparse(b) for b in cls.bases]
        assert re.search(rf"^ class {base}\(.*\n(?:[ +].*\n)*?\+    use_sequence_parallel: bool = False$",
                         diff, re.MULTILINE), base
        init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        sets = [ast.unparse(n) for n in ast.walk(init) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                and "self.use_sequence_parallel" in [ast.unparse(t) for t in getattr(n, "targets", [])]
                + [ast.unparse(getattr(n, "target", n))]]
        assert sets == [SEED_LINES[0]], (name, sets)  # its only assignment, the one removed
        assert (trees["rewritten"] / DOTS3).exists()


@pytest.mark.slow
def test_the_subclasses_that_skip_init_read_the_default_from_the_real_classes(
    trees: dict[str, Path], runs: dict[str, tuple[int, str, str]]
) -> None:
    done = subprocess.run(
        [sys.executable, str(TESTS / "upstream_scenario.py"), str(trees["rewritten"])],
        capture_output=True, text=True, timeout=600, cwd=trees["rewritten"], check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["vllm"] == str(trees["rewritten"] / "vllm")
    assert report["skipped_init"] == dict.fromkeys(
        ("DeepseekV32DecoderLayer", "DeepseekV32Model", "Dots3NoteDecoderLayer", "Dots3NoteModel"),
        False)


def test_every_changed_file_passes_vllms_ruff_format_and_check(
    trees: dict[str, Path], runs: dict[str, tuple[int, str, str]]
) -> None:
    # vLLM's pre-commit runs `ruff format` and `ruff check` with the settings
    # of its pyproject.toml: the patch must pass both on every file it changes.
    from vllm_sp_base._upstream.checks._ruff import VLLM_RUFF, ruff

    binary = ruff()
    assert binary is not None
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
            kept = set((original / relative).read_text().splitlines())
            added = [line for line in (out / relative).read_text().splitlines() if line not in kept]
            assert all(len(line) <= 88 for line in added), relative

        def findings(root: Path) -> list[tuple[str, str]]:
            done = subprocess.run(
                [binary, "check", "--no-cache", "--config", "ruff.toml", "--output-format",
                 "json", "--exit-zero", *changed],
                cwd=root, capture_output=True, text=True, check=True)
            return sorted((Path(f["filename"]).name, f["code"] or "") for f in json.loads(done.stdout))

        assert findings(out) == findings(original)  # lint: nothing the originals did not have
    finally:
        for root in (out, original):
            (root / "ruff.toml").unlink()


def test_no_class_of_the_tree_passes_sequence_parallel_true(trees: dict[str, Path], message: str) -> None:
    # The sentence went: true, but no answer for a subclass whose modules take
    # sequence parallelism from parallel_config (a review found Dots3NoteMoE does).
    assert "passes `is_sequence_parallel=True`" not in message
    assert "Why `False`: it is the value #52172 gave the subclasses by hand." in message
    assert not any("is_sequence_parallel=True" in p.read_text(errors="replace")
                   for p in (trees["original"] / "vllm").rglob("*.py"))


def test_what_the_init_builds_from_the_flag_is_the_trees(trees: dict[str, Path], message: str) -> None:
    built = re.findall(r"`(\w+)\.__init__` builds `(\w+)\((\w+)=self\.use_sequence_parallel\)`", message)
    assert built, message
    tree = ast.parse((trees["original"] / V32).read_text())
    for cls_name, callee, keyword in built:
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
        init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        assert any(isinstance(c, ast.Call) and ast.unparse(c.func) == callee
                   and any(k.arg == keyword and ast.unparse(k.value) == "self.use_sequence_parallel"
                           for k in c.keywords)
                   for c in ast.walk(init)), (cls_name, callee)
