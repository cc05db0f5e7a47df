"""What writing the cache costs a run (#22, point 10): the code key of every
audited file comes from the pre-scan's own lexing pass (``read_and_scan``
folds the digest as it scans), so a run that writes the cache lexes each file
once, as a ``--no-cache`` run does (a first run, on no cache, folds none);
and the digest so folded is ``code_digest``'s, on any source."""

from __future__ import annotations

import os
import shutil
import types
from pathlib import Path
from typing import Any

import pytest

from vllm_sp_base._audit._engine import AuditResult, audit
from vllm_sp_base._audit.files import _keys
from vllm_sp_base._audit.files._keys import code_key
from vllm_sp_base._audit.prescan import _prescan
from vllm_sp_base._audit.sources import _sources
from vllm_sp_base._audit.sources._cache import Cache

TREE = Path(__file__).with_name("fixtures") / "tree"

pytestmark = pytest.mark.skipif(_prescan.read_and_scan is None, reason="lexer not compiled here")

#: Sources the lexer must read as Python does: comments and strings that look
#: like code, f-strings nested as PEP 701 allows, CRLF, non-ASCII, a BOM,
#: continuations, tabs; and some it refuses (a lone CR, an open string) or the
#: scan gives up on (deeper than it follows) while the digest's own pass does not.
_VARIED = {
    "comments.py": "# class A:\nx = 1  # noqa: SPB001\n\n    # indented comment\ny = 2 # vllm-sp-base: ignore[a]\n",
    "strings.py": "a = '# not a comment'\nb = \"\"\"\nclass Fake:\n    pass\n\"\"\"\nc = r'\\'' + b'\\x00'\n",
    "fstrings.py": "x = f\"{a!r:>{width}} {{literal}} {'q'}\"\ny = f'{ {\"k\": 1}[\"k\"] }' + f\"\\N{EM DASH}{b}\"\n",
    "crlf.py": "class A:\r\n    def __init__(self):\r\n        self.a = 1\r\n\r\n# c\r\nx = (1,\r\n     2)\r\n",
    "non_ascii.py": "# -*- coding: utf-8 -*-\nclass Ünïcode:\n    def __init__(self):\n        self.ä = 'ß→∑'\n",
    "bom.py": "\ufeffclass A:\n    pass\n",
    "continued.py": "x = 1 + \\\n    2\nif x:\n\ty = [\n\t\t1,  # inside brackets\n\t]\n",
    "no_newline.py": "class A:\n    pass",
    "empty.py": "",
    "lone_cr.py": "class A:\r    pass\r",
    "open_string.py": "x = 'never closed\n",
    "deep.py": "".join("    " * k + f"class C{k}:\n" for k in range(260)) + "    " * 260 + "pass\n",
}


@pytest.fixture
def varied(tmp_path: Path) -> list[Path]:
    written = []
    for name, text in _VARIED.items():
        (tmp_path / name).write_bytes(text.encode("utf-8"))
        written.append(tmp_path / name)
    return written


def test_the_pre_scans_digest_is_code_digest_and_its_stat_is_the_files(
    varied: list[Path], fixture_files: list[Path], vllm_files: list[Path]
) -> None:
    assert _prescan.read_and_scan is not None
    folded = 0
    for path in [*varied, *fixture_files, *vllm_files]:
        answer = _prescan.read_and_scan(str(path), 1 << 22)
        assert answer[0] is not None
        data, found, digest, seen = answer
        # Folded where the scan lexed to the end (even if it declines what it
        # found); else None, and the key is computed apart.
        assert digest is None or digest == _prescan._lexer.code_digest(data), path
        assert digest is not None or found is None, path
        assert code_key(data, digest) == code_key(data), path
        info = os.stat(path)
        assert seen == (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns), path
        folded += digest is not None
    assert folded > len(vllm_files) * 0.99
    refused = {p.name for p in varied if _prescan.read_and_scan(str(p), 1 << 22)[2] is None}
    assert refused == {"lone_cr.py", "open_string.py", "deep.py"}
    assert _prescan._lexer.code_digest((varied[0].parent / "deep.py").read_bytes()) is not None


