"""What the rule is asked: the entry points a runner calls on a module, and
whether reads nothing reaches are shown. Plain data, so the command and the
cache key read it without importing the rule."""

from __future__ import annotations

from dataclasses import dataclass

from vllm_sp_base._audit.frameworks import FRAMEWORKS, Refusal, Wrapper

#: The entry points of a torch module (a class with torch's ``Module`` in
#: its MRO): what torch and the engines' model runners call on every load
#: (``frameworks/``). What calls a plain class's methods, and whether anything
#: does (a test double's), cannot be told from the class, so a plain class is
#: checked while it is built, but for those a framework drives. Set with
#: ``--entry-points``.
DEFAULT_ENTRY_POINTS = tuple(dict.fromkeys(e for f in FRAMEWORKS for e in f.module_entry_points))
#: What a framework calls only with a feature on: a read reached only from
#: these is at most a warning. Set with ``--feature-entry-points``.
DEFAULT_FEATURE_ENTRY_POINTS = tuple(dict.fromkeys(
    e for f in (*FRAMEWORKS[1:], FRAMEWORKS[0]) for e in f.feature_entry_points))
#: Plain (not torch) classes a framework builds and drives, by where they are
#: defined, and what it calls on them on every use (those also among the
#: feature entry points, with that feature only: a worker's ``start_profile``).
#: Any other plain class is checked while it is built, and from the methods
#: the audited tree calls on an instance it builds (``semantics/_call_sites.py``).
DEFAULT_PLAIN_ENTRY_POINTS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (d.cls, d.calls) for f in (*FRAMEWORKS[1:], FRAMEWORKS[0]) for d in f.driven)
#: What a framework wraps around a driven class's method, by the class.
DEFAULT_WRAPPERS: tuple[tuple[str, Wrapper], ...] = tuple(
    (d.cls, w) for f in FRAMEWORKS for d in f.driven for w in d.wrappers)
#: What a framework's classes refuse before their own ``__init__`` ran.
DEFAULT_REFUSALS: tuple[Refusal, ...] = tuple(r for f in FRAMEWORKS for r in f.refusals)


@dataclass(frozen=True)
class RuleOptions:
    """What the rule is asked: where a model's code is entered from, and
    whether reads nothing reaches are shown."""

    entry_points: tuple[str, ...] = DEFAULT_ENTRY_POINTS
    show_unreachable: bool = False
    feature_entry_points: tuple[str, ...] = DEFAULT_FEATURE_ENTRY_POINTS
    plain_entry_points: tuple[tuple[str, tuple[str, ...]], ...] = DEFAULT_PLAIN_ENTRY_POINTS
