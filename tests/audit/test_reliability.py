"""The audit under odd input: no stale result, no crash, no hang.

Cases tested where their feature lives: a damaged or FIFO cache
(``test_cache``), a module that appears later (``test_cache``), unreadable
inputs and symlink loops (``test_fixtures``), a closed pipe and Ctrl-C
(``test_cli``), deep hierarchies (``test_project``), an interrupted
``upstream --write`` (``tests/upstream/test_atomic_write``). Here: the cache's
format under mutation, C3 on many bases, and the loose ends.
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_sp_base._audit._engine import AuditResult, audit
from vllm_sp_base._audit.semantics._project import ClassRef, _c3_merge
from vllm_sp_base._audit.sources import _cache
from vllm_sp_base._audit.sources._cache import Cache

TREE = Path(__file__).with_name("fixtures") / "tree"


def _everything(result: AuditResult) -> tuple[object, ...]:
    return (result.findings, result.diagnostics, result.files, result.parsed, result.suppressed,
            result.only_bases)


@pytest.fixture(scope="module")
def cached(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, tuple[object, ...]]:
    """The fixture tree, a cache a run filled from it, and what ``--no-cache`` finds."""
    root = tmp_path_factory.mktemp("reliability")
    tree = root / "tree"
    shutil.copytree(TREE, tree)
    expected = _everything(audit([str(tree)], cache=Cache(None, False)))
    audit([str(tree)], cache=Cache(str(root / "cache"), True))
    return tree, root / "cache", expected


def _fresh_copy(cache: Path, scratch: Path) -> Path:
    copy = Path(tempfile.mkdtemp(dir=scratch)) / "cache"
    shutil.copytree(cache, copy)
    return copy


_SETTINGS = settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(data=st.data())
def test_mutated_cache_files_never_raise_and_never_change_the_result(
    cached: tuple[Path, Path, tuple[object, ...]], tmp_path: Path, data: st.DataObject
) -> None:
    tree, cache, expected = cached
    copy = _fresh_copy(cache, tmp_path)
    for saved in sorted(copy.iterdir()):
        raw = bytearray(saved.read_bytes())
        for _ in range(data.draw(st.integers(0, 3), label="edits")):
            at = data.draw(st.integers(0, len(raw)), label="at")
            edit = data.draw(st.sampled_from(["flip", "cut", "insert"]), label="edit")
            if edit == "flip" and at < len(raw):
                raw[at] ^= data.draw(st.integers(1, 255), label="mask")
            elif edit == "cut":
                del raw[at:]
            else:
                raw[at:at] = data.draw(st.binary(max_size=8), label="bytes")
        saved.write_bytes(bytes(raw))
    assert _everything(audit([str(tree)], cache=Cache(str(copy), True))) == expected
    shutil.rmtree(copy)


_OTHER_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=4),
    st.binary(max_size=4), st.lists(st.integers(), max_size=2), st.tuples(st.text(max_size=2)),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a plain value a mutation can replace."""
    found = [prefix]
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found += _paths(item, (*prefix, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    return found


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, tuple):
        return (*value[:head], _replaced(value[head], rest, new), *value[head + 1 :])
    copy = value.copy()
    copy[head] = _replaced(value[head], rest, new)
    return copy


@_SETTINGS
@given(data=st.data())
def test_intact_cache_files_of_the_wrong_shapes_are_dropped_not_raised(
    cached: tuple[Path, Path, tuple[object, ...]], tmp_path: Path, data: st.DataObject
) -> None:
    # A file whose digest matches but whose values do not have the types the
    # audit writes (another tool, a hand edit, an attacker): each wrong-typed
    # entry is ignored and made again.
    tree, cache, expected = cached
    copy = _fresh_copy(cache, tmp_path)
    for saved in sorted(copy.iterdir()):
        entries = _cache._load(str(saved))
        assert entries
        key = data.draw(st.sampled_from(sorted(entries)), label="entry")
        where = data.draw(st.sampled_from(_paths(entries[key])[1:] or [()]), label="where")
        new = data.draw(_OTHER_VALUES, label="value")
        old: Any = entries[key]
        for step in where:
            old = old[step]
        if type(new) is type(old) or new is None or old is None:
            continue  # maybe a value of a right type (None is one in places): forged, not malformed
        entries[key] = _replaced(entries[key], where, new)
        _cache._save(str(saved), entries)
    assert _everything(audit([str(tree)], cache=Cache(str(copy), True))) == expected
    shutil.rmtree(copy)


def test_reading_a_cache_runs_no_code(tmp_path: Path) -> None:
    # Marshal data can hold a code object; it is built, never called, and the
    # entry holding it is not of a shape the audit writes: dropped.
    marker = tmp_path / "ran"
    code = compile(f"open({str(marker)!r}, 'w').close()", "x", "exec")
    cache = Cache(str(tmp_path), True)
    _cache._save(cache.files_path, {b"k" * 16 + b"S": ("S", [code], [], [])})
    _cache._save(cache.runs_path, {b"r": {"result": code, "files": {}, "missing": []}})
    assert cache.get(b"k" * 16 + b"S") is None and not marker.exists()
    assert audit([str(TREE)], cache=Cache(str(tmp_path), True)).findings
    assert not marker.exists()


def test_the_cache_is_not_a_pickle(tmp_path: Path) -> None:
    audit([str(TREE)], cache=Cache(str(tmp_path), True))
    for saved in tmp_path.iterdir():
        head = saved.read_bytes()[:64]
        assert head.startswith(b"vllm-sp-base cache ") and not head.startswith(b"\x80")


def test_stale_temp_files_of_killed_runs_are_removed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    old, recent = cache / "audit-writing-old.tmp", cache / "audit-writing-recent.tmp"
    old.write_bytes(b"x" * 1000)
    recent.write_bytes(b"x")
    a_day_ago = time.time() - 86400
    os.utime(old, (a_day_ago, a_day_ago))
    audit([str(TREE)], cache=Cache(str(cache), True))
    assert not old.exists() and recent.exists()  # a live run may still be writing that one


def test_without_a_home_directory_none_is_created(tmp_path: Path) -> None:
    home = tmp_path / "no-such-home"
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_CACHE_HOME", "VLLM_SP_BASE_CACHE_DIR")}
    env["HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-m", "vllm_sp_base", "audit", "--format", "json", str(TREE)],
        env=env, capture_output=True, text=True, check=False,
    )
    assert done.returncode == 1 and json.loads(done.stdout)["findings"], done.stderr
    assert not home.exists()