def _counting_digests(patch: pytest.MonkeyPatch) -> list[int]:
    """The bytes of each ``code_digest`` pass ``code_key`` runs from now on."""
    lexed: list[int] = []
    real = _keys._lexer

    def code_digest(data: bytes) -> Any:
        lexed.append(len(data))
        return real.code_digest(data)

    patch.setattr(_keys, "_lexer", types.SimpleNamespace(code_digest=code_digest))
    return lexed


def _seeded(tmp_path: Path) -> Path:
    """A cache an earlier run on another tree wrote: a first run (no cache at
    all) folds no code keys (``test_cache.test_a_first_run_folds_no_code_keys``)."""
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "a.py").write_text("x = 1\n")
    audit([str(seed)], cache=Cache(str(tmp_path / "cache"), True))
    assert not Cache(str(tmp_path / "cache"), True).new
    return tmp_path / "cache"


def _everything(result: AuditResult) -> tuple[object, ...]:
    return (result.findings, result.diagnostics, result.files, result.suppressed, result.unresolved)


def test_a_run_that_writes_the_cache_lexes_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    expected = _everything(audit([str(tree)], cache=Cache(None, False)))
    lexed = _counting_digests(monkeypatch)
    scans: list[str] = []
    real = _sources._read_and_scan
    cache = _seeded(tmp_path)
    monkeypatch.setattr(_sources, "_read_and_scan", lambda path, *rest: scans.append(path) or real(path, *rest))
    first = audit([str(tree)], cache=Cache(str(cache), True))
    assert _everything(first) == expected
    # No second pass but over what the scan's pass did not digest (a file
    # that does not lex): every other code key came with its file's scan.
    assert _prescan.read_and_scan is not None
    refused = [p.stat().st_size for p in sorted(tree.rglob("*.py"))
               if _prescan.read_and_scan(str(p), 1 << 22)[2] is None]
    assert sorted(lexed) == sorted(refused) and len(refused) < 3
    assert len(scans) == first.files > 10
    # The keys so made are the ones a later run checks: an edited comment is still the same code.
    drafts = tree / "app" / "semantics" / "drafts.py"
    drafts.write_text(drafts.read_text() + "\n# a comment added\n")
    lexed.clear()
    again = audit([str(tree)], cache=Cache(str(cache), True))
    assert again.seconds == {} and _everything(again) == expected
    assert lexed == [drafts.stat().st_size]  # the moved file, compared by its code key


def test_a_file_the_scan_gives_up_on_still_gets_its_code_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    deep = tree / "app" / "deep.py"
    deep.write_text(_VARIED["deep.py"])
    expected = _everything(audit([str(tree)], cache=Cache(None, False)))
    cache = _seeded(tmp_path)
    lexed = _counting_digests(monkeypatch)
    audit([str(tree)], cache=Cache(str(cache), True))
    assert deep.stat().st_size in lexed  # lexed apart: the scan did not finish it
    deep.write_text(_VARIED["deep.py"] + "# a comment\n")
    again = audit([str(tree)], cache=Cache(str(cache), True))
    assert again.seconds == {} and _everything(again) == expected


@pytest.mark.parametrize("missing", ["reader", "lexer"])
def test_without_the_compiled_reader_or_lexer_the_cache_is_as_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    # Pure Python: the files read by os.read (no digest folded: code_key lexes
    # apart), or no lexer at all (no code key: only identical bytes match).
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    expected = _everything(audit([str(tree)], cache=Cache(None, False)))
    monkeypatch.setattr(_sources, "read_and_scan", None)
    if missing == "lexer":
        monkeypatch.setattr(_keys, "_lexer", None)
    cache = _seeded(tmp_path)
    assert _everything(audit([str(tree)], cache=Cache(str(cache), True))) == expected
    drafts = tree / "app" / "semantics" / "drafts.py"
    drafts.write_text(drafts.read_text() + "\n# a comment added\n")
    again = audit([str(tree)], cache=Cache(str(cache), True))
    assert (again.seconds == {}) == (missing == "reader")  # a comment is code to a run without a lexer
    assert _everything(again) == expected
    drafts.write_text(drafts.read_text().replace("return super().forward(x) + 1", "return x + 1", 1))
    changed = audit([str(tree)], cache=Cache(str(cache), True))
    assert changed.seconds and _everything(changed) == _everything(audit([str(tree)], cache=Cache(None, False)))
