"""What a planned fix adds to a file: statements for a class's ``__init__``,
class-level lines, imports. Planned from ``ast``, rendered with libcst."""

from __future__ import annotations

from dataclasses import dataclass

from vllm_sp_base._audit.report._finding import Finding, FixStatus


@dataclass(frozen=True)
class Edit:
    path: str  # the file of the class whose __init__ skips
    class_name: str  # that class, at its module's top level
    after_line: int  # the line of the __init__ statement the new ones follow; 0: at its top
    statements: tuple[tuple[int, str], ...] = ()  # (order, dedented source) for __init__
    class_lines: tuple[str, ...] = ()  # class-level defaults
    imports: tuple[str, ...] = ()  # import statements the module needs for them


@dataclass(frozen=True)
class Fix:
    finding: Finding
    status: FixStatus
    edit: Edit | None = None
