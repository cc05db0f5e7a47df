"""Where the audited tree calls a method on an instance of a plain class it
builds: ``runner = Runner(cfg)`` then ``runner.step()`` in the same function
(or module), or ``Runner(cfg).step()``; or has Python call one
(``len(runner)``: ``__len__``, ``runner[k]``, ``for x in runner``, ``with runner:``). Such a call is an entry point of the
class as the tree uses it, said with its call site; what calls a plain
class's methods elsewhere cannot be told from source.

A call counts where it may run after the build, on the very object built:
not in a sibling branch, not once the variable is bound again (a loop, a
comprehension's or a ``case`` pattern's own name, a ``with ... as``, which
binds what ``__enter__`` returns), not in a lambda's body. Like ``_outside``,
it reads only the files that spell the class's name, each parsed once; the
caller resolves the name each build spells (``Runner``, ``mod.Runner``) in
its module, so another module's class of that name (``threading.Timer``) is
not taken for the audited one.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterable, Sequence

from vllm_sp_base._audit.semantics._classes import ClassModel
from vllm_sp_base._audit.semantics._outside import MAX_FILES
from vllm_sp_base._audit.semantics._parsed import parsed
from vllm_sp_base._audit.semantics._project import Opaque
from vllm_sp_base._audit.semantics._runtime import in_a_test, is_module
from vllm_sp_base._audit.summaries._summaries import python_name

#: (method, line, the dotted name the build spells)
Site = tuple[str, int, str]

#: What Python runs on an instance given to a builtin: ``len(r)`` runs
#: ``r.__len__()`` (the method is looked up on the class, as a call on the
#: instance would find it).
BUILTIN_DUNDERS = {
    "len": "__len__", "repr": "__repr__", "str": "__str__", "iter": "__iter__", "next": "__next__",
    "hash": "__hash__", "bool": "__bool__", "abs": "__abs__", "reversed": "__reversed__",
}
#: What Python runs on an instance a statement or an operator uses:
#: ``r[k]``, ``for x in r``, ``with r:``.
SYNTAX_DUNDERS = frozenset({"__getitem__", "__setitem__", "__delitem__", "__iter__", "__enter__", "__exit__"})
#: What a file that makes Python run each dunder spells (a byte search before any parse).
_SPELLED_BY: dict[str, tuple[bytes, ...]] = {
    **{dunder: (f"{builtin}(".encode(),) for builtin, dunder in BUILTIN_DUNDERS.items()},
    "__getitem__": (b"[",), "__setitem__": (b"[",), "__delitem__": (b"del",),
    "__enter__": (b"with",), "__exit__": (b"with",),
}
_SPELLED_BY["__iter__"] = (b"iter(", b"for")


def entries_called(
    model: ClassModel, missing: set[str], entries: Sequence[str],
    texts: Callable[[], Iterable[tuple[str, bytes]]], module_of: Callable[[str], str | None],
) -> dict[str, tuple[str, int]]:
    """A plain class's methods that the audited tree calls on an instance it
    builds (not among ``entries``, what a framework calls already), with
    their first call site: its entry points as the tree uses it. A torch
    module's are torch's; nothing is read where nothing is ``missing``.
    ``texts``: the audited files that may build it; ``module_of``: an audited
    file's module."""
    ref = model.ref
    if not missing or is_module(model):
        return {}
    project = model.project

    def builds_it(path: str, spelled: str) -> bool:
        # The name the build spells, resolved where it is spelled; a test's
        # module builds doubles and calls what it calls.
        module = module_of(path)
        return module is not None and not in_a_test(module) and project.resolve(module, spelled) == ref

    methods = _callable_methods(model, entries)
    if methods is not None and not methods:
        return {}
    sites = called_on_instances(python_name(ref.name), texts(), builds_it, methods)
    return {method: site for method, site in sites.items()
            if method not in entries and method != "__init__" and model.lookup(method, 0) is not None}


