"""The run record against a tree that moves under it (#20, items 8, 9 and 16):
keyed on what the run read, never on what is there later; a module that a
search root placed earlier now provides is seen; and no FIFO, where a file
was or where the cache recorded one, ever blocks a run. Each race is made
deterministic: the read itself changes the file, not a timer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from vllm_sp_base._audit import _engine
from vllm_sp_base._audit._engine import AuditResult, audit
from vllm_sp_base._audit._options import RuleOptions
from vllm_sp_base._audit.files._keys import MAX_FILE_BYTES
from vllm_sp_base._audit.sources import _sources
from vllm_sp_base._audit.sources._cache import Cache

_BASE = "class Base:\n    def __init__(self):\n        self.a = 1\n"
_CLEAN = "from app.base import Base\nclass Child(Base):\n    def __init__(self):\n        super().__init__()\n        self.b = self.a\n"
_SKIPS = "from app.base import Base\nclass Child(Base):\n    def __init__(self):\n        self.b = self.a\n"


def _everything(result: AuditResult) -> tuple[object, ...]:
    return (
        [(f.class_name, f.attribute, f.path, f.line) for f in result.findings],
        result.diagnostics, result.files, result.suppressed,
        [(u.class_name, u.base, u.reason) for u in result.unresolved],
    )


def _app(root: Path, child: str = _CLEAN) -> Path:
    """``app/base.py`` (the base, outside the audited path) and
    ``app/models/m.py`` (audited): returns the audited folder."""
    (root / "app" / "models").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "models" / "__init__.py").write_text("")
    (root / "app" / "base.py").write_text(_BASE)
    (root / "app" / "models" / "m.py").write_text(child)
    return root / "app" / "models"


def _fresh(paths: list[str], **options: Any) -> tuple[object, ...]:
    return _everything(audit(paths, cache=Cache(None, False), **options))


@contextmanager
def _reading(name: str, after: Callable[[str], None]) -> Iterator[None]:
    """``_sources.<name>`` (the pre-scan's read, or any other) calls ``after``
    with the path once it has read it: a change made exactly there."""
    real = getattr(_sources, name)

    def read(path: str, *rest: Any) -> Any:
        try:
            return real(path, *rest)
        finally:
            after(path)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_sources, name, read)
        yield


# Item 8 --------------------------------------------------------------------

def test_a_file_changed_right_after_the_run_read_it_is_read_again_by_the_next(tmp_path: Path) -> None:
    audited = _app(tmp_path)
    child = audited / "m.py"
    cache = tmp_path / "cache"

    def edit(path: str) -> None:  # the edit that adds the bug, while the run goes on
        if path == str(child) and child.read_text() == _CLEAN:
            child.write_text(_SKIPS)

    with _reading("_read_and_scan", edit):
        during = audit([str(audited)], cache=Cache(str(cache), True))
    assert during.findings == []  # what it read: the file before the edit
    after = audit([str(audited)], cache=Cache(str(cache), True))
    assert after.seconds  # not answered by a record of the old bytes
    assert _everything(after) == _fresh([str(audited)])
    assert [(f.class_name, f.attribute) for f in after.findings] == [("app.models.m.Child", "a")]
    # The run that saw the file settled records it: the next one is answered.
    again = audit([str(audited)], cache=Cache(str(cache), True))
    assert again.seconds == {} and _everything(again) == _everything(after)


@pytest.mark.parametrize("parse_all", [False, True], ids=["default", "parse-all"])
def test_a_dependency_changed_right_after_the_run_read_it_is_read_again_by_the_next(
    tmp_path: Path, parse_all: bool
) -> None:
    audited = _app(tmp_path, _SKIPS)
    base = tmp_path / "app" / "base.py"
    cache = tmp_path / "cache"

    def edit(path: str) -> None:  # read by a checking process: the base stops setting `a`
        if path == str(base) and "self.a" in base.read_text():
            base.write_text("class Base:\n    def __init__(self):\n        self.z = 1\n")

    with _reading("_read", edit):
        during = audit([str(audited)], cache=Cache(str(cache), True), parse_all=parse_all)
    assert [f.attribute for f in during.findings] == ["a"]
    after = audit([str(audited)], cache=Cache(str(cache), True), parse_all=parse_all)
    assert after.seconds and _everything(after) == _fresh([str(audited)], parse_all=parse_all)
    assert after.findings == []


def test_a_file_deleted_and_recreated_during_a_run_is_not_cannot_read_for_ever(tmp_path: Path) -> None:
    audited = _app(tmp_path, _SKIPS)
    child = audited / "m.py"
    cache = tmp_path / "cache"
    real_read, real_record = _sources._read_and_scan, _engine._record

    def deleted(path: str, *rest: Any) -> Any:  # gone when the pre-scan reads it ...
        if path == str(child) and child.exists():
            child.unlink()
        return real_read(path, *rest)

    def recreated(*args: Any) -> Any:  # ... and back before the run records what it saw
        child.write_text(_SKIPS)
        return real_record(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_sources, "_read_and_scan", deleted)
        patch.setattr(_engine, "_record", recreated)
        during = audit([str(audited)], cache=Cache(str(cache), True))
    assert [(p, r.split(":")[0]) for p, r in during.diagnostics] == [(str(child), "cannot read")]
    after = audit([str(audited)], cache=Cache(str(cache), True))
    assert after.diagnostics == [] and [f.attribute for f in after.findings] == ["a"]
    assert _everything(after) == _fresh([str(audited)])


def test_a_file_that_is_not_read_is_recorded_as_such_and_reruns_once_it_is(tmp_path: Path) -> None:
    # What item 8's fix keeps: a file skipped for good keeps the record answering.
    audited = _app(tmp_path, _SKIPS)
    big = audited / "big.py"
    big.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    cache = tmp_path / "cache"
    first = audit([str(audited)], cache=Cache(str(cache), True))
    limit = f"skipped: {MAX_FILE_BYTES + 1} bytes is over the {MAX_FILE_BYTES}-byte limit"
    assert [r for _, r in first.diagnostics] == [limit]
    assert audit([str(audited)], cache=Cache(str(cache), True)).seconds == {}
    big.write_text(_SKIPS.replace("Child", "Big"))
    after = audit([str(audited)], cache=Cache(str(cache), True))
    assert after.seconds and after.diagnostics == [] and len(after.findings) == 2


# Item 9 --------------------------------------------------------------------

def _shadowing(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An audited class whose base comes from ``base``, found in d2 at first."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(
        "from base import Base\nclass Child(Base):\n    def __init__(self):\n        self.b = self.a\n"
    )
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    d1.mkdir()
    d2.mkdir()
    (d2 / "base.py").write_text("class Base:\n    def __init__(self):\n        self.z = 1\n")
    return tmp_path / "src", d1, d2


def test_a_module_that_appears_in_an_earlier_search_root_shadows_the_one_the_record_used(tmp_path: Path) -> None:
    src, d1, d2 = _shadowing(tmp_path)
    roots = [str(d1), str(d2)]
    cache = tmp_path / "cache"
    assert audit([str(src)], cache=Cache(str(cache), True), import_path=roots).findings == []
    (d1 / "base.py").write_text(_BASE)  # Python now imports this one
    after = audit([str(src)], cache=Cache(str(cache), True), import_path=roots)
    assert [f.attribute for f in after.findings] == ["a"]
    assert _everything(after) == _fresh([str(src)], import_path=roots)


def test_a_package_that_appears_in_an_earlier_search_root_shadows_the_module(tmp_path: Path) -> None:
    src, d1, d2 = _shadowing(tmp_path)
    roots = [str(d1), str(d2)]
    cache = tmp_path / "cache"
    audit([str(src)], cache=Cache(str(cache), True), import_path=roots)
    (d1 / "base").mkdir()
    (d1 / "base" / "__init__.py").write_text(_BASE)
    after = audit([str(src)], cache=Cache(str(cache), True), import_path=roots)
    assert [f.attribute for f in after.findings] == ["a"]


def test_the_search_root_order_is_in_the_run_key(tmp_path: Path) -> None:
    src, d1, d2 = _shadowing(tmp_path)
    (d1 / "base.py").write_text(_BASE)
    cache = tmp_path / "cache"
    for roots, expected in (([d1, d2], ["a"]), ([d2, d1], []), ([d1, d2], ["a"])):
        paths = [str(r) for r in roots]
        found = audit([str(src)], cache=Cache(str(cache), True), import_path=paths)
        assert [f.attribute for f in found.findings] == expected
    discovered = _engine.discover([str(src)])
    first, second = (_engine._tree_key(discovered, [str(src), *map(str, order)], False, RuleOptions())
                     for order in ([d1, d2], [d2, d1]))
    assert first != second


def test_an_unchanged_tree_still_reads_nothing_and_resolves_nothing_again(tmp_path: Path) -> None:
    # The resolutions re-checked are the record's, by stat: no summary, no read.
    src, d1, d2 = _shadowing(tmp_path)
    cache = tmp_path / "cache"
    roots = [str(d1), str(d2)]
    audit([str(src)], cache=Cache(str(cache), True), import_path=roots)
    read: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_engine, "read_with_stat", lambda path: read.append(path) or (b"", (0, 0, 0)))
        assert audit([str(src)], cache=Cache(str(cache), True), import_path=roots).seconds == {}
    assert read == []


# Item 16 -------------------------------------------------------------------

_HUNG = 60  # seconds: a run of these trees takes well under one


def _unblock(fifo: Path) -> None:
    """A reader blocked on ``fifo`` (a regression) returns once a writer comes and goes."""
    try:
        os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))
    except OSError:
        pass


def _run(code: str, *fifos: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter, failed (never hung) past ``_HUNG`` seconds."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                              text=True, timeout=_HUNG, env=env, cwd=cwd, check=False)
    except subprocess.TimeoutExpired:
        for fifo in fifos:
            _unblock(fifo)
        pytest.fail(f"hung on a FIFO for {_HUNG} s")


@pytest.mark.parametrize("parse_all", [False, True], ids=["default", "parse-all"])
def test_a_py_replaced_by_a_fifo_between_discovery_and_reading_is_one_line_not_a_hang(
    tmp_path: Path, parse_all: bool
) -> None:
    audited = _app(tmp_path, _SKIPS)
    (audited / "other.py").write_text(_SKIPS.replace("Child", "Other"))
    fifo = audited / "m.py"
    done = _run(f"""
        import json, os
        from vllm_sp_base._audit import _engine
        from vllm_sp_base._audit.sources._cache import Cache
        real = _engine.discover
        def discover(*args):
            found = real(*args)  # m.py was a file; now, before any read, a FIFO
            os.unlink({str(fifo)!r})
            os.mkfifo({str(fifo)!r})
            return found
        _engine.discover = discover
        result = _engine.audit([{str(audited)!r}], cache=Cache({str(tmp_path / 'cache')!r}, True),
                               parse_all={parse_all})
        print(json.dumps([result.diagnostics, [f.class_name for f in result.findings]]))
    """, fifo)
    assert done.returncode == 0, done.stderr
    diagnostics, findings = json.loads(done.stdout)
    assert diagnostics == [[str(fifo), "cannot read: not a regular file (a FIFO, a device or a socket)"]]
    assert findings == ["app.models.other.Other"]  # the others audited as ever


def test_a_fifo_where_the_record_has_a_dependency_is_no_hang(tmp_path: Path) -> None:
    audited = _app(tmp_path, _SKIPS)
    base = tmp_path / "app" / "base.py"
    argv = ["audit", str(audited), "--cache-dir", str(tmp_path / "cache"), "--format", "json"]
    code = f"import sys; from vllm_sp_base._main import main; sys.exit(main({argv!r}))"
    first = _run(code)
    assert first.returncode == 1 and json.loads(first.stdout)["findings"]
    base.unlink()
    os.mkfifo(base)
    second = _run(code, base)
    assert second.returncode in (0, 1) and "Traceback" not in second.stderr
    assert json.loads(second.stdout)["findings"] == []  # the base is no module now: nothing to check past
    (unresolved,) = json.loads(second.stdout)["unresolved"]
    assert f"{base} is not a regular file" in unresolved["reason"]


def test_a_config_that_is_a_fifo_is_no_hang(tmp_path: Path) -> None:
    audited = _app(tmp_path, _SKIPS)
    fifo = tmp_path / "pyproject.toml"
    os.mkfifo(fifo)
    found = _run(f"import sys; from vllm_sp_base._main import main; sys.exit(main(['audit', {str(audited)!r}, "
                 "'--no-cache']))", fifo, cwd=tmp_path)
    assert found.returncode == 1 and "Traceback" not in found.stderr  # passed over, as an unreadable one is
    given = _run(f"import sys; from vllm_sp_base._main import main; sys.exit(main(['audit', {str(audited)!r}, "
                 f"'--no-cache', '--config', {str(fifo)!r}]))", fifo, cwd=tmp_path)
    assert given.returncode == 2 and given.stderr.count("\n") == 1
    assert "not a regular file" in given.stderr
