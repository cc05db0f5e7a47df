"""All-or-nothing writes of several files, whatever moment a kill comes.

Each new file is staged as a hidden sibling of its target (``.NAME`` +
``STAGED``) and synced. Then a journal listing every move is written
atomically under the root: that is the commit point. Then each staged file
is moved into place, and the journal removed.

A target is replaced only if it still holds the bytes the caller read
(``expected``): the old file is first linked to a hidden sibling (``OLD``),
compared, replaced, and compared again through that link, since a writer
that appended in between wrote to the old file; if either comparison
differs, the old file goes back in place and the path is returned as left
alone. No byte another process wrote is lost while the write runs to its end
(a kill between the move and the second comparison is the one gap).

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
from collections.abc import Iterable, Mapping, Sequence

JOURNAL = ".vllm-sp-base-journal.json"
STAGED = ".vllm-sp-base-new"
OLD = ".vllm-sp-base-old"
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


def _old_name(path: str) -> str:
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}{OLD}")


def write_all(root: str, targets: Sequence[tuple[str, str | bytes]],
              expected: Mapping[str, bytes | None] | None = None) -> list[str]:
    """Write every (path, text or bytes) or none: see the module's docstring.
    Paths are real (symlinks resolved by the caller), so a link stays a link.
    ``expected``: what each path held when it was read (None: no file); a path
    that holds anything else by its move is left alone and returned.
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
            _write_synced(staging, text.encode("utf-8") if isinstance(text, str) else text)
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
        return _commit(root, staged, expected or {})
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
    moves: list[tuple[str, str]] = []
    if recorded is not None:
        moves = _moves(recorded, journal)
        moved = [path for staging, path in moves if os.path.exists(staging)]
        _commit(root, moves)
    # A journal killed while it was written: nothing committed. Looked for
    # first: on a read-only tree, removing even a missing file fails.
    if os.path.lexists(journal + ".tmp"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(journal + ".tmp")
    for directory in {*directories, *(os.path.dirname(path) for _, path in moves)}:
        with contextlib.suppress(OSError):
            for name in os.listdir(directory):
                if name.startswith(".") and name.endswith(STAGED):
                    os.remove(os.path.join(directory, name))
                elif name.startswith(".") and name.endswith(OLD):
                    _put_back_if_alone(os.path.join(directory, name))
    return moved


def _put_back_if_alone(old: str) -> None:
    """An old file a kill left linked aside: where its target is gone, it goes
    back; otherwise the link is dropped (the target is the same file or the
    new one)."""
    target = os.path.join(os.path.dirname(old), os.path.basename(old)[1:-len(OLD)])
    if os.path.lexists(target):
        os.remove(old)
    else:
        os.replace(old, target)


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


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _replace_unless_changed(staging: str, path: str, expected: bytes | None) -> bool:
    """``staging`` into ``path`` if ``path`` holds ``expected`` before and
    after the move (see the module's docstring); False: left alone."""
    if expected is None:  # a new file: os.link fails where one appeared meanwhile
        try:
            os.link(staging, path)
        except FileExistsError:
            os.remove(staging)
            return False
        os.remove(staging)
        return True
    old = _old_name(path)
    with contextlib.suppress(FileNotFoundError):
        os.remove(old)
    try:
        os.link(path, old)
    except FileNotFoundError:
        os.remove(staging)
        return False
    except OSError:  # no hard links here: compare, then move, as closely as can be
        if _read(path) != expected:
            os.remove(staging)
            return False
        os.replace(staging, path)
        return True
    if _read(old) != expected:
        os.remove(old)
        os.remove(staging)
        return False
    os.replace(staging, path)
    if _read(old) != expected:  # written between the check and the move: put it back
        os.replace(old, path)
        return False
    os.remove(old)
    return True


def _commit(root: str, staged: list[tuple[str, str]],
            expected: Mapping[str, bytes | None] | None = None) -> list[str]:
    """Past the commit point: each staged file into place, then the journal
    gone. Moving a file already moved is skipped, so it can run again. With
    ``expected``, a target that changed since it was read is left alone;
    those are returned."""
    left: list[str] = []
    for staging, path in staged:
        if not os.path.exists(staging):
            continue
        if expected is not None and path in expected:
            if not _replace_unless_changed(staging, path, expected[path]):
                left.append(path)
        else:
            os.replace(staging, path)
    for directory in {os.path.dirname(path) for _, path in staged}:
        _sync_directory(directory)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(root, JOURNAL))
    _sync_directory(root)
    return left


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
