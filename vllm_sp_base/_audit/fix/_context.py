"""Where a fix goes and where it comes from: the class whose ``__init__``
skips (its module, parameters, locals, what it sets and where) and the
skipped parent's ``__init__``; and the resolution of what copied code needs
against them."""

from __future__ import annotations

import ast
import os
import textwrap
from dataclasses import dataclass, field
from functools import cached_property

from vllm_sp_base._audit.files._keys import python_text
from vllm_sp_base._audit.fix._names import (
    BUILTIN_NAMES,
    PURE_BUILTINS,
    Binding,
    Needs,
    bindings,
    needs,
    root_name,
)
from vllm_sp_base._audit.report._finding import Finding
from vllm_sp_base._audit.summaries._syntax import dataclass_decorator, writes_init

_ABSENT = Binding("", "")


class Source:
    """A module parsed for planning (never imported)."""

    def __init__(self, path: str, text: str, module: str) -> None:
        self.path = path
        self.text = text
        self.module = module
        self.is_package = os.path.basename(path) == "__init__.py"
        self.tree = ast.parse(text, path)
        self._lines = text.splitlines(keepends=True)

    @cached_property
    def bindings(self) -> dict[str, Binding | None]:
        return bindings(self.tree, self.module, self.is_package)

    def top_class(self, name: str) -> ast.ClassDef | None:
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return node
        return None

    def segment(self, node: ast.AST) -> str:
        """The node's source, dedented (a block keeps its inner indentation)."""
        first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        lines = self._lines[first - 1:last]
        lines[-1] = lines[-1][:node.end_col_offset]  # type: ignore[attr-defined]
        lines[0] = " " * node.col_offset + lines[0][node.col_offset:]  # type: ignore[attr-defined]
        return textwrap.dedent("".join(lines)).rstrip()


_SOURCES: dict[tuple[str, str], Source | str] = {}


def load(path: str, module: str) -> Source | str:
    key = (path, module)
    if key not in _SOURCES:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
            _SOURCES[key] = Source(path, python_text(data)[0].removeprefix("\ufeff"), module)
        except (OSError, UnicodeError, LookupError, SyntaxError, ValueError) as error:
            _SOURCES[key] = f"{path}: cannot read it for a fix ({error})"
    return _SOURCES[key]


def forget() -> None:
    """Drop what was read: a later plan (after --fix wrote) reads files again."""
    _SOURCES.clear()


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    """The ``def name`` the class body binds last; None where none, or where a
    later ``name = ...`` binds it again (the ``def`` is dead code then)."""
    found = None
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            found = node
        elif _rebinds(node, name):
            found = None
    return found


def _rebinds(node: ast.stmt, name: str) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, ast.AnnAssign) and node.value is not None else []
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))


def _module_file(module: str, near: str, near_module: str) -> str | None:
    """The file of ``module`` under the root the file ``near`` (module
    ``near_module``) is imported from: its packages may be namespace packages
    (no ``__init__.py``), so the root is found from the module's name."""
    from vllm_sp_base._audit.files._discover import import_root

    stem_of_near = os.path.splitext(os.path.abspath(near))[0]
    if os.path.basename(stem_of_near) == "__init__":
        stem_of_near = os.path.dirname(stem_of_near)
    parts = near_module.split(".") if near_module else []
    root = stem_of_near
    for part in reversed(parts):
        if os.path.basename(root) != part:
            root = import_root(near)
            break
        root = os.path.dirname(root)
    stem = os.path.join(root, *module.split("."))
    for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


def load_context(finding: Finding) -> Context | str:
    """The context of a finding's fix, or why there is none."""
    sub_module, _, sub_name = finding.skipped_by.rpartition(".")
    parent_module, _, parent_name = finding.skipped_init.rpartition(".")
    sub_path = finding.path if finding.skipped_by == finding.class_name else _module_file(
        sub_module, finding.path, finding.class_name.rpartition(".")[0])
    if sub_path is None or not os.path.isfile(sub_path):
        return f"the file of {sub_name} is not found"
    sub = load(sub_path, sub_module)
    parent = load(finding.skipped_path, parent_module)
    if isinstance(sub, str):
        return sub
    if isinstance(parent, str):
        return parent
    sub_cls, parent_cls = sub.top_class(sub_name), parent.top_class(parent_name)
    if sub_cls is None or parent_cls is None:
        return f"{sub_name if sub_cls is None else parent_name} is not a class at its module's top level"
    sub_init, parent_init = _method(sub_cls, "__init__"), _method(parent_cls, "__init__")
    if sub_init is None or parent_init is None:
        lacking = sub_cls if sub_init is None else parent_cls
        if any(_rebinds(node, "__init__") for node in lacking.body):
            return f"{lacking.name}'s class body binds __init__ to another's (`__init__ = ...`)"
        if sub_init is None and (decorator := dataclass_decorator(sub_cls)) is not None and writes_init(decorator):
            return (f"@dataclass writes {sub_name}.__init__: call {parent_name}.__init__(self) "
                    f"from {sub_name}.__post_init__")
        return f"{sub_name if sub_init is None else parent_name} has no __init__ of its own in its class body"
    if sub_init.body and sub_init.body[0].lineno == sub_init.lineno:
        return f"{sub_name}.__init__ is written on one line"
    return Context(sub, sub_cls, sub_init, parent, parent_cls, parent_init)


