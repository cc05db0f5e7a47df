"""One fix a finding, planned from source (``ast``, nothing imported), in the
order a maintainer tries them: the sequence-parallel flags set ``False`` (as
vLLM PR #52172 did); the parent's assignment copied, with the locals it needs
(a backward slice) and the imports; a call of the parent's helper that sets
it; a class-level default for a plain literal; else no fix, with the reason."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from vllm_sp_base._audit.fix._context import Context, Resolution, load_context
from vllm_sp_base._audit.fix._edit import Edit, Fix
from vllm_sp_base._audit.fix._names import literal, needs, sets_attribute
from vllm_sp_base._audit.report._finding import Finding, FixStatus, display_path
from vllm_sp_base._contract import SEQUENCE_PARALLEL_DEFAULTS


def plan(findings: Iterable[Finding], audited: Callable[[str], bool]) -> dict[Finding, Fix]:
    """A fix (or the reason there is none) for each finding; ``audited``: whether
    --fix may change a file (only the audited ones)."""
    contexts: dict[tuple[str, str, str], Context | str] = {}
    planned: dict[Finding, Fix] = {}
    for finding in findings:
        key = (finding.path, finding.skipped_by, finding.skipped_init)
        if key not in contexts:
            try:
                contexts[key] = load_context(finding)
            except _PLANNING_BUGS as error:
                contexts[key] = f"no fix could be planned ({type(error).__name__}: {error})"
        context = contexts[key]
        if isinstance(context, str):
            planned[finding] = Fix(finding, FixStatus("none", context))
        elif not audited(context.sub.path):
            planned[finding] = Fix(finding, FixStatus(
                "none", f"{context.sub_name} is in {display_path(context.sub.path)}, which this run did not audit "
                        "(--fix changes only audited files)"))
        else:
            try:
                planned[finding] = plan_one(context, finding)
            except _PLANNING_BUGS as error:  # a fix it cannot plan never costs the audit its report
                planned[finding] = Fix(finding, FixStatus(
                    "none", f"no fix could be planned ({type(error).__name__}: {error})"))
    return planned


#: What a planning bug on odd source raises: said on the finding, the run goes on.
_PLANNING_BUGS = (ValueError, TypeError, AttributeError, KeyError, IndexError, AssertionError, RecursionError)


def plan_one(context: Context, finding: Finding) -> Fix:
    attribute = finding.attribute
    if attribute in SEQUENCE_PARALLEL_DEFAULTS:
        value = SEQUENCE_PARALLEL_DEFAULTS[attribute]
        edit = Edit(context.sub.path, context.sub_name, context.start_line,
                    statements=((0, f"self.{attribute} = {value!r}"),))
        return Fix(finding, FixStatus(
            "safe", f"set self.{attribute} = {value!r} in {context.sub_name}.__init__ (sequence "
                    "parallelism off, as vLLM PR #52172 did for Dots3 NOTE)"), edit)
    attempts = []
    for strategy in (_copy, _helper, _class_default):
        attempt = strategy(context, finding)
        if attempt is not None and attempt.status.applicability != "none":
            return attempt
        attempts.append(attempt)
    for attempt in attempts:
        if attempt is not None:
            return attempt  # the first reason there is none
    return Fix(finding, FixStatus("none", f"{context.parent_name}.__init__ sets self.{attribute} "
                                          "through what it calls, not in its own body"))


def _copy(context: Context, finding: Finding) -> Fix | None:
    """The parent's statements that set the attribute, copied whole (an ``if``
    around them included), after the subclass's own parent call."""
    attribute = finding.attribute
    body = context.parent_init.body
    found = [(i, s) for i, s in enumerate(body) if sets_attribute(s, attribute)]
    if not found:
        return None
    resolution = Resolution(context.start_line)
    for index, statement in found:
        wanted = needs(statement)
        text = context.parent.segment(statement)
        if isinstance(statement, ast.AnnAssign) and statement.value is not None:
            text = _without_annotation(context, statement)
            wanted = needs(statement.target, statement.value)
        elif not isinstance(statement, (ast.Assign, ast.AugAssign)):
            header = context.parent.segment(statement).splitlines()[0].strip()
            others = [n for n in ast.walk(statement) if isinstance(n, ast.stmt) and n is not statement
                      and not isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.If, ast.Pass))]
            if not isinstance(statement, ast.If) or others:
                resolution.unsafe.append(f"it copies `{header}` whole, with what else that block does")
        clashes = sorted(a for a in wanted.self_sets - {attribute} if a in context.sub_self_any)
        if clashes and not isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            # A block that builds what the subclass builds its own way: copying it is no fix.
            header = context.parent.segment(statement).splitlines()[0].strip()
            resolution.missing = (f"{context.parent_name}.__init__ sets it inside `{header}`, with "
                                  f"{', '.join(f'self.{a}' for a in clashes)}, which "
                                  f"{context.sub_name}.__init__ sets its own way")
        for other in clashes:
            resolution.unsafe.append(f"it also sets self.{other}, which {context.sub_name}.__init__ sets itself")
        for local in sorted(wanted.local_sets):
            if local in context.sub_params or local in context.sub_locals_any:
                resolution.unsafe.append(f"it assigns `{local}`, which {context.sub_name}.__init__ also uses")
        resolution.statements[index] = text
        context.resolve(wanted, index, resolution)
    what = " and ".join(_shown(resolution.statements[i]) for i, _ in found)
    copied = _fix(context, finding, resolution, f"copy {what} from {context.parent_name}.__init__")
    if copied.status.applicability == "safe" or not isinstance(found[0][1], (ast.Assign, ast.AnnAssign)):
        return copied
    return _first_literal(context, finding, found) or copied