def _callable_methods(model: ClassModel, entries: Sequence[str]) -> frozenset[str] | None:
    """The methods a call on an instance could name that are not entry
    points already; None where a base the source does not show may define
    any name."""
    names: set[str] = set()
    for entry, info in zip(model.mro, model.infos):
        if info is not None:
            names.update(info.methods)
        elif isinstance(entry, Opaque):
            return None
    return frozenset(names.difference(entries, ("__init__",)))


def called_on_instances(
    name: str, texts: Iterable[tuple[str, bytes]], builds_it: Callable[[str, str], bool],
    methods: frozenset[str] | None = None,
) -> dict[str, tuple[str, int]]:
    """Method -> (path, line) of the first call the files ``texts`` ((path,
    bytes), those that spell ``name``) make of it on an instance they build,
    where ``builds_it(path, spelled)`` says the name the build spells there
    is the audited class. ``methods``: the names worth a call (None: any);
    a file that spells none of them after a dot is not parsed."""
    built = f"{name}(".encode()  # what any build spells (``Name(``, ``mod.Name(``)
    files = [(path, data) for path, data in texts if built in data]
    if methods is not None:
        # ``p.m``, also spelled ``p . m``, across a backslash-continued line or
        # a comment inside brackets; a file past ASCII may spell a name Python
        # folds by NFKC (``r.ｒun()``): it is parsed.
        # Possessive: a run of ``#`` is one comment, never split every way (backtracking).
        called = re.compile(rb"\.(?:[ \t\\\r\n]|#[^\n]*+)*+(?:"
                            + b"|".join(re.escape(m.encode()) for m in sorted(methods)) + rb")(?!\w)")
        # A dunder Python calls is spelled otherwise: ``len(r)``, ``r[k]``, ``with r:``.
        spellings = {s for m in methods for s in _SPELLED_BY.get(m, ())}
        files = [(path, data) for path, data in files
                 if called.search(data) or not data.isascii() or any(s in data for s in spellings)]
    found: dict[str, tuple[str, int]] = {}
    if len(files) > MAX_FILES:
        return found
    for path, data in sorted(files):
        for method, line, spelled in _calls_in(data, name):
            if method not in found and builds_it(path, spelled):
                found[method] = (path, line)
    return found


@functools.lru_cache(maxsize=256)
def _calls_in(data: bytes, name: str) -> tuple[Site, ...]:
    """The sites of ``data`` in file order: each function whose own lines
    spell a build is parsed alone where it can be (a file's parse took a
    fifth of a cold run on vLLM), else the whole file."""
    built = f"{name}(".encode()
    calls: list[Site] = []
    alone = _functions_alone(data, built)
    if alone is not None:
        for function in alone:
            _block(function.body, {}, name, calls)
        return tuple(sorted(calls, key=lambda site: site[1]))
    tree = parsed(data)
    if tree is None:
        return ()
    # Only the scopes whose own lines spell a build: most functions of a file
    # that names the class never build it.
    starts = [0]  # each line's first byte
    at = data.find(b"\n")
    while at >= 0:
        starts.append(at + 1)
        at = data.find(b"\n", at + 1)
    starts.append(len(data))
    functions = _functions(tree.body)
    scopes = [tree.body, *(n.body for n in functions
                           if data.find(built, starts[n.lineno - 1], starts[min(n.end_lineno or n.lineno, len(starts) - 1)]) >= 0)]
    for body in scopes:
        _block(body, {}, name, calls)
    return tuple(sorted(calls, key=lambda site: site[1]))