@dataclass
class Resolution:
    """What a fix inserts and needs, as it is worked out."""

    anchor: int  # the line after which it goes in the subclass's __init__ (0: its top)
    statements: dict[int, str] = field(default_factory=dict)  # parent body index -> source
    imports: set[str] = field(default_factory=set)
    unsafe: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)  # made again: effects not seen
    missing: str | None = None

    def reasons(self) -> str:
        said = list(dict.fromkeys(self.unsafe))
        if self.calls:
            said.append(f"it calls {', '.join(dict.fromkeys(self.calls))} again, whose effects the "
                        "audit does not see")
        return "; ".join(said)

    def after(self, line: int) -> None:
        self.anchor = max(self.anchor, line)


def _simple_target(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        target = statement.target
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None


def _flattened(target: ast.expr) -> list[ast.expr]:
    """The single targets of an unpacking: ``a, (b, *c)`` -> a, b, c."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [leaf for element in target.elts for leaf in _flattened(element)]
    if isinstance(target, ast.Starred):
        return _flattened(target.value)
    return [target]


def _self_targets(statement: ast.stmt) -> list[str]:
    """The ``self.X`` a statement assigns, in every form Python has: ``=``
    (chained, unpacked: ``self.a, self.b = make()``), annotated, augmented,
    and the targets of ``for`` and ``with ... as``."""
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in statement.items if item.optional_vars is not None]
    else:
        targets = []
    return [t.attr for target in targets for t in _flattened(target)
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"]


def _stored(nodes: list[ast.stmt]) -> set[str]:
    return {n.id for s in nodes for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


class Context:
    """The subclass's ``__init__`` (``sub``) and the skipped one (``parent``)."""

    def __init__(self, sub: Source, sub_cls: ast.ClassDef, sub_init: ast.FunctionDef,
                 parent: Source, parent_cls: ast.ClassDef, parent_init: ast.FunctionDef) -> None:
        self.sub, self.sub_cls, self.sub_init = sub, sub_cls, sub_init
        self.parent, self.parent_cls, self.parent_init = parent, parent_cls, parent_init
        self.sub_name, self.parent_name = sub_cls.name, parent_cls.name
        self.sub_params = _parameters(sub_init)
        self.parent_params = _parameters(parent_init)
        self.sub_locals: dict[str, list[ast.stmt]] = {}
        for statement in sub_init.body:
            name = _simple_target(statement)
            if name is not None:
                self.sub_locals.setdefault(name, []).append(statement)
        self.sub_locals_any = _stored(sub_init.body)
        self.sub_self_top: dict[str, int] = {}
        for statement in sub_init.body:
            for attribute in _self_targets(statement):
                self.sub_self_top.setdefault(attribute, statement.end_lineno or statement.lineno)
        self.sub_self_any = {
            n.attr for n in ast.walk(sub_init) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name) and n.value.id == "self"
        }
        self.start_line = _start_line(sub_init)
        self.parent_methods = {n.name: n for n in parent_cls.body if isinstance(n, ast.FunctionDef)}
        self.class_names = _class_names(sub_cls) | _class_names(parent_cls)

    def resolve(self, wanted: Needs, before: int, resolution: Resolution) -> None:
        """Check (and add to ``resolution``) what code at the parent's body index
        ``before`` needs: names, ``self`` attributes, calls."""
        for name in sorted(wanted.names):
            self._name(name, before, resolution)
        for attribute in sorted(wanted.self_reads - wanted.self_sets):
            self._self(attribute, before, resolution)
        for call in wanted.calls:
            called = self._call(call)
            if called:
                resolution.calls.append(called)
        for method in wanted.self_calls:
            if method not in self.parent_methods or method == "__init__":
                resolution.unsafe.append(f"it calls self.{method}()")

    def _name(self, name: str, before: int, resolution: Resolution) -> None:
        if resolution.missing:
            return
        sub = self.sub_name
        if name in self.parent_params:
            if name in self.sub_params:
                return
            if name in self.sub_locals_any:
                self._sub_local(name, resolution)
                resolution.unsafe.append(f"`{name}` is a parameter of {self.parent_name}.__init__ but "
                                         f"computed in {sub}.__init__")
                return
            resolution.missing = f"the value needs `{name}`, which {sub}.__init__ does not have"
            return
        parent_locals = _stored(self.parent_init.body[:before])
        if name in parent_locals:
            assignments = [(i, s) for i, s in enumerate(self.parent_init.body[:before]) if _simple_target(s) == name]
            simple = bool(assignments) and not (_stored(self.parent_init.body[assignments[-1][0] + 1:before]) & {name})
            if name in self.sub_params:
                resolution.unsafe.append(f"`{name}` is a parameter of {sub}.__init__, computed in "
                                         f"{self.parent_name}.__init__")
                return
            if name in self.sub_locals_any:
                mine = self._sub_local(name, resolution)
                theirs = assignments[-1][1] if assignments else None
                if mine is None or theirs is None or ast.dump(_value(mine)) != ast.dump(_value(theirs)):
                    shown = f"`{ast.unparse(_value(mine))}`" if mine is not None else "another way"
                    resolution.unsafe.append(f"`{name}` is {shown} in {sub}.__init__, "
                                             f"not what {self.parent_name}.__init__ computes")
                return
            if not simple:
                resolution.missing = (f"the value needs `{name}`, which {self.parent_name}.__init__ computes "
                                      f"under control flow and {sub}.__init__ does not have")
                return
            index, statement = assignments[-1]
            if index not in resolution.statements:
                resolution.statements[index] = self.parent.segment(statement)
                self.resolve(_needs_of_value(statement), index, resolution)
            return
        binding = self.parent.bindings.get(name, _ABSENT)
        if binding is not _ABSENT:
            if binding is None:
                resolution.missing = (f"the value needs `{name}`, which {self.parent.module} binds in a way "
                                      "an import cannot repeat")
                return
            if name in self.sub_params or name in self.sub_locals_any:
                resolution.missing = f"`{name}` is a module name in {self.parent.module}, a local in {sub}.__init__"
                return
            if self.sub.module == self.parent.module:
                return
            mine_binding = self.sub.bindings.get(name, _ABSENT)
            if mine_binding is _ABSENT:
                resolution.imports.add(binding.statement)
            elif mine_binding is None or mine_binding.origin != binding.origin:
                resolution.missing = (f"the value needs `{name}`, which means something else in "
                                      f"{self.sub.module}")
            return
        if name in BUILTIN_NAMES:
            return
        resolution.missing = f"the value needs `{name}`, which {sub}.__init__ does not have"

    def _sub_local(self, name: str, resolution: Resolution) -> ast.stmt | None:
        """The subclass's own single top-level assignment of ``name``; the fix goes after it."""
        found = self.sub_locals.get(name, [])
        if len(found) != 1:
            return None
        resolution.after(found[0].end_lineno or found[0].lineno)
        return found[0]

    def _self(self, attribute: str, before: int, resolution: Resolution) -> None:
        if resolution.missing:
            return
        if attribute in self.sub_self_top:
            resolution.after(self.sub_self_top[attribute])
            return
        if attribute in self.class_names:
            return
        for index, statement in enumerate(self.parent_init.body[:before]):
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and attribute in _self_targets(statement):
                if attribute in self.sub_self_any:
                    resolution.unsafe.append(f"it needs self.{attribute}, which {self.sub_name}.__init__ "
                                             "sets only under a condition")
                    return
                if index not in resolution.statements:
                    resolution.statements[index] = self.parent.segment(statement)
                    self.resolve(_needs_of_value(statement), index, resolution)
                return
        resolution.missing = f"the value needs self.{attribute}, which {self.sub_name}.__init__ does not set"

    def _call(self, call: ast.Call) -> str | None:
        """The callee, where making this call again is unsafe (a function or class of a module:
        it may build a submodule, a tensor, register something), or None for a
        pure builtin or a method of a value the code already has (a getter)."""
        func = call.func
        if isinstance(func, ast.Name):
            if func.id in PURE_BUILTINS and func.id not in self.parent.bindings:
                return None
            return f"{func.id}()"
        root = root_name(func)
        if root is not None and root in self.parent.bindings:
            return f"{ast.unparse(func)}()"
        return None


def _value(statement: ast.stmt | None) -> ast.expr:
    assert isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None
    return statement.value


def _needs_of_value(statement: ast.stmt) -> Needs:
    return needs(_value(statement))


def _parameters(function: ast.FunctionDef) -> set[str]:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    names = {a.arg for a in every[1:]} if every else set()
    names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    return names


def _start_line(init: ast.FunctionDef) -> int:
    """The line the fix follows: the end of the statement holding the
    subclass's own parent call (the first ``X.__init__(...)``, under an ``if``
    or ``try`` too: the fix never runs before it), else its docstring, else 0
    (the top of the body)."""
    for statement in init.body:
        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__init__"
               for n in ast.walk(statement)):
            return statement.end_lineno or statement.lineno
    first = init.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first.end_lineno or first.lineno
    return 0


def _class_names(cls: ast.ClassDef) -> set[str]:
    names = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names
