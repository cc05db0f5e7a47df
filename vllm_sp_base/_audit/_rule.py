"""SPB001: an inherited read of an attribute that only a skipped ``__init__`` sets."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from vllm_sp_base._audit._finding import Finding
from vllm_sp_base._audit._model import ClassInfo, Method, Read
from vllm_sp_base._audit._project import ClassRef, Opaque, Project

ENTRY_POINTS = ("forward", "load_weights", "__call__")


@dataclass(frozen=True)
class Example:
    source: str
    expect: tuple[tuple[str, str, str], ...] = ()  # (class, attribute, severity)


def resolve_in_mro(
    mro: list[ClassRef | Opaque], infos: list[ClassInfo | None], name: str
) -> tuple[int, Method] | None:
    """The MRO index and method ``self.<name>`` finds; None past unknown code."""
    for i, info in enumerate(infos):
        if info is not None and name in info.methods:
            return i, info.methods[name]
        if isinstance(mro[i], Opaque):
            return None
    return None


def reach_self_calls(
    mro: list[ClassRef | Opaque],
    infos: list[ClassInfo | None],
    starts: Iterable[tuple[int, Method]],
    unconditional: bool,
) -> dict[str, tuple[int, Method]]:
    """Methods (other than ``__init__``) reached from ``starts`` through
    ``self.<method>()`` calls; only unconditional calls if ``unconditional``."""
    seen: dict[str, tuple[int, Method]] = {}
    todo = list(starts)
    while todo:
        _, method = todo.pop()
        for name, conditional in method.self_calls:
            if (unconditional and conditional) or name in seen:
                continue
            found = resolve_in_mro(mro, infos, name)
            if found is not None and found[1].name != "__init__":
                seen[name] = found
                todo.append(found)
    return seen


class SkippedInitRead:
    """A class writes its own ``__init__`` and does not run a parent's
    (``nn.Module.__init__(self)``, ``super(Parent, self).__init__()``, no call at
    all), yet a method it has (``forward``, ``load_weights``, ...) reads
    ``self.<attr>`` that only the skipped ``__init__`` sets.

    ``error``: an unconditional read in a method reached from ``forward``,
    ``load_weights`` or ``__call__``; otherwise ``warning``.
    """

    CODE = "SPB001"

    VALID = (
        Example(  # runs the parent's __init__
            "class Base:\n"
            "    def __init__(self):\n        self.flag = False\n"
            "    def forward(self):\n        return self.flag\n"
            "class Child(Base):\n"
            "    def __init__(self):\n        super().__init__()\n"
        ),
        Example(  # class-level default: the contract's fix
            "class Base:\n"
            "    flag = False\n"
            "    def __init__(self):\n        self.flag = True\n"
            "    def forward(self):\n        return self.flag\n"
            "class Child(Base):\n"
            "    def __init__(self):\n        pass\n"
        ),
        Example(  # sets it itself, through a helper called from __init__
            "class Base:\n"
            "    def __init__(self):\n        self.flag = False\n"
            "    def forward(self):\n        return self.flag\n"
            "class Child(Base):\n"
            "    def __init__(self):\n        self._setup()\n"
            "    def _setup(self):\n        self.flag = True\n"
        ),
        Example(  # a property of that name
            "class Base:\n"
            "    def __init__(self):\n        self._f = 1\n"
            "    @property\n    def flag(self):\n        return False\n"
            "    def forward(self):\n        return self.flag\n"
            "class Child(Base):\n"
            "    def __init__(self):\n        pass\n"
        ),
        Example(  # explicit parent call naming the direct parent
            "class Base:\n"
            "    def __init__(self):\n        self.flag = False\n"
            "    def forward(self):\n        return self.flag\n"
            "class Child(Base):\n"
            "    def __init__(self):\n        Base.__init__(self)\n"
        ),
        Example(  # the same, passing self by keyword
            "class Base:\n"
            "    def __init__(self):\n        self.flag = False\n"
            "    def forward(self):\n        return self.flag\n"
            "class Child(Base):\n"
            "    def __init__(self):\n        Base.__init__(self=self)\n"
        ),
    )

    INVALID = (
        Example(  # the seed: nn.Module.__init__(self) skips the parent
            "class Module:\n    pass\n"
            "class Base(Module):\n"
            "    def __init__(self):\n        Module.__init__(self)\n        self.flag = False\n"
            "    def forward(self):\n        if self.flag:\n            return 1\n        return 0\n"
            "class Child(Base):\n"
            "    def __init__(self):\n        Module.__init__(self)\n",
            (("Child", "flag", "error"),),
        ),
        Example(  # guarded read: warning
            "class Base:\n"
            "    def __init__(self):\n        self.flag = False\n"
            "    def forward(self, x):\n        if x:\n            return self.flag\n"
            "class Child(Base):\n"
            "    def __init__(self):\n        pass\n",
            (("Child", "flag", "warning"),),
        ),
        Example(  # super(Parent, self) jumps over Parent
            "class A:\n"
            "    def __init__(self):\n        self.flag = 1\n"
            "class B(A):\n"
            "    def __init__(self):\n        super().__init__()\n        self.size = 2\n"
            "    def load_weights(self):\n        return self.size\n"
            "class C(B):\n"
            "    def __init__(self):\n        super(B, self).__init__()\n",
            (("C", "size", "error"),),
        ),
        Example(  # a mixin whose __init__ does not call super
            "class Mixin:\n"
            "    def __init__(self):\n        self.extra = 1\n"
            "class Base:\n"
            "    def __init__(self):\n        self.flag = False\n"
            "    def __call__(self):\n        return self.flag\n"
            "class Both(Mixin, Base):\n    pass\n",
            (("Both", "flag", "error"),),
        ),
    )

    def __init__(self, project: Project, in_scope: Callable[[str], bool]) -> None:
        self.project = project
        self.in_scope = in_scope  # module name -> audited?

    def check(self, ref: ClassRef) -> list[Finding]:
        project = self.project
        mro = project.mro(ref)
        infos: list[ClassInfo | None] = [
            project.class_info(e) if isinstance(e, ClassRef) else None for e in mro
        ]
        if not any(i is not None and "__init__" in i.methods for i in infos[1:]):
            return []
        executed, skippers = self.construct(mro, infos)
        skipped = [
            i for i, info in enumerate(infos)
            if info is not None and "__init__" in info.methods and i not in executed
        ]
        skipper_refs = [mro[s] for s in skippers]
        if not skipped or not any(
            isinstance(r, ClassRef) and self.in_scope(r.module) for r in skipper_refs
        ):
            return []

        def resolve_method(name: str) -> tuple[int, Method] | None:
            return resolve_in_mro(mro, infos, name)

        def reach(starts: Iterable[tuple[int, Method]], unconditional: bool) -> dict[str, tuple[int, Method]]:
            return reach_self_calls(mro, infos, starts, unconditional)

        run_inits = [(i, infos[i].methods["__init__"]) for i in executed if infos[i] is not None]  # type: ignore[union-attr]
        skipped_inits = [(i, infos[i].methods["__init__"]) for i in skipped]  # type: ignore[union-attr]
        run_helpers = reach(run_inits, False)
        skipped_helpers = {k: v for k, v in reach(skipped_inits, False).items() if k not in run_helpers}

        set_by_run: set[str] = set()
        for _, method in run_inits + list(run_helpers.values()):
            set_by_run.update(method.sets)
        would_set: dict[str, tuple[int, int]] = {}  # attr -> (mro index, line)
        for i, method in skipped_inits + list(skipped_helpers.values()):
            for attr, line in method.sets.items():
                would_set.setdefault(attr, (i, line))
        class_level: set[str] = set()
        for info in infos:
            if info is not None:
                class_level |= info.class_attrs
        unset = set(would_set) - set_by_run - class_level
        if not unset:
            return []
        # Bodies are parsed only where they can name an attribute in question
        # (``Method.may_name``): most of an MRO's methods never are.
        unset_names = [attr.encode() for attr in unset]
        set_elsewhere: set[str] = set()
        for info in infos:
            if info is None:
                continue
            for name, method in info.methods.items():
                if name != "__init__" and name not in skipped_helpers and method.may_name(unset_names):
                    set_elsewhere.update(method.sets)
        missing = unset - set_elsewhere
        if not missing:
            return []

        missing_names = [attr.encode() for attr in missing]
        reads: list[tuple[str, int, Method, Read]] = []  # (method name, MRO index, method, read)
        resolved_names = {name for info in infos if info is not None for name in info.methods}
        for name in sorted(resolved_names - {"__init__"} - set(skipped_helpers)):
            found = resolve_method(name)
            if found is None or not found[1].may_name(missing_names):
                continue
            i, method = found
            reads += [(name, i, method, read) for read in method.reads if read.attr in missing]
        if not reads:
            return []
        entries = [found for name in ENTRY_POINTS if (found := resolve_method(name)) is not None]
        hot = {m.name: (i, m) for i, m in entries}
        hot.update(reach(entries, True))
        best: dict[str, tuple[bool, int, int, Method]] = {}  # attr -> (not error, index, line, method)
        for name, i, method, read in reads:
            candidate = (read.conditional or name not in hot, i, read.line, method)
            current = best.get(read.attr)
            if current is None or candidate[:3] < current[:3]:
                best[read.attr] = candidate
        findings = []
        cls = infos[0]
        assert cls is not None
        path = self._path(ref)
        entry_name = next((n for n in ENTRY_POINTS if n in hot), None)
        for attr, (not_error, i, line, method) in sorted(best.items()):
            error = not not_error
            owner = mro[i]
            skip_index, set_line = would_set[attr]
            skipped_ref = mro[skip_index]
            assert isinstance(owner, ClassRef) and isinstance(skipped_ref, ClassRef)
            skipper = self._skipper_for(skip_index, executed, mro)
            findings.append(Finding(
                code=self.CODE,
                severity="error" if error else "warning",
                path=path,
                line=cls.line,
                col=cls.col + 1,
                class_name=str(ref),
                attribute=attr,
                method=f"{owner}.{method.name}",
                read_path=self._path(owner),
                read_line=line,
                skipped_init=str(skipped_ref),
                skipped_path=self._path(skipped_ref),
                set_line=set_line,
                skipped_by=str(skipper),
                entry=entry_name if error else None,
            ))
        return findings

    def _path(self, ref: ClassRef) -> str:
        located = self.project.module_file(ref.module)
        return located[0] if located else ref.module

    @staticmethod
    def _skipper_for(index: int, executed: set[int], mro: list[ClassRef | Opaque]) -> ClassRef | Opaque:
        before = [i for i in executed if i < index]
        return mro[max(before)] if before else mro[0]

    def construct(
        self, mro: list[ClassRef | Opaque], infos: list[ClassInfo | None]
    ) -> tuple[set[int], set[int]]:
        """Simulate constructing ``mro[0]``: the MRO indexes whose ``__init__``
        run, and those of them that skip the next one."""
        executed: set[int] = set()
        index_of = {e: i for i, e in enumerate(mro)}

        def owner_from(start: int) -> int | None:
            for i in range(start, len(mro)):
                info = infos[i]
                if info is not None and "__init__" in info.methods:
                    return i
                if isinstance(mro[i], Opaque):
                    return None  # unknown code: assume it chains and sets nothing we see
            return None

        def run(start: int) -> None:
            i = owner_from(start)
            if i is None or i in executed:
                return
            executed.add(i)
            info = infos[i]
            owner = mro[i]
            assert info is not None and isinstance(owner, ClassRef)
            for call in info.methods["__init__"].init_calls:
                if call.kind == "super":
                    run(i + 1)
                    continue
                target = self.project.resolve(owner.module, call.target) if call.target else None
                k = index_of.get(target) if isinstance(target, ClassRef) else None
                if k is not None:
                    # super(X, self) starts after X; X.__init__(self) looks up from X.
                    run(k + 1 if call.kind == "super_of" else k)

        run(0)
        skippers = set()
        for i in executed:
            following = owner_from(i + 1)
            if following is not None and following not in executed:
                skippers.add(i)
        return executed, skippers
