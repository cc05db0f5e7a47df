"""``audit --fix`` never loses a byte: a file edited while the fix runs is
left alone and said, a journal a kill left behind is cleared by the next
run, and a file's encoding (a BOM, a coding declaration) and newlines are
kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from .test_fix_cli import CHILD, PARENT, UTIL, _run

from vllm_sp_base import _atomic

FIXED = "self.use_sequence_parallel = False\n"


def _package(root: Path, children: int = 1) -> Path:
    package = root / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(PARENT)
    (package / "util.py").write_text(UTIL)
    for n in range(children):
        (package / f"child{n}.py").write_text(CHILD.replace("class Child(", f"class Child{n}("))
    return package


def test_a_file_changed_between_the_check_and_the_move_goes_back_with_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f.py"
    target.write_bytes(b"old\n")
    real_replace = os.replace

    def racing(src: str, dst: str) -> None:  # a writer appends just before the move
        if dst == str(target) and src.endswith(_atomic.STAGED):
            with open(dst, "ab") as handle:
                handle.write(b"theirs\n")
        real_replace(src, dst)

    monkeypatch.setattr(_atomic.os, "replace", racing)
    left = _atomic.write_all(str(tmp_path), [(str(target), "new\n")], expected={str(target): b"old\n"})
    assert left == [str(target)]
    assert target.read_bytes() == b"old\ntheirs\n"  # their bytes, in the file they wrote to
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.py"]  # nothing staged or linked left


def test_a_file_changed_before_the_move_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "f.py"
    target.write_bytes(b"edited meanwhile\n")
    left = _atomic.write_all(str(tmp_path), [(str(target), "new\n")], expected={str(target): b"old\n"})
    assert left == [str(target)] and target.read_bytes() == b"edited meanwhile\n"
    unchanged = tmp_path / "g.py"
    unchanged.write_bytes(b"old\n")
    assert _atomic.write_all(str(tmp_path), [(str(unchanged), "new\n")],
                             expected={str(unchanged): b"old\n"}) == []
    assert unchanged.read_bytes() == b"new\n"


def test_a_writer_appending_while_fix_runs_loses_no_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = _package(tmp_path, children=40)
    victims = [package / f"child{n}.py" for n in range(0, 40, 4)]
    written: dict[Path, list[str]] = {path: [] for path in victims}
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set():
            for path in victims:
                line = f"# appended {n}\n"
                with open(path, "a") as handle:
                    handle.write(line)
                written[path].append(line)
                n += 1
            time.sleep(0.001)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        code, _, err = _run(capsys, "--fix", str(package))
    finally:
        stop.set()
        thread.join()
    for path in victims:
        text = path.read_text()
        kept = [line for line in text.splitlines(keepends=True) if line.startswith("# appended")]
        assert kept == written[path], path  # every line, in order
    fixed = [p for p in package.glob("child*.py") if FIXED in p.read_text()]
    left = [p for p in victims if FIXED not in p.read_text()]
    assert len(fixed) + len(left) == 40  # each file fixed, or left alone and said
    for path in left:
        assert f"{path.name}: changed while it was being fixed; left as it is" in err
    assert code == 1


def test_a_journal_a_kill_left_after_the_last_move_is_cleared_by_the_next_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = _package(tmp_path)
    assert _run(capsys, "--fix", str(package))[0] == 1
    journal = package / _atomic.JOURNAL
    target = str((package / "child0.py").resolve())
    journal.write_text(json.dumps({"version": 1, "moves": [[_atomic.staged_name(target), target]]}))
    _run(capsys, "--fix", str(package))  # nothing left to write
    assert not journal.exists()


@pytest.mark.parametrize(
    ("prefix", "encoding"),
    [(b"\xef\xbb\xbf", "utf-8"), (b"# -*- coding: latin-1 -*-\n# caf\xe9\n", "latin-1")],
    ids=["bom", "latin-1-cookie"],
)
def test_a_file_python_reads_is_fixed_in_its_own_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prefix: bytes, encoding: str
) -> None:
    package = _package(tmp_path)
    child = package / "child0.py"
    child.write_bytes((prefix + child.read_bytes()).replace(b"\n", b"\r\n"))
    code, _, err = _run(capsys, "--fix", str(package))
    data = child.read_bytes()
    assert "not fixed" not in err and data.startswith(prefix.replace(b"\n", b"\r\n"))
    assert FIXED.replace("\n", "\r\n").encode(encoding) in data
    assert b"\n" not in data.replace(b"\r\n", b"")  # every line ending kept


_LAYERED_PARENT = (
    "from torch import nn\n\nfrom .util import make_layers\n\n\n"
    "class Base(nn.Module):\n"
    "    def __init__(self, config):\n"
    "        super().__init__()\n"
    "        self.start_layer, self.end_layer, self.layers = make_layers(config)\n\n"
    "    def forward(self, x):\n"
    "        return self.layers[self.start_layer](x)\n")
_CHILD_BODY = "class Child(Base):\n    def __init__(self, config):\n        nn.Module.__init__(self)\n"


def _layered(root: Path, child_header: str) -> Path:
    package = root / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(_LAYERED_PARENT)
    (package / "util.py").write_text("def make_layers(config):\n    return 0, 1, [config]\n\n\n"
                                     "def other():\n    pass\n")
    (package / "child.py").write_text(child_header + "\n\n\n" + _CHILD_BODY)
    return package


def test_an_unpacking_assignment_sets_each_attribute_it_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vLLM's idiom: self.start_layer, self.end_layer, self.layers = make_layers(...)
    package = _layered(tmp_path, "from torch import nn\n\nfrom .base import Base")
    _, out, _ = _run(capsys, "--format", "concise", str(package))
    assert "does not set" not in out
    code, out, err = _run(capsys, "--fix", "--unsafe-fixes", "--format", "concise", str(package))
    child = (package / "child.py").read_text()
    assert "        self.start_layer, self.end_layer, self.layers = make_layers(config)\n" in child
    assert code == 0 and out == "", err


def _ruff(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    return subprocess.run([binary, *argv], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("header", [
    "from torch import nn\n\nfrom .base import Base",
    "from torch import nn\n\nfrom pkg.util import other\n\nfrom .base import Base",
    "import os\n\nfrom torch import nn\n\nfrom .base import Base",
    '"""Doc."""\n\nfrom __future__ import annotations\n\nimport torch\nfrom torch import nn\n\n'
    "from pkg import util\n\nfrom .base import Base",
], ids=["new-section", "merged", "after-stdlib", "docstring-future"])
def test_a_files_imports_pass_ruffs_isort_and_format_after_a_fix_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], header: str
) -> None:
    package = _layered(tmp_path, header)
    checks = (("check", "--isolated", "--select", "I001", "pkg/child.py"),
              ("format", "--isolated", "--check", "pkg/child.py"))
    for argv in checks:
        assert _ruff(tmp_path, *argv).returncode == 0, argv  # passes before
    _run(capsys, "--fix", "--unsafe-fixes", str(package))
    child = (package / "child.py").read_text()
    assert "make_layers(config)" in child
    for argv in checks:
        done = _ruff(tmp_path, *argv)
        assert done.returncode == 0, (argv, done.stdout, child)
    if "pkg.util import other" in header:  # merged, not a second line of the same module
        assert child.count("from pkg.util import") == 1 and "import make_layers, other" in child
