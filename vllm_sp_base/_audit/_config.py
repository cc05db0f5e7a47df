"""``[tool.vllm-sp-base]`` in ``pyproject.toml``: the audit's settings a
project keeps with its code; the command line overrides them."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from vllm_sp_base._audit._files import DEFAULT_EXCLUDE
from vllm_sp_base._audit._options import DEFAULT_ENTRY_POINTS, DEFAULT_FEATURE_ENTRY_POINTS

SECTION = "vllm-sp-base"
_KEYS = {"entry-points", "extend-entry-points", "feature-entry-points", "show-unreachable",
         "exclude", "extend-exclude"}


class ConfigError(Exception):
    """A settings file that cannot be used; the message names it and what is wrong."""


@dataclass(frozen=True)
class Settings:
    entry_points: tuple[str, ...] = DEFAULT_ENTRY_POINTS
    show_unreachable: bool = False
    feature_entry_points: tuple[str, ...] = DEFAULT_FEATURE_ENTRY_POINTS
    source: str | None = None  # the pyproject.toml they came from
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE

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


def find_pyproject(start: str) -> str | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has our section."""
    directory = os.path.abspath(start)
    while True:
        candidate = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(candidate):
            try:
                with open(candidate, "rb") as handle:
                    if f"[tool.{SECTION}]".encode() in handle.read():
                        return candidate
            except OSError:
                pass
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def load_settings(start: str) -> Settings:
    path = find_pyproject(start)
    if path is None:
        return Settings()
    try:
        import tomllib
    except ImportError:  # Python 3.10
        raise ConfigError(f"{path}: reading [tool.{SECTION}] needs Python 3.11 or newer") from None
    try:
        with open(path, "rb") as handle:
            table = tomllib.load(handle).get("tool", {}).get(SECTION, {})
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: cannot read: {error}") from None
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{path}: [tool.{SECTION}] has unknown key(s): {', '.join(unknown)}")
    settings = Settings(source=path)
    entry = _names(path, table, "entry-points")
    extend = _names(path, table, "extend-entry-points")
    show = table.get("show-unreachable")
    if show is not None and not isinstance(show, bool):
        raise ConfigError(f"{path}: [tool.{SECTION}] show-unreachable must be true or false")
    features = _names(path, table, "feature-entry-points")
    globs = _globs(path, table, "exclude"), _globs(path, table, "extend-exclude")
    return settings.overridden(entry, extend, show, features).excluding(*globs)


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
