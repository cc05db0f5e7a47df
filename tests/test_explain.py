from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

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
        (["vllm serve m --tensor-parallel-sz 4"], "did you mean --tensor-parallel-size"),
        (["--tp-size", "8"], "did you mean -tp or --tensor-parallel-size?"),
        (["-TP", "8"], "did you mean -tp?"),
        (["--disable-ep"], "did you mean --disable-expert-parallel?"),
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


@pytest.fixture(scope="module")
def vllm_serve() -> Any:
    """vLLM 0.33.0's own ``vllm serve`` parser (the real one, not a copy)."""
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    return make_arg_parser(FlexibleArgumentParser())


_GATES = ("tensor_parallel_size", "data_parallel_size", "pipeline_parallel_size",
          "enable_expert_parallel", "all2all_backend")
_VALUES = {"tensor_parallel_size": "2", "data_parallel_size": "3", "pipeline_parallel_size": "4",
           "all2all_backend": "deepep_v2"}


def _vllm_layout(vllm_serve: Any, argv: list[str]) -> dict[str, object] | None:
    """The gates' inputs as vLLM's parser reads ``argv``; None where it refuses the line."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # its usage block, when it refuses
            parsed = vllm_serve.parse_args(argv)
    except SystemExit:
        return None
    return {gate: getattr(parsed, gate) for gate in _GATES}


def _explain_layout(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object] | None:
    try:
        code = main(["explain", "--json", *argv])
    except SystemExit as exit_info:
        assert exit_info.code == 2 and capsys.readouterr().err.count("\n") == 1
        return None
    assert code == 0
    layout = json.loads(capsys.readouterr().out)["layout"]
    return {gate: layout[gate] for gate in _GATES}


def test_every_option_of_vllm_serve_is_read_as_vllm_reads_it_or_ignored(
    capsys: pytest.CaptureFixture[str], vllm_serve: Any,
) -> None:
    # Every option string vLLM 0.33.0's parser takes (the hidden --no-enable-...
    # spellings too): explain reads the gates' inputs as vLLM does and ignores
    # the rest; none is taken for a typo.
    from vllm_sp_base._serve_options import VLLM_SERVE_OPTIONS

    assert set(vllm_serve._option_string_actions) == VLLM_SERVE_OPTIONS
    for option, action in vllm_serve._option_string_actions.items():
        if option in ("-h", "--help", "--config"):
            continue
        value = [_VALUES.get(action.dest, "1")] if action.nargs != 0 else []
        expected = _vllm_layout(vllm_serve, [option, *value]) if action.dest in _GATES else None
        assert main(["explain", "--json", option, *value]) == 0, option
        result = json.loads(capsys.readouterr().out)
        if expected is not None:  # read, with vllm serve's meaning
            assert {g: result["layout"][g] for g in _GATES} == expected and "ignored" not in result
        else:
            assert result["ignored"] == [option, *value], option


def test_an_abbreviated_flag_is_read_as_vllm_reads_it(
    capsys: pytest.CaptureFixture[str], vllm_serve: Any,
) -> None:
    # vLLM's parser takes a unique prefix of an option (argparse's
    # abbreviations): `--tensor-parallel 4` is TP=4 there, `-t 4` too, and
    # `--data-parallel-si 2` is refused as ambiguous. Each prefix of each gate
    # flag: the same layout, or refused by both.
    from vllm_sp_base._explain import _GATE_OPTIONS

    for option in sorted(_GATE_OPTIONS):
        dest = vllm_serve._option_string_actions[option].dest
        value = [_VALUES[dest]] if dest in _VALUES else []
        for end in range(3 if option.startswith("--") else 2, len(option) + 1):
            argv = [option[:end], *value]
            assert _explain_layout(capsys, argv) == _vllm_layout(vllm_serve, argv), argv
    assert _explain_layout(capsys, ["--tensor-parallel", "4"]) == {
        "tensor_parallel_size": 4, "data_parallel_size": 1, "pipeline_parallel_size": 1,
        "enable_expert_parallel": False, "all2all_backend": "allgather_reducescatter"}
    assert _json(capsys, "--", "-tp", "2")["ignored"] == ["--"]  # no option's prefix
    with pytest.raises(SystemExit):
        main(["explain", "--data-parallel-si", "2"])
    assert "vllm serve refuses it as ambiguous (it could be --data-parallel-size, " in capsys.readouterr().err


@pytest.mark.parametrize("word", ["-sp", "--sequence-parallel", "--enable-sequence-parallel", "-SP"])
def test_a_sequence_parallel_flag_is_refused_as_vllm_refuses_it(
    capsys: pytest.CaptureFixture[str], vllm_serve: Any, word: str,
) -> None:
    # vLLM 0.33.0 has no such flag: SP follows from the layout, which is what
    # explain is for; a verdict for TP=1 with the word ignored would be wrong.
    assert _vllm_layout(vllm_serve, [word]) is None
    with pytest.raises(SystemExit) as exit_info:
        main(["explain", "vllm", "serve", "m", "-tp", "4", word])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1
    assert f"{word}: vllm serve has no such flag" in err and "it follows from -tp, -dp" in err


@pytest.mark.parametrize("code", ["SPB001", "spb001", "SPB002", "spb"])
def test_a_rule_code_is_pointed_to_the_rule_command_not_given_a_verdict(
    capsys: pytest.CaptureFixture[str], code: str,
) -> None:
    # A ruff user explains a finding's code (`ruff rule F401`, once
    # `ruff --explain F401`): here that is `vllm-sp-base rule SPB001`.
    with pytest.raises(SystemExit) as exit_info:
        main(["explain", code])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1 and "SP-MoE" not in err
    assert "`vllm-sp-base rule SPB001`" in err and err.startswith(f"vllm-sp-base explain: error: {code}: ")
    assert main(["rule", "SPB001"]) == 0 and capsys.readouterr().out.startswith("SPB001: ")


def test_config_file_is_an_error_where_vllm_reads_it_and_a_note_where_it_does_not(
    capsys: pytest.CaptureFixture[str], vllm_serve: Any, tmp_path: Path,
) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text("tensor-parallel-size: 4\ndata_parallel_size: 2\nenable-expert-parallel: true\n")
    # `--config FILE`: vLLM takes the sizes from the file; explain does not
    # read it, so no verdict for the default layout.
    assert _vllm_layout(vllm_serve, ["--config", str(config)]) == {
        "tensor_parallel_size": 4, "data_parallel_size": 2, "pipeline_parallel_size": 1,
        "enable_expert_parallel": True, "all2all_backend": "allgather_reducescatter"}
    for argv in (["vllm", "serve", "m", "--config", str(config)], [f"vllm serve m --config {config}"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["explain", *argv])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and err.count("\n") == 1, err
        assert f"--config {config}: vllm serve reads options from that file, explain does not" in err
    # `--config=FILE`: vLLM 0.33.0 reads no file; the verdict is the line's, and says so.
    assert _vllm_layout(vllm_serve, [f"--config={config}", "-tp", "2"]) == _explain_layout(
        capsys, [f"--config={config}", "-tp", "2"])
    assert main(["explain", f"--config={config}", "-tp", "2"]) == 0
    out = capsys.readouterr().out
    assert "TP=2 DP=1" in out and out.rstrip().endswith(
        f"note: --config={config}: vllm serve 0.33.0 reads a config file only after --config as a "
        "word of its own: this line reads none")


def test_a_pasted_line_with_backslash_continuations_is_joined_as_a_shell_joins_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = "vllm serve deepseek-ai/DeepSeek-V3.2 \\\n  -tp 8 \\\r\n  -dp 2 \\\n  --max-model-len 8192 -ep"
    result = _json(capsys, line)
    assert result["ignored"] == ["vllm", "serve", "deepseek-ai/DeepSeek-V3.2", "--max-model-len", "8192"]
    assert result["layout"]["data_parallel_size"] == 2  # type: ignore[index]
    assert main(["explain", line]) == 0
    assert capsys.readouterr().out.rstrip().endswith(
        "\nignored (not about the gates): vllm serve deepseek-ai/DeepSeek-V3.2 --max-model-len 8192")


@pytest.mark.parametrize("dash", ["\u2014", "\u2013", "\u2212"], ids=["em", "en", "minus"])
def test_a_flag_with_a_typographic_dash_is_refused_not_read_as_a_value(
    capsys: pytest.CaptureFixture[str], dash: str
) -> None:
    # Pasted from a chat or a document, "--tensor-parallel-size" arrives as
    # "—tensor-parallel-size": vllm serve takes it as a positional word, so the
    # layout it would run is not the one meant: no verdict on it.
    word = f"{dash}tensor-parallel-size"
    with pytest.raises(SystemExit) as exit_info:
        main(["explain", "vllm serve m " + word + " 8 -dp 2 --enable-expert-parallel"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1
    assert f"{word}: starts with " in err and "did you mean --tensor-parallel-size?" in err


@pytest.mark.parametrize(("word", "meant"), [("\u2013tp", "-tp"), ("\u2013dp", "-dp"), ("\u2014tp", "-tp"),
                                             ("\u2013\u2013data-parallel-size", "--data-parallel-size")])
def test_a_typographic_dash_suggests_the_flag_vllm_serve_takes(
    capsys: pytest.CaptureFixture[str], word: str, meant: str
) -> None:
    # "–tp" was typed "-tp": the suggestion must be a flag vllm serve takes.
    with pytest.raises(SystemExit):
        main(["explain", f"vllm serve m {word} 8"])
    assert f"did you mean {meant}?" in capsys.readouterr().err
