"""Find the Python files to audit, and the module name of each."""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fnmatch import translate

#: What a walk never enters or reads, as ruff's defaults: tools' and builds'
#: copies of the code, not the code (``build/lib/vllm`` would report each
#: finding twice). ``--exclude`` replaces the list, ``--extend-exclude`` adds
#: to it; a path given by name is always read.
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".hg", ".mypy_cache", ".nox", ".pytest_cache",
    ".ruff_cache", ".svn", ".tox", ".venv", "__pycache__", "__pypackages__", "_build",
    "buck-out", "build", "dist", "node_modules", "site-packages", "venv", "*.egg-info",
)
#: Skipped by every walk whatever the excludes say: a name starting with a dot
#: (``.github``, a tool's checkout in ``.vllm-sp-base``: not the project's code).
HIDDEN = "names starting with '.'"
#: The folders a project's own modules are imported from besides the audited
#: paths, under its root, as ruff's ``src`` default: a src layout's ``audit .``
#: resolves ``from pkg.x import Base`` from ``src/pkg/x.py``.
DEFAULT_SRC = (".", "src")


@dataclass
class Discovered:
    files: dict[str, str] = field(default_factory=dict)  # path -> module name
    roots: list[str] = field(default_factory=list)  # import roots, audited first
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)


def import_root(path: str) -> str:
    """The directory a module at ``path`` is imported from (above its packages)."""
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return directory


#: How many files under an audited path are read to tell whether the folder
#: its packages sit in is a namespace package.
_NAMESPACE_PROBE = 64


def namespace_root(root: str, given: str) -> str:
    """``root`` (a folder without ``__init__.py``, an audited path's import
    root), or the folder above it where the code under ``given`` says it is
    a package: it imports it by name (``from megatron.core import ...``
    under ``megatron/``, which holds ``core/``), or a relative import climbs
    above it (``from ...utils import x`` two folders down in ``optimum/``).
    Such a folder is a namespace package (PEP 420), whose modules are named
    from above it (``megatron.core.x``, not ``core.x``). A folder that holds
    a package of its own name (a checkout's ``vllm/vllm``) is a root."""
    while True:
        name = os.path.basename(root)
        parent = os.path.dirname(root)
        if (parent == root or not name.isidentifier() or os.path.isfile(os.path.join(root, "__init__.py"))
                or os.path.exists(os.path.join(root, name)) or os.path.exists(os.path.join(root, name + ".py"))):
            return root
        try:
            children = {e.name.removesuffix(".py") for e in os.scandir(root)}
        except OSError:
            return root
        if not _says_it_is_a_package(root, children, given):
            return root
        root = parent


def _says_it_is_a_package(root: str, children: set[str], given: str) -> bool:
    """Whether one of the first files under ``given`` imports ``root`` by
    name (``<name>.<child>``) or climbs above it with a relative import."""
    import re

    name = os.path.basename(root)
    absolute = re.compile(rb"^[ \t]*(?:from|import)[ \t]+" + re.escape(name.encode()) + rb"\.(\w+)", re.MULTILINE)
    relative = re.compile(rb"^[ \t]*from[ \t]+(\.+)", re.MULTILINE)
    for path in itertools.islice(_python_files(given), _NAMESPACE_PROBE):
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        if any(found.group(1).decode() in children for found in absolute.finditer(data)):
            return True
        # Each dot climbs one package from the file's own: more dots than
        # folders between the root and the file reach above the root.
        folders = os.path.relpath(os.path.dirname(path), root)
        depth = 0 if folders == os.curdir else folders.count(os.sep) + 1
        if any(len(found.group(1)) > depth for found in relative.finditer(data)):
            return True
    return False


def _python_files(given: str) -> Iterator[str]:
    """The regular ``.py`` files under ``given``: a FIFO named ``x.py`` would
    block the read for ever."""
    if os.path.isfile(given):
        yield given
        return
    for directory, subdirs, names in os.walk(given):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in DEFAULT_EXCLUDE)
        for name in sorted(names):
            path = os.path.join(directory, name)
            if name.endswith(".py") and os.path.isfile(path):
                yield path