def _first_literal(context: Context, finding: Finding, found: list[tuple[int, ast.stmt]]) -> Fix | None:
    """Where copying every assignment is not safe (a block that builds more,
    names the subclass lacks) but the first one is an unconditional plain
    literal, that one alone: what a maintainer writes (sglang PR #26041:
    ``self._shared_expert_tp1 = False``). Unsafe: the parent changes it later."""
    index, first = found[0]
    value = first.value if isinstance(first, (ast.Assign, ast.AnnAssign)) else None
    if value is None or not literal(value) or len(found) < 2:
        return None
    text = f"self.{finding.attribute} = {context.parent.segment(value)}"
    later = found[1][1]
    edit = Edit(context.sub.path, context.sub_name, context.start_line, statements=((index, text),))
    return Fix(finding, FixStatus(
        "unsafe", f"set `{text}` as {context.parent_name}.__init__ does first",
        f"{context.parent_name}.__init__ changes it later (line {later.lineno}, "
        f"{_kind_of(later)}), which is not copied"), edit)


def _kind_of(statement: ast.stmt) -> str:
    """A statement as a message names it: never a cut fragment of its code."""
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return "an assignment"
    return f"in an `{type(statement).__name__.lower().replace('asyncf', 'async f')}` block"


def _shown(source: str) -> str:
    """A statement in a message: its first line, `...` for what follows."""
    lines = source.splitlines()
    return f"`{lines[0]}{' ...' if len(lines) > 1 else ''}`"


def _without_annotation(context: Context, statement: ast.AnnAssign) -> str:
    """``self.x: T = v`` as ``self.x = v``: the annotation's names may mean
    nothing in the subclass's module, and an instance attribute's is not run."""
    assert statement.value is not None
    return f"{context.parent.segment(statement.target)} = {context.parent.segment(statement.value)}"


def _helper(context: Context, finding: Finding) -> Fix | None:
    """``self._init_x(args)``, where the parent's ``__init__`` calls a method of
    its own class that sets the attribute."""
    attribute = finding.attribute
    methods = context.parent_methods
    for index, statement in enumerate(context.parent_init.body):
        for node in ast.walk(statement):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
                continue
            method = methods.get(node.func.attr)
            if method is None or not any(sets_attribute(s, attribute) for s in method.body):
                continue
            resolution = Resolution(context.start_line)
            call = context.parent.segment(node)
            if not (isinstance(statement, ast.Expr) and statement.value is node):
                resolution.unsafe.append(f"{context.parent_name}.__init__ calls it inside "
                                         f"`{context.parent.segment(statement).splitlines()[0].strip()}`")
            resolution.statements[index] = call
            context.resolve(needs(*node.args, *node.keywords), index, resolution)
            inside = needs(*method.body)
            for other in sorted(inside.self_sets - {attribute}):
                if other in context.sub_self_any:
                    resolution.unsafe.append(f"it also sets self.{other}, which {context.sub_name}.__init__ "
                                             "sets itself")
            for runs in _runs_on_self(method):
                resolution.unsafe.append(f"it runs `{runs}` on the instance, which does more than set it")
            for read in sorted(inside.self_reads - inside.self_sets - context.class_names):
                if read not in context.sub_self_top:
                    resolution.unsafe.append(f"it reads self.{read}, which {context.sub_name}.__init__ "
                                             "does not set")
                else:
                    resolution.after(context.sub_self_top[read])
            return _fix(context, finding, resolution, f"call `{call}` as {context.parent_name}.__init__ does")
    return None


def _runs_on_self(method: ast.FunctionDef) -> list[str]:
    """The calls ``method`` makes that run code on the instance: a method of
    it (``self.step()``) or a function given it (``_initial_mode(self)``)."""
    found: list[str] = []
    for node in ast.walk(method):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        on_self = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
        given_self = any(isinstance(a, ast.Name) and a.id == "self" for a in (*node.args, *(k.value for k in node.keywords)))
        if on_self or given_self:
            found.append(f"{ast.unparse(func)}(...)")
    return sorted(set(found))


def _class_default(context: Context, finding: Finding) -> Fix | None:
    """``attribute = <literal>`` on the class, where every assignment of it in
    the parent's ``__init__`` is that same plain literal; never for a
    submodule, a tensor or a config."""
    attribute = finding.attribute
    values = [n.value for n in ast.walk(context.parent_init)
              if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
              and any(sets_attribute(t, attribute) for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    if not values or not literal(values[0]):
        return None
    text = context.parent.segment(values[0])
    edit = Edit(context.sub.path, context.sub_name, 0, class_lines=(f"{attribute} = {text}",))
    message = f"class-level default {attribute} = {text} on {context.sub_name}"
    if all(ast.dump(v) == ast.dump(values[0]) for v in values):
        return Fix(finding, FixStatus("safe", message), edit)
    return Fix(finding, FixStatus(
        "unsafe", message, f"{context.parent_name}.__init__ sets it to other values too"), edit)


def _fix(context: Context, finding: Finding, resolution: Resolution, message: str) -> Fix:
    if resolution.missing:
        return Fix(finding, FixStatus("none", resolution.missing))
    edit = Edit(context.sub.path, context.sub_name, resolution.anchor,
                statements=tuple(sorted(resolution.statements.items())), imports=tuple(sorted(resolution.imports)))
    if resolution.unsafe or resolution.calls:
        return Fix(finding, FixStatus("unsafe", message, resolution.reasons()), edit)
    return Fix(finding, FixStatus("safe", message), edit)

