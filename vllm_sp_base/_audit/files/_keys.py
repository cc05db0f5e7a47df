"""How the audit knows a file: its bytes (read with the fewest system calls),
its stat, its content key and its code key. No analysis here, so a run the
cache answers imports nothing more."""

from __future__ import annotations

import errno
import hashlib
import os
import stat

try:
    from vllm_sp_base._audit import _lexer
except ImportError:  # not compiled here
    _lexer = None  # type: ignore[assignment]

MAX_FILE_BYTES = 4 * 1024 * 1024

#: Size, modification time, inode and change time: unchanged, the file is taken
#: as unchanged. The change time is the one a rewrite in place cannot keep
#: (``rsync --inplace -t`` or a restored mtime keep the other three).
StatKey = tuple[int, int, int, int]

#: Said for a path that is no regular file (nor a folder: that says EISDIR), as
#: ``lexer/read.c`` says it.
NOT_REGULAR = "not a regular file (a FIFO, a device or a socket)"


class TooBig(Exception):
    def __init__(self, size: int) -> None:
        self.size = size


def open_regular(path: str) -> tuple[int, os.stat_result]:
    """A descriptor on ``path`` and its fstat, if it is a regular file; raises
    OSError otherwise. Opened without blocking, so a FIFO (with no writer it
    would block ``open()`` forever) or a device is refused, never waited on."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            if stat.S_ISDIR(found.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            raise OSError(NOT_REGULAR)
    except BaseException:
        os.close(fd)
        raise
    return fd, found


def read_file(path: str) -> bytes:
    """The file's bytes, with the fewest system calls (``open()`` adds a buffer
    and a probe or two per file); raises TooBig past MAX_FILE_BYTES, OSError
    for what is no regular file."""
    return read_with_stat(path)[0]


def read_with_stat(path: str) -> tuple[bytes, StatKey]:
    """``read_file``, and the stat key of what was read: taken from the
    descriptor before reading, so a change during the read shows as a change."""
    fd, found = open_regular(path)
    try:
        size = found.st_size
        if size > MAX_FILE_BYTES:
            raise TooBig(size)
        parts = [os.read(fd, size)]
        while sum(map(len, parts)) < size and parts[-1]:  # a short read: keep going
            parts.append(os.read(fd, size - sum(map(len, parts))))
        data = parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)
    return data, (found.st_size, found.st_mtime_ns, found.st_ino, found.st_ctime_ns)


def python_text(data: bytes) -> tuple[str, str]:
    """A Python file's text as Python reads it (a BOM, a coding declaration),
    and that encoding; newlines as they are. Raises UnicodeError, LookupError
    or SyntaxError (a declaration Python refuses) where Python could not read it."""
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


def code_key(data: bytes, digest: bytes | None = None) -> bytes | None:
    """What the audit can read in a file, blind to comments but suppressions:
    two versions with one code key give one result (see ``lexer/digest.c``).
    ``digest``: ``code_digest(data)`` where the pre-scan's pass already folded
    it (``read_and_scan``), so the file is not lexed again. None where the
    lexer is not compiled or cannot lex the file: then only identical bytes are
    the same file."""
    if digest is None and _lexer is not None:
        digest = _lexer.code_digest(data)
    if digest is None:
        return None
    hasher = hashlib.sha256(digest)
    second = data.find(b"\n", data.find(b"\n") + 1)
    hasher.update(data[: second if second >= 0 else len(data)])  # a coding declaration
    # A suppression is a comment the result depends on: a noqa, and
    # ``# vllm-sp-base: ignore[...]`` (``_suppress``).
    for needle in (b"noqa", b"vllm-sp-base:"):
        at = data.find(needle)
        counted, number = 0, 0  # newlines before ``counted``: counted once, not from 0 each time
        while at >= 0:
            start, end = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
            number += data.count(b"\n", counted, start)
            counted = start
            hasher.update(b"%d:" % number + data[start : end if end >= 0 else len(data)])
            at = data.find(needle, end) if end >= 0 else -1
    return hasher.digest()[:16]


def stat_key(path: str) -> StatKey | None:
    """The path's ``StatKey`` now; None where there is nothing to stat."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_size, found.st_mtime_ns, found.st_ino, found.st_ctime_ns


def content_key(data: bytes) -> bytes:
    # SHA-256 runs in hardware on current x86 and ARM: 3x blake2b on a warm run.
    return hashlib.sha256(data).digest()[:16]