def source_roots(folders: Sequence[str]) -> list[str]:
    """The folders of ``folders`` that are import roots: existing directories
    that are no package (a package's modules are named from above it: a
    ``src/__init__.py`` makes ``src`` a package, and an audited ``vllm/``
    never a root of ``config``)."""
    roots: list[str] = []
    for folder in folders:
        folder = os.path.abspath(folder)
        if (folder not in roots and os.path.isdir(folder)
                and not os.path.isfile(os.path.join(folder, "__init__.py"))):
            roots.append(folder)
    return roots


def module_name(path: str, root: str) -> str:
    prefix = root.rstrip(os.sep) + os.sep
    relative = path[len(prefix):] if path.startswith(prefix) else os.path.relpath(path, root)
    parts = relative[:-3].split(os.sep) if relative.endswith(".py") else relative.split(os.sep)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def excluded(name: str, relative: str, patterns: Sequence[str], path: str = "") -> bool:
    """A glob matches an entry's name, or (with a ``/``) its path: an absolute
    glob (anchored at a config file's folder or the current directory) its
    absolute ``path``, another its path relative to the given directory:
    ``build``, ``*.egg-info``, ``/project/tests/fixtures/*``."""
    return _matcher(tuple(patterns))(name, relative, path)


@functools.lru_cache(maxsize=16)
def _matcher(patterns: tuple[str, ...]) -> Callable[[str, str, str], bool]:
    """One regular expression per kind of glob: a walk asks for every entry."""
    import re

    def either(globs: list[str]) -> Callable[[str], object] | None:
        return re.compile("|".join(translate(g) for g in globs)).match if globs else None

    by_name = either([p.strip("/") for p in patterns if "/" not in p])
    by_path = either([p.rstrip("/") for p in patterns if os.path.isabs(p)])
    by_relative = either([p.strip("/") for p in patterns if "/" in p and not os.path.isabs(p)])

    def matches(name: str, relative: str, path: str) -> bool:
        return bool((by_name and by_name(name)) or (by_path and by_path(path))
                    or (by_relative and by_relative(relative)))

    return matches


def _importable_from(directory: str, root: str) -> bool:
    """Every folder from ``root`` down to ``directory`` is an identifier."""
    folders = os.path.relpath(directory, root).split(os.sep)
    return all(part.isidentifier() or part == os.curdir for part in folders)


def _module_of(path: str, root: str, found: Discovered, importable: bool) -> str:
    """``path``'s module name under ``root``; where a folder on the way is no
    identifier (``x.y/pkg``, ``my-tools/``: ``importable`` false, asked once a
    folder by ``_importable_from``), under the file's own import root (its
    packages' parent), which then becomes a search root too."""
    if importable:
        return module_name(path, root)
    own = import_root(path)
    if own not in found.roots:
        found.roots.append(own)
    return module_name(path, own)


_NOT_UTF8 = "its path is not UTF-8: no module can be imported by that name; not audited"


