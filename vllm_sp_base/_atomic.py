"""All-or-nothing writes of several files, whatever moment a kill comes.

Each new file is staged as a hidden sibling of its target (``.NAME`` +
``STAGED``) and synced. Then a journal listing every move is written
atomically under the root: that is the commit point. Then each staged file
is moved into place, and the journal removed.

The next ``--write`` run first calls ``finish_interrupted``: with a journal,
it makes the moves still to make (the tree ends rewritten); without one, it
removes staged files a run killed before its commit point left (the tree was
never touched). Only one writer at a time per tree is supported.

A write that fails (a read-only tree, a full disk) raises ``WriteError``
naming the file: before the commit point it has removed what it staged and the
folders it made; past it, the next run finishes the moves.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
from collections.abc import Iterable

JOURNAL = ".vllm-sp-base-journal.json"
STAGED = ".vllm-sp-base-new"
_VERSION = 1


class JournalError(Exception):
    """A journal that cannot be read or finished: the tree is left as it is."""


class WriteError(Exception):
    """A write that failed: ``path`` (the file or folder it was writing), why,
    and whether it failed past the commit point (``begun``: the next run with
    the same destination finishes it) or before (nothing changed)."""

    def __init__(self, path: str, why: str, begun: bool) -> None:
        super().__init__(f"{path}: {why}")
        self.path, self.why, self.begun = path, why, begun


def _why(error: OSError) -> str:
    return error.strerror or str(error)


def staged_name(path: str) -> str:
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}{STAGED}")


def write_all(root: str, targets: list[tuple[str, str]]) -> None:
    """Write every (path, text) or none: see the module's docstring. Paths
    are real (symlinks resolved by the caller), so a link stays a link.
    Raises WriteError; before the commit point it leaves nothing behind, not
    even the folders it made."""
    try:
        finish_interrupted(root, {os.path.dirname(path) for path, _ in targets})
    except OSError as error:
        raise WriteError(error.filename or root, f"cannot finish an interrupted write: {_why(error)}",
                         begun=True) from None
    staged: list[tuple[str, str]] = []
    made: list[str] = []
    writing = root
    try:
        for path, text in targets:
            writing = os.path.dirname(path)
            made += make_folders(writing)
            writing = path  # named, not its hidden staged sibling
            staging = staged_name(path)
            staged.append((staging, path))
            _write_synced(staging, text.encode("utf-8"))
            if os.path.exists(path):
                shutil.copymode(path, staging)
            else:
                os.chmod(staging, 0o644)
        writing = os.path.join(root, JOURNAL)
        _write_journal(root, staged)
    except BaseException as error:
        for staging in [s for s, _ in staged] + [os.path.join(root, JOURNAL + ".tmp")]:
            with contextlib.suppress(OSError):
                os.remove(staging)
        remove_folders(made)
        if isinstance(error, OSError):
            raise WriteError(writing, _why(error), begun=False) from None
        raise
    try:
        _commit(root, staged)
    except OSError as error:
        raise WriteError(error.filename or root, _why(error), begun=True) from None


def make_folders(directory: str) -> list[str]:
    """``os.makedirs(directory, exist_ok=True)``, returning the folders it
    made, outermost first (for ``remove_folders``)."""
    missing: list[str] = []
    while not os.path.isdir(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    made: list[str] = []
    try:
        for folder in reversed(missing):
            if os.path.lexists(folder):
                raise NotADirectoryError(errno.ENOTDIR, "exists and is not a folder", folder)
            os.mkdir(folder)
            made.append(folder)
    except OSError:
        remove_folders(made)
        raise
    return made


def remove_folders(made: list[str]) -> None:
    """Remove the folders ``make_folders`` made, innermost first, where still empty."""
    for folder in reversed(made):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def finish_interrupted(root: str, directories: Iterable[str] = ()) -> list[str]:
    """Finish what a killed write began (see the module's docstring); returns
    the files it moved into place. ``directories``: where staged files of a
    run killed before its commit point may lie (the targets' folders)."""
    journal = os.path.join(root, JOURNAL)
    try:
        with open(journal, encoding="utf-8") as handle:
            recorded = json.load(handle)
    except FileNotFoundError:
        recorded = None
    except (OSError, ValueError) as error:
        raise JournalError(f"{journal}: cannot read the journal of an interrupted write: {error}") from None
    moved: list[str] = []
    if recorded is not None:
        moves = _moves(recorded, journal)
        moved = [path for staging, path in moves if os.path.exists(staging)]
        _commit(root, moves)
    # A journal killed while it was written: nothing committed. Looked for
    # first: on a read-only tree, removing even a missing file fails.
    if os.path.lexists(journal + ".tmp"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(journal + ".tmp")
    for directory in {*directories, *(os.path.dirname(p) for p in moved)}:
        with contextlib.suppress(OSError):
            for name in os.listdir(directory):
                if name.startswith(".") and name.endswith(STAGED):
                    os.remove(os.path.join(directory, name))
    return moved


def _moves(recorded: object, journal: str) -> list[tuple[str, str]]:
    if (
        isinstance(recorded, dict)
        and recorded.get("version") == _VERSION
        and isinstance(recorded.get("moves"), list)
        and all(
            isinstance(m, list) and len(m) == 2 and all(isinstance(p, str) for p in m)
            and m[0] == staged_name(m[1])
            for m in recorded["moves"]
        )
    ):
        return [(staging, path) for staging, path in recorded["moves"]]
    raise JournalError(f"{journal}: not a journal this tool wrote; left as it is")


def _commit(root: str, staged: list[tuple[str, str]]) -> None:
    """Past the commit point: each staged file into place, then the journal
    gone. Moving a file already moved is skipped, so it can run again."""
    for staging, path in staged:
        if os.path.exists(staging):
            os.replace(staging, path)
    for directory in {os.path.dirname(path) for _, path in staged}:
        _sync_directory(directory)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(root, JOURNAL))
    _sync_directory(root)


def _write_journal(root: str, staged: list[tuple[str, str]]) -> None:
    text = json.dumps({"version": _VERSION, "moves": [list(m) for m in staged]}, indent=1)
    journal = os.path.join(root, JOURNAL)
    _write_synced(journal + ".tmp", text.encode("utf-8"))
    os.replace(journal + ".tmp", journal)
    _sync_directory(root)


def _write_synced(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(path)
        raise


def _sync_directory(directory: str) -> None:
    """The renames in ``directory`` on disk (where the system allows)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
