"""An import-only torchvision for running the series' vLLM tests here.

vLLM's CPU CI has torchvision; this machine's environment does not, and two
of the rewritten modules (``qwen3_5``, ``interns2_mobius``) import it through
the Qwen3-VL processor. Every attribute and submodule is a ``MagicMock``: the
tests never call into it, they only need the modules to import. Put this
folder on ``PYTHONPATH`` only where torchvision is missing.
"""

import importlib.abc
import importlib.machinery
import sys
import types
from unittest.mock import MagicMock

__version__ = "0.0.0"


def __getattr__(name: str) -> MagicMock:
    return MagicMock(name=f"torchvision.{name}")


class _Submodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda attr: MagicMock(name=f"{spec.name}.{attr}")  # type: ignore[method-assign]
        return module

    def exec_module(self, module):  # type: ignore[no-untyped-def]
        pass


sys.meta_path.insert(0, _Submodules())
