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



def test_a_line_quoted_as_one_word_is_split_as_a_shell_would_and_ignored_words_keep_their_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = "vllm serve m -tp 4 --max-model-len 8192 -dp 2 'my model' --enable-expert-parallel"
    result = _json(capsys, line)
    assert result["layout"] == {  # type: ignore[comparison-overlap]
        "tensor_parallel_size": 4, "data_parallel_size": 2, "pipeline_parallel_size": 1,
        "enable_expert_parallel": True, "all2all_backend": "allgather_reducescatter",
        "effective_all2all_backend": "allgather_reducescatter"}
    assert result["ignored"] == ["vllm", "serve", "m", "--max-model-len", "8192", "my model"]
    # vLLM's spellings: underscores for dashes, --disable-expert-parallel.
    result = _json(capsys, "--tensor_parallel_size=2", "-dp=2", "-ep", "--disable-expert-parallel")
    assert result["layout"]["tensor_parallel_size"] == 2  # type: ignore[index]
    assert result["layout"]["enable_expert_parallel"] is False  # type: ignore[index]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--tp", "8"], "--tp: looks like a parallelism flag but is not one vllm serve takes; did you mean -tp?"),
        (["--dp", "4"], "did you mean -dp?"),
        (["vllm serve m --tensor-parallel 4"], "did you mean --tensor-parallel-size"),
        (["-tp8"], "-tp8: did you mean -tp 8?"),
        (["--data-paralel-size", "2"], "did you mean --data-parallel-size"),
        (["--expert-parallel"], "did you mean --enable-expert-parallel"),
        (["vllm serve 'm"], "cannot split"),
    ],
)
def test_a_word_that_looks_like_a_parallelism_flag_and_is_not_one_is_an_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["explain", *argv])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and needle in err and err.count("\n") == 1, err


def test_every_option_of_vllm_serve_is_read_or_ignored_never_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The real vLLM 0.33.0 parser: none of its flags is taken for a typo.
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    from vllm_sp_base._explain import VLLM_OTHER_PARALLEL_OPTIONS

    vllm_parser = FlexibleArgumentParser()
    AsyncEngineArgs.add_cli_args(vllm_parser)
    understood = {"-tp": 2, "--tensor-parallel-size": 2, "-dp": 3, "--data-parallel-size": 3,
                  "-pp": 4, "--pipeline-parallel-size": 4, "--all2all-backend": "deepep_v2"}
    names = {"-tp": "tensor_parallel_size", "--tensor-parallel-size": "tensor_parallel_size",
             "-dp": "data_parallel_size", "--data-parallel-size": "data_parallel_size",
             "-pp": "pipeline_parallel_size", "--pipeline-parallel-size": "pipeline_parallel_size",
             "--all2all-backend": "all2all_backend"}
    seen = set()
    for action in vllm_parser._actions:
        for option in action.option_strings:
            if option in ("-h", "--help"):
                continue
            seen.add(option)
            value = [str(understood.get(option, "1"))] if action.nargs != 0 else []
            assert main(["explain", "--json", option, *value]) == 0, option
            result = json.loads(capsys.readouterr().out)
            if option in names:  # read, with vllm serve's meaning
                assert result["layout"][names[option]] == understood[option] and "ignored" not in result
            elif option in ("-ep", "--enable-expert-parallel", "--disable-expert-parallel"):
                assert result["layout"]["enable_expert_parallel"] is (option != "--disable-expert-parallel")
            else:
                assert result["ignored"] == [option, *value], option
    assert VLLM_OTHER_PARALLEL_OPTIONS <= seen  # none stale
    assert set(names) | {"-ep", "--disable-expert-parallel"} <= seen
