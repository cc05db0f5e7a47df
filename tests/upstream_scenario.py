"""One vLLM process over a given source tree: ``python upstream_scenario.py ROOT``.

Imports the DeepSeek-V3.2 and Dots3 NOTE model modules from ROOT (the folder
holding ``vllm/``) with the import-only CUDA stand-ins, builds each class the
way a custom-``__init__`` subclass does (``nn.Module.__init__`` only), and
prints one JSON object: what each then reads for ``use_sequence_parallel``.
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

SKIPPED_INIT = {
    "vllm.models.deepseek_v32.nvidia.model": ("DeepseekV32DecoderLayer", "DeepseekV32Model"),
    "vllm.models.dots3_note.nvidia.model": ("Dots3NoteDecoderLayer", "Dots3NoteModel"),
}


def main() -> dict[str, Any]:
    report: dict[str, Any] = {"vllm": os.path.dirname(vllm.__file__), "skipped_init": {}}
    for module_name, classes in SKIPPED_INIT.items():
        for class_name in classes:
            cls = getattr(importlib.import_module(module_name), class_name)
            instance = object.__new__(cls)
            nn.Module.__init__(instance)  # what a custom-init subclass does
            report["skipped_init"][class_name] = getattr(instance, "use_sequence_parallel", "missing")
    return report


if __name__ == "__main__":
    print(json.dumps(main()))
