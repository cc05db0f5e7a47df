"""Whole-program resolution over source files: modules, names, MROs.

Roots are searched in order: the audited roots first, then the installed
packages (``sys.path``), so a package found under an audited path wins over an
installed one of the same name. Nothing is imported or executed.
"""

from __future__ import annotations

import builtins
import heapq
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from vllm_sp_base._audit.summaries._events import Import
from vllm_sp_base._audit.summaries._summaries import ClassInfo, Method, ModuleInfo


@dataclass(frozen=True, slots=True)
class ClassRef:
    module: str
    name: str

    def __str__(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(frozen=True, slots=True)
class ModuleRef:
    name: str


@dataclass(frozen=True, slots=True)
class Opaque:
    """A base the source does not let us resolve (C extension, expression, builtin)."""

    text: str


def is_builtin(name: str) -> bool:
    """Whether the base or metaclass name ``name`` (``type``, ``builtins.dict``) is a builtin's."""
    return name.removeprefix("builtins.") in vars(builtins)


Target = ClassRef | ModuleRef
MroEntry = ClassRef | Opaque
EXPRESSION = "<expression>"  # an Opaque base that is not a name (``class C(make_base())``)
_MAX_DEPTH = 40
_STAR_IMPORT = re.compile(rb"import\s*\*")


class Project:
    def __init__(
        self,
        roots: list[str],
        load: Callable[[str, bool], ModuleInfo | None],
        text: Callable[[str], bytes | None] = lambda path: None,
    ) -> None:
        """``load(path, is_package)`` returns a module's summary, or None when it
        cannot be read or parsed (the caller records why); ``text(path)`` gives a
        file's bytes, so star imports that cannot bind a name are not parsed."""
        self.roots = roots
        self._load = load
        self._text = text
        self._top_root: dict[str, str | None] = {}
        self._files: dict[str, tuple[str, bool] | None] = {}
        self._looked_up: dict[str, tuple[str, bool] | None] = {}  # what the roots answered
        self._modules: dict[str, ModuleInfo | None] = {}
        self._mro: dict[ClassRef, list[MroEntry]] = {}
        self._bases: dict[ClassRef, list[MroEntry]] = {}
        self._star_importing: dict[str, bool] = {}  # module -> its source has ``import *``

    def source(self, path: str) -> bytes | None:
        """A file's bytes, as the run read them."""
        return self._text(path)

    # Modules -----------------------------------------------------------
    def _root_of(self, top: str) -> str | None:
        if top not in self._top_root:
            found = None
            for root in self.roots:
                base = os.path.join(root, top)
                if os.path.isdir(base) or os.path.isfile(base + ".py"):
                    found = root
                    break
            self._top_root[top] = found
        return self._top_root[top]

    def module_file(self, module: str) -> tuple[str, bool] | None:
        if module in self._files:
            return self._files[module]
        result = None
        parts = module.split(".")
        root = self._root_of(parts[0])
        if root is not None:
            base = os.path.join(root, *parts)
            if os.path.isfile(os.path.join(base, "__init__.py")):
                result = (os.path.join(base, "__init__.py"), True)
            elif os.path.isfile(base + ".py"):
                result = (base + ".py", False)
            elif os.path.isdir(base):
                result = ("", True)  # namespace package
        self._files[module] = self._looked_up[module] = result
        return result

    def in_stdlib(self, top: str) -> bool:
        """Whether the top-level module ``top`` is the standard library's: built
        into the interpreter (no file), or found beside ``os.py`` (not a
        project's module that shares a standard name)."""
        located = self.module_file(top)
        if located is None:
            return True
        stdlib = self.module_file("os")
        if stdlib is None:
            return False
        home = os.path.dirname(stdlib[0])
        return located[0].startswith(home + os.sep) and os.sep + "site-packages" + os.sep not in located[0]

    def resolved(self) -> dict[str, tuple[str, bool] | None]:
        """Each module looked for and what ``module_file`` found (None: not
        found): the whole of what the roots decided. A later run whose roots
        answer each the same (none found now in an earlier root, none that
        appeared) resolves as this one did."""
        return dict(self._looked_up)

    def module(self, module: str) -> ModuleInfo | None:
        if module not in self._modules:
            located = self.module_file(module)
            info = None
            if located is not None:
                path, is_package = located
                info = ModuleInfo({}, {}, {}, {}, [], {}, True) if not path else self._load(path, is_package)
            self._modules[module] = info
        return self._modules[module]

    def add_module(self, module: str, info: ModuleInfo, path: str | None = None) -> None:
        """A module the roots do not find under its name (``x.y/m.py``: no
        import reaches it), known by its file all the same."""
        self._modules[module] = info
        if path is not None:
            self._files[module] = (path, os.path.basename(path) == "__init__.py")

    # Names -------------------------------------------------------------
    @staticmethod
    def absolute(module: str, is_package: bool, imp: Import) -> str:
        if imp.level == 0:
            return imp.module or ""
        package = module if is_package else module.rpartition(".")[0]
        for _ in range(imp.level - 1):
            package = package.rpartition(".")[0]
        if imp.module:
            return f"{package}.{imp.module}" if package else imp.module
        return package

    def _from_import(self, module: str, info: ModuleInfo, imp: Import, depth: int) -> Target | None:
        base = self.absolute(module, info.is_package, imp)
        if imp.name is None:
            return ModuleRef(base)
        found = self.lookup(base, imp.name, depth + 1)
        if found is None and self.module_file(f"{base}.{imp.name}") is not None:
            return ModuleRef(f"{base}.{imp.name}")
        return found

    def lookup(self, module: str, name: str, depth: int = 0) -> Target | None:
        """What ``name`` is bound to at the top level of ``module``."""
        if depth > _MAX_DEPTH:
            return None
        info = self.module(module)
        if info is None:
            return None
        if name in info.classes:
            return ClassRef(module, name)
        if name in info.imports:
            return self._from_import(module, info, info.imports[name], depth)
        if name in info.aliases:
            return self.resolve(module, info.aliases[name], depth + 1)
        for star in info.star_imports:
            target = self.absolute(module, info.is_package, star)
            if not self._may_bind(target, name):
                continue
            found = self.lookup(target, name, depth + 1)
            if found is not None:
                return found
        if info.is_package and self.module_file(f"{module}.{name}") is not None:
            return ModuleRef(f"{module}.{name}")
        if name in info.fallback_imports:
            return self._from_import(module, info, info.fallback_imports[name], depth)
        if name in info.fallback_aliases:
            return self.resolve(module, info.fallback_aliases[name], depth + 1)
        return None

    def _may_bind(self, module: str, name: str) -> bool:
        """False only when ``module``'s source cannot bind ``name``: a static
        binding spells the identifier out, unless it comes through ``import *``.
        Saves parsing a package's whole star-import fan-out (transformers)."""
        located = self.module_file(module)
        data = self._text(located[0]) if located is not None and located[0] else None
        if data is None:
            return True
        if name.encode() in data:
            return True
        star = self._star_importing.get(module)
        if star is None:
            star = self._star_importing[module] = _STAR_IMPORT.search(data) is not None
        return star

    def resolve(self, module: str, dotted_name: str, depth: int = 0) -> Target | None:
        """What ``dotted_name``, written in ``module``, refers to (or a class's
        key there: ``make.<locals>.Base``, a base a function's class names)."""
        if "<" in dotted_name:
            info = self.module(module)
            return ClassRef(module, dotted_name) if info is not None and dotted_name in info.classes else None
        first, *rest = dotted_name.split(".")
        return self._attributes(self.lookup(module, first, depth), rest, depth)

    def function(self, module: str, dotted_name: str, depth: int = 0) -> Method | None:
        """The module-level function ``dotted_name``, written in ``module``,
        names (``setup``, ``helpers.setup``, one imported by name), if the
        source shows it."""
        if depth > _MAX_DEPTH:
            return None
        head, _, name = dotted_name.rpartition(".")
        if head:
            found = self.resolve(module, head, depth + 1)
            return self.function(found.name, name, depth + 1) if isinstance(found, ModuleRef) else None
        info = self.module(module)
        if info is None or name in info.classes:
            return None
        if name in info.functions:
            return info.functions[name]
        imp = info.imports.get(name)
        if imp is not None and imp.name is not None:
            return self.function(self.absolute(module, info.is_package, imp), imp.name, depth + 1)
        return None

    def resolve_imported(self, module: str, imp: Import, dotted_name: str) -> Target | None:
        """What ``dotted_name`` refers to where its first name is bound by
        ``imp`` (an import inside a function of ``module``)."""
        info = self.module(module)
        if info is None:
            return None
        return self._attributes(self._from_import(module, info, imp, 0), dotted_name.split(".")[1:], 0)

    def _attributes(self, found: Target | None, rest: list[str], depth: int) -> Target | None:
        for part in rest:
            if not isinstance(found, ModuleRef):
                return None
            found = self.lookup(found.name, part, depth + 1)
        return found

    def origin(self, module: str, dotted_name: str, local: dict[str, Import] | None = None) -> str | None:
        """The absolute dotted name ``dotted_name``, written in ``module``,
        names through the module's imports (or ``local``: a function's own);
        None where no import binds it."""
        first, *rest = dotted_name.split(".")
        info = self.module(module)
        imp = (local or {}).get(first)
        if imp is None and info is not None:
            imp = info.imports.get(first) or info.fallback_imports.get(first)
        if info is None or imp is None:
            return None
        source = self.absolute(module, info.is_package, imp)
        if imp.level and not source.strip("."):
            return "." + ".".join(filter(None, [imp.module, imp.name, *rest]))
        target = f"{source}.{imp.name}" if imp.name is not None else source
        return ".".join([target, *rest])

    def why_unresolved(self, module: str, dotted_name: str, local: dict[str, Import] | None = None) -> str:
        """Why ``dotted_name``, written in ``module``, resolves to no class the
        source shows: the module it comes from is not found (a package not
        installed where the audit runs), or that module does not define it."""
        dotted = self.origin(module, dotted_name, local)
        if dotted is None:
            return "bound where the audit does not follow (an import under try or if, an assignment)"
        if not dotted.strip(".") or dotted.startswith("."):
            return "a relative import with no package around its module"
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):  # the longest prefix that is a module
            if self.module_file(".".join(parts[:end])) is not None:
                found = ".".join(parts[:end])
                if end == len(parts):
                    return f"{dotted} is a module, not a class"
                root = self._root_of(parts[0])
                beside = os.path.join(root, *parts[: end + 1]) + ".py" if root is not None else ""
                if beside and os.path.exists(beside) and not os.path.isfile(beside):
                    return f"{beside} is not a regular file (a FIFO, a device or a socket)"
                return f"{found} has no class {'.'.join(parts[end:])} the source shows"
        return f"module {'.'.join(parts[:-1]) or parts[0]} not found"

    def class_ref(self, qualified: str) -> ClassRef | None:
        """The class ``str(ClassRef)`` spelled (its key may hold dots:
        ``m.make.<locals>.Child``): the longest module that has it."""
        parts = qualified.split(".")
        for end in range(len(parts) - 1, 0, -1):
            if "<" in parts[end - 1]:
                continue  # ``<locals>`` is no module: not looked for
            ref = ClassRef(".".join(parts[:end]), ".".join(parts[end:]))
            if self.class_info(ref) is not None:
                return ref
        return None

    def class_info(self, ref: ClassRef) -> ClassInfo | None:
        info = self.module(ref.module)
        return None if info is None else info.classes.get(ref.name)

    # MRO ---------------------------------------------------------------
    def bases(self, ref: ClassRef) -> list[MroEntry]:
        if ref in self._bases:
            return self._bases[ref]
        cls = self.class_info(ref)
        if cls is None:
            return []
        out: list[MroEntry] = []
        for base in cls.bases:
            if base is None:
                out.append(Opaque(EXPRESSION))
                continue
            if base in ("object", "builtins.object"):
                continue
            imported = cls.local_imports.get(base.split(".", 1)[0])  # in the class's function
            if imported is not None:
                target = self.resolve_imported(ref.module, imported, base)
            else:
                target = self.resolve(ref.module, base)
            out.append(target if isinstance(target, ClassRef) else Opaque(base))
        self._bases[ref] = out
        return out

    def mro(self, ref: ClassRef) -> list[MroEntry]:
        """C3, each base's MRO first (bases before the classes that name them,
        with a stack: hierarchies thousands deep). A base that is its own
        ancestor (a cycle Python would refuse) counts as a class with no bases."""
        if ref in self._mro:
            return self._mro[ref]
        on_path: set[ClassRef] = {ref}
        stack = [(ref, iter(self.bases(ref)))]
        while stack:
            node, pending = stack[-1]
            base = next(pending, None)
            if base is None:
                stack.pop()
                on_path.discard(node)
                self._mro[node] = self._linearize(node)
            elif isinstance(base, ClassRef) and base not in self._mro and base not in on_path:
                on_path.add(base)
                stack.append((base, iter(self.bases(base))))
        return self._mro[ref]

    def _linearize(self, ref: ClassRef) -> list[MroEntry]:
        bases = self.bases(ref)
        if len(bases) == 1:  # C3 of one base is that base's MRO: a deep chain stays quadratic at most
            (base,) = bases
            return [ref, *(self._mro.get(base, [base]) if isinstance(base, ClassRef) else [base])]
        sequences: list[list[MroEntry]] = [
            self._mro.get(b, [b]) if isinstance(b, ClassRef) else [b] for b in bases
        ]
        sequences.append(bases)
        merged = _c3_merge(sequences)
        return [ref, *(merged if merged is not None else _dfs_merge(sequences))]


