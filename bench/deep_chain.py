"""Audit time against inheritance depth: 10 files, each one chain of torch
modules DEPTH deep (every ``__init__`` calls ``super().__init__()``), in the
default mode and with ``--parse-all``.

    python bench/deep_chain.py [--depth 1000] [--files 10]

Prints one line per mode: the wall time of ``audit --no-cache`` (best of 3)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_tree(root: Path, depth: int, files: int) -> None:
    for f in range(files):
        classes = [f"class C{f}_0(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                   "        self.a0 = 0\n\n    def forward(self):\n        return self.a0\n\n\n"]
        classes += [f"class C{f}_{i}(C{f}_{i - 1}):\n    def __init__(self):\n        super().__init__()\n"
                    f"        self.a{i % 7} = {i}\n\n\n" for i in range(1, depth)]
        (root / f"m{f}.py").write_text("from torch import nn\n\n\n" + "".join(classes))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--files", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        write_tree(root, args.depth, args.files)
        for flags in ([], ["--parse-all"]):
            times = []
            for _ in range(3):
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "vllm_sp_base", "audit", "--no-cache", *flags, str(root)],
                               capture_output=True, check=False)
                times.append(time.perf_counter() - start)
            print(f"{args.files} chains {args.depth} deep, audit --no-cache {' '.join(flags) or '(default)'}: "
                  f"{min(times):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
