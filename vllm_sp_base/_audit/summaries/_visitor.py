"""What one method reads, sets and calls on ``self``: the walk over its body."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import Any

from vllm_sp_base._audit.summaries._conditions import (
    CALLED,
    LITERAL_TYPES,
    LOCAL,
    EnclosingTests,
    empty_sequence,
    looked_up_key,
    looping_over,
)
from vllm_sp_base._audit.summaries._events import (
    HELD,
    REQUIREMENT_SEPARATOR,
    STATIC,
    Assert,
    Call,
    Event,
    Import,
    Marker,
    Read,
    Set,
    SetAny,
    SetEach,
    local_import,
)
from vllm_sp_base._audit.summaries._syntax import (
    BUILTINS_TAKING_SELF,
    constant_strings,
    constant_truth,
    dotted,
    import_bindings,
    is_super,
    mangled,
    suppresses_attribute_error,
    swallows_attribute_error,
)

# Nodes below which no self attribute, call or branch can sit.
_LEAVES = frozenset(
    {ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del, ast.Pass, ast.Break, ast.Continue}
)


class MethodVisitor(ast.NodeVisitor):
    """Records what one method does to ``self`` as events, in the order Python
    runs them: an assignment's value before its target, a call's arguments
    before the call.

    ``visit`` dispatches through a table built once at import, and the generic
    walk skips leaves: with ``ast.NodeVisitor``'s lookup per node, the walk took
    ~1.0 s of CPU over the files an audit of vLLM parses; now ~0.16 s."""

    def visit(self, node: ast.AST) -> None:
        handler = _DISPATCH.get(type(node))
        if handler is not None:
            handler(self, node)
        elif type(node) not in _LEAVES:
            self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> None:
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
                        if type(item) in _ENDS_BLOCK:
                            break  # what follows in the block never runs
            elif isinstance(value, ast.AST):
                self.visit(value)

    def visit_block(self, statements: Sequence[ast.AST]) -> None:
        """Statements in order, up to one that ends the block (``return``,
        ``raise``, ``break``, ``continue``): the rest never runs; and after an
        ``if`` whose body ends the block, the rest runs where its test failed."""
        passed = 0
        for stmt in statements:
            self.visit(stmt)
            if type(stmt) in _ENDS_BLOCK:
                break
            if type(stmt) is ast.If and (truth := constant_truth(stmt.test)) is not None:
                taken = stmt.body if truth else stmt.orelse
                if taken and type(taken[-1]) in _ENDS_BLOCK:
                    break  # ``if True: return``: what follows never runs
                continue
            if type(stmt) is ast.If and not stmt.orelse and type(stmt.body[-1]) in _ENDS_BLOCK:
                self.tests.push_passed(stmt.test)
                passed += 1
            elif type(stmt) is ast.If and _only_body_goes_on(stmt) and type(stmt.body[-1]) not in _ENDS_BLOCK:
                self.tests.push_passed(stmt.test, True)
                passed += 1
        if passed:
            self.tests.pop_passed(passed)

    def __init__(
        self, events: list[Event], method_name: str, self_name: str, class_name: str, line_offset: int = 0,
        parameters: Callable[[], list[str] | None] | None = None,
    ) -> None:
        self.events = events  # the method's own list (``Method.events`` would parse a cut body)
        self.parameters = parameters  # the method's parameter names, asked only where needed
        self.method_name = method_name
        self.self_name = self_name
        self.class_name = class_name
        self.line_offset = line_offset  # a cut body is parsed on its own, from line 2
        self.depth = 0  # how many branching constructs enclose the current node
        self.tested = 0  # how many of those run where their test holds (``if``, ``while``, ``and``)
        # The variable of each enclosing loop (None: not a plain name): a loop a
        # test of its variable encloses runs where that test can hold.
        self.loop_variables: list[str | None] = []
        self.keyed: dict[str, str] = {}  # ``x = inputs.get("k")``: x -> "k", until x is bound again
        self.tests = EnclosingTests(self_name, self.keyed)
        self.catching = 0  # how many enclosing ``try`` blocks catch AttributeError
        self.left_early = False  # a ``return`` or ``raise`` under a branch ran before this point
        self.guarded: set[str] = set()  # ``hasattr(self, "a")``, ``"a" in self.__dict__``
        self.loop_names: dict[str, str | tuple[str, ...]] = {}  # loop variable -> its names
        # What the enclosing loops iterate: said where a read sits under no
        # test but a loop's body (``for layer in self.layers: ... self.aux``).
        self.loops: list[ast.expr] = []
        self._looping: dict[int, str] = {}  # id of a loop's iterable -> its text, once asked
        # Functions and lambdas the method defines: their bodies run where they are called.
        self.local_functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda] = {}
        self.inlining: set[str] = set()  # local functions being followed (recursion ends)
        # ``init = Parent.__init__`` / ``init = super().__init__``: a method bound
        # to a local name, which a call of the name runs (``init(self, config)``).
        self.method_aliases: dict[str, ast.Attribute] = {}
        self.local_imports: dict[str, Import] = {}  # ``import torch.nn as nn`` in the body
        self.aliases: dict[str, str] = {}  # ``vt = self.vision_tower`` on no condition: vt -> its attribute

    def finish(self) -> None:
        """Reads of a guarded attribute are not reads that can fail."""
        if self.guarded:
            self.events[:] = [
                e for e in self.events if not (type(e) is Read and e.attr in self.guarded)
            ]

    def _is_self(self, node: ast.expr | None) -> bool:
        return isinstance(node, ast.Name) and node.id == self.self_name

    def _attr(self, node: ast.Attribute) -> str:
        """The attribute ``self.<name>`` names, as Python stores it (``self.__a``: ``_Class__a``)."""
        return mangled(node.attr, self.class_name)

    def _line(self, node: ast.expr | ast.stmt) -> int:
        return node.lineno + self.line_offset

    def _branch(
        self, nodes: Sequence[ast.AST], test: ast.expr | None = None, truth: bool = True, whole: bool = True,
    ) -> None:
        """Visit what runs only on a condition (``test`` being ``truth``, where
        known; ``whole``: all it needs)."""
        self.depth += 1
        if test is not None:
            self.tests.push(test, truth, whole)
            self.tested += 1
        self.visit_block(nodes)
        if test is not None:
            self.tests.pop()
            self.tested -= 1
        self.depth -= 1

    def _explained(self, requires: str) -> int:
        """``Read.explained`` of an event here, whose ``requires`` is given."""
        if not self.depth or self.catching:
            return -1
        count = self.tests.explained()
        if count < 0:
            return -1
        needs = requires.split(REQUIREMENT_SEPARATOR)[:count] if count else []
        loops = sum(1 for v in self.loop_variables
                    if v is not None and any(n.startswith(f"{LOCAL}{v}==") for n in needs))
        return count if self.depth == self.tested + loops else -1

    def visit_Assert(self, node: ast.Assert) -> None:
        self.visit(node.test)
        truth = constant_truth(node.test)
        if node.msg is not None and truth is False:
            self.visit(node.msg)  # ``assert False, msg``: the message is built, always
        elif node.msg is not None and truth is None:
            self._branch([node.msg])
        # What it says of the method's own names holds in this call only.
        # Nor what a function answered (it may answer otherwise when called again).
        needs = [n for n in self.tests.requirements(node.test, True) if LOCAL not in n and CALLED not in n]
        if needs:
            self.events.append(Assert(REQUIREMENT_SEPARATOR.join(needs), self._line(node), self.depth > 0))

    def _read(self, attr: str, node: ast.expr, deref: bool = False) -> None:
        if not self.catching:
            condition, requires = self.tests.current()
            if condition is None and self.loops:
                iterable = self.loops[-1]
                condition = self._looping.get(id(iterable))
                if condition is None:
                    condition = self._looping[id(iterable)] = looping_over(iterable)
            self.events.append(Read(
                attr, self._line(node), node.col_offset, self.depth > 0, condition, requires, deref,
                self._explained(requires) if self.depth else -1))

    def _unalias(self, target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.aliases.pop(target.id, None)
        elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
            for bound in ast.walk(target):
                if isinstance(bound, ast.Name):
                    self.aliases.pop(bound.id, None)

    def _unkey(self, target: ast.expr) -> None:
        for bound in ast.walk(target):
            if isinstance(bound, ast.Name):
                self.keyed.pop(bound.id, None)

    def _used_at_once(self, node: ast.expr) -> bool:
        """``node`` is ``self.a`` or a local bound to it on no condition
        (``vt = self.vision_tower``), and an attribute of it is taken now: a
        read of ``a`` that raises where ``a`` is None."""
        if isinstance(node, ast.Attribute) and self._is_self(node.value) and isinstance(node.ctx, ast.Load):
            self._read(self._attr(node), node, deref=True)
            return True
        if isinstance(node, ast.Name) and node.id in self.aliases:
            self._read(self.aliases[node.id], node, deref=True)
            return True
        return False

    def _set(self, attr: str, node: ast.expr | ast.stmt, value: ast.expr | None = None) -> None:
        literal = None
        if isinstance(value, ast.Constant) and type(value.value) in LITERAL_TYPES:
            literal = repr(value.value)
        elif value is not None:
            literal = empty_sequence(value)
        made = dotted(value.func) if isinstance(value, ast.Call) else None
        self.events.append(Set(attr, self._line(node), self.depth > 0, literal, made))

    def _set_named(self, name: ast.expr, node: ast.expr) -> None:
        """A set whose attribute name is the expression ``name``."""
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            self._set(name.value, node)
            return
        names = self.loop_names.get(name.id) if isinstance(name, ast.Name) else None
        if isinstance(names, tuple):
            for attr in names:
                self._set(attr, node)
        elif isinstance(names, str):
            on_class = names.startswith(".")
            self.events.append(SetEach(names.lstrip("."), self._line(node), self.depth > 0, on_class))
        else:
            self.events.append(SetAny(self._line(node), self.depth > 0))

    def _is_self_dict(self, node: ast.expr) -> bool:
        """``self.__dict__`` or ``vars(self)``."""
        if isinstance(node, ast.Attribute):
            return node.attr == "__dict__" and self._is_self(node.value)
        return (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "vars" and len(node.args) == 1 and self._is_self(node.args[0])
        )

    # Control flow: the test of an if/while runs; its bodies may not.
    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        truth = constant_truth(node.test)
        if truth is not None:  # ``if True:``, ``if TYPE_CHECKING:``: one arm runs, always
            self.visit_block(node.body if truth else node.orelse)
            return
        self._guard_by_getattr(node.test)
        if _only_body_goes_on(node):
            # ``if ok: ... else: raise``, as ``if not ok: raise`` then the body:
            # the body runs on every way the method goes on (the last arm of an
            # ``if/elif`` chain whose ``else`` raises, too).
            self.tests.push_passed(node.test, True)
            self.visit_block(node.body)
            self.tests.pop_passed(1)
        else:
            self._branch(node.body, node.test)
        self._branch(node.orelse, node.test, False)

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        truth = constant_truth(node.test)
        if truth is True:  # ``while True:``: the body runs, at least up to its first exit
            self.visit_block(node.body)
            return
        if truth is False:
            self.visit_block(node.orelse)
            return
        self._guard_by_getattr(node.test)
        self._branch(node.body, node.test)
        self._branch(node.orelse)

    def _guard_by_getattr(self, test: ast.expr) -> None:
        """``if getattr(self, "a", None) is not None:``: a test that reads ``a``
        with a default guards it, as ``hasattr`` does."""
        for node in ast.walk(test):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                    and len(node.args) == 3 and self._is_self(node.args[0])
                    and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                self.guarded.add(node.args[1].value)

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item)
        suppresses = any(suppresses_attribute_error(item) for item in node.items)
        self.catching += suppresses
        self.visit_block(node.body)
        self.catching -= suppresses

    visit_AsyncWith = visit_With

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        if _empty_literal(node.iter):  # ``for _ in ():``: the body never runs, the ``else`` always
            self.visit_block(node.orelse)
            return
        if self.aliases:
            self._unalias(node.target)
        names: str | tuple[str, ...] | None = constant_strings(node.iter)
        if names is None and isinstance(node.iter, ast.Name):
            names = node.iter.id
        elif names is None and isinstance(node.iter, ast.Attribute) and self._is_self(node.iter.value):
            names = "." + node.iter.attr  # a class-level constant, through the MRO
        variable = node.target.id if isinstance(node.target, ast.Name) else None
        self.loops.append(node.iter)
        self.loop_variables.append(variable)
        if variable is None or names is None:
            needs = _range_needs(node.iter, self._is_self)
            if needs is None:
                self._branch([node.target, *node.body, *node.orelse])
            else:  # ``for i in range(1, self.n + 1):``: the body runs only where n >= 1
                self._branch([node.target, *node.body], needs, whole=False)
                self._branch(node.orelse)
            self.loops.pop()
            self.loop_variables.pop()
            return
        saved = self.loop_names.get(variable)
        self.loop_names[variable] = names
        self._branch([node.target, *node.body, *node.orelse])
        self.loops.pop()
        self.loop_variables.pop()
        if saved is None:
            del self.loop_names[variable]
        else:
            self.loop_names[variable] = saved

    visit_AsyncFor = visit_For

    def visit_Try(self, node: ast.Try | ast.TryStar) -> None:
        # The body runs as any code does (an exception ends it either way); a
        # read in it may be caught; handlers and else may not run.
        catches = any(swallows_attribute_error(h) for h in node.handlers)
        if catches and self.method_name == "__getattribute__":
            # Its handler answers where the default lookup fails (a delegate's attribute).
            self.events.append(Marker("answers_missing", self._line(node)))
        self.catching += catches
        self.visit_block(node.body)
        self.catching -= catches
        self._branch([*node.handlers, *node.orelse])
        self.visit_block(node.finalbody)

    visit_TryStar = visit_Try

    def visit_Match(self, node: ast.Match) -> None:
        self.visit(node.subject)
        first = node.cases[0]
        if isinstance(first.pattern, ast.MatchAs) and first.pattern.pattern is None and first.guard is None:
            self.visit_block(first.body)  # ``case _:`` or ``case x:`` first: it always matches
            return
        self._branch(list(node.cases))

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.visit(node.test)
        truth = constant_truth(node.test)
        if truth is not None:
            self.visit(node.body if truth else node.orelse)
            return
        self._guard_by_getattr(node.test)
        self._branch([node.body], node.test)
        self._branch([node.orelse], node.test, False)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        # ``a and b``: b runs where a is true; ``a or b``: where a is false.
        self.visit(node.values[0])
        truth = isinstance(node.op, ast.And)
        self.depth += 1
        self.tested += 1
        for before, value in zip(node.values, node.values[1:]):
            self.tests.push(before, truth)
            self.visit(value)
        for _ in node.values[1:]:
            self.tests.pop()
        self.tested -= 1
        self.depth -= 1

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        first, *rest = node.generators
        self.visit(first.iter)
        if _empty_literal(first.iter):
            return  # nothing to iterate: the element is never built
        parts: list[ast.AST] = [first.target, *first.ifs, *rest]
        if isinstance(node, ast.DictComp):
            parts += [node.key, node.value]
        else:
            parts.append(node.elt)
        self.loops.append(first.iter)
        self._branch(parts)
        self.loops.pop()

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    # A function or lambda defined here runs where it is called, not where it
    # is defined: its defaults and decorators run now, its body at a call of
    # its name (``_inline``); stored or passed away, it is not followed.
    def visit_Lambda(self, node: ast.Lambda) -> None:
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for item in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
            if item is not None:
                self.visit(item)
        self.local_functions[node.name] = node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        # A class body runs now; the methods it defines are not local functions.
        for item in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(item)
        saved = dict(self.local_functions)
        self.visit_block(node.body)
        self.local_functions = saved

    def _inline(self, name: str, node: ast.Call) -> None:
        function = self.local_functions[name]
        arguments = function.args
        parameters = [*arguments.posonlyargs, *arguments.args]
        at = next((i for i, p in enumerate(parameters) if p.arg == self.self_name), None)
        shadowed = at is not None or any(
            p is not None and p.arg == self.self_name
            for p in [*arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
        )
        if shadowed and not (
            at is not None and at < len(node.args) and self._is_self(node.args[at])
        ):
            return  # its ``self`` is another object
        self.inlining.add(name)
        if isinstance(function, ast.Lambda):
            self.visit(function.body)
        else:
            self.visit_block(function.body)
        self.inlining.discard(name)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for name, imp in import_bindings(node):
            if name != "*":
                self.local_imports[name] = imp

    visit_ImportFrom = visit_Import

    # Assignments: the value runs first.
    def visit_Assign(self, node: ast.Assign) -> None:
        targets = node.targets
        if isinstance(node.value, ast.Lambda) and len(targets) == 1 and isinstance(targets[0], ast.Name):
            self.visit(node.value)
            self.local_functions[targets[0].id] = node.value
            return
        self.visit(node.value)
        for target in node.targets:
            if isinstance(target, ast.Attribute) and self._is_self(target.value):
                self._set(self._attr(target), target, node.value)
            else:
                self.visit(target)
            if self.aliases:  # bound again: no longer an alias
                self._unalias(target)
            if self.keyed:
                self._unkey(target)
        value = node.value
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            key = looked_up_key(value)
            if key is not None:
                self.keyed[targets[0].id] = key
        if (len(targets) == 1 and isinstance(targets[0], ast.Name) and not self.depth
                and isinstance(value, ast.Attribute) and self._is_self(value.value)):
            self.aliases[targets[0].id] = self._attr(value)
        for target in targets:
            if isinstance(target, ast.Name):
                self.method_aliases.pop(target.id, None)
        if (len(targets) == 1 and isinstance(targets[0], ast.Name) and not self.depth
                and isinstance(value, ast.Attribute) and (is_super(value.value) or dotted(value.value) is not None)):
            self.method_aliases[targets[0].id] = value

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:  # ``self.a: int`` alone binds nothing
            self.visit(node.value)
            target = node.target
            if isinstance(target, ast.Attribute) and self._is_self(target.value):
                self._set(self._attr(target), target, node.value)
            else:
                self.visit(target)
            if isinstance(target, ast.Name):
                self.keyed.pop(target.id, None)
                key = looked_up_key(node.value)
                if key is not None:
                    self.keyed[target.id] = key

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        target = node.target
        if isinstance(target, ast.Attribute) and self._is_self(target.value):
            self._read(self._attr(target), target)
            self._set(self._attr(target), target)
        else:
            self.visit(target)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if (
            isinstance(node.ctx, ast.Store)
            and (self._is_self_dict(node.value) or self._is_registry(node.value))
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            # self.__dict__["a"] = v; self._parameters["a"] = p (torch's
            # ``Module.__getattr__`` answers ``self.a`` from its registries).
            self._set(node.slice.value, node)
            return
        self.generic_visit(node)

    def _is_registry(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Attribute) and node.attr in _REGISTRIES and self._is_self(node.value)

    def visit_Compare(self, node: ast.Compare) -> None:
        # "a" in self.__dict__ / vars(self) / dir(self): a guard, not a read.
        if (
            len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
        ):
            right = node.comparators[0]
            if self._is_self_dict(right) or (
                isinstance(right, ast.Call) and isinstance(right.func, ast.Name)
                and right.func.id == "dir" and right.args and self._is_self(right.args[0])
            ):
                self.guarded.add(node.left.value)
                return
        self.generic_visit(node)

    # Attributes on self.
    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self._is_self(node.value):
            if isinstance(node.ctx, ast.Load):
                self._read(self._attr(node), node)
            elif isinstance(node.ctx, ast.Store):
                self._set(self._attr(node), node)
            return
        if not self._used_at_once(node.value):
            self.generic_visit(node)


    def visit_Return(self, node: ast.Return) -> None:
        value = node.value
        if (
            self.method_name == "__new__"
            and isinstance(value, ast.Call)
            and not (isinstance(value.func, ast.Attribute) and value.func.attr == "__new__")
            # ``torch.Tensor._make_wrapper_subclass(cls, shape)`` builds an instance of ``cls``.
            and not (value.args and self._is_self(value.args[0]))
        ):
            self.events.append(Marker("returns_other", self._line(node)))
        if (
            self.method_name == "__getattr__"
            and isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "getattr"
            and len(value.args) >= 2 and isinstance(value.args[1], ast.Name) and not self._is_self(value.args[0])
        ):
            # ``return getattr(self.opt, name)``: hands what the instance lacks to another object.
            self.events.append(Marker("delegates", self._line(node)))
        self.generic_visit(node)
        self.left_early |= self.depth > 0 or self.catching > 0

    def visit_Raise(self, node: ast.Raise) -> None:
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        raised_name = (dotted(raised) or "").rsplit(".", 1)[-1] if raised is not None else ""
        if raised_name == "AttributeError":
            self.events.append(Marker("raises_attribute_error", self._line(node)))
        elif raised_name == "NotImplementedError" and not (self.depth > 0 or self.catching > 0 or self.left_early):
            self.events.append(Marker("not_implemented", self._line(node)))  # a placeholder or an abstract method
        self.generic_visit(node)
        self.left_early |= self.depth > 0 or self.catching > 0
        self.events.append(Marker("raises", self._line(node), self.depth > 0 or self.catching > 0))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        args = node.args
        if self.method_name == "__getattribute__" and self._looks_up_elsewhere(node):
            # ``object.__getattribute__(self._base, name)``: lookups the base answers.
            self.events.append(Marker("answers_missing", self._line(node)))
        if isinstance(func, ast.Name) and func.id in _ATTR_BUILTINS and len(args) >= 2 and self._is_self(args[0]):
            for arg in args[2:]:
                self.visit(arg)
            name = args[1]
            constant = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None
            if func.id == "setattr":
                self._set_named(name, node)
            elif constant is None:
                self.visit(name)
            elif func.id == "hasattr":
                self.guarded.add(constant)
            elif func.id == "getattr" and len(args) == 2:
                self._read(constant, node)
            return
        if isinstance(func, ast.Attribute):
            self._visit_method_call(func, node)
            return
        if (isinstance(func, ast.Name) and func.id == "store_attr" and func.id not in self.local_functions
                and not any(k.arg == "self" for k in node.keywords)):
            self.generic_visit(node)
            self._store_attr(node)
            return
        if isinstance(func, ast.Name) and func.id in self.method_aliases and func.id not in self.local_functions:
            bound = self.method_aliases[func.id]  # ``init(self, config)`` runs ``Parent.__init__(self, config)``
            self._visit_method_call(bound, ast.copy_location(ast.Call(bound, node.args, node.keywords), node))
            return
        self.generic_visit(node)
        if isinstance(func, ast.Name) and func.id in self.local_functions:
            if func.id not in self.inlining:
                self._inline(func.id, node)
        elif isinstance(func, ast.Name) and args and self._is_self(args[0]) and func.id not in BUILTINS_TAKING_SELF:
            # ``setup(self)``: a function of the module (or imported) run on the instance.
            condition, requires = self.tests.current()
            self.events.append(Call(
                "function", func.id, func.id, self._line(node), self.depth > 0 or self.catching > 0,
                self.catching > 0, func.col_offset, condition, requires,
                imported=self._imported(func.id), explained=self._explained(requires)))

    def _looks_up_elsewhere(self, node: ast.Call) -> bool:
        """Whether ``node`` looks an attribute up on another object than the
        instance: ``object.__getattribute__(other, name)``,
        ``other.__getattribute__(name)`` or ``getattr(other, name)``."""
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "__getattribute__":
            if is_super(func.value):
                return False
            receiver: ast.expr | None = func.value
            if dotted(func.value) in ("object", "type"):
                receiver = node.args[0] if node.args else None
        elif isinstance(func, ast.Name) and func.id == "getattr" and node.args:
            receiver = node.args[0]
        else:
            return False
        return receiver is not None and not self._is_self(receiver)

    def _store_attr(self, node: ast.Call) -> None:
        """fastcore's ``store_attr("a,b")`` sets the calling method's arguments
        of those names on the instance, and with no names all of them (less
        ``but``), and its own keywords too: it reads the caller's frame, which
        only knowing the function tells."""
        def names(value: ast.expr | None) -> list[str] | None:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return [name.strip() for name in value.value.split(",") if name.strip()]
            return None

        keywords = {k.arg: k.value for k in node.keywords}
        named = node.args[0] if node.args else keywords.get("names")
        stored = names(named) if named is not None else (self.parameters() if self.parameters else None)
        but = keywords.get("but")
        if stored is None or None in keywords or (but is not None and names(but) is None):
            self.events.append(SetAny(self._line(node), self.depth > 0))
            return
        extra = [k for k in keywords if k is not None and k not in ("names", "but", "cast", "store_args")]
        left_out = set(names(but) or ()) | {self.self_name}
        for name in [*stored, *extra]:
            if name not in left_out:
                self._set(name, node)

    def _visit_method_call(self, func: ast.Attribute, node: ast.Call) -> None:
        owner, args = func.value, node.args
        if func.attr == "__setattr__" and (is_super(owner) or (args and self._is_self(args[0]))):
            # object.__setattr__(self, "a", v) / super().__setattr__("a", v)
            rest = args if is_super(owner) else args[1:]
            for arg in rest[1:]:
                self.visit(arg)
            if rest:
                self._set_named(rest[0], node)
            return
        if func.attr == "update" and self._is_self_dict(owner):
            for arg in args:
                self.visit(arg)
            for keyword in node.keywords:
                self.visit(keyword.value)
                if keyword.arg is None:
                    self.events.append(SetAny(self._line(node), self.depth > 0))
                else:
                    self._set(keyword.arg, node)
            for arg in args:
                keys = arg.keys if isinstance(arg, ast.Dict) else [None]
                for key in keys:
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        self._set(key.value, node)
                    else:
                        self.events.append(SetAny(self._line(node), self.depth > 0))
            return
        # The receiver, the arguments, then the call itself.
        if not self._used_at_once(owner):
            self.visit(owner)
        for arg in args:
            self.visit(arg)
        for keyword in node.keywords:
            self.visit(keyword.value)
        call = self._method_call(func.attr, owner, node)
        if call is not None:
            hands_over = call.name.endswith(STATIC) or (
                call.kind == "explicit" and bool(args) and self._is_self(args[0]))
            call.passed = _passed(node, hands_over)
            if call.name == "__init__":
                call.sole_test = self.depth == 1 and self.catching == 0 and self.tests.sole()
            call.explained = self._explained(call.requires)
            self.events.append(call)
        if func.attr in _REGISTERS and self._is_self(owner) and args:
            self._set_named(args[0], node)  # torch: the name becomes an attribute

    def _method_call(self, name: str, owner: ast.expr, node: ast.Call) -> Call | None:
        conditional = self.depth > 0 or self.catching > 0
        line = self._line(node)
        caught = self.catching > 0
        condition, requires = self.tests.current()
        if self._is_self(owner) or self._is_own_type(owner):
            if node.args and self._is_self(node.args[0]):
                name += STATIC  # ``self.from_loader(self, ...)``: a static or class method given the instance
            elif not self._is_self(owner):
                return None
            return Call("self", None, name, line, conditional, caught, node.func.col_offset, condition, requires)
        if is_super(owner):
            super_args = owner.args  # type: ignore[attr-defined]
            if not super_args or self._is_own_type(super_args[0]):
                return Call("super", None, name, line, conditional, caught, 0, condition, requires)
            target = dotted(super_args[0])
            if target == self.class_name and target not in self.local_imports:
                return Call("super", None, name, line, conditional, caught, 0, condition, requires)
            return Call("super_of", target, name, line, conditional, caught, 0, condition, requires,
                        imported=self._imported(target))
        passes_self = (node.args and self._is_self(node.args[0])) or any(
            k.arg == "self" and self._is_self(k.value) for k in node.keywords
        )
        # ``Parent.__init__(config)``, self left out: how transformers' modular
        # files spell the parent's __init__ (their converter writes the call).
        # Only a class of the instance's MRO is followed, so another object's
        # ``__init__`` is never taken for this one's.
        target = dotted(owner) if passes_self or name == "__init__" else None
        if passes_self and isinstance(owner, ast.Attribute) and self._is_self(owner.value):
            target = HELD + owner.attr  # ``self.base_class.__init__(self)``: the class the instance holds
        if target is not None:
            return Call("explicit", target, name, line, conditional, caught, 0, condition, requires,
                        imported=self._imported(target))
        return None

    def _is_own_type(self, node: ast.expr) -> bool:
        """``type(self)`` or ``self.__class__``: in ``super(type(self), self)``,
        the instance's class, which is this method's class for its own instances."""
        if isinstance(node, ast.Attribute):
            return node.attr == "__class__" and self._is_self(node.value)
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"
                and len(node.args) == 1 and self._is_self(node.args[0]))

    def _imported(self, target: str | None) -> str | None:
        """Where ``target``'s first name comes from, if the method imported it itself."""
        imp = None if target is None else self.local_imports.get(target.split(".", 1)[0])
        return None if imp is None else local_import(imp)


