"""The tests that enclose a point of a method: the source of the innermost
(what a finding says makes a read happen) and what they all need of the
instance (``requirements``: what a decided attribute can rule out)."""

from __future__ import annotations

import ast

from vllm_sp_base._audit.summaries._events import DEFAULTED, REQUIREMENT_SEPARATOR

#: How a requirement spells a name of the method (not of the instance): ``@flag``.
LOCAL = "@"


def input_key(key: str) -> str:
    """How a requirement spells a name bound from a key of the method's input
    (``x = video_input.get("second_per_grid_ts")``): ``@[second_per_grid_ts]``,
    what the fields the engine gives a class can decide, whatever the name."""
    return f"{LOCAL}[{key}]"


def key_of(requirement_name: str) -> str | None:
    """The key ``input_key`` spelled, or None for any other name."""
    if requirement_name.startswith(f"{LOCAL}[") and requirement_name.endswith("]"):
        return requirement_name[len(LOCAL) + 1:-1]
    return None


def looked_up_key(value: ast.expr) -> str | None:
    """The key ``value`` looks up in a mapping, where it is None (or fails)
    when the key is absent: ``m["k"]``, ``m.get("k")``, ``m.get("k", None)``,
    ``m.pop("k", None)``."""
    if isinstance(value, ast.Subscript) and isinstance(value.ctx, ast.Load):
        key = value.slice
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and not value.keywords:
        args = value.args
        default_none = len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is None
        if not ((value.func.attr == "get" and (len(args) == 1 or default_none))
                or (value.func.attr == "pop" and default_none)):
            return None
        key = args[0]
    else:
        return None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def empty_sequence(value: ast.expr) -> str | None:
    """``"[]"`` or ``"()"`` for an empty list or tuple (``[]``, ``list()``):
    a value a membership test always fails on until something fills it."""
    if isinstance(value, (ast.List, ast.Tuple)) and not value.elts:
        return "[]" if isinstance(value, ast.List) else "()"
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "tuple")
            and not value.args and not value.keywords):
        return "[]" if value.func.id == "list" else "()"
    return None


#: How a requirement spells a predicate called on what the instance holds: ``a.is_x()``.
PREDICATE = "()"
#: How a requirement spells a call of a function by name, with how many
#: positional arguments and which of them are attributes of the instance:
#: ``%uses_cp/2/1.cp_enabled`` for ``uses_cp(batch, self.cp_enabled)`` (what a
#: setting it needs, or the attribute passed for it, can decide).
CALLED = "%"
#: Literals a membership test always fails on (``empty_sequence``).
EMPTY_SEQUENCES = frozenset({"[]", "()"})
#: How much of a test's source a finding carries (long tests are cut, marked ``...``).
CONDITION_CHARS = 160
#: Literals whose value a ``Set`` records and a test compares against.
LITERAL_TYPES = (bool, type(None), int, float, str)


def looping_over(iterable: ast.expr) -> str:
    """What a read in a loop's body runs under where no test encloses it: the
    loop running at all (``looping over self.layers``)."""
    text = f"looping over {ast.unparse(iterable)}"
    return text if len(text) <= CONDITION_CHARS else text[:CONDITION_CHARS - 3] + "..."


