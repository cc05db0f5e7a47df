"""What runs on a built instance: from the entry points the engine calls
(``_runtime``), every method that ``self.m()`` / ``super().m()`` /
``X.m(self)`` dispatch reaches, and the first read of each attribute in
question on the way.

A method that only an overridden method calls is not reached: dispatch starts
from the instance's class, as Python's does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from vllm_sp_base._audit.semantics._classes import ClassModel, Reached, nearest_test, walk
from vllm_sp_base._audit.summaries._events import Call, Known, Read, entailed
from vllm_sp_base._audit.summaries._summaries import bound_methods


def reach(
    model: ClassModel, wanted: set[str], entries: Sequence[str], features: Sequence[str] = (),
    decided: Known | None = None,
) -> dict[str, tuple[str, Reached]]:
    """For each attribute of ``wanted``, the read an entry point reaches first:
    the first reached on no condition (in entry order, then execution order),
    else the first reached at all; attribute -> (entry, read). A read reached
    from a feature's entry point (``features``) counts as conditional; what
    runs only under a test that ``decided`` attributes fail is not reached, and
    what runs only under tests they all pass runs on no condition."""
    best: dict[str, tuple[str, Reached]] = {}
    if not wanted:
        return best
    for entry in [*entries, *features]:
        found = model.lookup(entry, 0)
        if found is None or found[1] is None:
            continue
        feature = entry not in entries
        for order, step in enumerate(walk(model, (found[0], found[1]), {}, conditional=feature, decided=decided)):
            event = step.event
            if type(event) is not Read or step.caught or event.attr not in wanted:
                continue
            conditional = step.conditional and not (
                decided and step.sure_when is not None and entailed(step.sure_when, decided))
            current = best.get(event.attr)
            if current is None or (current[1].conditional and not conditional):
                guard = nearest_test(event, step.condition)
                between = tuple(dict.fromkeys(t for t in step.tests if t not in (step.condition, guard)))
                best[event.attr] = (entry, Reached(
                    event.attr, step.owner, step.method.name, event.line, step.chain, conditional,
                    step.condition, step.requires, guard, between, order, conditional != step.conditional))
    return best


def unreached(model: ClassModel, wanted: Iterable[str], skip: set[tuple[int, str]]) -> dict[str, Reached]:
    """The first read of each of ``wanted`` in any method of the MRO but those of
    ``skip``: reads no entry point reaches (``--show-unreachable``)."""
    left = set(wanted)
    found: dict[str, Reached] = {}
    names = [name.encode() for name in left]
    for index, info in enumerate(model.infos):
        if info is None:
            continue
        for name, method in bound_methods(info):
            if (index, name) in skip or not left or not method.may_name(names):
                continue
            for event in method.events:
                if type(event) is Read:
                    attr = event.attr
                elif type(event) is Call and event.kind == "self" and model.lookup(event.name) is None:
                    attr = event.name  # ``self.tokenizer_fun(text)``, no class defining it: the instance's attribute
                else:
                    continue
                if attr in left:
                    left.discard(attr)
                    found[attr] = Reached(
                        attr, index, name, event.line, (), event.conditional, event.condition, event.requires)
    return found
