"""What a person reads: findings grouped by class (the default), one line a
finding (``full``, ``concise``), GitHub annotations, a closing summary and
``--statistics``. JSON and SARIF are in ``_report``."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from vllm_sp_base._audit.report._finding import AuditResult, Finding, FixStatus, Unresolved
from vllm_sp_base._audit.report._finding import display_path as display

_SEVERITY_ORDER = {"error": 0, "warning": 1, "note": 2}
_COLOURS = {"error": "\033[1;31m", "warning": "\033[33m", "note": "\033[36m", "bold": "\033[1m",
            "dim": "\033[2m"}
_RESET = "\033[0m"
UNUSED_NOQA = ("unused noqa: SPB001 suppresses nothing here (it counts on a class header's lines "
               "or its __init__ line, for a finding of that class)")


def unused_suppression(result: AuditResult, path: str, number: int) -> str:
    """What an unused suppression on ``path``:``number`` is, in words: a noqa,
    or an ignore comment with the attributes it names that hid nothing and,
    for each, the attribute a finding of that file reads that it may mean."""
    import difflib

    names = [name for p, n, name in result.unused_ignored if (p, n) == (path, number)]
    if not names:
        return UNUSED_NOQA
    reported = sorted({f.attribute for f in result.findings if f.path == path})
    if set(names) & set(reported):  # the right name, on a line the rule does not read
        return (f"unused ignore: vllm-sp-base: ignore[{', '.join(names)}] counts only on a "
                "`class` header's lines or its `def __init__` line, of the class whose finding it hides")
    guesses = [m for name in names for m in difflib.get_close_matches(name, reported, n=1, cutoff=0.7)]
    near = f"; did you mean {', '.join(guesses)}?" if guesses else ""
    return (f"unused ignore: vllm-sp-base: ignore[{', '.join(names)}] hides no finding of this "
            f"class{near}")


def _short(dotted: str) -> str:
    return dotted.rsplit(".", 1)[-1]


class _Paint:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, style: str, text: str) -> str:
        return f"{_COLOURS[style]}{text}{_RESET}" if self.colour else text


def fix_hint(found: list[Finding], result: AuditResult | None = None) -> str:
    """The fix for one class and skipped ``__init__``: run it, or set every
    missing attribute; a class-level default only where the value is plain
    (a default ``None`` for a submodule would hide the crash, not fix it), the
    contract's mixin only for the sequence-parallel flags. Where ``@dataclass``
    writes the class's ``__init__`` (its fix says so), from ``__post_init__``."""
    from vllm_sp_base._contract import SEQUENCE_PARALLEL_DEFAULTS

    first = found[0]
    skipper, skipped = _short(first.skipped_by), _short(first.skipped_init)
    attributes = sorted({f.attribute for f in found})
    flags = [a for a in attributes if a in SEQUENCE_PARALLEL_DEFAULTS]
    plain = [a for a in attributes if a not in flags
             and plain_value(next(f for f in found if f.attribute == a))]
    status = result.fixes.get(first) if result is not None else None
    where = "__post_init__" if status is not None and status.message.startswith("@dataclass writes") else "__init__"
    hint = (f"call {skipped}.__init__ from {skipper}.{where}, or set "
            f"{', '.join(f'self.{a}' for a in attributes)} there")
    if flags:
        hint += f"; for {' and '.join(flags)}: inherit vllm_sp_base.SequenceParallelDefaults"
    if plain:
        hint += f"; a class-level default also does for {', '.join(plain)} (set to a constant)"
    return hint


def plain_value(finding: Finding) -> bool:
    """Whether the skipped ``__init__`` sets the attribute to a constant
    (``False``, ``None``, ``0``, a tuple of them), read from its line: a
    class-level default fits that, not a value taken from the config or a
    module it builds (a default there would hide the crash, not fix it)."""
    import ast
    import linecache

    line = linecache.getline(finding.set_path, finding.set_line).strip()
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return False  # an assignment over several lines: not a simple one
    statement = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
        return False
    value = statement.value
    constant = (ast.Constant, ast.UnaryOp, ast.USub, ast.Not, ast.Tuple, ast.Load)
    return all(isinstance(node, constant) for node in ast.walk(value))


