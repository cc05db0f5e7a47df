"""Work spread over threads keeps its order and its errors."""

from __future__ import annotations

import pytest

from vllm_sp_base._audit.sources import _workers
from vllm_sp_base._audit.sources._workers import in_threads


def test_in_threads_returns_results_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_workers, "_THREADS", 3)
    items = [str(i) for i in range(100)]
    assert in_threads(lambda item: int(item) * 2, items) == [i * 2 for i in range(100)]


def test_in_threads_raises_what_a_thread_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_workers, "_THREADS", 2)

    def parse(item: str) -> int:
        if item == "57":
            raise ValueError(item)
        return int(item)

    with pytest.raises(ValueError, match="57"):
        in_threads(parse, [str(i) for i in range(100)])
