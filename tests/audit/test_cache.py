"""The per-file cache: summaries kept without their file's bytes, reused by
content wherever that content sits."""

from __future__ import annotations

import marshal
import os
import shutil
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import AuditResult, audit
from vllm_sp_base._audit.files._keys import content_key
from vllm_sp_base._audit.sources import _cache
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.sources._stored import from_plain
from vllm_sp_base._audit.summaries._summaries import ModuleInfo

TREE = Path(__file__).with_name("fixtures") / "tree"

_NEEDS_A_BROKEN_BODY = """\
class Module:
    pass


class Base(Module):
    def __init__(self):
        self.flag = False

    def forward(self):
        return self.flag = = 1


class Child(Base):
    def __init__(self):
        pass
"""


def _entries(directory: Path) -> dict[bytes, object]:
    (saved,) = directory.glob("*-files.cache")
    return {key: from_plain(value) for key, value in _cache._load(str(saved)).items()}


def _everything(result: AuditResult) -> tuple[object, ...]:
    return (result.findings, result.diagnostics, result.files, result.suppressed)


def test_summaries_are_cached_without_their_files_bytes(tmp_path: Path) -> None:
    audit([str(TREE)], cache=Cache(str(tmp_path), True))
    summaries = [v for v in _entries(tmp_path).values() if isinstance(v, ModuleInfo)]
    bodies = [m._body for s in summaries for c in s.classes.values() for m in c.methods.values()
              if m._body is not None]
    assert summaries and bodies
    assert all(body.source == b"" for body in bodies)


def test_a_run_from_cached_summaries_finds_what_a_run_without_finds(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    cache = tmp_path / "cache"
    audit([str(tree)], cache=Cache(str(cache), True))
    before = set(_entries(cache))
    touched = tree / "app" / "models" / "dotted.py"
    touched.write_text(touched.read_text() + "\nADDED = 1  # the run's record misses; the other summaries hit\n")
    reused = audit([str(tree)], cache=Cache(str(cache), True))
    assert reused.seconds  # not the whole-run cache's answer
    # Only the touched file was scanned and summarised again: every other came from the cache.
    added = set(_entries(cache)) - before
    assert {key[:-1] for key in added} == {content_key(touched.read_bytes())}
    assert _everything(reused) == _everything(audit([str(tree)], cache=Cache(None, False)))


def test_a_summary_cached_from_one_path_reports_at_another(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.py").write_text(_NEEDS_A_BROKEN_BODY)
        result = audit([str(tmp_path / name)], cache=Cache(str(cache), True))
        ((path, reason),) = result.diagnostics
        assert path == str(tmp_path / name / "model.py")
        assert reason.startswith("does not parse (line 10)")


def _copy(tmp_path: Path) -> tuple[Path, Path, Path]:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    return tree, tmp_path / "cache", tree / "app" / "semantics" / "drafts.py"


def _kept(tree: Path, cache: Path) -> AuditResult:
    """A run on a cache an earlier run wrote (CI's first run writes one), as a
    developer's runs are: it records code keys, which a first run leaves out."""
    audit([str(tree)], cache=Cache(str(cache), True))
    os.remove(Cache(str(cache), True).runs_path)  # its record goes; its entries stay
    return audit([str(tree)], cache=Cache(str(cache), True))


def test_a_first_run_folds_no_code_keys(tmp_path: Path) -> None:
    # What an empty cache costs CI (issue #22): no digest, so a comment edited
    # after the very first run is checked again, from the cached entries.
    tree, cache, drafts = _copy(tmp_path)
    cold = audit([str(tree)], cache=Cache(str(cache), True))
    drafts.write_text(drafts.read_text() + "\n# appended\n")
    again = audit([str(tree)], cache=Cache(str(cache), True))
    assert again.seconds and _everything(again) == _everything(cold)
    drafts.write_text(drafts.read_text() + "# appended again\n")
    assert audit([str(tree)], cache=Cache(str(cache), True)).seconds == {}  # now it has them


def test_a_comment_edited_or_added_reuses_the_run(tmp_path: Path) -> None:
    tree, cache, drafts = _copy(tmp_path)
    cold = _kept(tree, cache)
    source = drafts.read_text()
    drafts.write_text(source.replace("# expect:", "# expected:") + "\n# appended\n")
    warm = audit([str(tree)], cache=Cache(str(cache), True))
    assert warm.seconds == {} and _everything(warm) == _everything(cold)
    # The record now holds the file's new stat: the next run reads no file.
    from vllm_sp_base._audit import _engine

    read: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_engine, "read_with_stat", lambda path: read.append(path) or (b"", (0, 0, 0, 0)))
        assert audit([str(tree)], cache=Cache(str(cache), True)).seconds == {}
    assert read == []


def test_a_warm_run_reads_what_fix_would_do_from_the_record(tmp_path: Path) -> None:
    # Planning the fixes parses the files the findings name (~0.1 s on vLLM):
    # a warm run takes the plan from the run's record, as it takes the findings.
    from vllm_sp_base._audit.fix import _plan

    tree, cache, _ = _copy(tmp_path)
    cold = audit([str(tree)], cache=Cache(str(cache), True), plan_fixes=True)
    assert cold.findings and set(cold.fixes) == set(cold.findings)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_plan, "plan", lambda *args: pytest.fail("planned again"))
        warm = audit([str(tree)], cache=Cache(str(cache), True), plan_fixes=True)
    assert warm.seconds == {} and warm.fixes == cold.fixes
    # A record of a run that planned nothing (``--write-baseline``) is planned on reuse, once.
    unplanned = tmp_path / "unplanned"
    audit([str(tree)], cache=Cache(str(unplanned), True))
    assert audit([str(tree)], cache=Cache(str(unplanned), True), plan_fixes=True).fixes == cold.fixes
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_plan, "plan", lambda *args: pytest.fail("planned again"))
        assert audit([str(tree)], cache=Cache(str(unplanned), True), plan_fixes=True).fixes == cold.fixes


