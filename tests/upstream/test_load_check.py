"""Where the third patch calls the load-time check, and when it leaves the patch out."""

from __future__ import annotations

import textwrap

from vllm_sp_base._upstream._load_check import add_call

LOADER = textwrap.dedent("""\
    import torch

    from vllm.config import VllmConfig
    from vllm.model_executor.model_loader.utils import initialize_model
    from vllm.platforms import current_platform


    class BaseModelLoader:
        def create_model(self, vllm_config, model_config, prefix=""):
            model = initialize_model(
                vllm_config=vllm_config,
                prefix=prefix,
            )
            log(model)
            return model
    """)


def test_the_call_follows_initialize_model_and_the_import_sorts_in() -> None:
    after = add_call(LOADER)
    assert after is not None
    lines = after.splitlines()
    assert lines[3:6] == [
        "from vllm.model_executor.model_loader.utils import initialize_model",
        "from vllm.models.common.sequence_parallel_check import verify_sequence_parallel",
        "from vllm.platforms import current_platform",
    ]
    call = lines.index("        verify_sequence_parallel(model)")
    assert lines[call - 1] == "        )" and lines[call + 1] == "        log(model)"
    compile(after, "base_loader.py", "exec")
    assert add_call(after) == after  # a second run adds nothing


def test_a_loader_of_another_shape_gets_no_call() -> None:
    assert add_call(LOADER.replace("model = initialize_model(", "built = initialize_model(")) is None
    assert add_call(LOADER.replace("class BaseModelLoader", "class Loader")) is None