def _range_needs(iterable: ast.expr, is_self: Callable[[ast.expr], bool]) -> ast.expr | None:
    """``self.n`` where ``iterable`` is ``range(self.n)``, or ``range(c,
    self.n + d)`` with int literals ``c >= d >= 0`` (and a positive literal
    step, if any): the loop's body runs only where ``self.n`` is true (an int
    of at least 1); None for any other iterable."""
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range"
            and not iterable.keywords and 1 <= len(iterable.args) <= 3):
        return None
    args = iterable.args
    if len(args) == 3 and (_int_literal(args[2]) or 0) <= 0:
        return None  # no step, or one that may count down
    start = _int_literal(args[0]) if len(args) > 1 else 0
    stop = args[1] if len(args) > 1 else args[0]
    offset = 0
    if isinstance(stop, ast.BinOp) and isinstance(stop.op, ast.Add) and _int_literal(stop.right) is not None:
        offset = _int_literal(stop.right) or 0
        stop = stop.left
    if start is None or offset < 0 or start < offset:
        return None
    if isinstance(stop, ast.Attribute) and is_self(stop.value):
        return stop
    return None


def _int_literal(node: ast.expr) -> int | None:
    value = node.value if isinstance(node, ast.Constant) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _passed(node: ast.Call, hands_over: bool) -> str | None:
    """``Call.passed`` of ``node``; ``hands_over``: its first positional
    argument is the instance, which is not one of the method's parameters."""
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        return None
    return f"{len(node.args) - hands_over}:{','.join(k.arg for k in node.keywords if k.arg)}"