@pytest.mark.parametrize("edit", [
    ("return super().forward(x) + 1", "return x + 1"),  # code: the finding goes
    ("class Draft(Target):", "# moved\nclass Draft(Target):"),  # a line above a class: lines move
    ("class Draft(Target):", "class Draft(Target):  # noqa: SPB001"),  # a suppression is a comment
], ids=["code", "line-inserted", "noqa"])
def test_what_the_audit_can_see_changed_reruns_it(tmp_path: Path, edit: tuple[str, str]) -> None:
    tree, cache, drafts = _copy(tmp_path)
    _kept(tree, cache)
    drafts.write_text(drafts.read_text().replace(*edit, 1))
    warm = audit([str(tree)], cache=Cache(str(cache), True))
    assert warm.seconds  # not reused
    assert _everything(warm) == _everything(audit([str(tree)], cache=Cache(None, False)))


def test_a_rewrite_in_place_that_keeps_size_mtime_and_inode_reruns_it(tmp_path: Path) -> None:
    # rsync --inplace -t, or an editor that restores the mtime: only the
    # change time, which no user can set, tells the file changed.
    tree, cache, drafts = _copy(tmp_path)
    _kept(tree, cache)
    edit = ("return super().forward(x) + 1", "return x + 1")
    source = drafts.read_text()
    changed = source.replace(*edit, 1)
    changed = changed + " " * (len(source) - len(changed))  # the same size
    before = os.stat(drafts)
    with open(drafts, "r+") as handle:  # the same inode
        handle.write(changed)
    os.utime(drafts, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(drafts)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    warm = audit([str(tree)], cache=Cache(str(cache), True))
    assert warm.seconds  # not reused
    assert _everything(warm) == _everything(audit([str(tree)], cache=Cache(None, False)))


def test_a_dependency_outside_the_tree_that_changed_reruns_it(tmp_path: Path) -> None:
    tree, cache, _ = _copy(tmp_path)
    base = tree / "app" / "base"
    audited = tree / "app" / "models"
    audit([str(audited)], cache=Cache(str(cache), True))
    layers = base / "layers.py"
    layers.write_text(layers.read_text() + "\n# outside the audited path, only bytes compare\n")
    assert audit([str(audited)], cache=Cache(str(cache), True)).seconds


@pytest.mark.parametrize("damage", ["truncated", "garbage", "foreign", "record", "fifo"])
def test_a_damaged_cache_costs_one_run_and_heals(tmp_path: Path, damage: str) -> None:
    import os

    tree, cache, _ = _copy(tmp_path)
    expected = _everything(audit([str(tree)], cache=Cache(None, False)))
    audit([str(tree)], cache=Cache(str(cache), True))
    for saved in sorted(cache.glob("*.cache")):
        data = saved.read_bytes()
        if damage == "truncated":
            saved.write_bytes(data[: len(data) // 2])
        elif damage == "garbage":
            saved.write_bytes(bytes(reversed(data)))
        elif damage == "foreign":
            saved.write_bytes(marshal.dumps(["not", "a", "dict"]))
        elif damage == "record":  # an intact file, the wrong shapes inside
            _cache._save(str(saved), {key: {"files": 3} for key in _cache._load(str(saved))})
        else:
            saved.unlink()
            os.mkfifo(saved)  # opened plainly, it would block the run for ever
    assert _everything(audit([str(tree)], cache=Cache(str(cache), True))) == expected
    if damage != "fifo":  # rewritten: the next run is answered from it
        assert audit([str(tree)], cache=Cache(str(cache), True)).seconds == {}


def test_a_cache_that_cannot_be_written_leaves_no_temp_file(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        def fail(*args: object, **kwargs: object) -> None:
            raise OSError(28, "No space left on device")

        patch.setattr(_cache.marshal, "dumps", fail)
        audit([str(TREE)], cache=Cache(str(cache), True))
    assert list(cache.iterdir()) == []


def test_a_module_that_appears_later_is_seen(tmp_path: Path) -> None:
    # The base lives outside the audited path and is missing at first: the
    # record holds that it was looked for, and its arrival reruns the audit.
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "models").mkdir()
    (tmp_path / "app" / "models" / "__init__.py").write_text("")
    (tmp_path / "app" / "models" / "m.py").write_text(
        "from app.base import Base\n"
        "class Child(Base):\n    def __init__(self):\n        self.b = self.a\n"
    )
    cache = Cache(str(tmp_path / "cache"), True)
    target = [str(tmp_path / "app" / "models")]
    assert audit(target, cache=cache).findings == []
    (tmp_path / "app" / "base.py").write_text("class Base:\n    def __init__(self):\n        self.a = 1\n")
    found = audit(target, cache=Cache(str(tmp_path / "cache"), True)).findings
    assert [(f.class_name, f.attribute) for f in found] == [("app.models.m.Child", "a")]
