"""The plugin on real vLLM 0.33.0, discovered through its installed entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

SCENARIO = Path(__file__).with_name("plugin_scenario.py")
ORDERS = ("model-first", "plugin-first")
SEED_ERROR = "object has no attribute 'use_sequence_parallel'"


def _run(order: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(SCENARIO), order],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "VLLM_TARGET_DEVICE": "cpu", **env},
    )


def _result(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = process.communicate(timeout=600)
    for line in out.splitlines():
        if line.startswith("SCENARIO "):
            result: dict[str, Any] = json.loads(line.removeprefix("SCENARIO "))
            return result
    raise AssertionError(f"scenario printed no result:\n{out[-4000:]}")


@pytest.fixture(scope="module")
def scenarios() -> dict[str, dict[str, Any]]:
    # Each import order needs a fresh vLLM process (~10 s each): run them side by side.
    running = {order: _run(order) for order in ORDERS}
    running["filtered"] = _run("filtered", VLLM_PLUGINS="some_other_plugin")
    return {order: _result(p) for order, p in running.items()}


def test_entry_point_is_registered_under_its_documented_name() -> None:
    (ep,) = [e for e in entry_points(group="vllm.general_plugins") if e.name == "vllm_sp_base"]
    assert ep.value == "vllm_sp_base_plugin:register"
    assert ep.dist is not None and ep.dist.name == "vllm-sp-base-plugin"  # not the linter's
    from vllm_sp_base._plugin import register

    assert ep.load() is register


def _wheel_entry_points(project: Path, out: Path) -> str:
    """The entry_points.txt of the wheel ``project`` builds (offline, no deps)."""
    import zipfile

    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(out), str(project)],
        check=True, capture_output=True,
    )
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
        return archive.read(names[0]).decode() if names else ""


def test_installing_the_linter_registers_no_vllm_plugin(tmp_path: Path) -> None:
    # A contributor who installs the checker next to vLLM must still see the
    # crash the checker is about: the linter's wheel carries no plugin.
    root = Path(__file__).parents[1]
    linter = _wheel_entry_points(root, tmp_path / "linter")
    assert "[console_scripts]" in linter and "vllm-sp-base" in linter
    assert "vllm.general_plugins" not in linter
    plugin = _wheel_entry_points(root / "plugin", tmp_path / "plugin")
    assert "[vllm.general_plugins]" in plugin and "vllm_sp_base_plugin:register" in plugin


def test_before_the_plugin_the_seed_crash_reproduces(scenarios: dict[str, Any]) -> None:
    before = scenarios["model-first"]["before"]
    assert before["layer_forward"] == f"AttributeError: 'Custom' {SEED_ERROR}"
    assert before["model_forward"] == f"AttributeError: 'Custom' {SEED_ERROR}"
    assert before["layer_flag"] == before["model_flag"] == "'<missing>'"


@pytest.mark.parametrize("order", ORDERS)
def test_after_the_plugin_forward_gets_past_the_flag(
    scenarios: dict[str, Any], order: str
) -> None:
    after = scenarios[order]["after"]
    assert after["layer_flag"] == after["model_flag"] == "False"
    # The custom init built no submodules, so forward now stops at the next
    # missing piece: proof it read the flag and took the non-SP branch.
    assert after["layer_forward"] == "AttributeError: 'Custom' object has no attribute 'input_layernorm'"
    assert after["model_forward"] == "AttributeError: 'Custom' object has no attribute 'layers'"


@pytest.mark.parametrize("order", ORDERS)
def test_plugin_patches_each_reader_once_and_keeps_class_level_definitions(
    scenarios: dict[str, Any], order: str
) -> None:
    result = scenarios[order]
    assert {
        "vllm.models.deepseek_v32.nvidia.model.DeepseekV32DecoderLayer.use_sequence_parallel",
        "vllm.models.deepseek_v32.nvidia.model.DeepseekV32Model.use_sequence_parallel",
    } <= set(result["patched"])
    assert not result["patched_twice"]
    assert result["parallel_config_property_kept"]
    assert not any(p.startswith("vllm.config.") for p in result["patched"])


def test_vllm_plugins_can_leave_it_out(scenarios: dict[str, Any]) -> None:
    assert scenarios["filtered"] == {"order": "filtered", "finder_installed": False, "patched": 0}


def test_plugin_imports_no_model_module_eagerly(scenarios: dict[str, Any]) -> None:
    assert scenarios["plugin-first"]["model_module_imported_by_plugin"] is False


@pytest.mark.parametrize("order", ORDERS)
def test_real_dots3_note_classes_read_false(scenarios: dict[str, Any], order: str) -> None:
    assert scenarios[order]["dots3"] == {"Dots3NoteDecoderLayer": "False", "Dots3NoteModel": "False"}