_ATTR_BUILTINS = frozenset({"getattr", "setattr", "hasattr", "delattr"})

#: Statements after which nothing in their block runs.
_ENDS_BLOCK = frozenset({ast.Return, ast.Raise, ast.Break, ast.Continue})


def _empty_literal(node: ast.expr) -> bool:
    """``()``, ``[]``, ``""``: a literal with nothing to iterate."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
        return not (node.keys if isinstance(node, ast.Dict) else node.elts)
    return isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and not node.value


def _only_body_goes_on(node: ast.If) -> bool:
    """Whether the body of ``node`` is the only way on: its ``else`` raises
    (a guard, as ``if not ok: raise`` is; an ``else`` that returns is a way on)."""
    return bool(node.orelse) and type(node.orelse[-1]) is ast.Raise
#: ``self.register_buffer("a", t)`` and the like: torch's ``nn.Module`` makes
#: ``self.a`` answer from then on.
_REGISTERS = frozenset({"register_buffer", "register_parameter", "register_module", "add_module"})
#: The dictionaries behind those: a key written there is an attribute too.
_REGISTRIES = frozenset({"_parameters", "_buffers", "_modules"})


_DISPATCH: dict[type[ast.AST], Callable[[MethodVisitor, Any], None]] = {
    getattr(ast, name[len("visit_"):]): function
    for name, function in vars(MethodVisitor).items()
    if name.startswith("visit_") and hasattr(ast, name[len("visit_"):])
}
