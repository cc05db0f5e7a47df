"""The audit on the real, installed vLLM 0.33.0 tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import AuditResult, audit
from vllm_sp_base._audit.files._discover import installed_vllm
from vllm_sp_base._audit.prescan import _prescan
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.summaries import _summarize

DOTS3 = Path("models/dots3_note/nvidia/model.py")
SEED_LINE = "        self.use_sequence_parallel = False\n"


@pytest.fixture(scope="module")
def vllm_dir() -> Path:
    location = installed_vllm()
    if location is None:
        pytest.skip("vLLM is not installed")
    return Path(location)


def _key(result: AuditResult) -> list[tuple[str, str, str, str, int]]:
    return sorted((f.class_name, f.attribute, f.severity, f.method, f.read_line)
                  for f in result.findings)


@pytest.fixture(scope="module")
def parse_all(vllm_dir: Path) -> AuditResult:
    return audit([str(vllm_dir)], cache=Cache(None, False), parse_all=True)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled lexer", "pure Python"])
def test_prefilter_misses_nothing_on_the_real_tree(
    vllm_dir: Path, parse_all: AuditResult, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if compiled and _prescan._lexer is None:
        pytest.skip("the C lexer is not built")
    if not compiled:
        monkeypatch.setattr(_prescan, "_lexer", None)
        monkeypatch.setattr(_summarize, "_lexer", None)
    fast = audit([str(vllm_dir)], cache=Cache(None, False))
    assert fast.findings and _key(fast) == _key(parse_all)
    assert fast.parsed < parse_all.parsed / 5


@pytest.fixture(scope="module")
def seeded_copy(vllm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vllm-src")
    shutil.copytree(vllm_dir, root / "vllm", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    return root


def _dots3(result: AuditResult) -> dict[str, tuple[str, str]]:
    return {
        f.class_name.rsplit(".", 1)[-1]: (f.severity, f.method)
        for f in result.findings
        if "dots3_note" in f.class_name and f.attribute == "use_sequence_parallel"
    }


def test_unmodified_dots3_note_is_clean(seeded_copy: Path) -> None:
    assert _dots3(audit([str(seeded_copy / "vllm")], cache=Cache(None, False))) == {}


def test_seed_regression_is_reported_against_the_deepseek_v32_read(seeded_copy: Path) -> None:
    model = seeded_copy / "vllm" / DOTS3
    source = model.read_text()
    assert source.count(SEED_LINE) == 2
    model.write_text(source.replace(SEED_LINE, ""))
    try:
        found = _dots3(audit([str(seeded_copy / "vllm")], cache=Cache(None, False)))
    finally:
        model.write_text(source)
    v32 = "vllm.models.deepseek_v32.nvidia.model"
    assert found == {
        "Dots3NoteDecoderLayer": ("error", f"{v32}.DeepseekV32DecoderLayer.forward"),
        "Dots3NoteModel": ("error", f"{v32}.DeepseekV32Model.forward"),
    }


def test_the_only_error_on_vllm_is_the_one_triaged_real(parse_all: AuditResult) -> None:
    # docs/vllm-0.33.0-audit.md: every finding read and triaged by hand.
    errors = [f for f in parse_all.findings if f.severity == "error"]
    assert [(f.class_name.rsplit(".", 1)[-1], f.attribute, f.entry) for f in errors] == [
        ("EagleMistralLarge3Model", "is_fused_shared_expert_enabled", "load_weights")]
    assert [frame.method for frame in errors[0].chain] == ["DeepseekV2Model.load_weights"]


def test_what_the_engine_never_runs_on_vllm_is_not_reported(parse_all: AuditResult) -> None:
    # docs/vllm-0.33.0-audit.md: EPLB never drives an inner or draft model
    # (none sets num_moe_layers), and InternS2Mobius sets use_deepstack = False,
    # which decides every ``if self.use_deepstack:`` on the way to its reads.
    reported = {(f.class_name.rsplit(".", 1)[-1], f.attribute) for f in parse_all.findings}
    for attribute in ("moe_layers", "moe_mlp_layers", "num_logical_experts"):
        assert not any(attr == attribute for _, attr in reported)
    for attribute in ("deepstack_num_level", "multiscale_dim", "visual_dim"):
        assert ("InternS2MobiusForConditionalGeneration", attribute) not in reported
    # Each warning says what makes it happen.
    warnings = [f for f in parse_all.findings if f.severity == "warning"]
    assert warnings and all(f.condition for f in warnings)
    pruning = [f for f in warnings if f.attribute == "video_pruning_method"]
    assert pruning and {f.condition for f in pruning} == {"when self.is_multimodal_pruning_enabled"}


def test_the_counts_the_docs_give_are_todays(parse_all: AuditResult) -> None:
    # The README and docs/vllm-0.33.0-audit.md quote this audit's counts: a
    # change of the rule that moves them moves the docs with it.
    import re

    root = Path(__file__).parents[2]
    errors = sum(f.severity == "error" for f in parse_all.findings)
    warnings = sum(f.severity == "warning" for f in parse_all.findings)
    total, classes = len(parse_all.findings), len({f.class_name for f in parse_all.findings})
    readme = " ".join((root / "README.md").read_text().split())
    quoted = [tuple(map(int, m)) for m in re.findall(
        r"every finding on vLLM 0\.33\.0, triaged \((\d+): (\d+) errors? and (\d+) warnings", readme)]
    assert quoted == [(total, errors, warnings)]
    triaged = " ".join((root / "docs" / "vllm-0.33.0-audit.md").read_text().split())
    assert f"reports **{total} findings in {classes} classes: {errors} error, {warnings} warnings**" in triaged