def _functions_alone(data: bytes, built: bytes) -> list[ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The innermost function around each line that spells ``built``, each
    parsed from its own lines (numbered as in the file); None where a build
    is on no function's body lines (module level, a ``def`` line), or a
    function's lines do not parse alone (a string or a bracket that runs
    past them): then the file is parsed whole."""
    if re.search(re.escape(built[:-1]) + rb"[ \t\\\r\n]+\(", data):
        return None  # ``Name (x)``: a build this byte search would not see
    lines = data.splitlines(keepends=True)
    found: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    spelled = re.compile(rb"(?<!\w)" + re.escape(built))
    for index, line in enumerate(lines):
        if built not in line:
            continue
        if not any(not line[:m.start()].lstrip().startswith(b"class ") for m in spelled.finditer(line)):
            continue  # the class's own header, or a longer name that ends so: no build
        indent = _indent(line)
        first = next((j for j in range(index - 1, -1, -1)
                      if _indent(lines[j]) < indent and lines[j].lstrip().startswith((b"def ", b"async def "))), None)
        if first is None:
            return None
        if first in found:
            continue
        function = _parsed_alone(lines, first)
        if function is None or not (function.lineno <= index + 1 <= (function.end_lineno or 0)):
            return None
        found[first] = function
    return list(found.values())


def _parsed_alone(lines: list[bytes], first: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function whose ``def`` is ``lines[first]``, parsed from its lines:
    those after it indented deeper (or blank), dedented."""
    margin = lines[first][:_indent(lines[first])]
    end = first + 1
    while end < len(lines) and (_blank(lines[end]) or _indent(lines[end]) > len(margin)
                                 or lines[end].lstrip().startswith((b")", b"]", b"}"))):  # a header's ``) -> T:``
        end += 1
    if any(not _blank(line) and not line.startswith(margin) for line in lines[first:end]):
        return None  # tabs and spaces mixed: not one margin
    text = b"".join(b"\n" if _blank(line) else line[len(margin):] for line in lines[first:end])
    try:
        tree = ast.parse(text)  # its own: the line numbers move (``parsed``'s trees are shared)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    ast.increment_lineno(tree, first)
    return tree.body[0]


def _blank(line: bytes) -> bool:
    """Nothing but space or a comment: a line that ends no block, whatever its margin."""
    stripped = line.strip()
    return not stripped or stripped.startswith(b"#")


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip(b" \t"))


