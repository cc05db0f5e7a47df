"""What the cache holds, as plain values: tuples, lists, dicts, strings,
bytes, numbers, booleans and None, which ``marshal`` writes and reads back
without running anything (a pickle names classes and functions to call).

``to_plain`` and ``from_plain`` turn the audit's objects into such values and
back. ``from_plain`` builds only the classes named here, from values of the
shapes written here: anything else raises ``BadEntry``, and the cache drops it.
"""

from __future__ import annotations

from typing import Any

from vllm_sp_base._audit.prescan._scans import ClassScan, FileScan
from vllm_sp_base._audit.report._finding import AuditResult, Finding, FixStatus, Frame, Unresolved
from vllm_sp_base._audit.summaries._events import (
    Assert,
    Call,
    Event,
    Import,
    Marker,
    Parameters,
    Read,
    Set,
    SetAny,
    SetEach,
    Signature,
)
from vllm_sp_base._audit.summaries._summaries import Body, ClassInfo, Method, ModuleInfo


class BadEntry(Exception):
    """A cache value that is not of a shape this module writes."""


_EVENTS: tuple[type[Any], ...] = (Read, Set, SetEach, SetAny, Call, Marker, Assert, Parameters, Signature)
_EVENT_TAG = {kind: tag for tag, kind in enumerate(_EVENTS)}
_FIELDS = {kind: tuple(kind.__dataclass_fields__) for kind in _EVENTS}
_PLAIN_TYPES: dict[str, tuple[type[Any], ...]] = {
    "str": (str,), "int": (int,), "bool": (bool,), "str | None": (str, type(None)),
}


def _types(kind: type[Any], names: tuple[str, ...]) -> tuple[tuple[type[Any], ...], ...]:
    """What each field may hold, from its annotation (all are plain here)."""
    return tuple(_PLAIN_TYPES[kind.__dataclass_fields__[name].type] for name in names)


_EVENT_TYPES = {kind: _types(kind, _FIELDS[kind]) for kind in _EVENTS}


def to_plain(value: FileScan | ModuleInfo | str) -> tuple[Any, ...]:
    """A pre-scan (``S``), a summary (``M``) or why a file has none (``R``)."""
    if isinstance(value, FileScan):
        classes = [
            (c.name, c.bases, c.written, c.has_init, c.init_chains, c.init_explicit, c.init_sets, c.generated)
            for c in value.classes
        ]
        return ("S", classes, value.aliases, value.imported, value.modules, value.parses)
    if isinstance(value, ModuleInfo):
        return (
            "M",
            _imports(value.imports),
            value.aliases,
            _imports(value.fallback_imports),
            value.fallback_aliases,
            [(i.level, i.module, i.name) for i in value.star_imports],
            [_class(c) for c in value.classes.values()],
            value.is_package,
            value.constants,
            [_method(f) for f in value.functions.values()],
        )
    return ("R", value)


def from_plain(plain: Any) -> FileScan | ModuleInfo | str:
    try:
        return _from_plain(plain)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as error:
        raise BadEntry(str(error)) from None


def _from_plain(plain: Any) -> FileScan | ModuleInfo | str:
    tag = plain[0]
    if tag == "S":
        _, classes, aliases, imported, modules, parses = plain
        return FileScan(
            [_class_scan(c) for c in _each(classes, list)],
            [_typed(pair, _PAIR) for pair in _each(aliases, list)],
            [_typed(pair, _PAIR) for pair in _each(imported, list)],
            [_typed(pair, _PAIR) for pair in _each(modules, list)],
            _bool(parses),
        )
    if tag == "M":
        _, imports, aliases, fallbacks, fallback_aliases, stars, classes, package, constants, functions = plain
        return ModuleInfo(
            imports=_imports_from(imports),
            aliases=_names(aliases),
            fallback_imports=_imports_from(fallbacks),
            fallback_aliases=_names(fallback_aliases),
            star_imports=[Import(*_typed(i, _IMPORT_TYPES)) for i in _each(stars, list)],
            classes={c.name: c for c in map(_class_from, _each(classes, list))},
            is_package=_bool(package),
            constants=_constants(constants),
            functions={f.name: f for f in map(_method_from, _each(functions, list))},
        )
    if tag == "R":
        _, reason = plain
        return _str(reason)
    raise BadEntry(f"unknown kind {tag!r}")


