"""``audit --fix`` on copies of real trees: what it fixes, and the proof.

    .venv/bin/python bench/fix_trees.py [--out DIR] TREE [TREE ...]

Each TREE (a package folder, or a folder of them) is copied to DIR/NAME
(default: a temporary folder; the tree itself is never changed). On the copy:
the audit (JSON), ``--fix``, the audit again, then ``--fix --unsafe-fixes``
and the audit again. After each fix it checks: no finding whose fix was applied
is left, no new finding appears, every changed file compiles, ``ruff format
--diff`` (ruff's defaults) finds the same lines to change in each changed
file as before the fix, and a second ``--fix`` changes nothing. Prints one
line a tree and pass, and the diff of every fix applied.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

BIN = os.path.dirname(sys.executable)
AUDIT = [sys.executable, "-m", "vllm_sp_base", "audit", "--no-cache"]


def _findings(tree: str) -> dict[tuple[str, str], dict[str, object]]:
    done = subprocess.run([*AUDIT, "--format", "json", tree], capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{tree}: audit failed: {done.stderr.strip()}")
    return {(f["class"], f["attribute"]): f for f in json.loads(done.stdout)["findings"]}


def _format_changes(path: str) -> collections.Counter[str]:
    """The lines ``ruff format`` would remove or rewrite in ``path``."""
    done = subprocess.run([os.path.join(BIN, "ruff"), "format", "--isolated", "--diff", path],
                          capture_output=True, text=True, check=False)
    return collections.Counter(line for line in done.stdout.splitlines()
                               if line.startswith("-") and not line.startswith("---"))


def _pass(tree: str, unsafe: bool) -> dict[str, object]:
    tree = os.path.abspath(tree)
    before = _findings(tree)
    applied = {"safe", "unsafe"} if unsafe else {"safe"}
    fixable = {key for key, f in before.items() if f["fix"]["applicability"] in applied}  # type: ignore[index]
    flags = ["--unsafe-fixes"] if unsafe else []
    # Run above the copy: the diff's paths are then relative to it (from
    # elsewhere they would be the module's path under its import root).
    cwd = os.path.dirname(os.path.abspath(tree))
    diff = subprocess.run([*AUDIT, "--diff", *flags, tree], capture_output=True, text=True, check=False,
                          cwd=cwd).stdout
    changed = [line[len("+++ b/"):] for line in diff.splitlines() if line.startswith("+++ b/")]
    paths = [p if os.path.isabs(p) else os.path.join(cwd, p) for p in changed]
    formats = {p: _format_changes(p) for p in paths}
    fixed = subprocess.run([*AUDIT, "--fix", *flags, tree], capture_output=True, text=True, check=False, cwd=cwd)
    after = _findings(tree)
    again = subprocess.run([*AUDIT, "--diff", *flags, tree], capture_output=True, text=True, check=False,
                           cwd=cwd)
    problems = []
    for p in paths:
        try:
            with open(p, encoding="utf-8") as handle:
                compile(handle.read(), p, "exec")
        except SyntaxError as error:
            problems.append(f"{p}: does not compile: {error}")
        if _format_changes(p) != formats[p]:
            problems.append(f"{p}: ruff format finds other lines to change")
    left = sorted(f"{c}.{a}" for c, a in fixable & set(after))
    new = sorted(f"{c}.{a}" for c, a in set(after) - set(before))
    return {
        "findings": len(before),
        "safe": sum(f["fix"]["applicability"] == "safe" for f in before.values()),  # type: ignore[index]
        "unsafe": sum(f["fix"]["applicability"] == "unsafe" for f in before.values()),  # type: ignore[index]
        "none": sum(f["fix"]["applicability"] == "none" for f in before.values()),  # type: ignore[index]
        "fixed": len(fixable - set(after)),
        "gone_too": len(set(before) - set(after) - fixable),
        "files": len(paths),
        "left": left, "new": new, "problems": problems,
        "idempotent": again.stdout == "",
        "said": fixed.stderr.strip().splitlines()[:1],
        "diff": diff,
        "reasons": sorted({f["fix"]["message"] for f in before.values()  # type: ignore[index]
                           if f["fix"]["applicability"] == "none"}),  # type: ignore[index]
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("trees", nargs="+")
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="fixcopy-")
    for tree in args.trees:
        copy = os.path.join(out, os.path.basename(tree.rstrip("/")))
        if os.path.exists(copy):
            shutil.rmtree(copy)
        shutil.copytree(tree, copy, symlinks=True)
        for unsafe in (False, True):
            result = _pass(copy, unsafe)
            label = "--fix --unsafe-fixes" if unsafe else "--fix"
            print(f"{os.path.basename(copy)} {label}: {result['findings']} findings (safe {result['safe']}, "
                  f"unsafe {result['unsafe']}, none {result['none']}); fixed {result['fixed']} "
                  f"(+{result['gone_too']} gone with them) in {result['files']} files; left of the fixed: "
                  f"{result['left'] or 'none'}; new: {result['new'] or 'none'}; idempotent: "
                  f"{result['idempotent']}; problems: {result['problems'] or 'none'}")
            for reason in result["reasons"]:  # type: ignore[attr-defined]
                print(f"  no fix: {reason}")
            print(result["diff"])


if __name__ == "__main__":
    main()
