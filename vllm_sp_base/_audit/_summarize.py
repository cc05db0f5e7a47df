"""Turn one module's source into a ModuleInfo (AST only; nothing is imported)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vllm_sp_base._audit._model import (
    Body,
    BodyDoesNotParse,
    ClassInfo,
    Import,
    InitCall,
    Method,
    ModuleInfo,
    Read,
)

try:
    from vllm_sp_base._audit import _lexer
except ImportError:  # not compiled here: whole files are parsed
    _lexer = None  # type: ignore[assignment]

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a Name/Attribute chain (through subscripts such as ``Generic[T]``)."""
    if isinstance(node, ast.Subscript):
        return dotted(node.value)
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _is_type_checking(test: ast.expr) -> bool:
    name = dotted(test)
    return name is not None and name.rsplit(".", 1)[-1] == "TYPE_CHECKING"


# Nodes below which no self attribute, call or branch can sit.
_LEAVES = frozenset(
    {ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del, ast.Pass, ast.Break, ast.Continue}
)


class _MethodVisitor(ast.NodeVisitor):
    """Collects self-attribute reads, sets, self-calls and init calls of one method.

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
            elif isinstance(value, ast.AST):
                self.visit(value)

    def __init__(self, method: Method, self_name: str, class_name: str, line_offset: int = 0) -> None:
        # The lists themselves: ``method.reads`` and the rest would parse a cut body.
        self.reads = method._reads
        self.sets = method._sets
        self.self_calls = method._self_calls
        self.init_calls = method._init_calls
        self.self_name = self_name
        self.class_name = class_name
        self.line_offset = line_offset  # a cut body is parsed on its own, from line 2
        self.depth = 0  # how many branching constructs enclose the current node

    def _is_self(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id == self.self_name

    def _branch(self, nodes: Sequence[ast.AST]) -> None:
        self.depth += 1
        for node in nodes:
            self.visit(node)
        self.depth -= 1

    # Control flow: the test of an if/while runs; its bodies may not.
    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self._branch([*node.body, *node.orelse])

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        self._branch([*node.body, *node.orelse])

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self._branch([node.target, *node.body, *node.orelse])

    visit_AsyncFor = visit_For

    def visit_Try(self, node: ast.Try) -> None:
        # A read inside ``try`` may be caught; handlers and else may not run.
        self._branch([*node.body, *node.handlers, *node.orelse])
        for stmt in node.finalbody:
            self.visit(stmt)

    def visit_TryStar(self, node: ast.TryStar) -> None:
        self._branch([*node.body, *node.handlers, *node.orelse])
        for stmt in node.finalbody:
            self.visit(stmt)

    def visit_Match(self, node: ast.Match) -> None:
        self.visit(node.subject)
        self._branch(list(node.cases))

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.visit(node.test)
        self._branch([node.body, node.orelse])

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        self.visit(node.values[0])
        self._branch(node.values[1:])

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        first, *rest = node.generators
        self.visit(first.iter)
        parts: list[ast.AST] = [first.target, *first.ifs, *rest]
        if isinstance(node, ast.DictComp):
            parts += [node.key, node.value]
        else:
            parts.append(node.elt)
        self._branch(parts)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._branch([node.body])

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._branch(list(node.body))

    visit_AsyncFunctionDef = visit_FunctionDef

    # Attributes on self.
    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self._is_self(node.value):
            if isinstance(node.ctx, ast.Load):
                self.reads.append(
                    Read(node.attr, node.lineno + self.line_offset, node.col_offset, self.depth > 0))
            else:
                self.sets.setdefault(node.attr, node.lineno + self.line_offset)
            return
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        target = node.target
        if isinstance(target, ast.Attribute) and self._is_self(target.value):
            self.reads.append(Read(
                target.attr, target.lineno + self.line_offset, target.col_offset, self.depth > 0))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (
            isinstance(func, ast.Name)
            and func.id in ("getattr", "setattr", "hasattr", "delattr")
            and node.args
            and self._is_self(node.args[0])
            and len(node.args) >= 2
        ):
                name = node.args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    line = node.lineno + self.line_offset
                    if func.id == "setattr":
                        self.sets.setdefault(name.value, line)
                    elif func.id == "getattr" and len(node.args) == 2:
                        self.reads.append(Read(name.value, line, node.col_offset, self.depth > 0))
                for arg in node.args[2:]:
                    self.visit(arg)
                return
        if isinstance(func, ast.Attribute):
            if func.attr == "__init__":
                call = self._init_call(func.value, node)
                if call is not None:
                    self.init_calls.append(call)
            elif self._is_self(func.value):
                self.self_calls.append((func.attr, self.depth > 0))
        self.generic_visit(node)

    def _init_call(self, owner: ast.expr, node: ast.Call) -> InitCall | None:
        conditional = self.depth > 0
        line = node.lineno + self.line_offset
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
            if not owner.args:
                return InitCall("super", None, conditional, line)
            target = dotted(owner.args[0])
            if target == self.class_name:
                return InitCall("super", None, conditional, line)
            return InitCall("super_of", target, conditional, line)
        passes_self = (node.args and self._is_self(node.args[0])) or any(
            k.arg == "self" and self._is_self(k.value) for k in node.keywords
        )
        if passes_self:
            return InitCall("explicit", dotted(owner), conditional, line)
        return None


_DISPATCH: dict[type[ast.AST], Callable[[_MethodVisitor, Any], None]] = {
    getattr(ast, name[len("visit_"):]): function
    for name, function in vars(_MethodVisitor).items()
    if name.startswith("visit_") and hasattr(ast, name[len("visit_"):])
}


@dataclass(slots=True)
class _Module:
    """A module being summarised: its lines (for ``noqa``) and, when it was
    cut, its source and where each cut body is."""

    lines: list[bytes]
    path: str = ""
    source: bytes = b""
    # (def line, def col) -> (body start, body end, body line, non-ASCII)
    cuts: dict[tuple[int, int], tuple[int, int, int, int]] = field(default_factory=dict)


def _method(node: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str, module: _Module) -> Method | None:
    for decorator in node.decorator_list:
        if dotted(decorator) in ("staticmethod", "classmethod"):
            return None
    args = node.args.posonlyargs + node.args.args
    cut = module.cuts.get((node.lineno, node.col_offset)) if module.cuts else None
    if cut is not None and args:
        start, end, first_line, non_ascii = cut
        body = Body(module.path, module.source, start, end, first_line, bool(non_ascii), args[0].arg, class_name)
        return Method(node.name, node.lineno, body)
    method = Method(node.name, node.lineno)
    if not args:
        return method
    visitor = _MethodVisitor(method, args[0].arg, class_name)
    for stmt in node.body:
        visitor.visit(stmt)
    return method


def summarize_body(method: Method, body: Body) -> None:
    """Fill in ``method`` from its cut ``body``, parsed on its own.

    Raises BodyDoesNotParse where it is not valid Python: a syntax error in
    a body is found when the body is first needed, not when the module is."""
    try:
        tree = ast.parse(b"if 1:\n" + body.source[body.start : body.end])
        statements = tree.body[0].body  # type: ignore[attr-defined]
        line_offset = body.first_line - 2
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # What the whole module's parse says, with its line numbers.
        try:
            module = ast.parse(body.source)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            line = getattr(error, "lineno", None)
            raise BodyDoesNotParse(body.path, (
                f"does not parse{f' (line {line})' if line else ''}: {getattr(error, 'msg', error)}"
            )) from None
        statements = next(
            node.body for node in ast.walk(module)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (node.lineno, node.name) == (method.line, method.name)
        )
        line_offset = 0
    visitor = _MethodVisitor(method, body.self_name, body.class_name, line_offset)
    for stmt in statements:
        visitor.visit(stmt)


def _noqa(lines: list[bytes], line: int) -> tuple[str, ...] | None:
    if line > len(lines):
        return None
    text = lines[line - 1]
    if b"noqa" not in text.lower():
        return None
    match = _NOQA.search(text.decode("utf-8", "replace"))
    if match is None:
        return None
    codes = match.group("codes")
    return tuple(c.upper() for c in re.split(r"[,\s]+", codes) if c) if codes else ()


# Recursive helpers are module-level functions, not closures: a closure that
# calls itself is a reference cycle, which would keep each file's AST alive
# while the audit runs with the cyclic collector off.
def _collect_class_body(
    body: list[ast.stmt], class_name: str, attrs: set[str], methods: dict[str, Method],
    module: _Module,
) -> None:
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            attrs.add(stmt.name)
            method = _method(stmt, class_name, module)
            if method is not None:
                methods[stmt.name] = method
        elif isinstance(stmt, ast.ClassDef):
            attrs.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        attrs.add(name.id)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if stmt.value is not None:
                attrs.add(stmt.target.id)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                attrs.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(stmt, (ast.If, ast.Try)):
            _collect_class_body(stmt.body, class_name, attrs, methods, module)
            _collect_class_body(stmt.orelse, class_name, attrs, methods, module)
            if isinstance(stmt, ast.Try):
                for handler in stmt.handlers:
                    _collect_class_body(handler.body, class_name, attrs, methods, module)
                _collect_class_body(stmt.finalbody, class_name, attrs, methods, module)


def _class(node: ast.ClassDef, module: _Module) -> ClassInfo:
    attrs: set[str] = set()
    methods: dict[str, Method] = {}
    _collect_class_body(node.body, node.name, attrs, methods, module)
    slots = [s for s in node.body if isinstance(s, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in s.targets)]
    for stmt in slots:
        for const in ast.walk(stmt.value):
            if isinstance(const, ast.Constant) and isinstance(const.value, str):
                attrs.add(const.value)
    header_line = node.lineno
    return ClassInfo(
        name=node.name,
        line=header_line,
        col=node.col_offset,
        bases=[dotted(b) for b in node.bases],
        class_attrs=attrs,
        methods=methods,
        noqa=_noqa(module.lines, header_line),
    )


def _import_from(node: ast.ImportFrom) -> list[tuple[str, Import]]:
    out: list[tuple[str, Import]] = []
    for alias in node.names:
        if alias.name == "*":
            out.append(("*", Import(node.level, node.module, None)))
        else:
            out.append((alias.asname or alias.name, Import(node.level, node.module, alias.name)))
    return out


def _import(node: ast.Import) -> list[tuple[str, Import]]:
    out: list[tuple[str, Import]] = []
    for alias in node.names:
        if alias.asname:
            out.append((alias.asname, Import(0, alias.name, None)))
        else:
            top = alias.name.split(".")[0]
            out.append((top, Import(0, top, None)))
    return out


def _bind(
    info: ModuleInfo, module: _Module, statements: list[ast.stmt], fallback: bool, override: bool
) -> None:
    imports = info.fallback_imports if fallback else info.imports
    aliases = info.fallback_aliases if fallback else info.aliases
    for stmt in statements:
        pairs: list[tuple[str, Import]] = []
        if isinstance(stmt, ast.Import):
            pairs = _import(stmt)
        elif isinstance(stmt, ast.ImportFrom):
            pairs = _import_from(stmt)
        elif isinstance(stmt, ast.ClassDef):
            if override or stmt.name not in info.classes:
                info.classes[stmt.name] = _class(stmt, module)
                imports.pop(stmt.name, None)
                aliases.pop(stmt.name, None)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            value = dotted(stmt.value) if isinstance(stmt.value, (ast.Name, ast.Attribute)) else None
            if (
                isinstance(target, ast.Name)
                and value is not None
                and (override or target.id not in aliases)
            ):
                aliases[target.id] = value
                imports.pop(target.id, None)
        elif isinstance(stmt, ast.If):
            if _is_type_checking(stmt.test):
                _bind(info, module, stmt.body, True, override)
                _bind(info, module, stmt.orelse, fallback, override)
            else:
                _bind(info, module, stmt.body, fallback, override)
                _bind(info, module, stmt.orelse, fallback, False)
        elif isinstance(stmt, ast.Try):
            _bind(info, module, stmt.body, fallback, override)
            for handler in stmt.handlers:
                _bind(info, module, handler.body, fallback, False)
            _bind(info, module, stmt.orelse, fallback, override)
        for name, imp in pairs:
            if name == "*":
                info.star_imports.append(imp)
            elif override or name not in imports:
                imports[name] = imp
                aliases.pop(name, None)
                if not fallback:
                    info.classes.pop(name, None)


#: Bodies the audit reads for nearly every class it looks at: parsed with the
#: module, on every core, rather than one by one later.
_KEEP_WHOLE = (b"__init__",)
_OTHER_CODING = re.compile(rb"\A(?:[^\n]*\n)?[ \t\f]*#.*?coding[:=]")


def summarize(source: str | bytes, filename: str, is_package: bool, cut: bool = True) -> ModuleInfo:
    """Parse ``source``; raises SyntaxError/ValueError for code that does not parse.

    With ``cut`` (and the compiled cutter), method bodies other than
    ``__init__`` are left out of the parse and parsed when first asked for."""
    if isinstance(source, str):
        source = source.encode("utf-8")
    module = None
    if cut and _lexer is not None and not source.startswith(b"\xef\xbb\xbf") and (
        _OTHER_CODING.match(source) is None
    ):
        found = _lexer.cut_bodies(source, _KEEP_WHOLE)
        if found is not None and found[1]:
            skeleton, cuts = found
            try:
                tree = ast.parse(skeleton, filename=filename)
            except (SyntaxError, ValueError):
                pass  # parsed whole below, which says what is wrong
            else:
                module = _Module(skeleton.splitlines(), filename, source, {(c[0], c[1]): c[2:] for c in cuts})
    if module is None:
        tree = ast.parse(source, filename=filename)
        module = _Module(source.splitlines())
    info = ModuleInfo({}, {}, {}, {}, [], {}, is_package)
    _bind(info, module, tree.body, False, True)
    return info
