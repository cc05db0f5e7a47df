"""Turn one module's source into a ModuleInfo (AST only; nothing is imported)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from vllm_sp_base._audit.summaries._events import SETTER, STATIC, Call, Import, Set
from vllm_sp_base._audit.summaries._noqa import class_noqa
from vllm_sp_base._audit.summaries._scopes import (
    CLASS_STATEMENT,
    assigned_aliases,
    base_name,
    bind_local_classes,
    shadow,
)
from vllm_sp_base._audit.summaries._signature import (
    def_text,
    header_arguments,
    header_parameters,
    init_signature,
    parameters,
)
from vllm_sp_base._audit.summaries._summaries import (
    Body,
    BodyDoesNotParse,
    ClassInfo,
    Method,
    ModuleInfo,
)
from vllm_sp_base._audit.summaries._syntax import (
    constant_strings,
    constant_truth,
    dataclass_decorator,
    dotted,
    import_bindings,
    mangled,
    writes_init,
)
from vllm_sp_base._audit.summaries._visitor import MethodVisitor

try:
    from vllm_sp_base._audit import _lexer
except ImportError:  # not compiled here: whole files are parsed
    _lexer = None  # type: ignore[assignment]


def _is_type_checking(test: ast.expr) -> bool:
    name = dotted(test)
    return name is not None and name.rsplit(".", 1)[-1] == "TYPE_CHECKING"


@dataclass(slots=True)
class _Module:
    """A module being summarised: its lines (for ``noqa``) and, when it was
    cut, its source and where each cut body is."""

    lines: list[bytes]
    path: str = ""
    source: bytes = b""
    # (def line, def col) -> (body start, body end, body line, non-ASCII)
    cuts: dict[tuple[int, int], tuple[int, int, int, int]] = field(default_factory=dict)
    walrus: bool = True  # the source spells ``:=`` somewhere (else no expression is walked for one)
    noqa: bool = True  # the source spells ``noqa`` in some case (else no class header is read for one)
    stubs: set[str] = field(default_factory=set)  # classes defined only under ``if TYPE_CHECKING:``


def _method(
    node: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str, module: _Module,
    setter: bool = False, instance: int | None = None,
) -> Method | None:
    """The method ``node`` defines on instances; None for a static or class
    method, and for a property's deleter (the getter is what a read runs) or
    setter (``setter``: the setter, which ``self.x = v`` runs). ``instance``:
    a static or class method summarised as given the instance, the index of
    the parameter that receives it."""
    is_property = is_abstract = False
    for decorator in node.decorator_list:
        name = dotted(decorator) or ""
        is_abstract |= name.rsplit(".", 1)[-1] == "abstractmethod"
        if name in ("staticmethod", "classmethod"):
            if instance is None:
                return None
        elif name.endswith(".deleter") or (name.endswith(".setter") and not setter):
            return None
        is_property |= name.rsplit(".", 1)[-1] in ("property", "cached_property")
    names = [a.arg for a in node.args.posonlyargs + node.args.args]
    cut = module.cuts.get((node.lineno, node.col_offset)) if module.cuts else None
    if cut is not None and instance:  # the cutter kept only the first parameter
        found = header_arguments(def_text(module.source, node.lineno, cut[0], cut[2]))
        names = [a.arg for a in found.posonlyargs + found.args] if found is not None else names
    args = names[instance or 0:]
    if cut is not None and args:
        start, end, first_line, non_ascii = cut
        body = Body(module.path, module.source, start, end, first_line, bool(non_ascii), args[0], class_name)
        return Method(node.name, node.lineno, body, is_property, is_abstract)
    method = Method(node.name, node.lineno, is_property=is_property, is_abstract=is_abstract)
    if not args:
        return method
    signature = parameters(node.args, args[0], node.body) if not module.cuts else header_parameters(
        _kept_text(module, node), args[0], node.body)
    if signature is not None:
        method._events.append(signature)
    if node.name == "__init__" and not instance:
        # A cut module's skeleton keeps only the first parameter: the kept text has them all.
        arguments = header_arguments(_kept_text(module, node)) if module.cuts else node.args
        if arguments is not None:
            method._events.append(init_signature(arguments))
    def parameter_names() -> list[str] | None:
        # A cut module's skeleton keeps only a signature's first parameter: its text has them all.
        found = header_arguments(_kept_text(module, node)) if module.cuts else node.args
        return None if found is None else [a.arg for a in (*found.posonlyargs, *found.args, *found.kwonlyargs)]

    visitor = MethodVisitor(method._events, method.name, args[0], class_name, parameters=parameter_names)
    visitor.visit_block(node.body)
    visitor.finish()
    return method


def _is_setter(decorator: ast.expr, name: str) -> bool:
    """``@x.setter``, or ``@Parent.x.setter`` (a subclass's setter of the parent's property)."""
    spelled = dotted(decorator) or ""
    return spelled == f"{name}.setter" or spelled.endswith(f".{name}.setter")


def _method_alias(
    name: str, value: str, stmt: ast.Assign | ast.AnnAssign, methods: dict[str, Method],
) -> Method | None:
    """``name = value`` in a class body binds a method: ``forward = _forward``
    (a method defined above in the body) runs that method's code, and
    ``__init__ = nn.Module.__init__`` (a dotted name ending in a dunder, or in
    ``name`` itself: ``forward = Base.forward``) runs what ``X.m(self)`` would.
    A module-level function bound so (``forward = _fwd``) is read with the
    module's functions (``_bind``)."""
    if "." not in value:
        same = methods.get(value)
        return None if same is None else renamed(same, name, stmt.lineno)
    owner, _, attr = value.rpartition(".")
    if attr != name and not (attr.startswith("__") and attr.endswith("__")):
        return None  # ``dtype = torch.float32``: a value, not a method
    method = Method(name, stmt.lineno)
    method._events.append(Call("explicit", owner, attr, stmt.lineno, False, col=stmt.col_offset))
    return method


