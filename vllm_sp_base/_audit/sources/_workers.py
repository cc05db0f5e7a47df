"""The audit's work on every core: threads for the compiled lexer (which
releases the GIL), forked processes for everything that holds it."""

from __future__ import annotations

import os
import pickle
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from vllm_sp_base._audit.prescan._prescan import scan
from vllm_sp_base._audit.summaries._summaries import ModuleInfo, detach_sources, unparsable
from vllm_sp_base._audit.summaries._summarize import summarize


def cores() -> int:
    """The cores this process may run on (a container's or taskset's share)."""
    available = getattr(os, "sched_getaffinity", None)
    return min(len(available(0)) if available else os.cpu_count() or 1, 8)


def processes() -> int:
    """How many processes ``in_processes`` runs at once: one per core, where it can fork."""
    return cores() if hasattr(os, "fork") else 1


_THREADS = cores()
_PARALLEL_MIN_JOBS = 8
_T = TypeVar("_T")
_R = TypeVar("_R")
# What a worker inherits through fork: the audited files' bytes, and the
# classes whose ``__init__`` bodies are parsed with their modules (see
# ``Candidates.in_mros``; None: every class's).
_FORKED_TEXTS: dict[str, bytes] = {}
_INITS_OF: frozenset[str] | None = None


def set_inits_of(names: frozenset[str] | None) -> None:
    """``_INITS_OF`` for the summaries made from now on, here and in workers forked later."""
    global _INITS_OF
    _INITS_OF = names


