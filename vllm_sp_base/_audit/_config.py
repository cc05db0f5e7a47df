"""``[tool.vllm-sp-base]`` in ``pyproject.toml``: the audit's settings a
project keeps with its code; the command line overrides them."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from vllm_sp_base._audit._options import (
    DEFAULT_ENTRY_POINTS,
    DEFAULT_FEATURE_ENTRY_POINTS,
    DEFAULT_PLAIN_ENTRY_POINTS,
)
from vllm_sp_base._audit.files._discover import DEFAULT_EXCLUDE
from vllm_sp_base._audit.files._keys import TooBig, read_file

SECTION = "vllm-sp-base"
_KEYS = {"entry-points", "extend-entry-points", "feature-entry-points", "plain-entry-points",
         "show-unreachable", "exclude", "extend-exclude", "fail-on", "output-format", "src", "python"}
#: What can make the exit code 1 (``--fail-on``, ``fail-on``).
FAIL_ON = ("error", "warning", "unresolved", "noqa")
FAIL_ON_DEFAULT = frozenset({"warning", "unresolved", "noqa"})
#: ``--output-format``, ``output-format``.
FORMATS = ("grouped", "full", "concise", "json", "sarif", "github")


def fail_on(parts: list[str]) -> frozenset[str]:
    """Raises ValueError with the message to say."""
    chosen = frozenset(part.strip() for part in parts if part.strip())
    unknown = sorted(chosen - set(FAIL_ON))
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], FAIL_ON, n=1)
        near = f" (did you mean {close[0]}?)" if close else ""
        raise ValueError(f"{', '.join(map(repr, unknown))}: choose from {', '.join(FAIL_ON)}{near}")
    if not chosen:
        raise ValueError(f"nothing given: choose from {', '.join(FAIL_ON)}")
    return chosen


class ConfigError(Exception):
    """A settings file that cannot be used; the message names it and what is wrong."""


@dataclass(frozen=True)
class Settings:
    entry_points: tuple[str, ...] = DEFAULT_ENTRY_POINTS
    show_unreachable: bool = False
    feature_entry_points: tuple[str, ...] = DEFAULT_FEATURE_ENTRY_POINTS
    source: str | None = None  # the pyproject.toml they came from
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    fail_on: frozenset[str] = FAIL_ON_DEFAULT
    output_format: str = "grouped"
    # The plain classes an engine drives: base class name -> the methods it calls.
    plain_entry_points: tuple[tuple[str, tuple[str, ...]], ...] = DEFAULT_PLAIN_ENTRY_POINTS
    # The project's import roots, absolute: ``src`` under its file's folder
    # (None: not configured, ``DEFAULT_SRC`` under the project's root).
    src: tuple[str, ...] | None = None
    # The Python (or virtual environment) whose packages resolve bases, as
    # --python; relative to its file's folder.
    python: str | None = None

    def excluding(self, exclude: tuple[str, ...] | None, extend: tuple[str, ...] | None) -> Settings:
        """``exclude`` replaces the globs, ``extend`` adds to them (None: as they are)."""
        chosen = self.exclude if exclude is None else exclude
        return replace(self, exclude=chosen + tuple(g for g in extend or () if g not in chosen))

    def overridden(
        self,
        entry_points: tuple[str, ...] | None,
        extend: tuple[str, ...] | None,
        show_unreachable: bool | None,
        feature_entry_points: tuple[str, ...] | None = None,
    ) -> Settings:
        chosen = entry_points if entry_points is not None else self.entry_points
        if extend:
            chosen = chosen + tuple(e for e in extend if e not in chosen)
        return replace(
            self,
            entry_points=chosen,
            show_unreachable=self.show_unreachable if show_unreachable is None else show_unreachable,
            feature_entry_points=(
                self.feature_entry_points if feature_entry_points is None else feature_entry_points),
        )


def anchored(globs: tuple[str, ...] | None, folder: str) -> tuple[str, ...] | None:
    """Globs with a ``/`` made absolute under ``folder`` (a config file's folder,
    or the current directory for the command line's), as ruff anchors them:
    ``tests/fixtures/*`` means the same whatever path is audited."""
    if globs is None:
        return None
    return tuple(os.path.join(os.path.abspath(folder), g.strip("/")) if "/" in g else g for g in globs)


def _mentions_us(data: bytes) -> bool:
    lowered = data.lower()
    return b"vllm-sp-base" in lowered or b"vllm_sp_base" in lowered or b"vllm-sp_base" in lowered


def _normalized(key: str) -> str:
    return key.lower().replace("_", "-").replace(".", "-").strip('"')


def _parse(path: str, data: bytes) -> dict[str, object]:
    import tomllib

    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None


def _ours(path: str, document: dict[str, object]) -> dict[str, object] | None:
    """``[tool.vllm-sp-base]`` of a parsed file; a misspelt one is an error."""
    tool = document.get("tool")
    if not isinstance(tool, dict):
        return None
    table = tool.get(SECTION)
    for key in tool:
        if key != SECTION and _normalized(key) == SECTION:
            raise ConfigError(f"{path}: [tool.{key}] is not read: the table is [tool.{SECTION}]")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: tool.{SECTION} must be a table")
    return table


def find_config(start: str) -> tuple[str, dict[str, object]] | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has our table
    (as ruff finds its own), parsed. One that mentions vllm-sp-base and is not
    valid TOML, or spells the table wrong, is an error, not passed over."""
    directory = os.path.abspath(start)
    if not os.path.isdir(directory):
        directory = os.path.dirname(directory)
    while True:
        candidate = os.path.join(directory, "pyproject.toml")
        try:
            data = read_file(candidate)
        except (OSError, TooBig):  # unreadable, or no regular file (a FIFO would block): none here
            data = b""
        if _mentions_us(data):
            table = _ours(candidate, _parse(candidate, data))
            if table is not None:
                return candidate, table
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def read_config(path: str) -> dict[str, object]:
    """``--config FILE``: its table (an empty one if it has none)."""
    try:
        data = read_file(path)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    except TooBig as big:
        raise ConfigError(f"{path}: cannot read: {big.size} bytes is larger than a configuration can be") from None
    return _ours(path, _parse(path, data)) or {}


def load_settings(start: str, config: str | None = None, isolated: bool = False) -> Settings:
    """The settings for an audit of paths under ``start``: from ``config`` if
    given, else the nearest pyproject.toml above ``start`` that has them."""
    if isolated:
        return Settings()
    if config is not None:
        path, table = config, read_config(config)
    else:
        found = find_config(start)
        if found is None:
            return Settings()
        path, table = found
    return settings_from(path, table)


def settings_from(path: str, table: dict[str, object]) -> Settings:
    unknown = sorted(set(table) - _KEYS)
    for key in unknown:
        if isinstance(table[key], dict):
            raise ConfigError(f"{path}: [tool.{SECTION}.{key}] is not read: the settings go in "
                              f"[tool.{SECTION}] itself")
    if unknown:
        import difflib

        close = [m for k in unknown for m in difflib.get_close_matches(k, sorted(_KEYS), n=1)]
        near = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(f"{path}: [tool.{SECTION}] has unknown key(s): {', '.join(unknown)}{near}")
    settings = Settings(source=path)
    entry = _names(path, table, "entry-points")
    if entry == ():
        raise ConfigError(f"{path}: [tool.{SECTION}] entry-points = [] leaves no entry point (only "
                          "construction would be checked): name the methods, or leave it out for "
                          "the defaults")
    extend = _names(path, table, "extend-entry-points")
    show = table.get("show-unreachable")
    if show is not None and not isinstance(show, bool):
        raise ConfigError(f"{path}: [tool.{SECTION}] show-unreachable must be true or false")
    features = _names(path, table, "feature-entry-points")
    folder = os.path.dirname(os.path.abspath(path))
    globs = (anchored(_globs(path, table, "exclude"), folder),
             anchored(_globs(path, table, "extend-exclude"), folder))
    settings = settings.overridden(entry, extend, show, features).excluding(*globs)
    failing = table.get("fail-on")
    if failing is not None:
        if not isinstance(failing, list) or not all(isinstance(v, str) for v in failing):
            raise ConfigError(f"{path}: [tool.{SECTION}] fail-on must be a list, e.g. [\"error\", \"unresolved\"]")
        try:
            settings = replace(settings, fail_on=fail_on(failing))
        except ValueError as error:
            raise ConfigError(f"{path}: [tool.{SECTION}] fail-on: {error}") from None
    plain = table.get("plain-entry-points")
    if plain is not None:
        settings = replace(settings, plain_entry_points=_driven(path, plain))
    src = table.get("src")
    if src is not None:
        if not isinstance(src, list) or not all(isinstance(v, str) and v for v in src):
            raise ConfigError(f"{path}: [tool.{SECTION}] src must be a list of folders, e.g. [\".\", \"src\"]")
        settings = replace(settings, src=tuple(os.path.normpath(os.path.join(folder, v)) for v in src))
    python = table.get("python")
    if python is not None:
        if not isinstance(python, str) or not python:
            raise ConfigError(f"{path}: [tool.{SECTION}] python must be a path, e.g. \".venv/bin/python\"")
        settings = replace(settings, python=os.path.normpath(os.path.join(folder, os.path.expanduser(python))))
    form = table.get("output-format")
    if form is not None:
        if form not in FORMATS:
            raise ConfigError(f"{path}: [tool.{SECTION}] output-format: {form!r}: choose from {', '.join(FORMATS)}")
        settings = replace(settings, output_format=form)
    return settings


def _globs(path: str, table: dict[str, object], key: str) -> tuple[str, ...] | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip("/") for v in value):
        raise ConfigError(f"{path}: [tool.{SECTION}] {key} must be a list of non-empty globs")
    return tuple(value)


def _names(path: str, table: dict[str, object], key: str) -> tuple[str, ...] | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v.isidentifier() for v in value):
        raise ConfigError(f"{path}: [tool.{SECTION}] {key} must be a list of method names")
    return tuple(value)


def _driven(path: str, value: object) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``plain-entry-points = {WorkerBase = ["execute_model"], MyRunner = [...]}``:
    each base named replaces the default's methods for it (``[]`` drops it;
    a name without dots replaces the defaults of that last name); the other
    defaults stay. A dotted name is the class defined there."""
    if not isinstance(value, dict) or not all(
        isinstance(base, str) and all(part.isidentifier() for part in base.split(".")) and isinstance(methods, list)
        and all(isinstance(m, str) and m.isidentifier() for m in methods)
        for base, methods in value.items()
    ):
        raise ConfigError(f"{path}: [tool.{SECTION}] plain-entry-points must be a table of class names "
                          "to lists of method names, e.g. { WorkerBase = [\"execute_model\"] }")
    bare = {base for base in value if "." not in base}
    merged = {base: methods for base, methods in DEFAULT_PLAIN_ENTRY_POINTS if base.rsplit(".", 1)[-1] not in bare}
    merged.update({base: tuple(methods) for base, methods in value.items()})
    return tuple((base, methods) for base, methods in merged.items() if methods)
