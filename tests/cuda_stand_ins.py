"""Import-only stand-ins for the three CUDA-only extension modules that stop
``vllm.models.dots3_note.nvidia.model`` from importing on CPU.

Nothing here copies vLLM code: every name resolves to a placeholder that
raises if it is ever called, so a test cannot pass by running a stand-in;
capability queries (``is_*``, ``*_supported``) answer False, as on a CPU.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any, NoReturn

FA_UTILS = "vllm.v1.attention.backends.fa_utils"
FA_UTILS_CUDA_NAMES = frozenset(
    {
        "flash_attn_varlen_func",
        "get_scheduler_metadata",
        "reshape_and_cache_flash",
        "compile_flash_attn_varlen_func_from_specs",
    }
)
EXTENSION_MODULES = ("vllm.vllm_flash_attn", "vllm.third_party.deep_gemm")


def _placeholder(qualified: str) -> Any:
    leaf = qualified.rpartition(".")[2]
    if leaf.startswith("is_") or leaf.endswith(("_supported", "_available")):
        # Capability queries run at import time; on a CPU the true answer is no.
        def no_cuda(*args: object, **kwargs: object) -> bool:
            return False

        return no_cuda

    def cuda_only(*args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError(f"{qualified} is an import-only CUDA stand-in")

    cuda_only.__qualname__ = qualified
    return cuda_only


class _StandIn(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{self.__name__}.{name}")


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the extension modules and any submodule of theirs as stand-ins."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> Any:
        if any(fullname == m or fullname.startswith(m + ".") for m in EXTENSION_MODULES):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _StandIn(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


_FINDER = _StandInFinder()


def install() -> None:
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    fa_utils = importlib.import_module(FA_UTILS)

    def missing(name: str) -> Any:
        if name in FA_UTILS_CUDA_NAMES:
            return _placeholder(f"{FA_UTILS}.{name}")
        raise AttributeError(name)

    if not all(hasattr(fa_utils, n) for n in FA_UTILS_CUDA_NAMES):
        fa_utils.__getattr__ = missing  # type: ignore[attr-defined]
