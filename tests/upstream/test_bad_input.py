"""``upstream`` on input it cannot take as given (#20, item 22): line endings
and characters a rewrite must keep, files it cannot read, destinations it
cannot write. Each is one line naming the path and why, nothing half-done."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest
from test_cli import AUTHOR, FILES, TEST, V32, make_tree, run, snapshot

from vllm_sp_base._upstream.series import _output
from vllm_sp_base._upstream.series._build import FileChange
from vllm_sp_base._upstream.series._patches import Patch, mbox

#: --out on a toy tree: the series, without running the toy test.
OUT = ("--author", AUTHOR, "--no-test-run")
DEFAULT = b"use_sequence_parallel: bool = False"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git applies the series")


def _folders(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir()}


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": error: " in line]


def _git(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t.invalid",
           "GIT_CEILING_DIRECTORIES": str(cwd.parent)}
    return subprocess.run(["git", *argv], cwd=cwd, env=env, capture_output=True, text=True, check=False)


# Line endings and characters the rewrite keeps -----------------------------

@needs_git
def test_a_crlf_file_keeps_its_line_endings_in_the_rewrite_and_the_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {**FILES, V32: FILES[V32]}
    pristine = make_tree(tmp_path / "pristine", files)
    crlf = pristine / V32
    crlf.write_bytes(crlf.read_bytes().replace(b"\n", b"\r\n"))
    written = tmp_path / "written"
    shutil.copytree(pristine, written)

    code, _, err = run(capsys, "--vllm-src", str(written), "--write")
    assert code == 0, err
    lines = (written / V32).read_bytes().split(b"\n")
    assert DEFAULT in (written / V32).read_bytes()
    assert lines[-1] == b"" and all(line.endswith(b"\r") for line in lines[:-1])  # every one CRLF

    out = tmp_path / "out"
    code, _, err = run(capsys, "--vllm-src", str(pristine), "--out", str(out), *OUT)
    assert code == 0, err
    assert f"{V32}: CRLF line endings, kept in the series: apply it with git am --keep-cr" in err
    assert (out / V32).read_bytes() == (written / V32).read_bytes()
    # The series, applied as the message says, gives what --write wrote.
    repo = tmp_path / "repo"
    shutil.copytree(pristine, repo)
    for argv in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "release")):
        assert _git(repo, *argv).returncode == 0
    patches = sorted(str(p) for p in out.glob("*.patch"))
    applied = _git(repo, "am", "-q", "--keep-cr", "--keep-non-patch", *patches)
    assert applied.returncode == 0, applied.stderr
    for path in (V32, TEST):
        assert (repo / path).read_bytes() == (written / path).read_bytes(), path


def test_a_form_feed_inside_a_line_stays_inside_it_in_the_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # str.splitlines breaks at a form feed; git does not: a diff cut there does not apply.
    files = {**FILES, V32: FILES[V32] + "        # page\x0cbreak\n"}
    root = make_tree(tmp_path / "tree", files)
    out = tmp_path / "out"
    code, _, err = run(capsys, "--vllm-src", str(root), "--out", str(out), *OUT)
    assert code == 0 and _error_lines(err) == [], err
    assert "# page\x0cbreak\n" in (out / V32).read_text()
    code, _, err = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 0, err
    assert (root / V32).read_text() == (out / V32).read_text()


def test_a_byte_order_mark_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_tree(tmp_path)
    (root / V32).write_bytes(b"\xef\xbb\xbf" + (root / V32).read_bytes())
    code, _, err = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 0, err
    data = (root / V32).read_bytes()
    assert data.startswith(b"\xef\xbb\xbffrom torch import nn\n") and DEFAULT in data


# Files it cannot take: all or nothing, one line, exit 2 ----------------------

@pytest.mark.parametrize(
    ("name", "data", "said"),
    [
        # A file the series changes.
        (V32, dedent(FILES[V32]).encode() + b"def broken(:\n",
         f"{V32}: does not parse (line {len(dedent(FILES[V32]).splitlines()) + 1})"),
        # Read by the audit (a coding declaration), but the series is UTF-8.
        (V32, b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + dedent(FILES[V32]).encode(),
         f"{V32}: not UTF-8 (byte 31)"),
        # libcst drops a form feed before a statement: the rewrite would change more than the plan.
        (V32, b"\x0c" + dedent(FILES[V32]).encode(),
         f"{V32}: line 1 would not be kept as written"),
        # A file holding the flags' name that does not parse may hold a class the plan needs.
        ("vllm/models/other.py", b"def use_sequence_parallel(:\n",
         "vllm/models/other.py: does not parse (line 1)"),
        # The vLLM test file the series extends.
        (TEST, b"# caf\xe9\n", f"{TEST}: cannot read: not UTF-8 (byte 5)"),
    ],
    ids=["syntax-error", "latin-1", "form-feed", "unplanned-syntax-error", "test-latin-1"],
)
@pytest.mark.parametrize("mode", ["--write", "--out"])
def test_a_file_it_cannot_take_stops_everything_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, data: bytes, said: str, mode: str
) -> None:
    root = make_tree(tmp_path / "tree")
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_bytes(data)
    before = snapshot(root)
    out = tmp_path / "out"
    where = [mode] if mode == "--write" else [mode, str(out), *OUT]
    code, stdout, err = run(capsys, "--vllm-src", str(root), *where)
    assert code == 2 and stdout == "" and err.count("\n") == 1, err
    assert err.startswith(f"vllm-sp-base upstream: error: {said}") and err.endswith("; nothing written\n")
    assert snapshot(root) == before and not out.exists()


def test_a_tree_whose_path_is_not_utf8_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = os.fsdecode(b"tree\xff")
    try:
        root = make_tree(tmp_path / name)
    except OSError:  # a file system that takes only UTF-8 names (APFS)
        pytest.skip("this file system refuses a name that is not UTF-8")
    before = snapshot(root)
    code, out, err = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 2 and out == "" and snapshot(root) == before
    shown = str(root).replace(name, "tree\\xff")
    assert err == f"vllm-sp-base upstream: error: {shown}: its path is not UTF-8; rename it or copy the tree\n"


@needs_git
def test_git_am_refusing_a_patch_is_one_line_naming_the_file(tmp_path: Path) -> None:
    change = FileChange("vllm/x.py", "a = 1\n", "a = 2\n")
    patch = Patch("[Config] Something", "Body.\n", [("vllm/x.py", "b = 1\n", "a = 2\n")])
    rejected = _output.check_series([change], [mbox(patch, 1, 1, "A <a@b.c>")])
    assert rejected == "patch 1: vllm/x.py: git am finds the patch does not apply to the file as read"


# Destinations it cannot write ------------------------------------------------

@contextlib.contextmanager
def _read_only_mount(path: Path) -> Iterator[bool]:
    """``path`` mounted read-only over itself where this process may (root in
    a container that allows it); False where it may not."""
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None:
        yield False
        return
    if subprocess.run([mount, "--bind", str(path), str(path)], capture_output=True, check=False).returncode:
        yield False
        return
    try:
        done = subprocess.run([mount, "-o", "remount,bind,ro", str(path)], capture_output=True, check=False)
        yield done.returncode == 0
    finally:
        subprocess.run(["umount", str(path)], capture_output=True, check=True)


def _refuse_writes_under(monkeypatch: pytest.MonkeyPatch, root: Path, code: int) -> None:
    """Every call that writes under ``root`` fails with ``code``, as a
    read-only mount (EROFS) or a folder not ours (EACCES) would."""
    def refusing(real: Callable[..., Any], writes: Callable[..., bool]) -> Callable[..., Any]:
        def call(path: Any, *args: Any, **kwargs: Any) -> Any:
            if str(path).startswith(str(root)) and writes(*args):
                raise OSError(code, os.strerror(code), str(path))
            return real(path, *args, **kwargs)
        return call

    monkeypatch.setattr(os, "open", refusing(os.open, lambda flags, *_: bool(flags & (os.O_WRONLY | os.O_RDWR))))
    for name in ("mkdir", "remove", "replace", "chmod", "rmdir"):
        monkeypatch.setattr(os, name, refusing(getattr(os, name), lambda *_: True))


@pytest.mark.parametrize("how", ["mount", "EROFS", "EACCES"])
def test_write_to_a_tree_it_may_not_write_says_so_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    root = make_tree(tmp_path / "tree")
    before, folders = snapshot(root), _folders(root)
    with _read_only_mount(root) if how == "mount" else contextlib.nullcontext(False) as mounted:
        if how == "mount" and not mounted:
            pytest.skip("no read-only bind mount here (needs root where mounts are allowed)")
        if how != "mount":
            _refuse_writes_under(monkeypatch, root, getattr(errno, how))
        code, _, err = run(capsys, "--vllm-src", str(root), "--write")
    why = "Permission denied" if how == "EACCES" else "Read-only file system"
    assert code == 2 and "Traceback" not in err and "interrupted" not in err
    assert _error_lines(err) == [(f"vllm-sp-base upstream: error: {root}/{TEST}: "
                                  f"cannot write: {why}; the tree is as it was")]
    assert snapshot(root) == before and _folders(root) == folders


def _disk_full_at_first_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # no file name, as write(2) gives it

    monkeypatch.setattr(os, "fsync", full)


def test_out_on_a_full_disk_names_the_path_and_leaves_no_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "tree")
    out = tmp_path / "a" / "b" / "out"
    _disk_full_at_first_sync(monkeypatch)
    code, _, err = run(capsys, "--vllm-src", str(root), "--out", str(out), *OUT)
    assert code == 2 and "Traceback" not in err and "--write" not in err
    assert _error_lines(err) == [(f"vllm-sp-base upstream: error: {out}/{TEST}: cannot write: "
                                  "No space left on device; nothing written")]
    assert not (tmp_path / "a").exists()  # every folder it made, removed


def test_out_that_cannot_be_made_says_why_without_advising_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_tree(tmp_path / "tree")
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "out"
    code, _, err = run(capsys, "--vllm-src", str(root), "--out", str(out), *OUT)
    assert code == 2 and "--write" not in err
    assert _error_lines(err) == [(f"vllm-sp-base upstream: error: {tmp_path / 'file'}: cannot write: "
                                  "exists and is not a folder; nothing written")]


def test_write_on_a_full_disk_leaves_no_folder_it_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "tree")
    before, folders = snapshot(root), _folders(root)
    _disk_full_at_first_sync(monkeypatch)
    code, _, err = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 2 and "No space left on device; the tree is as it was" in err
    assert f"error: {root}/{TEST}: cannot write" in err
    assert snapshot(root) == before and _folders(root) == folders


def test_a_folder_the_series_needs_that_is_a_file_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {path: text for path, text in FILES.items() if path != TEST}
    root = make_tree(tmp_path / "tree", files)
    (root / "tests" / "models").mkdir(parents=True)
    (root / "tests" / "models" / "deepseek_v32").write_text("")  # a file where a folder goes
    before = snapshot(root)
    code, _, err = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 2 and snapshot(root) == before
    assert err == (f"vllm-sp-base upstream: error: {TEST}: "
                   "cannot read: a part of its path is a file, not a folder; nothing written\n")


def test_a_file_changed_after_it_was_read_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "tree")
    real_check = _output.check_series

    def edited_meanwhile(*args: Any) -> str | None:  # between the read and the write
        with open(root / V32, "a") as handle:
            handle.write("# mine\n")
        return real_check(*args)

    monkeypatch.setattr(_output, "check_series", edited_meanwhile)
    code, _, err = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 2
    assert f"error: {V32}: changed since it was read; nothing written" in err
    assert (root / V32).read_text().endswith("# mine\n")
    assert "def test_subclass_skipping" not in (root / TEST).read_text()
