"""The vLLM plugin: retrofit the contract's defaults onto an installed vLLM.

Registered as ``vllm_sp_base`` in the ``vllm.general_plugins`` entry-point
group, so vLLM calls :func:`register` in every process (front-end, engine core,
workers) and ``VLLM_PLUGINS=vllm_sp_base`` selects it. It imports no model
module: classes already imported are patched at once, the rest as vLLM
imports them lazily, through a post-import hook on ``vllm.*`` modules.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Final

from vllm_sp_base._contract import SEQUENCE_PARALLEL_DEFAULTS
from vllm_sp_base._readers import defined_in_mro, flags_read_by

logger = logging.getLogger(__name__)

PLUGIN_NAME: Final = "vllm_sp_base"
_PACKAGE: Final = "vllm"

#: Classes the contract exists for; if they moved, the retrofit says so.
ANCHORS: Final[dict[str, tuple[str, ...]]] = {
    "vllm.models.deepseek_v32.nvidia.model": ("DeepseekV32DecoderLayer", "DeepseekV32Model"),
}

#: (module, class, flag) for every default this process has set.
patched: list[tuple[str, str, str]] = []


def retrofit_module(module: ModuleType) -> list[tuple[str, str, str]]:
    """Give each class defined in ``module`` whose own methods read a flag the
    default, unless its MRO already defines that name at class level."""
    done: list[tuple[str, str, str]] = []
    name = module.__name__
    for value in list(vars(module).values()):
        if type(value) is not type and not isinstance(value, type):
            continue
        if value.__module__ != name:
            continue
        for flag in sorted(flags_read_by(value)):
            if defined_in_mro(value, flag):
                continue
            setattr(value, flag, SEQUENCE_PARALLEL_DEFAULTS[flag])
            done.append((name, value.__qualname__, flag))
    if name in ANCHORS:
        _check_anchors(module)
    patched.extend(done)
    return done


def _check_anchors(module: ModuleType) -> None:
    for class_name in ANCHORS[module.__name__]:
        cls = getattr(module, class_name, None)
        if not isinstance(cls, type):
            _warn(f"{module.__name__}.{class_name} not found: this vLLM's classes moved")
        elif not defined_in_mro(cls, "use_sequence_parallel"):
            _warn(f"{module.__name__}.{class_name} no longer reads use_sequence_parallel")


def _warn(message: str) -> None:
    warnings.warn(f"vllm-sp-base: {message}; defaults not applied there", stacklevel=3)


class _RetrofitLoader(importlib.abc.Loader):
    """Wraps a module's real loader and retrofits the module once it has run."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        try:
            retrofit_module(module)
        except Exception as error:  # noqa: BLE001 (never break vLLM's import over a default)
            _warn(f"could not retrofit {module.__name__}: {error}")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _RetrofitFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("vllm."):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec: importlib.machinery.ModuleSpec | None = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _RetrofitLoader(spec.loader)
            return spec
        return None


_finder = _RetrofitFinder()


def _anchor_files_present() -> None:
    package = sys.modules.get(_PACKAGE)
    base = os.path.dirname(getattr(package, "__file__", None) or "")
    if not base:
        return
    for module_name in ANCHORS:
        relative = module_name.split(".")[1:]
        stem = os.path.join(base, *relative)
        if not (os.path.exists(stem + ".py") or os.path.isdir(stem)):
            _warn(f"module {module_name} not found in {base}: this vLLM's classes moved")


def register() -> None:
    """Entry point for ``vllm.general_plugins``; cheap and re-entrant."""
    if _finder in sys.meta_path:
        return
    sys.meta_path.insert(0, _finder)
    _anchor_files_present()
    for name, module in list(sys.modules.items()):
        if (name == _PACKAGE or name.startswith("vllm.")) and isinstance(module, ModuleType):
            try:
                retrofit_module(module)
            except Exception as error:  # noqa: BLE001 (as above)
                _warn(f"could not retrofit {name}: {error}")
    logger.debug("vllm-sp-base: %d defaults set", len(patched))


def unregister() -> None:
    """Stop retrofitting modules imported from now on (classes keep their defaults)."""
    while _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