def _class_scan(plain: Any) -> ClassScan:
    name, bases, written, has_init, chains, explicit, sets, generated = _typed(plain, _SCAN_TYPES)
    return ClassScan(name, _strings(bases), _strings(written), has_init, chains, explicit, sets, generated)


def _strings(values: Any) -> tuple[str, ...]:
    return tuple(_str(v) for v in _each(values, tuple))


def _imports(imports: dict[str, Import]) -> dict[str, tuple[int, str | None, str | None]]:
    return {name: (i.level, i.module, i.name) for name, i in imports.items()}


def _imports_from(plain: Any) -> dict[str, Import]:
    return {_str(name): Import(*_typed(i, _IMPORT_TYPES)) for name, i in _each(plain, dict).items()}


def _class(info: ClassInfo) -> tuple[Any, ...]:
    return (
        info.name, info.line, info.col, info.bases, sorted(info.class_attrs),
        [_method(m) for m in info.methods.values()], info.noqa, info.constants, info.noqa_lines,
        sorted(info.slots), info.local_names, _imports(info.local_imports), info.held, info.metaclass,
        None if info.fields is None else list(info.fields), info.generated_init,
    )


def _class_from(plain: Any) -> ClassInfo:
    (name, line, col, bases, class_attrs, methods, noqa, constants, noqa_lines, slots, local_names, local_imports,
     held, metaclass, fields, generated_init) = plain
    return ClassInfo(
        name=_str(name),
        line=_int(line),
        col=_int(col),
        bases=[None if b is None else _str(b) for b in _each(bases, list)],
        class_attrs={_str(a) for a in _each(class_attrs, list)},
        methods={m.name: m for m in map(_method_from, _each(methods, list))},
        noqa=None if noqa is None else _strings(noqa),
        constants=_constants(constants),
        noqa_lines=tuple(_int(n) for n in _each(noqa_lines, tuple)),
        slots=frozenset(_str(a) for a in _each(slots, list)),
        local_names=_names(local_names),
        local_imports=_imports_from(local_imports),
        held=_names(held),
        metaclass=None if metaclass is None else _str(metaclass),
        fields=None if fields is None else tuple(_str(f) for f in _each(fields, list)),
        generated_init=_bool(generated_init),
    )


def _method(method: Method) -> tuple[Any, ...]:
    """An unparsed method keeps its body's place (not its bytes: whoever reads
    the entry has just read the file); a parsed one, its events."""
    body = method._body
    if body is not None:
        where = (body.start, body.end, body.first_line, body.non_ascii, body.self_name, body.class_name)
        return (method.name, method.line, method.is_property, method.is_abstract, where, None)
    events = [(_EVENT_TAG[type(e)], *(getattr(e, f) for f in _FIELDS[type(e)])) for e in method._events]
    return (method.name, method.line, method.is_property, method.is_abstract, None, events)


def _method_from(plain: Any) -> Method:
    name, line, is_property, is_abstract, where, events = plain
    if where is not None:
        body = Body("", b"", *_typed(where, _BODY_TYPES))
        return Method(_str(name), _int(line), body, _bool(is_property), _bool(is_abstract))
    method = Method(_str(name), _int(line), is_property=_bool(is_property), is_abstract=_bool(is_abstract))
    method._events = [_event_from(e) for e in _each(events, list)]
    return method


def _event_from(plain: Any) -> Event:
    kind = _EVENTS[_int(plain[0])]
    event: Event = kind(*_typed(plain[1:], _EVENT_TYPES[kind]))
    return event


def _typed(values: Any, types: tuple[tuple[type[Any], ...], ...]) -> Any:
    """``values``, if it is a tuple of ``types`` (exact types: no subclass)."""
    if type(values) is not tuple or len(values) != len(types):
        raise BadEntry(f"expected {len(types)} fields")
    for value, allowed in zip(values, types):
        if type(value) not in allowed:
            raise BadEntry(f"a field of {type(value).__name__}")
    return values