def _not_utf8(path: str) -> bool:
    """A name the file system gave as bytes that are not UTF-8 (surrogate-escaped here)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def discover(
    paths: list[str], exclude: Sequence[str] = DEFAULT_EXCLUDE, src: Sequence[str] = (),
) -> Discovered:
    """Raises FileNotFoundError for a path that does not exist. ``src``: the
    project's import roots (``source_roots``), searched after the audited
    ones; a file below one is named under it (``src/pkg/x.py`` is ``pkg.x``)."""
    found = Discovered()
    for given in paths:
        if not os.path.exists(given):
            raise FileNotFoundError(given)
    for given in paths:
        path = os.path.abspath(given)
        root = namespace_root(import_root(path), path)
        if root not in found.roots:
            found.roots.append(root)
        if os.path.isfile(path):
            if _not_utf8(path):
                found.problems.append((path, _NOT_UTF8))
                continue
            found.files[path] = module_name(path, root)
            continue
        if not os.path.isdir(path):  # a FIFO, a device: reading it could block or never end
            found.problems.append((path, "not a regular file or a directory"))
            continue
        _walk(path, root, found, exclude, frozenset(src))
    found.roots += [folder for folder in src if folder not in found.roots]
    return found


def _walk(top: str, root: str, found: Discovered, exclude: Sequence[str], src: frozenset[str]) -> None:
    """``os.walk(top, followlinks=True)``'s order, with ``scandir``'s entry
    types: a regular file costs no ``stat`` (one per file was ~10% of reading vLLM)."""
    seen: set[tuple[int, int]] = set()
    # Each folder with the folders above it: a link to one of those is a loop;
    # a link to a folder walked elsewhere (``alias -> pkg``) is the same files
    # again. And the root its modules are named under (a source root below the top).
    stack: list[tuple[str, frozenset[tuple[int, int]], str]] = [(top, frozenset(), root)]
    while stack:
        directory, above, root = stack.pop()
        try:
            stat = os.stat(directory)
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError as error:  # unlike os.walk, said: what it holds was not audited
            found.problems.append((directory, f"cannot read: {error.strerror or error}"))
            continue
        key = (stat.st_dev, stat.st_ino)
        if key in above:
            found.problems.append((directory, "symlink loop: a link to a folder above it"))
            continue
        if key in seen:
            continue  # another name for a folder already audited: its files once
        seen.add(key)
        inside = above | {key}
        subdirs = []
        importable: bool | None = None  # the folder's, asked once for all its files
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError as error:  # a symlink that loops back on itself
                found.problems.append((entry.path, f"cannot follow: {error.strerror or error}"))
                continue
            relative = entry.path[len(top) + 1 :].replace(os.sep, "/")
            if entry.name.startswith(".") or excluded(entry.name, relative, exclude, entry.path):
                continue
            if is_dir:
                subdirs.append(entry.path)
            elif entry.name.endswith(".py"):
                if _not_utf8(entry.path):
                    found.problems.append((entry.path, _NOT_UTF8))
                elif entry.is_file():
                    if importable is None:
                        importable = _importable_from(directory, root)
                    found.files[entry.path] = _module_of(entry.path, root, found, importable)
                elif entry.is_symlink() and not os.path.exists(entry.path):
                    found.problems.append((entry.path, "broken or looping symlink"))
                else:  # a FIFO, a device, or a link to one
                    found.problems.append((entry.path, "not a regular file"))
        stack += [(subdir, inside, subdir if subdir in src else root) for subdir in reversed(subdirs)]


def interpreter_in(given: str) -> str:
    """The Python ``given`` names: itself, or, for a virtual environment's
    folder, its ``bin/python`` (``Scripts/python.exe`` on Windows). Raises
    ValueError with the message to say."""
    if not os.path.isdir(given):
        return given
    for candidate in ("bin/python", "bin/python3", "Scripts/python.exe"):
        found = os.path.join(given, *candidate.split("/"))
        if os.path.isfile(found) and os.access(found, os.X_OK):
            return found
    raise ValueError(f"{given}: a folder with no bin/python in it: give a Python interpreter or "
                     "a virtual environment's folder")


def import_path_of(given: str) -> list[str]:
    """The import path (``sys.path``) of another Python, asked of it; nothing
    is imported here. ``given``: an interpreter or a virtual environment's
    folder. Raises ValueError with the message to say."""
    import json
    import subprocess

    python = interpreter_in(given)
    try:
        done = subprocess.run(
            [python, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
            capture_output=True, text=True, timeout=60, check=False,
        )
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired) as error:
        raise ValueError(f"{given}: cannot run it as Python ({error})") from None
    if not isinstance(found, list) or not all(isinstance(p, str) for p in found):
        raise ValueError(f"{given}: not a Python interpreter (exit {done.returncode})")
    return [p for p in found if p and os.path.isdir(p)]


def installed_vllm(import_path: list[str] | None = None) -> str | None:
    """The ``vllm`` package of ``import_path`` (another Python's ``sys.path``:
    found on disk, nothing imported) or of this Python (located, not imported)."""
    if import_path is not None:
        for entry in import_path:
            candidate = os.path.join(entry, "vllm")
            if os.path.isfile(os.path.join(candidate, "__init__.py")):
                return candidate
        return None
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(iter(spec.submodule_search_locations))