class EnclosingTests:
    """A stack of (test, the truth it needs), as a visitor enters branches."""

    def __init__(self, self_name: str, keyed: dict[str, str]) -> None:
        self._self_name = self_name  # the method's first parameter (a name, not the visitor: no cycle)
        # Local name -> the input key it was bound from, as the method goes
        # (the visitor's own dict): a test is read with the bindings it saw.
        self._keyed = keyed
        self._stack: list[tuple[ast.expr, bool, dict[str, str] | None]] = []
        self._text: list[str | None] = []  # each test's text, once asked
        # Tests an earlier ``if ...: return`` of the block failed: what follows
        # needs them, yet it is no branch (it is what runs on every load).
        self._passed: list[tuple[ast.expr, bool, dict[str, str] | None]] = []
        self._partial: set[int] = set()  # ids of the tests pushed as not all a branch needs

    def _bound(self) -> dict[str, str] | None:
        """The keys names were bound from when a test runs (they may be bound
        again before a read): a copy, a few names at most."""
        return dict(self._keyed) if self._keyed else None

    def push(self, test: ast.expr, truth: bool, whole: bool = True) -> None:
        """``whole``: what the test says is all the branch needs (not so of
        ``self.n`` for a ``range(self.n)`` loop's body, which also needs n > 0)."""
        self._stack.append((test, truth, self._bound()))
        self._text.append(None)
        if not whole:
            self._partial.add(id(test))

    def pop(self) -> None:
        self._stack.pop()
        self._text.pop()

    def push_passed(self, test: ast.expr, truth: bool = False) -> None:
        """What follows ``if test: return`` in its block runs where ``test``
        failed; what follows ``if test: ... else: return``, and that ``if``'s
        body, where it held (``truth``)."""
        self._passed.append((test, truth, self._bound()))

    def pop_passed(self, count: int) -> None:
        del self._passed[len(self._passed) - count:]

    def sole(self) -> bool:
        """Whether one test encloses the point, and no earlier return passed."""
        return len(self._stack) == 1 and not self._passed

    def current(self) -> tuple[str | None, str]:
        """The innermost test's text, and what the enclosing tests need of the instance."""
        passed = [r for test, truth, bound in self._passed for r in self.requirements(test, truth, bound)]
        if not self._stack:
            return None, REQUIREMENT_SEPARATOR.join(passed)
        text = self._text[-1]
        if text is None:  # unparsed once, and only where an event sits under it
            test, truth, _ = self._stack[-1]
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, truth = test.operand, not truth  # ``else`` of ``if not x``: ``x``
            text = ast.unparse(test)
            if not truth:
                text = f"not ({text})" if " " in text else f"not {text}"
            text = self._text[-1] = text if len(text) <= CONDITION_CHARS else text[:CONDITION_CHARS - 3] + "..."
        needs = [r for test, truth, bound in self._stack for r in self.requirements(test, truth, bound)]
        return text, REQUIREMENT_SEPARATOR.join(needs + passed)

    def explained(self) -> int:
        """How many requirements the enclosing tests (not those an earlier
        return passed) need, where each test says all it needs (``if self.a
        and self.b:``, not ``if self.a or x:`` nor ``if i in self.layers:``);
        -1 where one does not."""
        count = 0
        for test, truth, bound in self._stack:
            if not self._said_whole(test, truth):
                return -1
            count += len(self.requirements(test, truth, bound))
        return count

    def _said_whole(self, test: ast.expr, truth: bool) -> bool:
        """Whether ``requirements`` of ``test`` being ``truth`` hold only where the test does."""
        if id(test) in self._partial:
            return False
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._said_whole(test.operand, not truth)
        if isinstance(test, ast.BoolOp):
            return isinstance(test.op, ast.And) == truth and all(self._said_whole(v, truth) for v in test.values)
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.In, ast.NotIn)):
            return False  # ``i in self.layers`` needs more than ``layers`` being non-empty
        return bool(self.requirements(test, truth))

    def requirements(self, test: ast.expr, truth: bool, bound: dict[str, str] | None = None) -> list[str]:
        """What ``test`` being ``truth`` says of the instance's attributes
        (spelled as ``requirements`` reads them), and of the method's names
        (``bound``: those bound from an input's key when the test ran)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.requirements(test.operand, not truth, bound)
        chain = self._self_chain(test)
        if chain is None and isinstance(test, ast.Call) and not test.args and not test.keywords:
            # ``self.algorithm.is_eagle3()``: a predicate of what the instance
            # holds, spelled ``algorithm.is_eagle3()`` (what a factory's choice decides).
            called = self._self_chain(test.func)
            chain = None if called is None else called + PREDICATE
        if chain is not None:
            return [chain if truth else "!" + chain]
        if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and not test.keywords
                and not any(isinstance(a, ast.Starred) for a in test.args)):
            passed = "".join(f"/{index}.{attr}" for index, arg in enumerate(test.args)
                             if (attr := self._self_chain(arg)) is not None and "." not in attr)
            called = f"{CALLED}{test.func.id}/{len(test.args)}{passed}"
            return [called if truth else "!" + called]
        if isinstance(test, ast.Name):
            # A name of the method (a keyword argument an engine passes only
            # in some modes, ``if get_embedding:``): what a role can decide.
            local = self._local(test.id, bound)
            return [local if truth else f"!{local}"]
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) == truth:
            return [r for value in test.values for r in self.requirements(value, truth, bound)]
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            if isinstance(op, (ast.In, ast.NotIn)):
                # ``i in self.layers``: true only where the collection holds something.
                chain = self._self_chain(right)
                holds_it = truth == isinstance(op, ast.In)
                return [chain] if chain is not None and holds_it else []
            if isinstance(left, ast.Constant):
                left, right = right, left
            chain = self._self_chain(left)
            if chain is None and isinstance(left, ast.Name):
                chain = self._local(left.id, bound)  # ``if modality == "video":``: what a class's declarations decide
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

    @staticmethod
    def _local(name: str, bound: dict[str, str] | None) -> str:
        key = bound.get(name) if bound is not None else None
        return f"{LOCAL}{name}" if key is None else input_key(key)

    def _self_chain(self, node: ast.expr) -> str | None:
        """``a.b`` for ``self.a.b``: what a test reads of the instance;
        ``a?False`` for ``getattr(self, "a", False)`` (``DEFAULTED``)."""
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) == 3 and not node.keywords and isinstance(node.args[0], ast.Name)
                and node.args[0].id == self._self_name and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str) and isinstance(node.args[2], ast.Constant)
                and type(node.args[2].value) in LITERAL_TYPES):
            default = repr(node.args[2].value)
            if not any(mark in default for mark in ("==", "!=", DEFAULTED, REQUIREMENT_SEPARATOR)):
                return f"{node.args[1].value}{DEFAULTED}{default}"
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        return ".".join(reversed(parts)) if parts and isinstance(node, ast.Name) and node.id == self._self_name else None
