"""The upstream series on every recent vLLM release: applies, formats clean, compiles, idempotent.

    python bench/upstream_releases.py [VERSION ...]    (default: 0.30.0 0.31.0 0.32.0 0.33.0)

Each release's source distribution (``vllm/``, ``tests/``, ``.buildkite/``)
is downloaded once (``source_tree``) and cached under
``$XDG_CACHE_HOME/vllm-sp-base/sdist/VERSION/``. For each release, on a git
repository of that tree: ``vllm-sp-base upstream --out`` (the test run
included), ``git am --keep-non-patch`` of the series, ``ruff format --check``
and ``ruff check`` with vLLM's settings on every changed file (lint compared
with the original), every changed file compiled, and a second run on the
patched tree that must find nothing to do. One row per release.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from vllm_sp_base._main import main as cli_main
from vllm_sp_base._upstream.checks._ruff import VLLM_RUFF, ruff

RELEASES = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vllm-sp-base" / "releases"


def source_tree(version: str, download: bool = True) -> Path | None:
    """The release's source distribution, unpacked and cached (``tests/``,
    ``tools/``, ``.pre-commit-config.yaml``, ``.buildkite/`` included).

    ``pip download --no-binary :all:`` fetches it, then insists on building
    its metadata, which vLLM's ``setup.py`` cannot do without its build
    environment; the sources pip unpacked are kept (``--no-clean``) and used.
    """
    root = cache_root().parent / "sdist" / version
    if (root / "vllm" / "__init__.py").is_file():
        return root
    if not download:
        return None
    with tempfile.TemporaryDirectory(prefix="vllm-sdist-") as scratch:
        env = {**os.environ, "TMPDIR": scratch, "VLLM_TARGET_DEVICE": "empty"}
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-clean",
                        "--no-binary", ":all:", "--no-build-isolation", f"vllm=={version}",
                        "-d", os.path.join(scratch, "dist")],
                       env=env, capture_output=True, check=False)  # fails at metadata, see above
        unpacked = [p.parent for p in Path(scratch).glob("pip-*/*/PKG-INFO")
                    if f"\nVersion: {version}\n" in p.read_text(errors="replace")]
        if not unpacked:
            raise RuntimeError(f"pip download of vllm=={version}'s source distribution gave no sources")
        partial = root.with_name(version + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(unpacked[0]), partial)
        partial.rename(root)
    return root


def _git(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(cwd.parent), "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.com"}
    return subprocess.run(["git", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)


def _upstream(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(["upstream", *argv])
    return code, out.getvalue(), err.getvalue()


def _ruff(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    binary = ruff()
    assert binary is not None, "ruff is not installed"
    return subprocess.run([binary, *argv], cwd=root, capture_output=True, text=True, check=False)


def check(version: str, tree: Path) -> dict[str, object]:
    """The series on one release: what it changes and whether each check holds."""
    with tempfile.TemporaryDirectory(prefix=f"vllm-{version}-") as scratch:
        repo, out = Path(scratch) / "repo", Path(scratch) / "out"
        for part in ("vllm", "tests", ".buildkite"):
            shutil.copytree(tree / part, repo / part)
        shutil.copy2(tree / "pyproject.toml", repo / "pyproject.toml")
        _git(repo, "init", "-q")
        _git(repo, "add", "-A", "-f")
        _git(repo, "commit", "-qm", f"vLLM {version}")
        code, stdout, stderr = _upstream("--vllm-src", str(repo), "--out", str(out),
                                         "--author", "Bench <bench@example.com>")
        row: dict[str, object] = {"version": version, "exit": code}
        summary = next((line for line in stdout.splitlines() if " file(s), +" in line), "")
        found = re.search(r"(\d+) classes given", summary)
        row["classes"] = int(found.group(1)) if found else None
        row["gates left"] = sum("left as is" in line for line in stdout.splitlines())
        patches = sorted(out.glob("*.patch")) if out.is_dir() else []
        row["patches"] = len(patches)
        if code != 0 or not patches:
            row["problem"] = stderr.strip().splitlines()[:3]
            return row
        applied = _git(repo, "am", "--keep-non-patch", *map(str, patches))
        row["git am"] = applied.returncode == 0
        changed = sorted(str(p.relative_to(out)) for p in out.rglob("*.py"))
        (repo / "ruff.toml").write_text(VLLM_RUFF)
        unformatted = _ruff(repo, "format", "--check", "--config", "ruff.toml", *changed)
        row["ruff format"] = "clean" if unformatted.returncode == 0 else unformatted.stdout.strip()

        original = Path(scratch) / "original"
        for relative in changed:
            if (tree / relative).exists():
                (original / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(tree / relative, original / relative)
        (original / "ruff.toml").write_text(VLLM_RUFF)

        def lint(root: Path) -> list[tuple[str, str]]:
            present = [c for c in changed if (root / c).exists()]
            done = _ruff(root, "check", "--no-cache", "--config", "ruff.toml", "--output-format",
                         "json", "--exit-zero", *present)
            return sorted((f["filename"], f["code"] or "") for f in json.loads(done.stdout))

        before = {(Path(f).relative_to(original).as_posix(), c) for f, c in lint(original)}
        after = {(Path(f).relative_to(repo).as_posix(), c) for f, c in lint(repo)}
        row["lint added"] = sorted(after - before)
        (repo / "ruff.toml").unlink()
        row["compiles"] = all(_compiles(repo / c) for c in changed)
        again, stdout, _ = _upstream("--vllm-src", str(repo))
        row["idempotent"] = again == 0 and stdout.startswith("0 file(s), +0 -0 lines")
        return row


def _compiles(path: Path) -> bool:
    try:
        compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return True


def run_releases(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", default=list(RELEASES))
    parser.add_argument("--source", metavar="VERSION",
                        help="only print the folder of VERSION's source distribution (fetched once)")
    args = parser.parse_args(argv)
    if args.source:
        print(source_tree(args.source))
        return 0
    rows = []
    for version in args.versions:
        tree = source_tree(version)
        assert tree is not None
        rows.append(check(version, tree))
        print(json.dumps(rows[-1]), flush=True)
    keys = ["version", "exit", "patches", "classes", "gates left", "git am",
            "ruff format", "lint added", "compiles", "idempotent"]
    print("\n| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row.get(k, "")) for k in keys) + " |")
    good = all(row.get("git am") and row.get("ruff format") == "clean" and not row.get("lint added")
               and row.get("compiles") and row.get("idempotent") for row in rows)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(run_releases())
