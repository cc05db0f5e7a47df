"""One vLLM process over a given source tree: ``python upstream_scenario.py ROOT MODULE...``.

Imports each module from ROOT (the folder holding ``vllm/``) with the import-only
CUDA stand-ins, and prints one JSON object: which modules import, and, where the
tree carries the upstream patch, the differential gate check against its
``ParallelConfig`` and what the patched classes read without their ``__init__``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
ROOT = os.path.abspath(sys.argv[1])
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(__file__))

import cuda_stand_ins  # noqa: E402

cuda_stand_ins.install()

import vllm  # noqa: E402
from torch import nn  # noqa: E402

from vllm_sp_base import SEQUENCE_PARALLEL_DEFAULTS  # noqa: E402
from vllm_sp_base._readers import defined_in_mro, flags_read_by  # noqa: E402

SKIPPED_INIT = {
    "vllm.models.deepseek_v32.nvidia.model": ("DeepseekV32DecoderLayer", "DeepseekV32Model"),
    "vllm.models.dots3_note.nvidia.model": ("Dots3NoteDecoderLayer", "Dots3NoteModel"),
}


def main() -> dict[str, Any]:
    report: dict[str, Any] = {"vllm": os.path.dirname(vllm.__file__), "imports": {}}
    modules = {}
    for name in sys.argv[2:]:
        try:
            modules[name] = importlib.import_module(name)
            report["imports"][name] = "ok"
        except Exception as error:  # the test compares these with the original tree's
            report["imports"][name] = f"{type(error).__name__}: {error}"
    from vllm.config import ParallelConfig

    from vllm_sp_base._upstream._names import MODEL_GATE

    if not hasattr(ParallelConfig, MODEL_GATE):
        return report  # the original tree: imports only

    from gate_cases import mismatches, model_flag_expression

    layer = importlib.import_module("vllm.models.deepseek_v32.nvidia.model").DeepseekV32DecoderLayer
    report["gate_mismatches"] = mismatches(ParallelConfig, lambda cfg: getattr(cfg, MODEL_GATE))
    report["layer_mismatches"] = mismatches(ParallelConfig, model_flag_expression(layer))
    report["unprovided"] = sorted(
        f"{module.__name__}.{cls.__qualname__}.{flag}"
        for module in modules.values()
        for cls in vars(module).values()
        if isinstance(cls, type) and cls.__module__ == module.__name__
        for flag in flags_read_by(cls)
        if not defined_in_mro(cls, flag)
    )
    skipped: dict[str, dict[str, Any]] = {}
    for module_name, classes in SKIPPED_INIT.items():
        for class_name in classes:
            cls = getattr(importlib.import_module(module_name), class_name)
            instance = object.__new__(cls)
            nn.Module.__init__(instance)  # what a custom-init subclass does
            skipped[class_name] = {flag: getattr(instance, flag) for flag in SEQUENCE_PARALLEL_DEFAULTS}
    report["skipped_init"] = skipped
    return report


if __name__ == "__main__":
    print(json.dumps(main()))
