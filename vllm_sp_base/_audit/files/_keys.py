"""How the audit knows a file: its bytes (read with the fewest system calls),
its stat, its content key and its code key. No analysis here, so a run the
cache answers imports nothing more."""

from __future__ import annotations

import hashlib
import os

try:
    from vllm_sp_base._audit import _lexer
except ImportError:  # not compiled here
    _lexer = None  # type: ignore[assignment]

MAX_FILE_BYTES = 4 * 1024 * 1024


class TooBig(Exception):
    def __init__(self, size: int) -> None:
        self.size = size


def read_file(path: str) -> bytes:
    """The file's bytes, with the fewest system calls (``open()`` adds a buffer
    and a probe or two per file); raises TooBig past MAX_FILE_BYTES."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        size = os.fstat(fd).st_size
        if size > MAX_FILE_BYTES:
            raise TooBig(size)
        parts = [os.read(fd, size)]
        while sum(map(len, parts)) < size and parts[-1]:  # a short read: keep going
            parts.append(os.read(fd, size - sum(map(len, parts))))
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


def code_key(data: bytes) -> bytes | None:
    """What the audit can read in a file, blind to comments but suppressions:
    two versions with one code key give one result (see ``lexer/digest.c``).
    None where the lexer is not compiled or cannot lex the file: then only
    identical bytes are the same file."""
    digest = _lexer.code_digest(data) if _lexer is not None else None
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


def stat_key(path: str) -> tuple[int, int, int] | None:
    """Size, modification time and inode: unchanged, the file is taken as unchanged."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_size, found.st_mtime_ns, found.st_ino


def content_key(data: bytes) -> bytes:
    # SHA-256 runs in hardware on current x86 and ARM: 3x blake2b on a warm run.
    return hashlib.sha256(data).digest()[:16]
