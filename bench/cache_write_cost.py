"""What writing the cache costs a first run: ``vllm-sp-base audit`` on a tree
(default: the installed vLLM) with ``--no-cache`` and with an empty cache
directory, in alternating pairs, as CI without a kept cache runs it. Prints
each pair and the median ratios, of wall time and of CPU time (the process
and its forked groups: steadier than wall time on a shared machine).

    python bench/cache_write_cost.py [TREE] [--pairs N] [--python PYTHON]

Target (issue #22): the empty-cache run costs at most 1.10x the --no-cache run.
A second table does the same for a warm cache under ``--python`` after a run
without it: the environment only changes where bases resolve, so the
per-file entries must still answer."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def _run(argv: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vllm_sp_base", "audit", "--format", "json", *argv],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode > 1:
        sys.exit(f"audit failed: {done.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _pairs(label: str, first: list[str], second: list[str], pairs: int, fresh: bool) -> None:
    walls, cpus = [], []
    print(f"{label}: wall s and CPU s, then their ratios")
    for index in range(pairs):
        with tempfile.TemporaryDirectory() as cache:
            base = _run([*first, "--no-cache"]) if not fresh else None
            if fresh:  # a run without --python fills the cache; the measured pair follows
                _run([*first, "--cache-dir", cache])
                base = _run([*first, "--no-cache"])
            measured = _run([*second, "--cache-dir", cache])
        assert base is not None
        walls.append(measured[0] / base[0])
        cpus.append(measured[1] / base[1])
        print(f"  pair {index + 1}: no cache {base[0]:.2f} / {base[1]:.2f}, "
              f"cache {measured[0]:.2f} / {measured[1]:.2f}: {walls[-1]:.2f}x / {cpus[-1]:.2f}x")
    print(f"  median: wall {statistics.median(walls):.2f}x, CPU {statistics.median(cpus):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", nargs="?", default=None)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter given as --python in the second table")
    args = parser.parse_args()
    tree = args.tree
    if tree is None:
        from vllm_sp_base._audit.files._discover import installed_vllm

        tree = installed_vllm() or sys.exit("vLLM is not installed; give a TREE")
    os.environ.pop("VLLM_SP_BASE_CACHE_DIR", None)
    _pairs("empty cache vs --no-cache", [tree], [tree], args.pairs, fresh=False)
    _pairs("--python after a run without it, vs --no-cache", [tree], [tree, "--python", args.python],
           args.pairs, fresh=True)


if __name__ == "__main__":
    main()
