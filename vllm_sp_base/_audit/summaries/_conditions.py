"""The tests that enclose a point of a method: the source of the innermost
(what a finding says makes a read happen) and what they all need of the
instance (``requirements``: what a decided attribute can rule out)."""

from __future__ import annotations

import ast

from vllm_sp_base._audit.summaries._events import REQUIREMENT_SEPARATOR

#: How a requirement spells a name of the method (not of the instance): ``@flag``.
LOCAL = "@"
#: How much of a test's source a finding carries (long tests are cut, marked ``...``).
CONDITION_CHARS = 160
#: Literals whose value a ``Set`` records and a test compares against.
LITERAL_TYPES = (bool, type(None), int, float, str)


class EnclosingTests:
    """A stack of (test, the truth it needs), as a visitor enters branches."""

    def __init__(self, self_name: str) -> None:
        self._self_name = self_name  # the method's first parameter (a name, not the visitor: no cycle)
        self._stack: list[tuple[ast.expr, bool]] = []
        self._text: list[str | None] = []  # each test's text, once asked
        # Tests an earlier ``if ...: return`` of the block failed: what follows
        # needs them, yet it is no branch (it is what runs on every load).
        self._passed: list[tuple[ast.expr, bool]] = []

    def push(self, test: ast.expr, truth: bool) -> None:
        self._stack.append((test, truth))
        self._text.append(None)

    def pop(self) -> None:
        self._stack.pop()
        self._text.pop()

    def push_passed(self, test: ast.expr) -> None:
        """What follows ``if test: return`` in its block runs where ``test`` failed."""
        self._passed.append((test, False))

    def pop_passed(self, count: int) -> None:
        del self._passed[len(self._passed) - count:]

    def current(self) -> tuple[str | None, str]:
        """The innermost test's text, and what the enclosing tests need of the instance."""
        passed = [r for test, truth in self._passed for r in self.requirements(test, truth)]
        if not self._stack:
            return None, REQUIREMENT_SEPARATOR.join(passed)
        text = self._text[-1]
        if text is None:  # unparsed once, and only where an event sits under it
            test, truth = self._stack[-1]
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, truth = test.operand, not truth  # ``else`` of ``if not x``: ``x``
            text = ast.unparse(test)
            if not truth:
                text = f"not ({text})" if " " in text else f"not {text}"
            text = self._text[-1] = text if len(text) <= CONDITION_CHARS else text[:CONDITION_CHARS - 3] + "..."
        needs = [r for test, truth in self._stack for r in self.requirements(test, truth)]
        return text, REQUIREMENT_SEPARATOR.join(needs + passed)

    def requirements(self, test: ast.expr, truth: bool) -> list[str]:
        """What ``test`` being ``truth`` says of the instance's attributes
        (spelled as ``requirements`` reads them)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.requirements(test.operand, not truth)
        chain = self._self_chain(test)
        if chain is not None:
            return [chain if truth else "!" + chain]
        if isinstance(test, ast.Name):
            # A name of the method (a keyword argument an engine passes only
            # in some modes, ``if get_embedding:``): what a role can decide.
            return [f"{LOCAL}{test.id}" if truth else f"!{LOCAL}{test.id}"]
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) == truth:
            return [r for value in test.values for r in self.requirements(value, truth)]
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            if isinstance(left, ast.Constant):
                left, right = right, left
            chain = self._self_chain(left)
            if chain is None and isinstance(left, ast.Name):
                chain = f"{LOCAL}{left.id}"  # ``if modality == "video":``: what a class's declarations decide
            if chain is None or not (isinstance(right, ast.Constant) and type(right.value) in LITERAL_TYPES):
                return []
            if isinstance(op, (ast.Is, ast.IsNot)) and right.value not in (None, True, False):
                return []  # identity of another literal: not what == says
            if isinstance(op, (ast.Eq, ast.Is)):
                equal = truth
            elif isinstance(op, (ast.NotEq, ast.IsNot)):
                equal = not truth
            else:
                return []
            return [f"{chain}{'==' if equal else '!='}{right.value!r}"]
        return []

    def _self_chain(self, node: ast.expr) -> str | None:
        """``a.b`` for ``self.a.b``: what a test reads of the instance."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        return ".".join(reversed(parts)) if parts and isinstance(node, ast.Name) and node.id == self._self_name else None
