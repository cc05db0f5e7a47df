"""``upstream --write`` killed at any moment of its write phase: after a
rerun, the tree is the original one or the rewritten one, with no staged
file or journal left; links stay links."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
from test_cli import V32, make_tree, run, snapshot

from vllm_sp_base import _atomic
from vllm_sp_base._upstream.series import _build, _output

#: What the write phase does to the disk: a kill can come between any two.
_STEPS = ("open", "fsync", "replace", "remove", "chmod", "mkdir", "rmdir")


class _KillAt:
    """``os`` for ``_atomic``, killing the process at its ``at``-th step."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.steps: list[str] = []

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        if name not in _STEPS:
            return real

        def step(*args: Any, **kwargs: Any) -> Any:
            self.steps.append(name)
            if len(self.steps) == self.at:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)

        return step


def _write_in_child(root: Path, changes: list[_build.FileChange], at: int) -> list[str] | None:
    """Runs the write phase in a forked child killed at step ``at`` (never,
    past the last); returns the steps it took (None: it was killed)."""
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write, report the steps taken, leave at once
        os.close(reading)
        counter = _KillAt(at)
        _atomic.os = counter  # type: ignore[assignment]
        _output.write_tree(str(root), changes)
        os.write(writing, " ".join(counter.steps).encode())
        os._exit(0)
    os.close(writing)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(reading) as pipe:
        told = pipe.read()
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return None
    return told.split()


def _leftovers(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*")
        if p.name.endswith((_atomic.STAGED, _atomic.OLD)) or p.name.startswith(_atomic.JOURNAL)
    )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the kill test forks")
def test_a_write_killed_at_any_step_ends_original_or_rewritten(tmp_path: Path) -> None:
    pristine = make_tree(tmp_path / "pristine")
    original = snapshot(pristine)
    changes = _build.build(str(pristine)).files
    done = tmp_path / "done"
    shutil.copytree(pristine, done)
    steps = _write_in_child(done, changes, at=10**9)
    rewritten = snapshot(done)
    assert steps and steps.count("replace") == len(changes) + 1  # the files and the journal
    assert rewritten != original and not _leftovers(done)

    outcomes = set()
    for at in range(1, len(steps) + 1):
        tree = tmp_path / f"killed-{at}"
        shutil.copytree(pristine, tree)
        assert _write_in_child(tree, changes, at) is None
        committed = (tree / _atomic.JOURNAL).exists()
        _atomic.finish_interrupted(str(tree), {str(tree / c.path).rsplit("/", 1)[0] for c in changes})
        after = snapshot(tree)
        assert after in (original, rewritten), f"killed at step {at}: a tree half-written"
        assert after == rewritten or not committed, f"killed at step {at}: the journal not finished"
        assert not _leftovers(tree), f"killed at step {at}"
        outcomes.add(after == rewritten)
        shutil.rmtree(tree)
    assert outcomes == {True, False}  # kills came both before and after the commit point


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the kill test forks")
@pytest.mark.parametrize("when", ["staging", "moving"])
def test_the_next_write_run_finishes_or_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], when: str
) -> None:
    pristine = make_tree(tmp_path / "pristine")
    changes = _build.build(str(pristine)).files
    done = tmp_path / "done"
    shutil.copytree(pristine, done)
    steps = _write_in_child(done, changes, at=10**9)
    assert steps
    tree = tmp_path / "tree"
    shutil.copytree(pristine, tree)
    # Killed after the first file is staged, or after the first is moved into place.
    replaces = [n for n, step in enumerate(steps, 1) if step == "replace"]
    at = steps.index("fsync") + 2 if when == "staging" else replaces[1] + 1
    assert _write_in_child(tree, changes, at) is None
    assert _leftovers(tree)
    code, _, err = run(capsys, "--vllm-src", str(tree), "--write")
    assert code == 0, err
    assert ("finished an interrupted --write" in err) == (when == "moving")
    assert snapshot(tree) == snapshot(done) and not _leftovers(tree)


def test_a_journal_this_tool_did_not_write_is_one_line_and_nothing_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = make_tree(tmp_path)
    (tree / _atomic.JOURNAL).write_text(json.dumps({"version": 1, "moves": [["/etc/x", "/etc/y"]]}))
    before = snapshot(tree)
    code, _, err = run(capsys, "--vllm-src", str(tree), "--write")
    assert code == 2 and "not a journal this tool wrote" in err and err.count("\n") == 1
    assert snapshot(tree) == before


def test_a_linked_file_inside_the_tree_stays_a_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = make_tree(tmp_path)
    real = tree / "shared" / "real_model.py"  # in the tree, outside the package: one module
    real.parent.mkdir()
    (tree / V32).rename(real)
    (tree / V32).symlink_to(os.path.relpath(real, (tree / V32).parent))
    code, _, err = run(capsys, "--vllm-src", str(tree), "--write")
    assert code == 0, err
    text = real.read_text()
    assert (tree / V32).is_symlink()
    assert "class DeepseekV32Model(nn.Module):\n    use_sequence_parallel: bool = False\n" in text


def test_one_file_under_two_module_paths_changed_differently_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two modules to Python, one file on disk: the contract anchors on one
    # path only, so each path asks for a different text. Writing either would
    # undo the other's change (the last one used to win, silently).
    tree = make_tree(tmp_path)
    real = tree / "vllm" / "models" / "real_model.py"
    (tree / V32).rename(real)
    (tree / V32).symlink_to(os.path.relpath(real, (tree / V32).parent))
    before = snapshot(tree)
    code, _, err = run(capsys, "--vllm-src", str(tree), "--write")
    assert code == 2 and snapshot(tree) == before
    assert err.endswith(f"error: vllm/models/real_model.py: the same file as {V32} (a link), which "
                        "the series changes differently; nothing written\n")