def _c3_merge(sequences: list[list[MroEntry]]) -> list[MroEntry] | None:
    """C3's merge in O(n log n) (a class with 10,000 bases is one merge):
    each step takes the head of the first sequence whose head is in no
    sequence's tail. ``tails`` counts an entry's places in the tails, a heap
    holds the sequences whose head is free. None: no consistent order."""
    sequences = [s for s in sequences if s]
    tails: dict[MroEntry, int] = {}
    for sequence in sequences:
        for entry in sequence[1:]:
            tails[entry] = tails.get(entry, 0) + 1
    at = [0] * len(sequences)
    heading: dict[MroEntry, list[int]] = {}
    for index, sequence in enumerate(sequences):
        heading.setdefault(sequence[0], []).append(index)
    free = [i for entry, indices in heading.items() if not tails.get(entry) for i in indices]
    heapq.heapify(free)
    merged: list[MroEntry] = []
    while free:
        index = heapq.heappop(free)
        sequence = sequences[index]
        if at[index] >= len(sequence) or tails.get(sequence[at[index]]):
            continue  # a sequence pushed again once it moved on
        head = sequence[at[index]]
        merged.append(head)
        for moved in heading.pop(head):
            at[moved] += 1
            if at[moved] < len(sequences[moved]):
                entry = sequences[moved][at[moved]]
                tails[entry] -= 1
                heading.setdefault(entry, []).append(moved)
                if tails[entry] == 0:
                    for waiting in heading[entry]:
                        heapq.heappush(free, waiting)
    if any(at[i] < len(s) for i, s in enumerate(sequences)):
        return None
    return merged


def _dfs_merge(sequences: list[list[MroEntry]]) -> list[MroEntry]:
    """An inconsistent hierarchy (Python would refuse the class): C3 as far
    as it goes, then the first sequence's head, as a depth-first order would."""
    result: list[MroEntry] = []
    sequences = [list(s) for s in sequences if s]
    while sequences:
        for seq in sequences:
            head = seq[0]
            if not any(head in s[1:] for s in sequences):
                break
        else:
            head = sequences[0][0]
        result.append(head)
        sequences = [[e for e in s if e != head] for s in sequences]
        sequences = [s for s in sequences if s]
    return result
