"""The run's fixes as new file texts: planned for every finding (what each
output format says), rendered for those asked (safe, or unsafe too), shown
as a unified diff or written all or nothing (``vllm_sp_base._atomic``)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vllm_sp_base._audit.files._keys import python_text
from vllm_sp_base._audit.fix._edit import Edit, Fix
from vllm_sp_base._audit.report._finding import AuditResult, Finding, display_path


@dataclass
class Rendered:
    """What applying the chosen fixes makes of each file they touch."""

    texts: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (before, after)
    read: dict[str, bytes] = field(default_factory=dict)  # path -> the bytes the fix was made from
    encodings: dict[str, str] = field(default_factory=dict)  # path -> its encoding, as Python reads it
    applied: list[Fix] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # one line each: a file left as it was

    def written(self, path: str) -> bytes:
        """The new text of ``path`` in the file's own encoding (a BOM kept)."""
        return self.texts[path][1].encode(self.encodings[path])



def within(paths: Sequence[str]) -> Callable[[str], bool]:
    """Whether a file lies in the audited ``paths`` (a file named, or below a folder named)."""
    roots = [os.path.realpath(p) for p in paths]

    def audited(path: str) -> bool:
        real = os.path.realpath(path)
        return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)

    return audited


def plan_result(result: AuditResult, paths: Sequence[str]) -> dict[Finding, Fix]:
    """Plans a fix for each finding of ``result`` and records its status there."""
    from vllm_sp_base._audit.fix._context import forget
    from vllm_sp_base._audit.fix._plan import plan

    forget()
    fixes = plan(result.findings, within(paths))
    result.fixes = {finding: fix.status for finding, fix in fixes.items()}
    return fixes


def render_fixes(fixes: dict[Finding, Fix], unsafe: bool) -> Rendered:
    """New texts for the files the chosen fixes touch; a file whose new text
    would not compile, or whose edits cannot be placed, is left as it is."""
    from libcst import ParserSyntaxError

    from vllm_sp_base._audit.fix._render import RenderError, render

    chosen = [f for f in fixes.values() if f.edit is not None
              and (f.status.applicability == "safe" or (unsafe and f.status.applicability == "unsafe"))]
    by_file: dict[str, list[Fix]] = {}
    for fix in chosen:
        assert fix.edit is not None
        by_file.setdefault(fix.edit.path, []).append(fix)
    rendered = Rendered()
    for path, found in sorted(by_file.items()):
        edits: list[Edit] = [f.edit for f in found if f.edit is not None]
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
            before, encoding = python_text(raw)
            after = render(before, edits)
            compile(after, path, "exec", dont_inherit=True)
            after.encode(encoding)
        except (OSError, UnicodeError, LookupError, RenderError, SyntaxError, ValueError,
                ParserSyntaxError) as error:
            said = str(error).strip().splitlines()
            rendered.problems.append(f"{display_path(path)}: not fixed: {said[0] if said else type(error).__name__}")
            continue
        if after != before:
            rendered.texts[path] = (before, after)
            rendered.read[path], rendered.encodings[path] = raw, encoding
            rendered.applied.extend(found)
    return rendered


def unified_diff(rendered: Rendered) -> str:
    """One unified diff for every changed file, paths as the report shows them."""
    chunks: list[str] = []
    for path, (before, after) in sorted(rendered.texts.items()):
        shown = display_path(path)
        for line in difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True),
            fromfile=f"a/{shown}", tofile=f"b/{shown}",
        ):  # a last line with no newline is marked as diff marks it: the patch applies
            chunks.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(chunks)


def journal_root(paths: Sequence[str]) -> str:
    """Where a fix's journal goes: the audited paths' common folder."""
    folders = [p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p)) for p in paths]
    return os.path.commonpath([os.path.realpath(f) for f in folders])


def write(rendered: Rendered, paths: Sequence[str]) -> list[str]:
    """Every changed file or none, journaled under the audited paths' common
    folder; a file that no longer holds the bytes its fix was made from is
    left alone, and returned."""
    from vllm_sp_base._atomic import write_all

    if not rendered.texts:
        return []
    real = {os.path.realpath(path): path for path in sorted(rendered.texts)}
    left = write_all(journal_root(paths), [(r, rendered.written(p)) for r, p in real.items()],
                     expected={r: rendered.read[p] for r, p in real.items()})
    return [real[path] for path in left]
