from __future__ import annotations

import json

import pytest

from vllm_sp_base._main import main


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["explain", "--json", *argv]) == 0
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    return result


def test_dp1_layout_is_off_for_the_data_parallel_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "-tp", "8", "--enable-expert-parallel"]) == 0
    out = capsys.readouterr().out
    assert "SP-MoE (ParallelConfig.use_sequence_parallel_moe): off" in out
    assert "[NO ] data_parallel_size=1 > 1" in out
    assert "~5.6 GiB" in out


def test_dp_gt1_layout_is_on(capsys: pytest.CaptureFixture[str]) -> None:
    result = _json(capsys, "-tp", "8", "-dp", "4", "--enable-expert-parallel",
                   "--all2all-backend", "deepep_low_latency")
    assert result["sequence_parallel_moe"] is True
    assert result["sequence_parallel"] is True
    conditions = result["conditions"]
    assert isinstance(conditions, dict)
    assert [c["name"] for c in conditions["sequence_parallel_moe"]] == [
        "all2all_backend", "expert_parallel", "tensor_parallel", "data_parallel"]


def test_pp_turns_off_model_level_sp_only(capsys: pytest.CaptureFixture[str]) -> None:
    result = _json(capsys, "-tp", "2", "-dp", "2", "-pp", "2", "--enable-expert-parallel")
    assert (result["sequence_parallel_moe"], result["sequence_parallel"]) == (True, False)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--all2all-backend", "nccl"], "unknown all2all backend 'nccl'"),
        (["-tp", "0"], "must be a positive integer, got 0"),
        (["-dp", "two"], "'two' is not an integer"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["explain", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err