def _functions(body: list[ast.stmt]) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function ``body`` defines, at any depth of statements (methods,
    nested functions): statements only, cheaper than every node's walk."""
    found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    stack = list(body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(stmt)
        for field in ("body", "orelse", "finalbody"):
            stack.extend(getattr(stmt, field, ()))
        stack.extend(s for h in getattr(stmt, "handlers", ()) for s in h.body)
        stack.extend(s for c in getattr(stmt, "cases", ()) for s in c.body)
    return found


def _block(body: list[ast.stmt], holding: dict[str, str], name: str, calls: list[Site]) -> dict[str, str]:
    """``body`` run with ``holding`` (variable -> the name its build spelled,
    for the variables that may hold an instance): what may hold one after it."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            holding = _without(holding, {stmt.name})  # a scope of its own
        elif isinstance(stmt, (ast.If, ast.While)):
            _expression(stmt.test, holding, name, calls)
            holding = {**_block(stmt.body, dict(holding), name, calls), **_block(stmt.orelse, dict(holding), name, calls)}
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            _expression(stmt.iter, holding, name, calls)
            _used_as(stmt.iter, "__iter__", holding, name, calls)
            inside = _without(holding, _bound(stmt.target))
            inside = {**inside, **_block(stmt.body, dict(inside), name, calls)}
            holding = {**inside, **_block(stmt.orelse, dict(inside), name, calls)}
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                _expression(item.context_expr, holding, name, calls)
                _used_as(item.context_expr, "__enter__", holding, name, calls)
                _used_as(item.context_expr, "__exit__", holding, name, calls)
                if item.optional_vars is not None:  # what ``__enter__`` returns, not the build
                    holding = _without(holding, _bound(item.optional_vars))
            holding = _block(stmt.body, holding, name, calls)
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            tried = _block(stmt.body, dict(holding), name, calls)
            after = {**holding, **tried}
            handled = [_block(h.body, _without(after, {h.name} if h.name else set()), name, calls)
                       for h in stmt.handlers]
            holding = _block(stmt.orelse, dict(tried), name, calls)
            for branch in handled:
                holding = {**holding, **branch}
            holding = _block(stmt.finalbody, holding, name, calls)
        elif isinstance(stmt, ast.Match):
            _expression(stmt.subject, holding, name, calls)
            merged = dict(holding)
            for case in stmt.cases:
                captured = {n for node in ast.walk(case.pattern) for n in _captures(node)}
                merged.update(_block(case.body, _without(holding, captured), name, calls))
            holding = merged
        else:
            _expression(stmt, holding, name, calls)
            holding = _assigned(stmt, holding, name)
    return holding


def _expression(node: ast.AST, holding: dict[str, str], name: str, calls: list[Site]) -> None:
    """The calls ``node`` makes on an instance: not in a lambda's body, and
    not on a comprehension's own variable of the same name."""
    stack: list[tuple[ast.AST, dict[str, str]]] = [(node, holding)]
    while stack:
        current, held = stack.pop()
        if isinstance(current, ast.Lambda):
            continue
        if isinstance(current, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            held = _without(held, {n for g in current.generators for n in _bound(g.target)})
        elif isinstance(current, ast.NamedExpr):
            held = _without(held, _bound(current.target))
        elif isinstance(current, ast.Call) and isinstance(current.func, ast.Attribute):
            owner = current.func.value
            spelled = held.get(owner.id) if isinstance(owner, ast.Name) else _builds(owner, name)
            if spelled is not None:
                calls.append((current.func.attr, current.lineno, spelled))
        elif (isinstance(current, ast.Call) and isinstance(current.func, ast.Name)
              and current.func.id in BUILTIN_DUNDERS and len(current.args) == 1 and not current.keywords):
            _used_as(current.args[0], BUILTIN_DUNDERS[current.func.id], held, name, calls)
        elif isinstance(current, ast.Subscript):
            dunder = {ast.Load: "__getitem__", ast.Store: "__setitem__", ast.Del: "__delitem__"}[type(current.ctx)]
            _used_as(current.value, dunder, held, name, calls)
        stack.extend((child, held) for child in ast.iter_child_nodes(current))


def _used_as(node: ast.expr, dunder: str, holding: dict[str, str], name: str, calls: list[Site]) -> None:
    """``node`` given to what runs ``dunder`` on it: a site where it holds an instance."""
    spelled = holding.get(node.id) if isinstance(node, ast.Name) else _builds(node, name)
    if spelled is not None:
        calls.append((dunder, node.lineno, spelled))


def _assigned(stmt: ast.stmt, holding: dict[str, str], name: str) -> dict[str, str]:
    """``holding`` after the simple statement ``stmt`` binds its names."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        holding = _without(holding, set().union(*(_bound(t) for t in targets)))
        spelled = _builds(stmt.value, name) if stmt.value is not None else None
        if spelled is not None and not isinstance(stmt, ast.AugAssign):
            holding.update({t.id: spelled for t in targets if isinstance(t, ast.Name)})
    elif isinstance(stmt, ast.Delete):
        holding = _without(holding, set().union(*(_bound(t) for t in stmt.targets)))
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        holding = _without(holding, {(a.asname or a.name).split(".")[0] for a in stmt.names})
    return holding


def _builds(node: ast.expr | None, name: str) -> str | None:
    """The dotted name ``name(...)`` or ``module.name(...)`` spells, where ``node`` is one."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name) and func.id == name:
        return name
    if isinstance(func, ast.Attribute) and func.attr == name:
        parts: list[str] = [name]
        value = func.value
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name):
            return ".".join([value.id, *reversed(parts)])
    return None


def _captures(node: ast.AST) -> set[str]:
    """The names a ``case`` pattern node binds."""
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return {node.name}
    if isinstance(node, ast.MatchMapping) and node.rest:
        return {node.rest}
    return set()


def _bound(target: ast.expr) -> set[str]:
    """The names a target binds: ``r[k] = v`` and ``r.a = v`` bind none (``r`` still holds the instance)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_bound(e) for e in target.elts))
    if isinstance(target, ast.Starred):
        return _bound(target.value)
    return set()


def _without(holding: dict[str, str], names: set[str]) -> dict[str, str]:
    return {k: v for k, v in holding.items() if k not in names}