def test_the_parsed_count_is_the_same_cached_or_not(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    uncached = audit([str(tree)], cache=Cache(None, False)).parsed
    cache = str(tmp_path / "cache")
    assert audit([str(tree)], cache=Cache(cache, True)).parsed == uncached
    model = next(p for p in sorted(tree.rglob("*.py")) if "class " in p.read_text())
    model.write_text(model.read_text() + "\nADDED = 1\n")  # code: the run is made again
    again = audit([str(tree)], cache=Cache(cache, True))
    assert again.seconds and again.parsed == uncached


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_c3_merge_is_pythons(data: st.DataObject) -> None:
    classes: list[type] = []
    refs: dict[type, ClassRef] = {}
    mros: dict[ClassRef, list[Any]] = {}
    for n in range(data.draw(st.integers(1, 9))):
        bases = data.draw(st.lists(st.sampled_from(classes), unique=True, max_size=4)
                          if classes else st.just([]))
        try:
            made = type(f"C{n}", tuple(bases), {})
        except TypeError:  # no consistent order: Python refuses the class
            assert _c3_merge([*(mros[refs[b]] for b in bases), [refs[b] for b in bases]]) is None
            continue
        ref = refs[made] = ClassRef("m", f"C{n}")
        merged = _c3_merge([*(mros[refs[b]] for b in bases), [refs[b] for b in bases]])
        assert merged is not None
        mros[ref] = [ref, *merged]
        assert mros[ref] == [refs[c] for c in made.__mro__ if c is not object]
        classes.append(made)


def test_a_class_with_thousands_of_bases_is_checked(tmp_path: Path) -> None:
    # Each base's __init__ sets what its forward reads; the class runs none.
    # (bench/reliability_scaling.py times 1,000 to 10,000 bases: linear.)
    count = 3000
    base = "class B{0}(nn.Module):\n def __init__(self): self.a{0} = 1\n def forward(self): return self.a{0}\n"
    source = "import torch.nn as nn\n" + "".join(base.format(i) for i in range(count))
    source += f"class X({', '.join(f'B{i}' for i in range(count))}):\n"
    source += " def __init__(self): nn.Module.__init__(self)\n"
    (tmp_path / "many.py").write_text(source)
    found = audit([str(tmp_path)], cache=Cache(None, False)).findings
    assert [(f.class_name, f.attribute, f.severity) for f in found] == [("many.X", "a0", "error")]


def test_the_marshal_payload_holds_plain_values_only(tmp_path: Path) -> None:
    audit([str(TREE)], cache=Cache(str(tmp_path), True))
    allowed = (type(None), bool, int, float, str, bytes, tuple, list, dict)

    def plain(value: Any) -> bool:
        if isinstance(value, (tuple, list)):
            return all(plain(v) for v in value)
        if isinstance(value, dict):
            return all(plain(k) and plain(v) for k, v in value.items())
        return type(value) in allowed

    for saved in tmp_path.iterdir():
        payload = saved.read_bytes()[len(_cache._MAGIC) + _cache._DIGEST :]
        assert plain(marshal.loads(payload))


_DEEP = """from torch import nn
class B(nn.Module):
    def __init__(self):
        super().__init__()
        self.x = 1
    def forward(self):
        return {terms}
class C(B):
    def __init__(self):
        nn.Module.__init__(self)
TOTAL = {total}
"""


@pytest.mark.parametrize("parse_all", [False, True])
def test_valid_deep_code_is_audited_and_deeper_code_is_one_diagnostic(tmp_path: Path, parse_all: bool) -> None:
    # A forward returning a sum of 490 terms and a module-level sum of 600:
    # valid Python, past the default recursion limit of a recursive walk.
    (tmp_path / "m.py").write_text(_DEEP.format(terms=" + ".join(["self.x"] * 490), total=" + ".join(["1"] * 600)))
    result = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all)
    assert [(f.class_name, f.attribute, f.severity) for f in result.findings] == [("m.C", "x", "error")]
    assert result.diagnostics == []
    (tmp_path / "m.py").write_text(_DEEP.format(terms=" + ".join(["self.x"] * 30_000), total="1"))
    result = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all)
    assert result.findings == [] and len(result.diagnostics) == 1
    assert "nested too deeply to audit" in result.diagnostics[0][1]


