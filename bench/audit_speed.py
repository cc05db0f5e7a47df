"""Audit speed on the whole installed vLLM tree, against ruff on the same tree.

    .venv/bin/python bench/audit_speed.py [TREE]

Prints cold (``--no-cache``) and warm wall times, the cold/ruff ratio, the
peak memory of the largest audit process (the parent or a pre-scan worker), and
where a cold run's time goes, phase by phase.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

BIN = os.path.dirname(sys.executable)
PAIRS = 7


def _wall(argv: list[str], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    if len(sys.argv) > 1:
        tree = sys.argv[1]
    else:
        from vllm_sp_base._audit.files._discover import installed_vllm

        tree = installed_vllm() or sys.exit("vLLM is not installed; give a TREE")
    files = sum(f.endswith(".py") for _, _, fs in os.walk(tree) for f in fs)
    # The package's bytecode up to date, as an installed wheel has it (an editable
    # install under PYTHONDONTWRITEBYTECODE would otherwise compile it every run).
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(_package())], check=True)
    audit = [os.path.join(BIN, "vllm-sp-base"), "audit", tree]
    ruff_argv = [os.path.join(BIN, "ruff"), "check", "--no-cache", "--isolated", "--select", "F",
                 "--exit-zero", "-q", tree]
    # This machine's speed drifts between runs: time ruff and the audit in
    # alternating pairs and take the median ratio of the pairs.
    pairs = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    for _ in range(PAIRS):
        pairs.append((_wall(ruff_argv, repeat=1), _wall([*audit, "--no-cache"], repeat=1)))
    peak_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    ruff = statistics.median(r for r, _ in pairs)
    cold = statistics.median(c for _, c in pairs)
    ratio = statistics.median(c / r for r, c in pairs)
    with tempfile.TemporaryDirectory() as cache:
        subprocess.run([*audit, "--cache-dir", cache], capture_output=True, check=False)
        warm = _wall([*audit, "--cache-dir", cache], repeat=5)
    with tempfile.TemporaryDirectory() as scratch:
        one_changed = _one_changed_file(tree, scratch)
    full = _wall([*audit, "--no-cache", "--parse-all"], repeat=1)
    print(f"tree: {tree} ({files} files)")
    print(f"ruff check --no-cache --isolated --select F: {ruff:.2f} s")
    print(f"audit cold (--no-cache): {cold:.2f} s  ratio to ruff: {ratio:.2f} "
          f"(median of {PAIRS} alternating pairs; target <= 1.0)")
    print(f"audit warm (cache): {warm:.2f} s (target <= 0.5 s)")
    print(f"audit warm, a comment appended to one model file: {one_changed:.2f} s (target <= 0.3 s)")
    print(f"audit --parse-all (no pre-scan): {full:.2f} s")
    print(f"peak memory, largest audit process: {peak_mb:.0f} MB (target <= 400 MB)")
    print("where a cold run's time goes (in-process, best of 3 by total):")
    for phase, seconds in _phases(tree).items():
        print(f"  {phase}: {seconds:.2f} s")


def _one_changed_file(tree: str, scratch: str) -> float:
    """A copy of the tree audited once with a cache; then, five times, a comment
    appended to one model file and the audit run again (median)."""
    import shutil

    copy = os.path.join(scratch, os.path.basename(tree.rstrip(os.sep)))
    shutil.copytree(tree, copy, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    audit = [os.path.join(BIN, "vllm-sp-base"), "audit", "--cache-dir", os.path.join(scratch, "cache"), copy]
    subprocess.run(audit, capture_output=True, check=False)
    model = next(
        (os.path.join(d, f) for d, _, fs in sorted(os.walk(copy)) for f in sorted(fs)
         if f == "llama.py"),
        None,
    ) or next(os.path.join(d, f) for d, _, fs in os.walk(copy) for f in fs if f.endswith(".py"))
    times = []
    for n in range(5):
        with open(model, "a", encoding="utf-8") as handle:
            handle.write(f"# edited {n}\n")
        times.append(_wall(audit, repeat=1))
    return statistics.median(times)


def _package() -> str:
    import vllm_sp_base

    return vllm_sp_base.__file__ or ""


def _phases(tree: str) -> dict[str, float]:
    from vllm_sp_base._audit._engine import audit as run_audit
    from vllm_sp_base._audit.sources._cache import Cache

    runs = [run_audit([tree], cache=Cache(None, False)).seconds for _ in range(3)]
    return min(runs, key=lambda seconds: sum(seconds.values()))


if __name__ == "__main__":
    main()
