"""What a framework's class refuses until its own ``__init__`` ran, as reads:
torch's ``Module`` raises ``cannot assign module before Module.__init__()
call`` where a submodule is assigned (or ``register_buffer`` called) on an
instance whose ``Module.__init__`` never ran, because it looks for the
dictionaries that ``__init__`` sets. Each refusal is a read of those
attributes where the assignment or the call runs, so construction meets it
as it meets any read of what a skipped ``__init__`` sets."""

from __future__ import annotations

from collections.abc import Sequence

from vllm_sp_base._audit.frameworks import Refusal
from vllm_sp_base._audit.semantics._classes import ClassModel, Executed
from vllm_sp_base._audit.semantics._project import ClassRef
from vllm_sp_base._audit.summaries._events import Call, Read, Set


class Refusing:
    """The refusals of ``refusals`` whose class is in ``model``'s MRO, and
    the reads each assignment or call of a construction walk makes by them."""

    def __init__(self, model: ClassModel, refusals: Sequence[Refusal]) -> None:
        self.model = model
        # By where each class is defined: a framework's own classes, never
        # vendored, and names as common as ``Parameter`` (``inspect``'s).
        names = [str(entry) if isinstance(entry, ClassRef) else "" for entry in model.mro]
        # MRO index of the refusing class -> its refusal
        self.by_index = {names.index(r.cls): r for r in refusals if r.cls in names}
        self.assigned = {cls: reads for r in self.by_index.values() for cls, reads in r.assigned}
        self.looked_for = {attr for r in self.by_index.values()
                           for _, reads in (*r.calls, *r.assigned) for attr in reads}

    def reads(self, step: Executed, set_so_far: set[str]) -> list[Read]:
        """What ``step`` reads by a refusal, before it runs; none where
        construction has set all a refusal looks for (the framework's
        ``__init__`` ran), as it has before nearly every assignment."""
        if not self.by_index or self.looked_for <= set_so_far:
            return []
        event = step.event
        if type(event) is Call and step.target is not None and step.target[1] is not None:
            refusal = self.by_index.get(step.target[0])
            called = step.target[1].name
            attrs = () if refusal is None else next((r for name, r in refusal.calls if name == called), ())
            return [Read(attr, event.line, event.col, event.conditional, event.condition, event.requires)
                    for attr in attrs]
        if type(event) is Set and event.made is not None and self.assigned:
            # A set keeps no test of its own: the step's say where it runs.
            return [Read(attr, event.line, 0, event.conditional, step.condition, step.requires)
                    for attr in self._assigned_reads(step.owner, event.made)]
        return []

    def _assigned_reads(self, owner: int, made: str) -> tuple[str, ...]:
        """The reads assigning what ``made(...)`` builds makes: a class whose
        MRO holds a class the refusals name (``nn.Linear``: a ``Module``)."""
        entry = self.model.mro[owner]
        if not isinstance(entry, ClassRef):
            return ()
        project = self.model.project
        built = project.resolve(entry.module, made)
        if not isinstance(built, ClassRef):
            return ()  # a function, or a class the source does not show: what it returns is unknown
        for base in project.mro(built):
            reads = self.assigned.get(str(base)) if isinstance(base, ClassRef) else None
            if reads is not None:
                return reads
        return ()
