"""What a method does to ``self``, as plain events in the order it runs, and
what the tests around them need of the instance (``requirements``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Read:
    """``self.<attr>`` read (also ``getattr(self, "attr")`` and ``self.attr += ...``)."""

    attr: str
    line: int
    col: int
    conditional: bool  # under an if/loop/try/boolean branch
    condition: str | None = None  # the source of the innermost test it runs under
    requires: str = ""  # see ``requirements``
    # What is read is used at once (``self.a.b``, ``self.a.f()``, ``v.b`` after
    # ``v = self.a``): where ``self.a`` is None, this raises AttributeError.
    deref: bool = False
    explained: int = -1  # see ``Call.explained``


@dataclass(slots=True)
class Set:
    """``self.<attr> = ...`` and the other spellings that bind an instance attribute
    (``setattr(self, "a", v)``, ``object.__setattr__(self, "a", v)``,
    ``self.__dict__.update({"a": v})``, ``self.__dict__["a"] = v``)."""

    attr: str
    line: int
    conditional: bool
    value: str | None = None  # the literal it binds (``"False"``, ``"None"``, ``"3"``, ``"[]"``), if one
    made: str | None = None  # the dotted name called for the value (``nn.Linear`` in ``nn.Linear(2, 2)``), if one


@dataclass(slots=True)
class SetEach:
    """``for name in NAMES: setattr(self, name, ...)``: sets each string of the
    module-level (or, ``on_class``, class-level) constant ``NAMES``, resolved
    by whoever knows the module and the MRO."""

    constant: str
    line: int
    conditional: bool
    on_class: bool = False  # ``for name in self.NAMES``: a class-level constant


@dataclass(slots=True)
class SetAny:
    """An attribute set under a name not known from the source (``setattr(self,
    key, v)``, ``self.__dict__.update(kwargs)``): any attribute may be set."""

    line: int
    conditional: bool


@dataclass(slots=True)
class Call:
    """A call that runs a method on ``self``.

    kind ``self``: ``self.name(...)``, looked up from the instance's class;
    ``super``: ``super().name(...)``, from after the calling method's class;
    ``super_of``: ``super(X, self).name(...)``, from after X (``target``);
    ``explicit``: ``X.name(self, ...)``, from X (a function of a module
    where X is one: ``helpers.setup(self)``); ``function``: ``setup(self)``,
    the function the name ``target`` binds. ``caught``: inside a ``try``
    whose handler swallows AttributeError: what it reads cannot crash the caller.

    A ``self`` call that finds no method, property or class attribute reads
    an instance attribute (``self.norm(x)``, a submodule): the walk says so."""

    kind: str
    target: str | None
    name: str
    line: int
    conditional: bool
    caught: bool = False
    col: int = 0
    condition: str | None = None  # as ``Read``'s
    requires: str = ""
    # Where ``target``'s first name comes from when the method imports it
    # itself (``import torch.nn as nn`` in the body): ``Import`` spelled
    # ``"<dots><module>:<name>"`` (see ``local_import``); None: the module's names.
    imported: str | None = None
    # An ``__init__`` call under one test and nothing else (no loop, ``try``,
    # other test or earlier return): where it does not run, that test failed.
    sole_test: bool = False
    # What the call passes: ``"<positional count>:<keyword,names>"`` (the
    # instance it hands over not counted); None where ``*args``/``**kwargs``
    # may pass anything.
    passed: str | None = None
    # Where it is ``conditional``, how many of ``requires``' first
    # requirements are the tests it runs under, all of them: where those hold,
    # it runs (``if self.a:``; ``for modality in ...: if modality == "image":``
    # once the loop is known to reach that value). -1: something else may
    # keep it from running (another loop, a handler, a test no requirement says).
    explained: int = -1


@dataclass(slots=True)
class Marker:
    """Something the method does that decides how its class is checked.

    kind ``returns_other``: ``__new__`` returns what another call builds, so
    ``C(...)`` may not be a C; ``raises_attribute_error``: the method raises
    AttributeError itself (a ``__getattr__`` that does is no fallback);
    ``answers_missing``: ``__getattribute__`` catches the AttributeError of a
    lookup and answers otherwise (a fallback, as a ``__getattr__`` is);
    ``raises``: a ``raise`` statement (on no condition: nothing after it runs,
    and an ``__init__`` that gets there builds nothing)."""

    kind: str
    line: int
    conditional: bool = False


@dataclass(slots=True)
class Assert:
    """``assert <test>``: past it, what the test says of the instance holds
    (``requires``, spelled as ``Read.requires``)."""

    requires: str
    line: int
    conditional: bool


@dataclass(slots=True)
class Parameters:
    """A method's parameters after the one that receives the instance, its
    first event where some default is None: ``positional`` (comma-joined, in
    order) and ``none_by_default`` (keyword-only ones too). Where a call leaves
    one out, it is None in that run of the method."""

    positional: str
    none_by_default: str
    line: int = 0  # every event has one; a signature sits before the body's first line

    def left_out(self, passed: str) -> list[str]:
        """The parameters a call that passed ``passed`` leaves at None."""
        count, _, keywords = passed.partition(":")
        given = set(self.positional.split(",")[: int(count)]) | set(keywords.split(","))
        return [name for name in self.none_by_default.split(",") if name and name not in given]


@dataclass(slots=True)
class Signature:
    """An ``__init__``'s parameters after the instance: a call whose
    arguments do not fit raises TypeError before the body runs (a decorator
    that renames keywords is not read) (bayesian-torch's ``super(Grandparent, self).__init__(...,
    bias=bias)`` into an ``__init__(self)``). ``positional``: the names a
    positional argument fills, in order; ``keywords``: the names a keyword
    may give; ``required``: those without a default; ``rest``: ``*args``
    (``"*"``), ``**kwargs`` (``"**"``), both or neither."""

    positional: str
    keywords: str
    required: str
    rest: str
    line: int = 0

    def refuses(self, passed: str) -> bool:
        """Whether a call that passed ``passed`` (``Call.passed``) raises TypeError."""
        count, _, spelled = passed.partition(":")
        given = [k for k in spelled.split(",") if k]
        positional = [p for p in self.positional.split(",") if p]
        if int(count) > len(positional) and "*" not in self.rest.replace("**", ""):
            return True  # too many positional arguments
        filled = set(positional[: int(count)])
        if filled & set(given):
            return True  # a parameter given twice
        keywords = set(self.keywords.split(","))
        if "**" not in self.rest and any(k not in keywords for k in given):
            return True  # an unexpected keyword argument
        return any(r and r not in filled | set(given) for r in self.required.split(","))


Event = Read | Set | SetEach | SetAny | Call | Marker | Assert | Parameters | Signature


#: How ``Read.requires`` joins its requirements (a literal's repr has no raw newline).
REQUIREMENT_SEPARATOR = "\n"
#: How a requirement spells a test of ``getattr(self, "a", default)``:
#: ``a?<repr of default>``, the default what the test sees where nothing sets ``a``.
DEFAULTED = "?"


def defaulted(name: str) -> tuple[str, str] | None:
    """(attribute, default's repr) of a name ``DEFAULTED`` spells; None for any other."""
    attr, mark, default = name.partition(DEFAULTED)
    return (attr, default) if mark else None


#: How a call's target spells a class attribute of the instance that holds a
#: class (``self.base_class.__init__(self)``: ``.base_class``).
HELD = "."

#: The key of a property's setter among its class's methods (``x.setter``):
#: ``self.x = v`` runs it, as a read of ``self.x`` runs the getter.
SETTER = ".setter"
#: The key of a static or class method among its class's methods, summarised
#: as what it does to the instance passed as its first argument
#: (``self.from_loader(self, ...)`` into ``def from_loader(cls, self, ...)``).
STATIC = ".static"


def requirements(requires: str) -> list[tuple[str, str, str]]:
    """``Read.requires`` / ``Call.requires``: what the enclosing tests need of
    the instance's attributes for the event to run, as (attribute, test,
    literal): test ``true``/``false`` (``if self.a:``, the ``else`` of it),
    ``==``/``!=`` against the literal's repr (``if self.kind == "full":``,
    ``self.cache is None``). Spelled ``a``, ``!a``, ``a==<repr>``, ``a!=<repr>``."""
    found = []
    for requirement in requires.split(REQUIREMENT_SEPARATOR):
        if not requirement:
            continue
        attr, eq, literal = requirement.partition("==")
        if eq:
            found.append((attr, "==", literal))
            continue
        attr, ne, literal = requirement.partition("!=")
        if ne:
            found.append((attr, "!=", literal))
        elif requirement.startswith("!"):
            found.append((requirement[1:], "false", ""))
        else:
            found.append((requirement, "true", ""))
    return found


def holds(test: str, literal: str, value: str) -> bool:
    """Whether an attribute bound to the literal ``value`` passes ``test``."""
    if test == "true":
        return value not in FALSE_LITERALS
    if test == "false":
        return value in FALSE_LITERALS
    return (value == literal) == (test == "==")


#: A fact that an attribute holds one of a few literals, spelled
#: ``'image'|'images'``: the only modality a model takes, as its code may
#: spell it (vLLM's models key their inputs ``"image"`` or ``"images"``).
ONE_OF = "in"


def excludes(fact: tuple[str, str], needed: tuple[str, str]) -> bool:
    """Whether an attribute known to pass ``fact`` (test, literal) surely fails
    ``needed``: ``== False`` excludes ``true``; ``!= None`` excludes ``== None``."""
    (known, known_literal), (test, literal) = fact, needed
    if known == ONE_OF:
        return not any(holds(test, literal, value) for value in known_literal.split("|"))
    if known == "==":
        return not holds(test, literal, known_literal)
    if test == "==":
        return not holds(known, known_literal, literal)
    return {known, test} == {"true", "false"}


#: Literals that are false (``Set.value``): what ``if self.flag:`` tests.
FALSE_LITERALS = frozenset({"False", "None", "0", "0.0", "''", '""', "()", "[]", "{}"})



@dataclass(slots=True)
class Import:
    level: int
    module: str | None
    name: str | None  # None: ``import module`` binds the module itself


def local_import(imp: Import) -> str:
    """``imp`` as a plain string, for a ``Call`` that names a locally imported class."""
    return f"{'.' * imp.level}{imp.module or ''}:{imp.name or ''}"


def parse_local_import(spelled: str) -> Import:
    where, _, name = spelled.partition(":")
    module = where.lstrip(".")
    return Import(len(where) - len(module), module or None, name or None)


#: What is known of a built instance: attribute (or ``a.b`` chain) -> the
#: tests it is known to pass, as (test, literal) (see ``requirements``).
Known = dict[str, list[tuple[str, str]]]


def implies(fact: tuple[str, str], needed: tuple[str, str]) -> bool:
    """Whether an attribute known to pass ``fact`` (test, literal) surely passes
    ``needed``: ``== True`` passes ``true``; ``!= None`` passes only ``!= None``."""
    (known, known_literal), (test, literal) = fact, needed
    if known == ONE_OF:
        values = known_literal.split("|")
        # ``== 'images'`` where it holds ``'image'|'images'``: one model spells its modality one way.
        return literal in values if test == "==" else all(holds(test, literal, value) for value in values)
    if known == "==":
        return holds(test, literal, known_literal)
    return (known, known_literal) == (test, literal)


def entailed(requires: tuple[str, ...], known: Known) -> bool:
    """Whether what is known of the instance passes every one of ``requires``
    (each spelled as one ``requirements`` reads)."""
    return all(
        any(implies(fact, (test, literal)) for fact in known.get(attr, ()))
        for requirement in requires
        for attr, test, literal in requirements(requirement)
    )


def contradicts(requires: str, known: Known) -> bool:
    """Whether something known of the instance fails a test ``requires`` needs."""
    return any(
        excludes(fact, (test, literal))
        for attr, test, literal in requirements(requires)
        for fact in known.get(attr, ())
    )