def renamed(method: Method, name: str, line: int) -> Method:
    """``method``'s code bound under another name (its body parsed on its own)."""
    copy = Method(name, line, method._body, method.is_property)
    if method._body is None:
        copy._events = method._events
    return copy


def _kept_text(module: _Module, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The source from ``node``'s ``def`` line to its body's first line: the
    cut module's skeleton keeps only a signature's first parameter."""
    last = node.body[0].lineno if node.body else node.lineno
    return b"\n".join(module.lines[node.lineno - 1 : last]).decode("utf-8", "replace")


# Recursive helpers are module-level functions, not closures: a closure that
# calls itself is a reference cycle, which would keep each file's AST alive
# while the audit runs with the cyclic collector off.
def _collect_class_body(
    body: list[ast.stmt], class_name: str, attrs: set[str], methods: dict[str, Method],
    module: _Module, constants: dict[str, tuple[str, ...]], held: dict[str, str],
) -> None:
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            attrs.add(stmt.name)
            method = _method(stmt, class_name, module)
            if method is not None:
                methods[stmt.name] = method
            elif any(_is_setter(d, stmt.name) for d in stmt.decorator_list):
                setter = _method(stmt, class_name, module, setter=True)
                if setter is not None:
                    setter.name = stmt.name + SETTER
                    methods[setter.name] = setter
            else:
                decorators = {dotted(d) for d in stmt.decorator_list}
                instance = 0 if "staticmethod" in decorators else 1 if "classmethod" in decorators else None
                static = None if instance is None else _method(stmt, class_name, module, instance=instance)
                if static is not None:
                    static.name = stmt.name + STATIC
                    methods[static.name] = static
        elif isinstance(stmt, ast.ClassDef):
            attrs.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        attrs.add(name.id)
            strings = constant_strings(stmt.value)
            if strings is not None and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                constants[stmt.targets[0].id] = strings
            held_name = dotted(stmt.value) if isinstance(stmt.value, (ast.Name, ast.Attribute)) else None
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    if held_name is None:
                        held.pop(target.id, None)
                    else:
                        held[target.id] = held_name
                        bound = _method_alias(target.id, held_name, stmt, methods)
                        if bound is not None:
                            methods[target.id] = bound
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if stmt.value is not None:
                attrs.add(stmt.target.id)
                held_name = dotted(stmt.value) if isinstance(stmt.value, ast.Attribute) else None
                if held_name is not None:  # ``__init__: Callable = nn.Module.__init__``
                    # Not a bare name: torch's own ``forward: Callable[..., Any] =
                    # _forward_unimplemented`` and ``__call__ : ... = _wrapped_call_impl``
                    # stand for what a subclass defines and what torch runs around it.
                    held[stmt.target.id] = held_name
                    bound = _method_alias(stmt.target.id, held_name, stmt, methods)
                    if bound is not None:
                        methods[stmt.target.id] = bound
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                attrs.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(stmt, (ast.If, ast.Try)):
            # ``if TYPE_CHECKING: __call__ = forward`` binds nothing when the code runs (fairseq2's
            # ``ResidualConnect``): an arm Python never takes is no part of the class.
            truth = constant_truth(stmt.test) if isinstance(stmt, ast.If) else None
            if truth is not False:
                _collect_class_body(stmt.body, class_name, attrs, methods, module, constants, held)
            if truth is not True:
                _collect_class_body(stmt.orelse, class_name, attrs, methods, module, constants, held)
            if isinstance(stmt, ast.Try):
                for handler in stmt.handlers:
                    _collect_class_body(handler.body, class_name, attrs, methods, module, constants, held)
                _collect_class_body(stmt.finalbody, class_name, attrs, methods, module, constants, held)


def _class(node: ast.ClassDef, module: _Module) -> ClassInfo:
    attrs: set[str] = set()
    methods: dict[str, Method] = {}
    constants: dict[str, tuple[str, ...]] = {}
    held: dict[str, str] = {}
    _collect_class_body(node.body, node.name, attrs, methods, module, constants, held)
    attrs |= {mangled(name, node.name) for name in attrs if name.startswith("__")}  # ``__a = 1`` is ``_Class__a``
    # A slot is a descriptor that raises AttributeError until ``__init__`` sets
    # it: no class-level default (``attrs`` keeps ``__slots__`` itself).
    slots = frozenset(
        const.value
        for stmt in node.body if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None
        and any(isinstance(t, ast.Name) and t.id == "__slots__"
                for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]))
        for const in ast.walk(stmt.value) if isinstance(const, ast.Constant) and isinstance(const.value, str)
    ) - {"__dict__", "__weakref__"}  # what they name is no attribute a read can miss
    header_line = node.lineno
    noqa, noqa_lines = class_noqa(module.lines, node) if module.noqa else (None, ())
    fields, generated, no_default = _dataclass(node, methods)
    attrs -= no_default  # ``x: list = field(default_factory=list)``: the decorator deletes the class attribute
    return ClassInfo(
        name=node.name,
        line=header_line,
        col=node.col_offset,
        bases=[base_name(b) for b in node.bases],
        class_attrs=attrs,
        methods=methods,
        noqa=noqa,
        constants=constants,
        noqa_lines=noqa_lines,
        slots=slots,
        held=held,
        metaclass=next((dotted(k.value) or "" for k in node.keywords if k.arg == "metaclass"), None),
        fields=fields,
        generated_init=generated,
    )


def _dataclass(
    node: ast.ClassDef, methods: dict[str, Method],
) -> tuple[tuple[str, ...] | None, bool, set[str]]:
    """A ``@dataclass`` class's own fields (None: not one), whether the
    decorator writes its ``__init__`` (not ``init=False``, none of its own),
    and the fields it leaves no class attribute (``field(...)`` without
    ``default=``). Where it writes one, ``methods`` gets that ``__init__``: it
    sets the class's own fields here (not a ``field(init=False)`` without a
    ``default_factory``), and whoever knows the MRO adds its dataclass bases'
    fields and the ``__post_init__`` call (``ClassModel``)."""
    decorator = dataclass_decorator(node)
    if decorator is None:
        return None, False, set()
    declared = [
        stmt for stmt in node.body
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
        and (dotted(stmt.annotation.value if isinstance(stmt.annotation, ast.Subscript) else stmt.annotation)
             or "").rsplit(".", 1)[-1] not in ("ClassVar", "InitVar", "KW_ONLY")
    ]
    fields = tuple(stmt.target.id for stmt in declared)  # type: ignore[union-attr]
    options = {stmt.target.id: _field_options(stmt.value) for stmt in declared}  # type: ignore[union-attr]
    no_default = {name for name, found in options.items() if found is not None and "default" not in found}
    if not writes_init(decorator) or "__init__" in methods:
        return fields, False, no_default
    init = Method("__init__", node.lineno)
    init._events.extend(
        Set(name, node.lineno, False) for name in fields
        if not ((found := options[name]) is not None and found.get("init") is False and "default_factory" not in found))
    methods["__init__"] = init
    return fields, True, no_default


def _field_options(value: ast.expr | None) -> dict[str, object] | None:
    """The keywords of a ``field(...)`` call (a constant's value, else True);
    None where the value is no such call."""
    if not (isinstance(value, ast.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1] == "field"):
        return None
    return {k.arg: k.value.value if isinstance(k.value, ast.Constant) else True for k in value.keywords if k.arg}


def _bind(
    info: ModuleInfo, module: _Module, statements: list[ast.stmt], fallback: bool, override: bool
) -> None:
    imports = info.fallback_imports if fallback else info.imports
    aliases = info.fallback_aliases if fallback else info.aliases
    for stmt in statements:
        pairs: list[tuple[str, Import]] = []
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            pairs = import_bindings(stmt)
        elif isinstance(stmt, ast.ClassDef):
            _bind_aliases(info, stmt, aliases, imports, override, module.walrus, module.stubs)
            if fallback and stmt.name in info.aliases:
                continue  # a stub for the type checker of a name the module binds at run time
            if override or stmt.name not in info.classes:
                earlier = shadow(info, stmt.name)  # ``class B(B)``: its base is the earlier B
                cls = _class(stmt, module)
                if earlier is not None:
                    cls.bases = [earlier if base == stmt.name else base for base in cls.bases]
                cls.class_attrs |= _set_on_the_class(info, stmt)
                _bind_function_aliases(info, cls)
                info.classes[stmt.name] = cls
                if fallback:
                    module.stubs.add(stmt.name)
                imports.pop(stmt.name, None)
                aliases.pop(stmt.name, None)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            _bind_class_attributes(info, stmt)
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
            strings = None if stmt.value is None else constant_strings(stmt.value)
            if isinstance(target, ast.Name) and strings is not None and not fallback:
                info.constants[target.id] = strings
            _bind_aliases(info, stmt, aliases, imports, override, module.walrus, module.stubs)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not fallback:
                _bind_function(info, module, stmt)
                helper = _method(stmt, "", module) if override or stmt.name not in info.functions else None
                if helper is not None and (stmt.args.posonlyargs or stmt.args.args):
                    info.functions[stmt.name] = helper
        elif isinstance(stmt, ast.If) and _is_type_checking(stmt.test):
            _bind(info, module, stmt.body, True, override)
            _bind(info, module, stmt.orelse, fallback, override)
        elif isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            # A ``with`` body, the first branch or a loop's body: what it binds
            # wins over an ``else``'s (the audit cannot tell which ran).
            _bind_aliases(info, stmt, aliases, imports, override, module.walrus, module.stubs)
            _bind(info, module, stmt.body, fallback, override)
            _bind(info, module, getattr(stmt, "orelse", []), fallback, False)
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            _bind(info, module, stmt.body, fallback, override)
            for handler in stmt.handlers:
                _bind(info, module, handler.body, fallback, False)
            _bind(info, module, stmt.orelse, fallback, override)
            _bind(info, module, stmt.finalbody, fallback, override)
        else:
            _bind_aliases(info, stmt, aliases, imports, override, module.walrus, module.stubs)
        for name, imp in pairs:
            if name == "*":
                info.star_imports.append(imp)
            elif override or name not in imports:
                imports[name] = imp
                aliases.pop(name, None)
                if not fallback:
                    info.classes.pop(name, None)


def _set_on_the_class(info: ModuleInfo, node: ast.ClassDef) -> set[str]:
    """What this module's own functions and classes set on the class as Python
    builds it: a decorator (``@with_scale``, ``def with_scale(cls): cls.scale =
    2``) and the metaclass's ``__init__`` (``cls.scale = 2``) bind class
    attributes, which every instance reads. Only what the module defines
    before the class is followed: an imported decorator (a registry's) is
    taken to set nothing."""
    setters: list[Method] = []
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Name) and (function := info.functions.get(decorator.id)) is not None:
            setters.append(function)
    for keyword in node.keywords:
        if keyword.arg == "metaclass" and isinstance(keyword.value, ast.Name):
            meta = info.classes.get(keyword.value.id)
            init = meta.methods.get("__init__") if meta is not None else None
            if init is not None:
                setters.append(init)
    attrs: set[str] = set()
    for setter in setters:
        try:
            attrs.update(event.attr for event in setter.events if type(event) is Set)
        except BodyDoesNotParse:
            pass  # said where the body is needed, or by ``--parse-all``
    return attrs


def _bind_function_aliases(info: ModuleInfo, cls: ClassInfo) -> None:
    """``forward = _fwd`` in the class body, ``_fwd`` a function the module
    defines before the class: the method runs the function's code, its first
    parameter the instance."""
    for name, value in cls.held.items():
        function = info.functions.get(value)
        if function is not None and name not in cls.methods:
            cls.methods[name] = renamed(function, name, cls.line)


def _bind_class_attributes(info: ModuleInfo, stmt: ast.Assign | ast.AnnAssign) -> None:
    """``C.a = 5`` after ``class C``'s body: a class attribute, as one its body binds."""
    if stmt.value is None:
        return
    for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
        if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and (cls := info.classes.get(target.value.id)) is not None):
            cls.class_attrs.add(target.attr)


def _bind_aliases(
    info: ModuleInfo, stmt: ast.stmt, aliases: dict[str, str], imports: dict[str, Import], override: bool,
    walrus: bool, module_stubs: frozenset[str] | set[str] = frozenset(),
) -> None:
    for name, value in assigned_aliases(stmt, walrus):
        if override or name not in aliases:
            aliases[name] = value
            imports.pop(name, None)
            if aliases is info.aliases and name in module_stubs:
                # ``if TYPE_CHECKING: class Base(nn.Module): ...`` ``else: Base = Real``:
                # the class never exists at run time, the alias does.
                info.classes.pop(name, None)


def _bind_function(info: ModuleInfo, module: _Module, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """The classes ``node`` defines, under ``node.<locals>.``. A cut body is
    parsed here only where it holds a ``class`` statement."""
    statements: list[ast.stmt] = node.body
    cut = module.cuts.get((node.lineno, node.col_offset)) if module.cuts else None
    if cut is not None:
        start, end, first_line, _ = cut
        if CLASS_STATEMENT.search(module.source, start, end) is None:
            return
        try:
            tree = ast.parse(b"if 1:\n" + module.source[start:end])
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return  # said where the body is needed, or by ``--parse-all``
        ast.increment_lineno(tree, first_line - 2)
        statements = tree.body[0].body  # type: ignore[attr-defined]
    elif not any(CLASS_STATEMENT.match(line) for line in module.lines[node.lineno:node.end_lineno]):
        return  # read on the lines: cheaper than walking the function's tree
    bind_local_classes(info, statements, f"{node.name}.<locals>.", {}, lambda c: _class(c, module),
                       walrus=module.walrus)


#: Bodies the audit reads for nearly every class it looks at: parsed with the
#: module, on every core, rather than one by one later.
_KEEP_WHOLE = (b"__init__",)
_OTHER_CODING = re.compile(rb"\A(?:[^\n]*\n)?[ \t\f]*#.*?coding[:=]")


def summarize(
    source: str | bytes,
    filename: str,
    is_package: bool,
    cut: bool = True,
    inits_of: frozenset[str] | None = None,
) -> ModuleInfo:
    """Parse ``source``; raises SyntaxError/ValueError for code that does not parse.

    With ``cut`` (and the compiled cutter), method bodies are left out of the
    parse and parsed when first asked for; but ``__init__`` bodies, of every
    class or, given ``inits_of``, of the classes named there."""
    if isinstance(source, str):
        source = source.encode("utf-8")
    module = None
    if cut and _lexer is not None and not source.startswith(b"\xef\xbb\xbf") and (
        _OTHER_CODING.match(source) is None
    ):
        found = _lexer.cut_bodies(source, _KEEP_WHOLE, inits_of)
        if found is not None and found[1]:
            skeleton, cuts = found
            try:
                tree = ast.parse(skeleton, filename=filename)
            except (SyntaxError, ValueError):
                pass  # parsed whole below, which says what is wrong
            else:
                module = _Module(source.splitlines(), filename, source, {(c[0], c[1]): c[2:] for c in cuts})
    if module is None:
        tree = ast.parse(source, filename=filename)
        module = _Module(source.splitlines())
    module.walrus = b":=" in source
    module.noqa = b"noqa" in source.lower()
    info = ModuleInfo({}, {}, {}, {}, [], {}, is_package)
    _bind(info, module, tree.body, False, True)
    return info
