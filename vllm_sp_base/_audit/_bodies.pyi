# The compiled body cutter: see _bodies.c.

def cut_bodies(
    source: bytes, keep: tuple[bytes, ...]
) -> tuple[bytes, list[tuple[int, int, int, int, int, int]]] | None: ...
