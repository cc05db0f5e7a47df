"""Cost of the plugin in a real vLLM process, and of reading a flag through the
class default versus an instance attribute.

    .venv/bin/python bench/plugin_cost.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import timeit

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")


def main() -> None:
    import vllm.engine.arg_utils  # noqa: F401  (what a front-end has loaded when vLLM loads plugins)
    import vllm.plugins  # noqa: F401  (vLLM's own import cost is not the plugin's)
    from vllm.config import ParallelConfig  # noqa: F401

    from vllm_sp_base import _plugin

    loaded_then = sum(n.startswith("vllm.") for n in list(sys.modules))
    start = time.perf_counter()
    _plugin.register()
    register_ms = (time.perf_counter() - start) * 1e3
    _plugin.unregister()
    start = time.perf_counter()
    vllm.plugins.load_general_plugins()
    load_ms = (time.perf_counter() - start) * 1e3

    # The post-import hook's cost: importing the DeepSeek V3.2 model module with it.
    start = time.perf_counter()
    import vllm.models.deepseek_v32.nvidia.model as v32

    import_with_hook_ms = (time.perf_counter() - start) * 1e3
    hook_s = []

    modules = [m for n, m in sys.modules.items() if n.startswith("vllm.") and m is not None]
    for _ in range(5):
        start = time.perf_counter()
        for module in modules:
            _plugin.retrofit_module(module)
        hook_s.append(time.perf_counter() - start)
    per_module_us = statistics.median(hook_s) / len(modules) * 1e6

    import torch

    layer = object.__new__(v32.DeepseekV32DecoderLayer)
    torch.nn.Module.__init__(layer)
    with_instance = object.__new__(v32.DeepseekV32DecoderLayer)
    torch.nn.Module.__init__(with_instance)
    with_instance.use_sequence_parallel = False
    n = 2_000_000
    class_read = min(timeit.repeat(lambda: layer.use_sequence_parallel, number=n, repeat=5))
    instance_read = min(timeit.repeat(lambda: with_instance.use_sequence_parallel, number=n, repeat=5))

    print(f"plugin register() with {loaded_then} vLLM modules loaded: {register_ms:.2f} ms "
          "(target < 20 ms)")
    print(f"vllm.plugins.load_general_plugins() in all (vLLM's entry-point scan included): "
          f"{load_ms:.2f} ms")
    print(f"retrofit scan per vLLM module: {per_module_us:.1f} us over {len(modules)} modules")
    print(f"import deepseek_v32 model module with the hook installed: {import_with_hook_ms:.0f} ms")
    print(f"flag read, class default vs instance attribute: {class_read / instance_read:.3f}x "
          f"({class_read / n * 1e9:.1f} ns vs {instance_read / n * 1e9:.1f} ns)")


if __name__ == "__main__":
    main()
