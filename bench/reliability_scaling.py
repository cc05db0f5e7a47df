"""How the audit scales on hierarchies no real tree has: many bases, great depth.

    .venv/bin/python bench/reliability_scaling.py

Prints the wall time of ``vllm-sp-base audit --no-cache`` (and ``--parse-all``
for depth) on generated files: one class with 1,000 to 10,000 bases, each
base's ``__init__`` skipped; a chain 800 and 3,000 classes deep whose leaf
skips the chain. The time per base should stay about flat (C3 is O(n log n)).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

BIN = os.path.dirname(sys.executable)


def _many_bases(count: int) -> str:
    lines = ["import torch.nn as nn"]
    for i in range(count):
        lines += [f"class B{i}(nn.Module):", "    def __init__(self):", f"        self.a{i} = 1",
                  "    def forward(self):", f"        return self.a{i}"]
    lines += [f"class X({', '.join(f'B{i}' for i in range(count))}):",
              "    def __init__(self):", "        nn.Module.__init__(self)"]
    return "\n".join(lines) + "\n"


def _deep(depth: int) -> str:
    lines = ["import torch.nn as nn", "class C0(nn.Module):", "    def __init__(self):",
             "        super().__init__()", "        self.flag = 1", "    def forward(self):",
             "        return self.flag"]
    for i in range(1, depth):
        lines += [f"class C{i}(C{i - 1}):", "    def __init__(self):", "        super().__init__()"]
    lines += [f"class Leaf(C{depth - 1}):", "    def __init__(self):", "        nn.Module.__init__(self)"]
    return "\n".join(lines) + "\n"


def _time(source: str, *flags: str) -> tuple[float, str]:
    with tempfile.TemporaryDirectory() as scratch:
        with open(os.path.join(scratch, "generated.py"), "w", encoding="utf-8") as handle:
            handle.write(source)
        start = time.perf_counter()
        done = subprocess.run([os.path.join(BIN, "vllm-sp-base"), "audit", "--no-cache", *flags, scratch],
                              capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
    errors = done.stdout.count("[error]")
    return seconds, f"{errors} error(s)"


def main() -> None:
    for count in (1000, 2500, 10000):
        seconds, found = _time(_many_bases(count))
        print(f"{count:>6} bases: {seconds:6.2f} s ({1e3 * seconds / count:.2f} ms a base), {found}")
    for depth in (800, 3000):
        for flags in ((), ("--parse-all",)):
            seconds, found = _time(_deep(depth), *flags)
            print(f"{depth:>6} deep {' '.join(flags) or '(default)':>11}: {seconds:6.2f} s, {found}")


if __name__ == "__main__":
    main()
