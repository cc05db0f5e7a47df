"""One vLLM process per import order: run as ``python plugin_scenario.py ORDER``.

Prints one JSON object describing what the real vLLM 0.33.0 classes did before
and after ``vllm.plugins.load_general_plugins()`` found our entry point.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
sys.path.insert(0, os.path.dirname(__file__))

import torch  # noqa: E402
from torch import nn  # noqa: E402

V32 = "vllm.models.deepseek_v32.nvidia.model"


def _outcome(call: Any) -> str:
    try:
        call()
    except Exception as error:  # the message is what the test asserts on
        return f"{type(error).__name__}: {error}"
    return "returned"


def _skip_init(cls: type) -> Any:
    class Custom(cls):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            nn.Module.__init__(self)

    return Custom()


def _init_single_process_groups() -> None:
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with set_current_vllm_config(VllmConfig()):
        init_distributed_environment(
            world_size=1,
            rank=0,
            distributed_init_method=f"tcp://127.0.0.1:{port}",
            local_rank=0,
            backend="gloo",
        )
        initialize_model_parallel(1, 1)


def _v32_calls() -> dict[str, str]:
    from vllm.models.deepseek_v32.nvidia.model import DeepseekV32DecoderLayer, DeepseekV32Model

    x = torch.zeros(3, 8)
    positions = torch.zeros(3, dtype=torch.long)
    layer = _skip_init(DeepseekV32DecoderLayer)
    model = _skip_init(DeepseekV32Model)
    return {
        "layer_forward": _outcome(lambda: layer.forward(positions, x, residual=x)),
        "model_forward": _outcome(
            lambda: model.forward(None, positions, inputs_embeds=x)
        ),
        "layer_flag": repr(getattr(layer, "use_sequence_parallel", "<missing>")),
        "model_flag": repr(getattr(model, "use_sequence_parallel", "<missing>")),
    }


def main(order: str) -> dict[str, Any]:
    import vllm.plugins
    from vllm.config import ParallelConfig

    result: dict[str, Any] = {"order": order}
    if order == "filtered":  # VLLM_PLUGINS names another plugin only
        vllm.plugins.load_general_plugins()
        from vllm_sp_base import _plugin

        result["finder_installed"] = _plugin._finder in sys.meta_path
        result["patched"] = len(_plugin.patched)
        return result
    _init_single_process_groups()
    if order == "model-first":
        result["before"] = _v32_calls()
    vllm.plugins.load_general_plugins()
    from vllm_sp_base import _plugin

    result["model_module_imported_by_plugin"] = V32 in sys.modules and order != "model-first"
    result["after"] = _v32_calls()
    vllm.plugins.load_general_plugins()  # a second call must change nothing
    from vllm_sp_base._plugin import register

    register()
    result["patched"] = sorted({f"{m}.{c}.{f}" for m, c, f in _plugin.patched})
    result["patched_twice"] = len(_plugin.patched) != len(set(_plugin.patched))
    result["parallel_config_property_kept"] = isinstance(
        vars(ParallelConfig)["use_sequence_parallel_moe"], property
    )

    import cuda_stand_ins

    cuda_stand_ins.install()
    from vllm.models.dots3_note.nvidia.model import Dots3NoteDecoderLayer, Dots3NoteModel

    dots = {}
    for cls in (Dots3NoteDecoderLayer, Dots3NoteModel):
        obj = object.__new__(cls)
        nn.Module.__init__(obj)
        dots[cls.__name__] = repr(getattr(obj, "use_sequence_parallel", "<missing>"))
    result["dots3"] = dots
    return result


if __name__ == "__main__":
    print("SCENARIO " + json.dumps(main(sys.argv[1])))
