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


def test_a_pasted_vllm_serve_line_is_read_and_what_is_ignored_is_said(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["explain", "vllm", "serve", "deepseek-ai/DeepSeek-V3.2", "-tp", "8", "--max-model-len",
            "8192", "--all2all-backend=naive", "--enable-expert-parallel", "--data-parallel-size=2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "TP=8 DP=2" in out and "naive was removed: vLLM uses allgather_reducescatter" in out
    assert "SP-MoE (ParallelConfig.use_sequence_parallel_moe): ON" in out
    assert out.rstrip().endswith(
        "ignored (not about the gates): vllm serve deepseek-ai/DeepSeek-V3.2 --max-model-len 8192")


def test_no_enable_expert_parallel_and_the_failing_condition_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = _json(capsys, "-tp", "8", "-dp", "2", "--no-enable-expert-parallel")
    assert result["sequence_parallel_moe"] is False and "ignored" not in result
    assert main(["explain", "-tp", "8", "-dp", "2", "--no-enable-expert-parallel"]) == 0
    assert "off because enable_expert_parallel=False is false" in capsys.readouterr().out


def test_other_commands_still_refuse_unknown_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["audit", "--max-model-len", "8192"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --max-model-len" in capsys.readouterr().err


def test_every_option_has_help() -> None:
    from vllm_sp_base._main import _parser

    parser = _parser()
    explain = parser._subparsers._group_actions[0].choices["explain"]  # type: ignore[union-attr]
    assert all(action.help for action in explain._actions)

