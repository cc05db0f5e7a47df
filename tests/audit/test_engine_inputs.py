"""What the engine gives a class, across modules as vLLM and sglang lay them
out: the input fields of the processor it registers (an alias imported from
another model's module), and a capture list only a target's owner fills."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.sources._cache import Cache

REGISTRY = textwrap.dedent("""
    class Registry:
        def register_processor(self, processor, *, info, dummy_inputs):
            return lambda cls: cls
    MULTIMODAL_REGISTRY = Registry()
""")

QWEN2_VL = textwrap.dedent("""
    from torch import nn
    from pkg.registry import MULTIMODAL_REGISTRY

    def _create_field_factory(merge_size):
        def _field_config(hf_inputs):
            return dict(pixel_values_videos=hf_inputs.get("pixel_values_videos"),
                        video_grid_thw=hf_inputs.get("video_grid_thw"))
        return _field_config

    class Qwen2VLProcessor:
        def _get_mm_fields_config(self, hf_inputs, kwargs):
            return _create_field_factory(self.info.get_hf_config().merge_size)(hf_inputs)
""")

QWEN2_5_VL = textwrap.dedent("""
    from torch import nn
    from pkg.registry import MULTIMODAL_REGISTRY
    from pkg.qwen2_vl import Qwen2VLProcessor

    class Qwen2_5_VLProcessor(Qwen2VLProcessor):
        def _get_mm_fields_config(self, hf_inputs, kwargs):
            return dict(**super()._get_mm_fields_config(hf_inputs, kwargs), second_per_grid_ts=None)

    @MULTIMODAL_REGISTRY.register_processor(Qwen2_5_VLProcessor, info=None, dummy_inputs=None)
    class Qwen2_5_VLModel(nn.Module):
        def __init__(self, rate):
            super().__init__()
            self.video_pruning_rate = rate
        def embed_multimodal(self, **kwargs):
            video_input = dict(second_per_grid_ts=kwargs.pop("second_per_grid_ts", None))
            return self._postprocess(video_input)
        def _postprocess(self, video_input):
            second_per_grid_ts = video_input.get("second_per_grid_ts")
            if second_per_grid_ts is None:
                raise ValueError("second_per_grid_ts is required")
            second_per_grid_ts = second_per_grid_ts.long()
            return second_per_grid_ts * self.video_pruning_rate
""")

EXAONE = textwrap.dedent("""
    from torch import nn
    from pkg.registry import MULTIMODAL_REGISTRY
    from pkg.qwen2_5_vl import Qwen2_5_VLModel, Qwen2_5_VLProcessor
    from pkg.qwen2_vl import Qwen2VLProcessor as ExaoneProcessor

    @MULTIMODAL_REGISTRY.register_processor(PROCESSOR, info=None, dummy_inputs=None)
    class ExaoneModel(Qwen2_5_VLModel):
        def __init__(self, rate):
            nn.Module.__init__(self)
""")


def _audit(root: Path, files: dict[str, str]) -> list[tuple[str, str]]:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    for name, source in files.items():
        (root / "pkg" / name).write_text(source)
    found = audit([str(root / "pkg")], cache=Cache(None, False)).findings
    return sorted((f.class_name.rsplit(".", 1)[-1], f.attribute) for f in found)


@pytest.mark.parametrize(("processor", "expected"), [
    ("ExaoneProcessor", []),  # no second_per_grid_ts: the ValueError comes first
    ("Qwen2_5_VLProcessor", [("ExaoneModel", "video_pruning_rate")]),
])
def test_the_registered_processor_decides_an_input_field(
    tmp_path: Path, processor: str, expected: list[tuple[str, str]],
) -> None:
    files = {"registry.py": REGISTRY, "qwen2_vl.py": QWEN2_VL, "qwen2_5_vl.py": QWEN2_5_VL,
             "exaone.py": EXAONE.replace("PROCESSOR", processor)}
    assert _audit(tmp_path, files) == expected


def test_a_field_config_built_by_an_imported_helper_decides_nothing(tmp_path: Path) -> None:
    helpers = "def fields(hf_inputs):\n    return dict(hf_inputs)\n"
    qwen2_vl = QWEN2_VL.replace(
        "return _create_field_factory(self.info.get_hf_config().merge_size)(hf_inputs)",
        "return fields(hf_inputs)").replace("from torch import nn", "from torch import nn\nfrom pkg.helpers import fields")
    files = {"registry.py": REGISTRY, "helpers.py": helpers, "qwen2_vl.py": qwen2_vl,
             "qwen2_5_vl.py": QWEN2_5_VL, "exaone.py": EXAONE.replace("PROCESSOR", "ExaoneProcessor")}
    assert _audit(tmp_path, files) == [("ExaoneModel", "video_pruning_rate")]


DEEPSEEK = textwrap.dedent("""
    from torch import nn

    class DeepseekModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList()
            self.layers_to_capture = []
            self.enable_a2a_moe = False
        def forward(self, x):
            aux = []
            for i, layer in enumerate(self.layers):
                if i in self.layers_to_capture:
                    aux.append(x if self.enable_a2a_moe else layer(x))
                x = layer(x)
            return x, aux

    class DeepseekForCausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = DeepseekModel()
        def set_eagle3_layers_to_capture(self, layer_ids):
            self.model.layers_to_capture = [i + 1 for i in layer_ids]
""")

SKIPPING = textwrap.dedent("""
    from torch import nn
    from pkg.deepseek import DeepseekModel

    class NAME(DeepseekModel):
        def __init__(self):
            nn.Module.__init__(self)
            self.layers = nn.ModuleList()
            self.layers_to_capture = []
""")


@pytest.mark.parametrize(("name", "runner", "expected"), [
    ("MistralLarge3EagleModel", "", []),  # a draft: only the target's owner fills the list
    ("Glm4MoeLiteModel", "", [("Glm4MoeLiteModel", "enable_a2a_moe")]),  # a target: its owner fills it
    # Something that is not a target-only setter fills it: the draft may hold layers too.
    ("MistralLarge3EagleModel", "def configure(runner):\n    runner.model.model.layers_to_capture.extend([1])\n",
     [("MistralLarge3EagleModel", "enable_a2a_moe")]),
])
def test_a_capture_list_only_the_target_gets_filled(
    tmp_path: Path, name: str, runner: str, expected: list[tuple[str, str]],
) -> None:
    files = {"deepseek.py": DEEPSEEK, "model.py": SKIPPING.replace("NAME", name), "runner.py": runner}
    assert _audit(tmp_path, files) == expected
