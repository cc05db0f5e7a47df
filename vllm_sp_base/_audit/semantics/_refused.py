"""A setting under which the class is never built. sglang builds a model class
its module lists in ``EntryClass`` for a config whose ``architectures[0]``
is the class's name (``srt/models/registry.py`` keys them by ``__name__``).
Where building it also builds a sub-module whose ``__init__``, under a
process-wide setting, asserts a test of the architecture that this name
fails::

    self.use_nsa = is_deepseek_nsa(config)           # architectures[0] in [...]
    self.nsa_enable_prefill_cp = is_nsa_enable_prefill_cp()
    if self.nsa_enable_prefill_cp:
        assert self.use_nsa

no instance exists with that setting on: a flag the class binds to the same
setting (``self.nsa_enable_prefill_cp = is_nsa_enable_prefill_cp()``) is
False on every built instance, and what runs only under it never runs; so is
a call of a function true only under the setting (``_settings``), or under
a parameter the class passes such a flag to. An inner model that only
registered classes build (an EAGLE draft's) is built for their names.

Read from source, only for a flag or a call a finding's way tests. Only what
construction runs on no condition counts: a sub-module built under a test, a
setting read with arguments, an assertion of anything but the architecture
list decide nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from vllm_sp_base._audit.semantics._bound import bound_value
from vllm_sp_base._audit.semantics._built import only_named_at
from vllm_sp_base._audit.semantics._classes import ClassModel
from vllm_sp_base._audit.semantics._construction import Construction, construct
from vllm_sp_base._audit.semantics._parsed import method_node, module_source, module_tree
from vllm_sp_base._audit.semantics._project import ClassRef, Project
from vllm_sp_base._audit.semantics._settings import (
    PARAMETER,
    function_node,
    function_origin,
    local_imports,
    needs_of_call,
    outside_nested_functions,
    parse_called,
    setting_called,
)
from vllm_sp_base._audit.summaries._conditions import CALLED
from vllm_sp_base._audit.summaries._events import Import, Known
from vllm_sp_base._audit.summaries._summaries import python_name

#: How far construction is followed into the sub-modules it builds, and how many classes at most.
MAX_DEPTH = 5
MAX_CLASSES = 60
_ENTRY_CLASS = "EntryClass"
_ARCHITECTURES = "architectures"


def refused_settings(
    model: ClassModel, built: Construction, tested: set[str], not_run: set[tuple[int, str]],
    spelling: Callable[[str], list[tuple[str, bytes]]] | None,
) -> Known:
    """What the settings that make construction fail decide of ``tested``:
    a flag construction binds on no condition to such a setting is false, and
    so is a call of a function that is true only under such a setting
    (spelled ``%name/count``)."""
    first = model.mro[0]
    if not isinstance(first, ClassRef) or built.sets_any:
        return {}
    builders = _built_as(model.project, first, spelling)
    if not builders:
        return {}
    needs: dict[str, set[str]] = {}  # a tested name -> settings it is false without
    modules = {entry.module for entry in model.mro if isinstance(entry, ClassRef)}
    for name in tested:
        if name.isidentifier():
            setting = _setting_bound(model, built, name, not_run)
            if setting is not None:
                needs[name] = {setting}
        elif name.startswith(CALLED):
            settings = _settings_called(model, built, modules, name[len(CALLED):], not_run)
            if settings:
                needs[name] = settings
    refused = set().union(*needs.values())
    for builder in builders:
        if refused:
            # Built for the builder's config: its construction fails, or the class's own does.
            architecture = python_name(builder.name)
            failing = _refused(model.project, builder, architecture, refused)
            if builder != first:
                failing |= _refused(model.project, first, architecture, refused - failing)
            refused &= failing
    return {name: [("false", "")] for name, settings in needs.items() if settings & refused}


def _setting_bound(
    model: ClassModel, built: Construction, attr: str, not_run: set[tuple[int, str]],
) -> str | None:
    """The setting (a function's absolute name) construction binds ``attr``
    to, once (``self.flag = is_enabled()``, no arguments), and nothing binds after."""
    found = bound_value(model, built, attr, not_run)
    if found is None:
        return None
    owner, function, value = found
    return setting_called(model.project, owner.module, value, local_imports(function))


def _settings_called(
    model: ClassModel, built: Construction, modules: set[str], spelled: str, not_run: set[tuple[int, str]],
) -> set[str]:
    """The settings without which the call a requirement spells
    (``uses_cp/2/1.cp_enabled``) is never true: those the function needs, and
    for a parameter it needs, the setting of the flag the class passes there."""
    function, count, passed = parse_called(spelled)
    settings: set[str] = set()
    for need in needs_of_call(model.project, modules, function, count):
        if not need.startswith(PARAMETER):
            settings.add(need)
        elif (attr := passed.get(int(need[len(PARAMETER):]))) is not None:
            bound = _setting_bound(model, built, attr, not_run)
            settings |= {bound} if bound is not None else set()
    return settings


def _built_as(
    project: Project, ref: ClassRef, spelling: Callable[[str], list[tuple[str, bytes]]] | None,
) -> list[ClassRef]:
    """The classes whose names are the architectures the class is built for:
    itself where its module lists it in ``EntryClass`` (sglang's registry);
    else the classes so listed whose ``__init__`` builds it (or stores it on
    the instance it builds, ``self.model_cls = Name``), where every other
    mention of it in the audited files is its definition, an import or a
    base (an EAGLE draft's inner model). Empty where neither holds."""
    tree = module_tree(project, ref.module)
    if tree is None:
        return []
    entries = _entry_classes(tree)
    name = python_name(ref.name)
    if name in entries:
        return [ref]
    texts = spelling(name) if spelling is not None and entries else []
    source = module_source(project, ref.module)
    builders: set[str] = set()

    def builds(data: bytes, tree: ast.Module) -> set[tuple[int, int]]:
        """In the class's own module, where a listed class's ``__init__``
        builds it (``Name(...)``) or stores it on the instance it builds
        (``self.model_cls = Name``)."""
        places: set[tuple[int, int]] = set()
        if data != source:
            return places
        for node in tree.body:
            if not (isinstance(node, ast.ClassDef) and node.name in entries):
                continue
            init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            for built in ast.walk(init) if init is not None else ():
                named = (built.func if isinstance(built, ast.Call)
                         else built.value if isinstance(built, ast.Assign) and len(built.targets) == 1
                         and _self_attr(built.targets[0]) is not None else None)
                if isinstance(named, ast.Name) and named.id == name:
                    places.add((named.lineno, named.col_offset))
                    builders.add(node.name)
        return places

    if not only_named_at(name, texts, builds):
        return []
    found = [project.class_ref(f"{ref.module}.{builder}") for builder in sorted(builders)]
    return [builder for builder in found if builder is not None]


def _entry_classes(tree: ast.Module) -> set[str]:
    """The names a module lists in ``EntryClass`` (sglang's registry: each is
    built for a config whose ``architectures[0]`` is its name)."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == _ENTRY_CLASS):
            listed = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            return {item.id for item in listed if isinstance(item, ast.Name)}
    return set()


def _refused(project: Project, start: ClassRef, architecture: str, settings: set[str]) -> set[str]:
    """Of ``settings``, those under which building ``start`` fails: a class it
    builds on no condition (itself included, as deep as ``MAX_DEPTH``)
    asserts, under the setting, an architecture test ``architecture`` fails."""
    found: set[str] = set()
    seen = {start}
    todo = [(start, 0)]
    while todo and len(seen) <= MAX_CLASSES:
        ref, depth = todo.pop()
        model = ClassModel(project, ref)
        built = construct(model)
        if built.raises or built.sets_any:
            continue
        for (index, name), conditional in built.executed.items():
            owner = model.mro[index]
            if conditional or not isinstance(owner, ClassRef):
                continue
            function = method_node(project, owner, name)
            if function is None:
                continue
            found |= _asserted(project, owner.module, function, architecture) & settings
            if depth < MAX_DEPTH:
                for target in _builds(project, owner.module, function):
                    if target not in seen:
                        seen.add(target)
                        todo.append((target, depth + 1))
    return found


def _asserted(project: Project, module: str, function: ast.FunctionDef, architecture: str) -> set[str]:
    """The settings under which ``function`` (run on no condition) asserts an
    architecture test ``architecture`` fails: ``if self.flag: assert
    self.test`` or ``assert test(config)``, with ``self.flag = setting()`` and
    ``self.test = test(config)`` bound before, on no condition."""
    local = local_imports(function)
    settings: dict[str, str] = {}  # self attribute -> setting
    tests: dict[str, bool] = {}  # self attribute -> the architecture test passes
    found: set[str] = set()
    for statement in function.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            attr = _self_attr(statement.targets[0])
            if attr is None:
                continue
            settings.pop(attr, None)
            tests.pop(attr, None)
            setting = setting_called(project, module, statement.value, local)
            if setting is not None:
                settings[attr] = setting
            passes = _architecture_test(project, module, statement.value, architecture, local)
            if passes is not None:
                tests[attr] = passes
            continue
        if isinstance(statement, ast.If) and not statement.orelse:
            flag = _self_attr(statement.test)
            setting = settings.get(flag) if flag is not None else setting_called(project, module, statement.test, local)
            asserted = [inner.test for inner in statement.body if isinstance(inner, ast.Assert)]
            if setting is not None and any(
                (tests.get(name) if (name := _self_attr(test)) is not None
                 else _architecture_test(project, module, test, architecture, local)) is False
                for test in asserted
            ):
                found.add(setting)
        # What a block binds under its own tests may change a flag; after a
        # way out (``return``, ``raise``) what follows may not run.
        for node in outside_nested_functions(statement):
            if isinstance(node, (ast.Return, ast.Raise)):
                return found
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    attr = _self_attr(target)
                    if attr is not None:
                        settings.pop(attr, None)
                        tests.pop(attr, None)
    return found


def _architecture_test(
    project: Project, module: str, value: ast.expr, architecture: str, local: dict[str, Import],
) -> bool | None:
    """Whether ``value``, a call ``test(config)`` of a function whose one
    ``return`` is a conjunction holding ``architectures[0] in [names]``,
    passes for a config built as ``architecture``: False where the name is
    not listed; None where that is not what it is."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and len(value.args) == 1
            and isinstance(value.args[0], ast.Name) and value.args[0].id == "config" and not value.keywords):
        return None
    origin = function_origin(project, module, value.func.id, local)
    function = function_node(project, origin) if origin is not None else None
    tree = module_tree(project, origin.rpartition(".")[0]) if origin is not None else None
    if function is None or tree is None:
        return None
    returns = [n for n in ast.walk(function) if isinstance(n, ast.Return)]
    if len(returns) != 1 or returns[0].value is None:
        return None
    result = returns[0].value
    conjuncts = result.values if isinstance(result, ast.BoolOp) and isinstance(result.op, ast.And) else [result]
    for term in conjuncts:
        listed = _listed_architectures(term, function, tree)
        if listed is not None and architecture not in listed:
            return False
    return None


def _listed_architectures(term: ast.expr, function: ast.FunctionDef, tree: ast.Module) -> set[str] | None:
    """The names of ``architectures[0] in ["A", "B"]`` (the first
    architecture read as ``_first_architecture`` says) in ``function`` of the
    module ``tree``; None for any other test."""
    if not (isinstance(term, ast.Compare) and len(term.ops) == 1 and isinstance(term.ops[0], ast.In)):
        return None
    right = term.comparators[0]
    if not (isinstance(right, (ast.List, ast.Tuple, ast.Set)) and _first_architecture(term.left, function, tree)):
        return None
    names = {e.value for e in right.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return names if len(names) == len(right.elts) else None


def _first_architecture(value: ast.expr, function: ast.FunctionDef, tree: ast.Module, depth: int = 0) -> bool:
    """Whether ``value`` is the config's first architecture, or None:
    ``config.architectures[0]``, ``archs[0]`` of a name ``function`` binds
    from ``architectures``, ``... if archs else None``, or a call of a
    function of the module whose one ``return`` is such (``_hf_arch(config)``)."""
    if isinstance(value, ast.IfExp):
        return (_first_architecture(value.body, function, tree, depth)
                and isinstance(value.orelse, ast.Constant) and value.orelse.value is None)
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and value.slice.value == 0:
        holder = value.value
        if isinstance(holder, ast.Attribute):
            return holder.attr == _ARCHITECTURES
        if isinstance(holder, ast.Name):
            return holder.id == _ARCHITECTURES or any(
                isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == holder.id for t in node.targets)
                and _names_architectures(node.value) for node in ast.walk(function))
        return False
    if (depth < 2 and isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and len(value.args) == 1
            and not value.keywords):
        helper = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == value.func.id), None)
        returns = [n for n in ast.walk(helper) if isinstance(n, ast.Return)] if helper is not None else []
        return (helper is not None and len(returns) == 1 and returns[0].value is not None
                and _first_architecture(returns[0].value, helper, tree, depth + 1))
    return False


