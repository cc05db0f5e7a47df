"""Mutated cache files against the audit: how many runs raised or differed.

    .venv/bin/python bench/cache_fuzz.py [RUNS]

Fills a cache from the test fixture tree, then RUNS times (default 2400):
copies it, damages each file one way (a byte flipped, a cut, bytes inserted,
or an intact file with one value swapped for a value of another type), and
audits the tree from that cache. Prints the runs, how many raised, and how
many gave a result other than ``--no-cache``'s (both must be 0).
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
from collections import Counter
from typing import Any

from vllm_sp_base._audit._engine import AuditResult, audit
from vllm_sp_base._audit.sources import _cache
from vllm_sp_base._audit.sources._cache import Cache

TREE = os.path.join(os.path.dirname(__file__), "..", "tests", "audit", "fixtures", "tree")
_OTHERS: list[Any] = [None, True, 7, 1.5, "x", b"x", [1], ("y",), {"k": 1}]


def _everything(result: AuditResult) -> tuple[object, ...]:
    return (result.findings, result.diagnostics, result.files, result.parsed, result.suppressed,
            result.only_bases)


def _swap(value: Any, rng: random.Random) -> Any:
    """``value`` with one nested value replaced by one of another type."""
    if isinstance(value, (list, tuple)) and value and rng.random() < 0.8:
        i = rng.randrange(len(value))
        items = list(value)
        items[i] = _swap(items[i], rng)
        return type(value)(items) if isinstance(value, tuple) else items
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        return {**value, key: _swap(value[key], rng)}
    return rng.choice([o for o in _OTHERS if type(o) is not type(value) and o is not None])


def _damage(path: str, how: str, rng: random.Random) -> None:
    if how == "swap":
        entries = _cache._load(path)
        key = rng.choice(list(entries))
        entries[key] = _swap(entries[key], rng)
        _cache._save(path, entries)
        return
    with open(path, "rb") as handle:
        raw = bytearray(handle.read())
    at = rng.randrange(len(raw))
    if how == "flip":
        raw[at] ^= rng.randrange(1, 256)
    elif how == "cut":
        del raw[at:]
    else:
        raw[at:at] = rng.randbytes(rng.randrange(1, 9))
    with open(path, "wb") as handle:
        handle.write(raw)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 2400
    rng = random.Random(14)
    outcome: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as scratch:
        tree = os.path.join(scratch, "tree")
        shutil.copytree(TREE, tree)
        expected = _everything(audit([tree], cache=Cache(None, False)))
        filled = os.path.join(scratch, "filled")
        audit([tree], cache=Cache(filled, True))
        for n in range(runs):
            copy = os.path.join(scratch, f"run{n}")
            shutil.copytree(filled, copy)
            how = rng.choice(["flip", "cut", "insert", "swap"])
            for name in sorted(os.listdir(copy)):
                _damage(os.path.join(copy, name), how, rng)
            try:
                got = _everything(audit([tree], cache=Cache(copy, True)))
            except Exception as error:  # noqa: BLE001 (what is counted)
                outcome[f"raised {type(error).__name__}"] += 1
            else:
                outcome["same" if got == expected else "differed"] += 1
            shutil.rmtree(copy)
    raised = sum(v for k, v in outcome.items() if k.startswith("raised"))
    print(f"mutated caches: {runs} runs; raised: {raised}; differed from --no-cache: "
          f"{outcome['differed']}; {dict(outcome)}")


if __name__ == "__main__":
    main()
