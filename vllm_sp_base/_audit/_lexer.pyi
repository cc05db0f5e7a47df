# The audit's compiled passes: see lexer/bodies.c, lexer/scan.c and lexer/read.c.

from collections.abc import Set as AbstractSet
from typing import TypeAlias

# (classes, aliases, imported, modules); a class:
# (name, bases, written, has_init, init_chains, init_explicit, init_sets, generated)
_Scanned: TypeAlias = tuple[
    list[tuple[str, tuple[str, ...], tuple[str, ...], bool, bool, bool, bool, bool]],
    list[tuple[str, str]],
    list[tuple[str, str]],
    list[tuple[str, str]],
]

def cut_bodies(
    source: bytes, keep: tuple[bytes, ...], owners: AbstractSet[str] | None = None
) -> tuple[bytes, list[tuple[int, int, int, int, int, int]]] | None: ...
def scan(source: bytes) -> _Scanned | None: ...

# Not on Windows. (bytes, scan, code_digest(bytes) or None where the scan did
# not lex to the end or `digest` is false, (size, mtime_ns, inode) from the descriptor read); (None, size): the file is
# over `limit` bytes. Raises OSError, for anything but a regular file too.
def read_and_scan(
    path: str, limit: int, digest: bool = True
) -> tuple[bytes, _Scanned | None, bytes | None, tuple[int, int, int, int]] | tuple[None, int]: ...
def code_digest(source: bytes) -> bytes | None: ...
def spells_any(source: bytes, needles: tuple[bytes, ...]) -> bool: ...