def grouped(result: AuditResult, colour: bool = False) -> str:
    """One header a class and skipped ``__init__``, one line an attribute;
    classes with an error first. Classes whose findings have one root cause
    (the same class skips the same ``__init__``, and the same reads fail)
    are one block, under the class that skips: one fix serves them all."""
    paint = _Paint(colour)
    groups: dict[tuple[str, str], list[Finding]] = defaultdict(list)
    for finding in result.findings:
        groups[(finding.class_name, finding.skipped_init)].append(finding)

    def rank(key: tuple[str, str]) -> tuple[int, bool, str, int]:
        found = groups[key]
        return (min(_SEVERITY_ORDER[f.severity] for f in found), found[0].skipped_by != key[0],
                found[0].path, found[0].line)

    causes: dict[tuple[object, ...], list[tuple[str, str]]] = defaultdict(list)
    for key in sorted(groups, key=rank):
        found = groups[key]
        cause = (found[0].skipped_by, key[1],
                 tuple(sorted((f.attribute, f.severity, f.read_path, f.read_line) for f in found)))
        causes[cause].append(key)
    lines: list[str] = []
    for keys in causes.values():
        found = sorted(groups[keys[0]], key=lambda f: (_SEVERITY_ORDER[f.severity], f.attribute))
        first = found[0]
        via = "" if first.skipped_by == first.class_name else f", via {_short(first.skipped_by)}"
        lines.append(paint("bold", f"{display(first.path)}:{first.line}:{first.col}: "
                                   f"{_short(first.class_name)} skips {_short(first.skipped_init)}.__init__ "
                                   f"({display(first.skipped_path)}){via}"))
        width = max(len(f.attribute) for f in found) + 5
        for f in found:
            owner, _, method = f.method.rpartition(".")
            where = f"{_short(owner)}.{method} at {display(f.read_path)}:{f.read_line}"
            lines.append(f"  {paint(f.severity, f'{f.severity:<7}')} {f'self.{f.attribute}':<{width}} "
                         f"{where} ({_route(f)})")
        if len(keys) > 1:
            also = [groups[k][0] for k in keys[1:]]
            lines.append(f"  the same in {plural(len(also), 'subclass', 'subclasses')}, one cause: "
                         + ", ".join(f"{_short(f.class_name)} ({display(f.path)}:{f.line})" for f in also))
        lines.append(paint("dim", f"  fix: {fix_hint(found, result)}"))
        lines.extend(paint("dim", f"  {said}") for said in _fix_lines(result, found))
    return "\n".join(lines)


def _fix_lines(result: AuditResult, found: list[Finding]) -> list[str]:
    """What --fix can do for the group: each distinct fix once, with the attributes it is for."""
    said: dict[str, list[str]] = {}
    for finding in found:
        status = result.fixes.get(finding)
        if status is not None:
            said.setdefault(_fix_label(status), []).append(finding.attribute)
    return [f"{label.split(':', 1)[0]} (self.{', self.'.join(dict.fromkeys(attrs))}):{label.split(':', 1)[1]}"
            for label, attrs in said.items()]


def _fix_label(status: FixStatus) -> str:
    flag = {"safe": "--fix", "unsafe": "--unsafe-fixes"}.get(status.applicability)
    return f"{status.label}{f' [{flag}]' if flag else ''}"


def fix_suffix(result: AuditResult, finding: Finding, short: bool = False) -> str:
    """`` [safe fix]`` / ``; unsafe fix: ...`` / ``; no fix: why`` after a one-line finding."""
    status = result.fixes.get(finding)
    if status is None:
        return ""
    if short:
        return {"safe": " [*]", "unsafe": " [unsafe fix]"}.get(status.applicability, f" [{status.label}]")
    return f"; {status.label}"


