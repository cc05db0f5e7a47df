"""Whether ``C(...)`` may skip an ``__init__`` (``may_skip_an_init``), shared
along single-inheritance chains: a class with one base whose own ``__init__``
is absent or runs only ``super().__init__()`` on no test skips exactly what
its base skips (its MRO is the base's after itself, and every lookup of the
walk shifts by one), so only the first class up a chain that is no such link
builds its model. A chain N deep costs O(N), not O(N²).
"""

from __future__ import annotations

from vllm_sp_base._audit.semantics._classes import ClassModel
from vllm_sp_base._audit.semantics._construction import may_skip_an_init
from vllm_sp_base._audit.semantics._project import ClassRef, Project


class SkipAnswers:
    """``may_skip_an_init`` per class of ``project``, each asked once a run."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._answers: dict[ClassRef, bool] = {}

    def __call__(self, ref: ClassRef) -> bool:
        links: list[ClassRef] = []
        node = ref
        while node not in self._answers:
            base = self._link_to(node)
            if base is None or base in links or base == ref:
                self._answers[node] = may_skip_an_init(ClassModel(self.project, node))
                break
            links.append(node)
            node = base
        answer = self._answers[node]
        for link in links:
            self._answers[link] = answer
        return answer

    def _link_to(self, ref: ClassRef) -> ClassRef | None:
        """The one base of ``ref`` whose MRO is ``ref``'s after ``ref`` itself,
        where ``ref``'s own ``__init__`` (if any) surely runs that base's chain
        and nothing else (one ``super().__init__()``, on no test); else None."""
        project = self.project
        info = project.class_info(ref)
        bases = project.bases(ref)
        if info is None or info.held or len(bases) != 1 or not isinstance(bases[0], ClassRef):
            # ``parent = Mixin`` in the body: ``self.parent.__init__(self)`` up the
            # chain finds it from this class on, so its answer may not be its base's.
            return None
        base = bases[0]
        if len(project.mro(ref)) != len(project.mro(base)) + 1:
            return None  # a cycle cut short: not the base's MRO
        init = info.methods.get("__init__")
        if init is not None:
            calls = init.init_calls
            if len(calls) != 1 or calls[0].kind != "super" or (
                    calls[0].conditional and calls[0].condition is not None and not calls[0].caught):
                return None
        return base
