"""The shape of a framework's description."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wrapper:
    """The framework wraps ``method`` of every subclass of a driven class once
    one of ``installed_by`` (methods of the driven class itself) has run on
    the instance; the wrapper, in the driven class's ``by``, reads ``reads``
    of the instance before the subclass's method runs."""

    method: str
    by: str
    reads: tuple[str, ...]
    installed_by: tuple[str, ...]


@dataclass(frozen=True)
class Refusal:
    """Until ``cls.__init__`` has run on the instance, the framework's class
    refuses (raises AttributeError): calling one of its methods in ``calls``,
    or assigning to an attribute an instance of a class in ``assigned`` (by
    where it is defined, matched by last name; a subclass's instance too).
    Each (name, reads) pair says which attributes of ``cls.__init__``'s the
    refusal tests (torch's ``register_buffer`` looks for ``_buffers``)."""

    cls: str
    calls: tuple[tuple[str, tuple[str, ...]], ...] = ()
    assigned: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class Driven:
    """A plain (not torch module) class the framework builds and drives, by
    where it is defined (``vllm.v1.worker.worker_base.WorkerBase``, matched by
    its last name: forks and vendored copies keep the name, not the module),
    and the methods it calls on every subclass's instance."""

    cls: str
    calls: tuple[str, ...]
    wrappers: tuple[Wrapper, ...] = ()


@dataclass(frozen=True)
class Framework:
    """``module_entry_points``: what the framework calls on every torch module
    it runs; ``feature_entry_points``: what it calls only with a feature on (a
    read reached only from these is at most a warning); ``driven``: the plain
    classes it drives; ``refusals``: what its classes refuse until their own
    ``__init__`` ran."""

    name: str
    module_entry_points: tuple[str, ...] = ()
    feature_entry_points: tuple[str, ...] = ()
    driven: tuple[Driven, ...] = ()
    refusals: tuple[Refusal, ...] = ()