def _route(f: Finding) -> str:
    """How the read is reached, each class named once: ``from Draft.forward ->
    Target.forward -> project``."""
    start = "while built" if f.entry == "__init__" else (f"from {f.entry}" if f.entry else "unreached")
    when = (f", {f.condition}" if f.condition else "") + f.masked
    if len(f.chain) < 2:
        return start + when
    steps, previous = [], ""
    for frame in f.chain:
        owner, _, method = frame.method.rpartition(".")
        steps.append(method if owner == previous else frame.method)
        previous = owner
    route = f"{'while built' if f.entry == '__init__' else 'from'} {' -> '.join(steps)}".replace(
        "while built ", "while built: ")
    return route + when


def full(result: AuditResult) -> str:
    return "\n".join(
        f"{display(f.path)}:{f.line}:{f.col}: {f.code} [{f.severity}] {f.message}{fix_suffix(result, f)}"
        for f in result.findings
    )


def concise(result: AuditResult) -> str:
    return "\n".join(
        f"{display(f.path)}:{f.line}:{f.col}: {f.code} [{f.severity}] {_short(f.class_name)}: "
        f"self.{f.attribute} read at {display(f.read_path)}:{f.read_line}, set only by skipped "
        f"{_short(f.skipped_init)}.__init__{fix_suffix(result, f, short=True)}"
        for f in result.findings
    )


def _escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def github(result: AuditResult, notices: Sequence[str] = ()) -> str:
    """Workflow commands: each finding an annotation on its class line; then
    ``notices`` (the baseline's stale entries), which fail nothing."""
    level = {"error": "error", "warning": "warning", "note": "notice"}
    lines = [
        f"::{level[f.severity]} file={_escape(display(f.path), prop=True)},line={f.line},col={f.col},"
        f"title={_escape(f'{f.code} self.{f.attribute}', prop=True)}::{_escape(f.message + fix_suffix(result, f))}"
        for f in result.findings
    ]
    lines += [
        f"::warning file={_escape(display(u.path), prop=True)},line={u.line},"
        f"title=unresolved base::{_escape(u.message)}"
        for u in result.unresolved
    ]
    lines += [
        f"::warning file={_escape(display(path), prop=True)},line={line},title=unused noqa::"
        f"{_escape(UNUSED_NOQA)}"
        for path, line in result.unused_noqa
    ]
    lines += [
        f"::error file={_escape(display(path), prop=True)}{_line_of(reason)},title=cannot audit::{_escape(reason)}"
        for path, reason in result.diagnostics
    ]
    lines += [f"::notice title=stale baseline entries::{_escape(notice)}" for notice in notices]
    return "\n".join(lines)


_DOES_NOT_PARSE_AT = re.compile(r"does not parse \(line (\d+)\)")


def _line_of(reason: str) -> str:
    """``,line=N`` where a diagnostic says its line (a syntax error's): the
    annotation then sits on it."""
    match = _DOES_NOT_PARSE_AT.search(reason)
    return f",line={match.group(1)}" if match else ""


def unresolved_lines(unresolved: Iterable[Unresolved], every: bool = True) -> list[str]:
    """One line a base and reason, with the classes it hides; with ``every``
    False, the first of them and a count of the rest, on one line."""
    by_base: dict[tuple[str, str], list[Unresolved]] = defaultdict(list)
    for u in unresolved:
        by_base[(u.base, u.reason)].append(u)
    lines = []
    for (base, reason), found in sorted(by_base.items()):
        where = ", ".join(f"{_short(u.class_name)} ({display(u.path)}:{u.line})" for u in found[:3])
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        lines.append(f"unresolved base {base}: {reason}; not checked past it: {where}{more}")
    if every or len(lines) < 2:
        return lines
    rest = sorted(by_base.items())[1:]
    classes = len({u.class_name for found in by_base.values() for u in found})
    first = lines[0].split("; not checked past it: ")[0]
    summary = (f"{first}; and {plural(len(rest), 'more unresolved base')} "
               f"({plural(classes, 'class', 'classes')} not checked in all; --show-unresolved lists them)")
    return [summary]


def plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


def shown(entries: list[str]) -> str:
    """The first three, and how many more."""
    return ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")


def missing_module_hint(python_given: bool) -> str:
    if python_given:
        return ("hint: a module not found is installed neither in the audited paths nor in the "
                "environment of --python")
    return ("hint: a module not found is not installed where the audit runs: "
            "--python /path/to/env/bin/python resolves bases from the environment that has it")


def summary(result: AuditResult) -> str:
    """``Found 1 error and 24 warnings in 20 classes (21 skipped __init__s); ...``"""
    severities = Counter(f.severity for f in result.findings)
    classes = {f.class_name for f in result.findings}
    skipped = {(f.class_name, f.skipped_init) for f in result.findings}
    counts = [plural(severities[s], s) for s in ("error", "warning", "note") if severities[s] or s != "note"]
    if result.findings:
        text = (f"Found {' and '.join(counts[:2]) if len(counts) < 3 else ', '.join(counts)} in "
                f"{plural(len(classes), 'class', 'classes')} ({plural(len(skipped), 'skipped __init__')})")
    else:
        text = "No errors or warnings"
    # A file said as one that could not be audited is not counted as audited too.
    text += f"; {plural(max(result.files - len({path for path, _ in result.diagnostics}), 0), 'file')} audited"
    if result.suppressed:
        text += f", {result.suppressed} suppressed (noqa, ignore comments)"
    if result.baselined:
        text += f", {result.baselined} in the baseline"
    bases = {(u.base, u.reason) for u in result.unresolved}
    if bases:
        hidden = {u.class_name for u in result.unresolved}
        text += (f"; {plural(len(hidden), 'class', 'classes')} with a custom __init__ not checked: "
                 f"{plural(len(bases), 'base')} could not be resolved")
    if result.unused_noqa:
        text += f"; {plural(len(result.unused_noqa), 'unused noqa', 'unused noqa comments')}"
    if result.diagnostics:
        text += f"; {plural(len(result.diagnostics), 'file')} could not be audited"
    return text + "."


def fixable(result: AuditResult) -> str | None:
    """``[*] 2 fixable with --fix (1 more with --unsafe-fixes)``, ``No safe fixes
    (1 with --fix --unsafe-fixes)``, or None when nothing is."""
    counts = Counter(status.applicability for status in result.fixes.values())
    if not (counts["safe"] or counts["unsafe"]):
        return None
    if not counts["safe"]:  # as ruff's "No fixes available (1 hidden fix ...)"
        return f"No safe fixes ({counts['unsafe']} with --fix --unsafe-fixes)"
    more = f" ({counts['unsafe']} more with --unsafe-fixes)" if counts["unsafe"] else ""
    return f"[*] {counts['safe']} fixable with --fix{more}"


def statistics(result: AuditResult) -> str:
    """Counts by skipped ``__init__``, most first: where a fix helps most."""
    by_init: dict[str, list[Finding]] = defaultdict(list)
    for f in result.findings:
        by_init[f.skipped_init].append(f)
    lines = []
    for init, found in sorted(by_init.items(), key=lambda item: (-len(item[1]), item[0])):
        severities = Counter(f.severity for f in found)
        counts = [plural(severities[s], s) for s in ("error", "warning", "note") if severities[s]]
        said = " and ".join(counts) if len(counts) < 3 else ", ".join(counts)
        classes = plural(len({f.class_name for f in found}), "class", "classes")
        lines.append(f"{len(found):>5}  {init}.__init__ skipped: {said} in {classes}")
    return "\n".join(lines)
