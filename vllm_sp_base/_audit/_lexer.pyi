# The audit's compiled passes: see lexer/bodies.c and lexer/scan.c.

from collections.abc import Set as AbstractSet

def cut_bodies(
    source: bytes, keep: tuple[bytes, ...], owners: AbstractSet[str] | None = None
) -> tuple[bytes, list[tuple[int, int, int, int, int, int]]] | None: ...
def scan(
    source: bytes,
) -> (
    tuple[
        list[tuple[str, tuple[str, ...], tuple[str, ...], bool, bool, bool]],
        list[tuple[str, str]],
        list[tuple[str, str]],
    ]
    | None
): ...