def in_threads(function: Callable[[str], _T], items: list[str]) -> list[_T]:
    """``function`` of each item, on a few threads, in order. Worth it where
    ``function`` spends its time without the GIL; items go in slices, since a
    future per item costs more than reading a file."""
    if _THREADS < 2 or len(items) < _PARALLEL_MIN_JOBS:
        return [function(item) for item in items]
    size = -(-len(items) // (_THREADS * 4))
    slices = [items[i : i + size] for i in range(0, len(items), size)]
    done: list[list[_T]] = [[] for _ in slices]
    errors: list[BaseException] = []
    next_slice = iter(range(len(slices)))  # shared: next() on it is atomic under the GIL

    def work() -> None:
        try:
            for k in next_slice:
                done[k] = [function(item) for item in slices[k]]
        except BaseException as error:  # noqa: BLE001 (re-raised in the caller)
            errors.append(error)

    # Plain threads: concurrent.futures would import logging, ~5 ms of every run.
    threads = [threading.Thread(target=work) for _ in range(_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return [value for part in done for value in part]


def in_processes(function: Callable[[_T], _R], items: list[_T]) -> list[_R]:
    """``function`` of each item, in order: the first here, each other in a
    process forked for it, its result sent back pickled through a pipe. The
    children inherit everything read and parsed so far and share nothing
    after: no pool, no queue, one pipe each. Without ``fork``, all run here."""
    if len(items) < 2 or not hasattr(os, "fork"):
        return [function(item) for item in items]
    children: list[tuple[int, int]] = []
    try:
        for item in items[1:]:
            children.append(_fork(function, item))
        first = function(items[0])
    except BaseException:
        for pid, _ in children:
            os.kill(pid, signal.SIGKILL)
        raise
    finally:
        answers = [_collect(pid, read_end) for pid, read_end in children]
    results = [first]
    for ok, value in answers:
        if not ok:
            raise value
        results.append(value)
    return results


class Queues(Generic[_T]):
    """Each group's items behind a pipe of its own, written (and its writing
    end closed) before the processes fork: a process takes its own group's,
    in order, then what is left of the others' (a 4-byte read from a pipe is
    atomic). The split's grouping stays, and no process idles while another
    has items left: the groups' cost is only guessed beforehand."""

    #: Items a group may hold: its indices fit a pipe's buffer on any system (4 KiB).
    MAX_ITEMS = 1024

    def __init__(self, groups: list[list[_T]]) -> None:
        self.items = [item for group in groups for item in group]
        self.ends: list[int] = []
        first = 0
        try:
            for group in groups:
                read_end, write_end = os.pipe()
                self.ends.append(read_end)
                indices = b"".join(i.to_bytes(4, "little") for i in range(first, first + len(group)))
                try:
                    while indices:
                        indices = indices[os.write(write_end, indices):]
                finally:
                    os.close(write_end)
                first += len(group)
        except BaseException:
            self.close()
            raise

    @classmethod
    def fit(cls, groups: list[list[_T]]) -> bool:
        return all(len(group) <= cls.MAX_ITEMS for group in groups)

    def taker(self, own: int) -> Iterator[_T]:
        """What the process of group ``own`` checks, read lazily: in that process."""
        for read_end in self.ends[own:] + self.ends[:own]:
            while len(index := os.read(read_end, 4)) == 4:
                yield self.items[int.from_bytes(index, "little")]

    def close(self) -> None:
        for read_end in self.ends:
            os.close(read_end)
        self.ends = []


def _fork(function: Callable[[_T], Any], item: _T) -> tuple[int, int]:
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise
    if pid:
        os.close(write_end)
        return pid, read_end
    status = 1
    try:  # the child: never returns into the caller's frames
        os.close(read_end)
        try:
            answer = pickle.dumps((True, function(item)), pickle.HIGHEST_PROTOCOL)
        except BaseException as error:  # noqa: BLE001 (raised again in the parent)
            answer = _pickled_error(error)
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(answer)
        status = 0
    finally:
        os._exit(status)


def _pickled_error(error: BaseException) -> bytes:
    try:
        return pickle.dumps((False, error), pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 (an exception that does not pickle: its text does)
        return pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error}")))


def _collect(pid: int, read_end: int) -> tuple[bool, Any]:
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    try:
        answer: tuple[bool, Any] = pickle.loads(data)
    except Exception:  # noqa: BLE001 (no answer, or half of one: it was killed)
        return False, RuntimeError(f"an audit process ended without an answer (wait status {status})")
    return answer


def summarize_or_reason(data: bytes, path: str, kind: bytes) -> ModuleInfo | str:
    """Kinds: ``M``/``P`` a module/package cut, ``m``/``p`` parsed whole."""
    try:
        return summarize(data, path, kind in b"Pp", cut=kind.isupper(), inits_of=_INITS_OF)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return unparsable(error)


def _job(job: tuple[str, bytes, bytes | None]) -> Any:
    path, kind, data = job
    if data is None:
        data = _FORKED_TEXTS[path]
    if kind == b"S":
        return scan(data)
    summary = summarize_or_reason(data, path, kind)
    if isinstance(summary, ModuleInfo):
        detach_sources(summary)  # the parent has the bytes: no need to send them back
    return summary


def _quiet_worker() -> None:
    """A pool worker leaves Ctrl-C to the audit's own process (which ends the
    pool) and says nothing itself: a job's error travels back with its answer,
    and what the pool's machinery would print when the parent is gone (a
    broken pipe after SIGTERM) is no news to the person who stopped it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


class Workers:
    """One pool of forked workers for the whole run. The audited files' bytes
    reach them through fork; a file read later travels with its job."""

    def __init__(self, texts: dict[str, bytes]) -> None:
        self.texts = texts
        self.forked: set[str] = set()
        self.size = cores()
        self._pool: Any = None

    def map(self, jobs: list[tuple[str, bytes]]) -> list[Any]:
        import multiprocessing as mp  # only where a pool runs: ~5 ms of every start otherwise

        if self.size < 2 or len(jobs) < _PARALLEL_MIN_JOBS or "fork" not in mp.get_all_start_methods():
            return [_job((path, kind, self.texts[path])) for path, kind in jobs]
        if self._pool is None:
            global _FORKED_TEXTS
            _FORKED_TEXTS = self.texts
            self.forked = set(self.texts)
            self._pool = mp.get_context("fork").Pool(self.size, initializer=_quiet_worker)
            _FORKED_TEXTS = {}
        payload = [(p, k, None if p in self.forked else self.texts[p]) for p, k in jobs]
        chunk = max(1, len(payload) // (self.size * 4))
        return list(self._pool.map(_job, payload, chunksize=chunk))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool = None