def _names_architectures(value: ast.expr) -> bool:
    """Whether ``value`` reads a config's ``architectures`` (an attribute, or
    the key / name in ``config.get("architectures")``, ``getattr(config, "architectures", None)``)."""
    return any((isinstance(n, ast.Attribute) and n.attr == _ARCHITECTURES)
               or (isinstance(n, ast.Constant) and n.value == _ARCHITECTURES) for n in ast.walk(value))


def _builds(project: Project, module: str, function: ast.FunctionDef) -> Iterator[ClassRef]:
    """The classes ``function`` builds on no condition: calls in its
    top-level statements (a lambda passed along there included: a layer
    factory), not under a test, a loop or a handler."""
    for statement in function.body:
        if isinstance(statement, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match, ast.With)):
            continue
        for node in ast.walk(statement):
            if isinstance(node, (ast.IfExp, ast.BoolOp)):
                break  # a build inside may not run: the rest of this statement is not followed
            dotted = _dotted(node.func) if isinstance(node, ast.Call) else None
            target = project.resolve(module, dotted) if dotted is not None else None
            if isinstance(target, ClassRef):
                yield target


def _dotted(node: ast.expr, most: int = 8) -> str | None:
    """``a.b.C`` for a dotted name of at most ``most`` parts (walked, not recursed)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute) and len(parts) < most:
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _self_attr(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None
