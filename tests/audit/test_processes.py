"""Candidate files checked in forked processes: the same results as in one,
and a child's failure is the parent's."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import AuditResult, audit
from vllm_sp_base._audit.rule import _candidates
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.sources._workers import in_processes

TREE = Path(__file__).with_name("fixtures") / "tree"

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")


def _no_child_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_each_item_but_the_first_runs_in_its_own_process() -> None:
    here = os.getpid()
    results = in_processes(lambda n: (n * n, os.getpid()), [1, 2, 3, 4])
    assert [square for square, _ in results] == [1, 4, 9, 16]
    pids = [pid for _, pid in results]
    assert pids[0] == here and here not in pids[1:] and len(set(pids)) == 4
    assert _no_child_left()


def test_what_a_child_raises_is_raised_here() -> None:
    def parse(text: str) -> int:
        return int(text)

    with pytest.raises(ValueError, match="invalid literal.*'x'"):
        in_processes(parse, ["1", "x"])
    assert _no_child_left()


def test_an_exception_that_does_not_pickle_comes_back_as_its_text() -> None:
    class Local(Exception):  # a local class cannot be pickled
        pass

    def fail(item: int) -> int:
        if item:
            raise Local("lost in the child")
        return item

    with pytest.raises(RuntimeError, match="Local: lost in the child"):
        in_processes(fail, [0, 1])


def test_a_child_that_dies_is_an_error_not_a_missing_result() -> None:
    here = os.getpid()

    def die(item: int) -> int:
        if os.getpid() != here:
            os._exit(3)
        return item

    with pytest.raises(RuntimeError, match="ended without an answer"):
        in_processes(die, [0, 1])
    assert _no_child_left()


def test_when_this_process_fails_the_children_are_stopped_and_reaped() -> None:
    here = os.getpid()

    def work(item: int) -> int:
        if os.getpid() == here:
            raise KeyError("here")
        time.sleep(600)  # a child would wait long
        return item

    with pytest.raises(KeyError):
        in_processes(work, [0, 1, 2])
    assert _no_child_left()


def _everything(result: AuditResult) -> tuple[object, ...]:
    return (result.findings, result.diagnostics, result.files, result.parsed, result.suppressed)


def _forking(monkeypatch: pytest.MonkeyPatch, processes: int) -> None:
    monkeypatch.setattr(_candidates, "FILES_PER_PROCESS", 1)
    monkeypatch.setattr(_candidates, "processes", lambda: processes)


@pytest.mark.parametrize("parse_all", [False, True], ids=["prefilter", "parse-all"])
def test_forked_groups_find_what_one_process_finds(monkeypatch: pytest.MonkeyPatch, parse_all: bool) -> None:
    alone = audit([str(TREE)], cache=Cache(None, False), parse_all=parse_all)
    _forking(monkeypatch, 3)
    forked = audit([str(TREE)], cache=Cache(None, False), parse_all=parse_all)
    assert alone.findings and alone.suppressed
    assert _everything(forked) == _everything(alone)


def test_a_diagnostic_found_in_a_child_is_reported_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    base = "class Module:\n    pass\nclass {}(Module):\n    def __init__(self):\n        self.flag = 1\n    def forward(self):\n"
    (tmp_path / "good.py").write_text(base.format("Good") + "        return self.flag\n")
    (tmp_path / "bad.py").write_text(base.format("Bad") + "        return self.flag = = 1\n")
    child = "from {0} import {1}\nclass {2}({1}):\n    def __init__(self):\n        pass\n"
    # The largest files go to this process first: only children check the small ones.
    for i in range(2):
        (tmp_path / f"large{i}.py").write_text(child.format("good", "Good", f"Large{i}") + "#\n" * 500)
    for i in range(3):
        (tmp_path / f"small{i}.py").write_text(child.format("bad", "Bad", f"Small{i}"))
    _forking(monkeypatch, 3)
    result = audit([str(tmp_path)], cache=Cache(None, False))
    ((path, reason),) = result.diagnostics
    assert path.endswith("bad.py") and reason.startswith("does not parse (line 7)")
    assert {f.class_name for f in result.findings} == {"large0.Large0", "large1.Large1"}


def test_what_children_parse_reaches_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    audit([str(TREE)], cache=Cache(str(tmp_path / "alone"), True))
    _forking(monkeypatch, 3)
    audit([str(TREE)], cache=Cache(str(tmp_path / "forked"), True))

    def entries(directory: Path) -> set[bytes]:
        from vllm_sp_base._audit.sources._cache import _load

        (saved,) = directory.glob("*-files.cache")
        return set(_load(str(saved)))

    assert entries(tmp_path / "forked") == entries(tmp_path / "alone")
    warm = audit([str(TREE)], cache=Cache(str(tmp_path / "forked"), True))
    assert _everything(warm) == _everything(audit([str(TREE)], cache=Cache(None, False)))


def test_files_split_into_one_group_per_core_of_about_as_many_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = [900, 700, 500, 400, 300, 300, 200, 100] * 4
    texts = {f"f{i}.py": b"x" * size for i, size in enumerate(sizes)}
    monkeypatch.setattr(_candidates, "processes", lambda: 3)
    groups = _candidates.split(list(texts), texts)
    assert len(groups) == 2  # 32 files: two groups of at least FILES_PER_PROCESS
    assert sorted(p for g in groups for p in g) == sorted(texts)
    weights = [sum(len(texts[p]) for p in g) for g in groups]
    assert max(weights) - min(weights) <= max(sizes)
    monkeypatch.setattr(_candidates, "FILES_PER_PROCESS", 1)
    assert len(_candidates.split(list(texts), texts)) == 3
    assert _candidates.split(["a.py"], {"a.py": b""}) == [["a.py"]]
    assert _candidates.split([], {}) == [[]]


@pytest.mark.parametrize("cached", [False, True], ids=["no-cache", "cache"])
def test_without_fork_the_groups_run_here_one_after_another(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cached: bool
) -> None:
    alone = audit([str(TREE)], cache=Cache(None, False))
    monkeypatch.setattr(_candidates, "FILES_PER_PROCESS", 1)
    monkeypatch.delattr(os, "fork")
    assert _candidates.split(["a.py", "b.py"], {}) == [["a.py", "b.py"]]  # no gain in splitting here
    monkeypatch.setattr(_candidates, "processes", lambda: 3)  # and were it split anyway
    result = audit([str(TREE)], cache=Cache(str(tmp_path), cached))
    assert _everything(result) == _everything(alone)
    # A module both groups need, whose second class only the second group reads.
    tree = tmp_path / "tree"
    tree.mkdir()
    base = "class Module:\n    pass\nclass {0}(Module):\n    def __init__(self):\n        self.{1} = 1\n    def forward(self):\n        return self.{1}\n"
    (tree / "base.py").write_text(base.format("A", "a") + base.format("B", "b"))
    child = "from base import {0}\nclass {1}({0}):\n    def __init__(self):\n        pass\n"
    (tree / "large.py").write_text(child.format("A", "Large") + "#\n" * 500)
    (tree / "small.py").write_text(child.format("B", "Small"))
    monkeypatch.setattr(_candidates, "processes", lambda: 2)
    found = audit([str(tree)], cache=Cache(str(tmp_path / "cache2"), cached)).findings
    assert {(f.class_name, f.attribute) for f in found} == {("large.Large", "a"), ("small.Small", "b")}


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "group", "delay"), [
    ("SIGINT", True, 1.0), ("SIGINT", True, 2.5), ("SIGTERM", False, 1.0), ("SIGTERM", False, 2.5),
])
def test_a_signal_during_parse_all_ends_it_without_a_traceback(sig: str, group: bool, delay: float) -> None:
    # Ctrl-C reaches the whole process group (the pool's workers too); a
    # SIGTERM, the audit's own process only, leaving its workers' pipes broken.
    import signal
    import subprocess

    from vllm_sp_base._audit.files._discover import installed_vllm

    tree = installed_vllm()
    if tree is None:
        pytest.skip("vLLM is not installed")
    # A test run started in the background (``cmd &`` in a script) inherits
    # SIGINT ignored, and so would the audit: Ctrl-C is what it is asked about.
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm_sp_base", "audit", "--no-cache", "--parse-all", tree],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(delay)
    (os.killpg if group else os.kill)(proc.pid, getattr(signal, sig))
    _, err = proc.communicate(timeout=120)
    time.sleep(0.5)  # orphaned workers, if any, have written what they would by now
    assert "Traceback" not in err.decode(), err.decode()[-500:]
    if sig == "SIGINT":
        assert proc.returncode == 130 and err.decode().strip().endswith("interrupted")


def test_files_that_share_their_bases_are_checked_by_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm_sp_base._audit.prescan._prescan import files_reached, scan

    monkeypatch.setattr(_candidates, "processes", lambda: 2)
    sources = {
        "big_base.py": b"class Big:\n    def __init__(self):\n        self.x = 1\n" + b"#" * 40_000 + b"\n",
        "small_base.py": b"class Small:\n    def __init__(self):\n        self.y = 1\n" + b"#" * 20_000 + b"\n",
    }
    for n in range(32):  # children of Big and of Small, alternating, of one size: two processes' worth
        parent = ("Big", "Small")[n % 2]
        sources[f"child{n}.py"] = f"class C{n}({parent}):\n    def __init__(self):\n        pass\n".encode()
    scans = {path: scan(data) for path, data in sources.items()}
    names = {f"C{n}" for n in range(32)}
    reached = files_reached(scans, names)
    assert reached["child0.py"] == {"big_base.py"} and reached["child1.py"] == {"small_base.py"}
    children = sorted(p for p in sources if p.startswith("child"))
    groups = _candidates.split(children, sources, reached)
    # Big's children in one process, Small's in the other: each base module summarised once.
    assert sorted(sorted(int(p[5:-3]) % 2 for p in group) for group in groups) == [[0] * 16, [1] * 16]
    # By size alone, each process would take both kinds and parse both bases.
    by_size = _candidates.split(children, sources)
    assert all({int(p[5:-3]) % 2 for p in group} == {0, 1} for group in by_size)


def test_each_queued_item_is_taken_once_own_group_first() -> None:
    from vllm_sp_base._audit.sources._workers import Queues

    queues = Queues([["a", "b"], ["c"], []])
    try:
        assert list(queues.taker(1)) == ["c", "a", "b"]  # its own, then what the others left
        assert list(queues.taker(0)) == [] and list(queues.taker(2)) == []
    finally:
        queues.close()
    groups = [[f"{g}-{n}" for n in range(40)] for g in range(3)]
    queues = Queues(groups)
    try:
        taken = in_processes(lambda items: (os.getpid(), [item for item in items if not time.sleep(0.001)]),
                             [queues.taker(k) for k in range(3)])
    finally:
        queues.close()
    everything = [item for _, items in taken for item in items]
    assert sorted(everything) == sorted(item for group in groups for item in group)  # once each
    assert len({pid for pid, _ in taken}) == 3
    assert _no_child_left()