@pytest.mark.parametrize("parse_all", [False, True])
@pytest.mark.parametrize("use", [
    "class Other:\n    def __init__(self):\n        self.model_cls = C\n",  # who is built: a store
    "class D(C):\n    pass\n",  # who is built: only a base
])
def test_who_is_built_reads_a_file_too_deep_to_walk_as_may_be_anything(
    tmp_path: Path, parse_all: bool, use: str,
) -> None:
    (tmp_path / "m.py").write_text(_DEEP.format(terms="self.x", total="1"))
    (tmp_path / "n.py").write_text("from m import C\n" + use + "TOTAL = " + " + ".join(["1"] * 30_000) + "\n")
    result = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all)
    assert ("m.C", "x", "error") in [(f.class_name, f.attribute, f.severity) for f in result.findings]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 parses its own syntax")
def test_newer_syntax_is_said_as_such_and_a_plain_syntax_error_is_not(tmp_path: Path) -> None:
    (tmp_path / "generic.py").write_text("class Box[T]:\n    pass\n")  # PEP 695
    (tmp_path / "alias.py").write_text("type Ids = list[int]\n")
    (tmp_path / "fstring.py").write_text('s = f"{"a"}"\n')  # PEP 701
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    result = audit([str(tmp_path)], cache=Cache(None, False), parse_all=True)
    said = {Path(path).name: reason for path, reason in result.diagnostics}
    assert set(said) == {"generic.py", "alias.py", "fstring.py", "broken.py"}
    for name in ("generic.py", "alias.py", "fstring.py"):
        assert "looks like Python 3.12 syntax" in said[name], said[name]
    assert "3.12" not in said["broken.py"]


@pytest.mark.parametrize("parse_all", [False, True])
def test_a_package_folder_with_a_dot_reports_the_file_not_a_module_name(tmp_path: Path, parse_all: bool) -> None:
    (tmp_path / "x.y").mkdir()
    (tmp_path / "x.y" / "__init__.py").write_text("")
    (tmp_path / "x.y" / "m.py").write_text(_DEEP.format(terms="self.x", total="1"))
    result = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all)
    (finding,) = result.findings
    assert finding.path == str(tmp_path / "x.y" / "m.py") and finding.read_path == finding.path


@pytest.mark.parametrize("form", ["grouped", "full", "concise"])
def test_a_newline_in_a_file_name_keeps_each_finding_on_its_line(
    tmp_path: Path, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm_sp_base._audit.report import _text

    (tmp_path / "two\nlines.py").write_text(_DEEP.format(terms="self.x", total="1"))
    monkeypatch.chdir(tmp_path)
    result = audit(["."], cache=Cache(None, False))
    text = {"grouped": _text.grouped, "full": _text.full, "concise": _text.concise}[form](result)
    assert "two\\nlines.py" in text and "two\nlines" not in text


@pytest.mark.parametrize("parse_all", [False, True])
def test_the_parses_of_an_audit_do_not_grow_with_the_classes_that_have_findings(
    tmp_path: Path, parse_all: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Who is built and what is set from outside read each file once, however
    # many classes with findings it holds (once, per class: 1,000 classes took
    # 64 s with --parse-all, and 91 s by default with the first outside search).
    import ast

    from vllm_sp_base._audit.rule import _candidates
    from vllm_sp_base._audit.semantics import _outside
    from vllm_sp_base._audit.summaries import _signature

    monkeypatch.setattr(_candidates, "processes", lambda: 1)
    parse = ast.parse
    counts = []
    for children in (20, 200):
        _outside.builds_in.cache_clear()
        _signature._arguments.cache_clear()  # each run from cold: the headers parsed once per run
        calls = [0]

        def counting(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            return parse(*args, **kwargs)

        source = "class Module:\n    pass\nclass Base(Module):\n    def __init__(self):\n        self.a = 1\n"
        source += "    def forward(self):\n        return self.a\n"
        source += "".join(f"class Child{i}(Base):\n    def __init__(self):\n        pass\n" for i in range(children))
        (tmp_path / "m.py").write_text(source)
        with monkeypatch.context() as patch:
            patch.setattr(ast, "parse", counting)
            result = audit([str(tmp_path)], cache=Cache(None, False), parse_all=parse_all)
        assert len(result.findings) == children
        counts.append(calls[0])
    assert counts[0] == counts[1], counts