def result_to_plain(result: AuditResult) -> tuple[Any, ...]:
    findings = [
        (*(getattr(f, name) for name in _FINDING_FIELDS), [(s.method, s.path, s.line) for s in f.chain])
        for f in result.findings
    ]
    unresolved = [(u.path, u.line, u.class_name, u.base, u.reason) for u in result.unresolved]
    # What --fix would do of each finding, in their order (None: not planned).
    fixes = [None if (s := result.fixes.get(f)) is None else (s.applicability, s.message, s.reason)
             for f in result.findings]
    return (findings, result.diagnostics, result.files, result.parsed, result.suppressed,
            result.only_bases, unresolved, result.unused_noqa, result.unused_ignored, fixes)


def result_from_plain(plain: Any) -> AuditResult:
    try:
        findings, diagnostics, files, parsed, suppressed, only_bases, unresolved, unused, ignored, fixes = plain
        found = [_finding_from(f) for f in _each(findings, list)]
        statuses = _each(fixes, list)
        if len(statuses) != len(found):
            raise BadEntry("a fix for each finding")
        return AuditResult(
            findings=found,
            fixes={f: FixStatus(*_typed(s, _FIX_TYPES)) for f, s in zip(found, statuses) if s is not None},
            diagnostics=[_typed(pair, _PAIR) for pair in _each(diagnostics, list)],
            files=_int(files),
            parsed=_int(parsed),
            suppressed=_int(suppressed),
            only_bases=[_str(b) for b in _each(only_bases, list)],
            unresolved=[Unresolved(*_typed(u, _UNRESOLVED_TYPES)) for u in _each(unresolved, list)],
            unused_noqa=[_typed(u, _NOQA_TYPES) for u in _each(unused, list)],
            unused_ignored=[_typed(u, _IGNORED_TYPES) for u in _each(ignored, list)],
        )
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as error:
        raise BadEntry(str(error)) from None


_FINDING_FIELDS = tuple(name for name in Finding.__dataclass_fields__ if name != "chain")
_FINDING_TYPES = _types(Finding, _FINDING_FIELDS)
_SCAN_TYPES = ((str,), (tuple,), (tuple,), (bool,), (bool,), (bool,), (bool,), (bool,))
_PAIR = ((str,), (str,))
_FIX_TYPES = ((str,), (str,), (str,))
_FRAME_TYPES = ((str,), (str,), (int,))
_UNRESOLVED_TYPES = ((str,), (int,), (str,), (str,), (str,))
_NOQA_TYPES = ((str,), (int,))
_IGNORED_TYPES = ((str,), (int,), (str,))
_BODY_TYPES = ((int,), (int,), (int,), (bool,), (str,), (str,))
_IMPORT_TYPES = ((int,), (str, type(None)), (str, type(None)))


def _finding_from(plain: Any) -> Finding:
    *values, chain = _checked(plain, len(_FINDING_FIELDS) + 1)
    fields = dict(zip(_FINDING_FIELDS, _typed(tuple(values), _FINDING_TYPES)))
    frames = tuple(Frame(*_typed(frame, _FRAME_TYPES)) for frame in _each(chain, list))
    return Finding(**fields, chain=frames)


def _checked(plain: Any, size: int) -> Any:
    if type(plain) is not tuple or len(plain) != size:
        raise BadEntry(f"expected {size} fields")
    return plain


def _str(value: Any) -> str:
    return _each(value, str)  # type: ignore[no-any-return]


def _int(value: Any) -> int:
    return _each(value, int)  # type: ignore[no-any-return]


def _bool(value: Any) -> bool:
    return _each(value, bool)  # type: ignore[no-any-return]


def _names(plain: Any) -> dict[str, str]:
    return {_str(k): _str(v) for k, v in _each(plain, dict).items()}


def _constants(plain: Any) -> dict[str, tuple[str, ...]]:
    return {_str(k): _strings(v) for k, v in _each(plain, dict).items()}


def _each(values: Any, kind: type[Any]) -> Any:
    """``values``, if it is exactly of the type written there (no subclass: a
    ``bool`` is no ``int`` here)."""
    if type(values) is not kind:
        raise BadEntry(f"expected a {kind.__name__}, got {type(values).__name__}")
    return values
