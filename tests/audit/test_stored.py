"""The cache's plain values: every summary and pre-scan comes back equal."""

from __future__ import annotations

import marshal
from pathlib import Path

import pytest

from vllm_sp_base._audit.prescan._prescan import scan
from vllm_sp_base._audit.sources._stored import BadEntry, from_plain, to_plain
from vllm_sp_base._audit.sources._workers import summarize_or_reason
from vllm_sp_base._audit.summaries._summaries import ModuleInfo, _all_methods, attach_sources


@pytest.mark.parametrize("kind", [b"M", b"m"])
def test_summaries_come_back_equal(fixture_files: list[Path], kind: bytes) -> None:
    for path in fixture_files:
        data = path.read_bytes()
        summary = summarize_or_reason(data, str(path), kind)
        back = from_plain(marshal.loads(marshal.dumps(to_plain(summary))))
        if isinstance(back, ModuleInfo):
            attach_sources(back, data, str(path))
        assert back == summary, path


def test_parsed_methods_keep_their_events(fixture_files: list[Path]) -> None:
    for path in fixture_files:
        data = path.read_bytes()
        summary = summarize_or_reason(data, str(path), b"M")
        if not isinstance(summary, ModuleInfo):
            continue
        for method in _all_methods(summary):
            assert method.events is not None  # parsed now: stored as events, not a body
        back = from_plain(to_plain(summary))
        assert back == summary, path


def test_prescans_come_back_equal(fixture_files: list[Path]) -> None:
    for path in fixture_files:
        found = scan(path.read_bytes())
        assert from_plain(marshal.loads(marshal.dumps(to_plain(found)))) == found, path


@pytest.mark.parametrize("plain", [
    None, (), ("X",), ("S", [], [], [], "extra"), ("R", 3), ("S", [("C", "B", (), True, True, True)], [], []),
    ("M", {}, {}, {}, {}, [], [("C", 1, 0, "Base", [], [], None, {})], False, {}),
])
def test_values_of_other_shapes_are_bad_entries(plain: object) -> None:
    with pytest.raises(BadEntry):
        from_plain(plain)
