"""Test stand-ins for a ParallelConfig get the new property, with the value the
re-derivation it replaces would have computed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._upstream._names import MODEL_GATE
from vllm_sp_base._upstream.rewrite._stand_ins import update

GATE = MODEL_GATE

UPDATED = {
    "namespace-literals": (
        """\
        cfg = SimpleNamespace(use_sequence_parallel_moe=True, pipeline_parallel_size=1)
        """,
        f"""\
        cfg = SimpleNamespace(use_sequence_parallel_moe=True, pipeline_parallel_size=1, {GATE}=True)
        """,
    ),
    "namespace-expressions-trailing-comma": (
        """\
        def make(on, pp):
            return types.SimpleNamespace(
                use_sequence_parallel_moe=on,
                pipeline_parallel_size=pp,
            )
        """,
        f"""\
        def make(on, pp):
            return types.SimpleNamespace(
                use_sequence_parallel_moe=on,
                pipeline_parallel_size=pp, {GATE}=(on and pp == 1),
            )
        """,
    ),
    "mock-assignments": (
        """\
        def make():
            config = MagicMock()
            config.parallel_config.use_sequence_parallel_moe = True
            config.parallel_config.pipeline_parallel_size = 2
            return config
        """,
        f"""\
        def make():
            config = MagicMock()
            config.parallel_config.use_sequence_parallel_moe = True
            config.parallel_config.pipeline_parallel_size = 2
            config.parallel_config.{GATE} = config.parallel_config.use_sequence_parallel_moe and config.parallel_config.pipeline_parallel_size == 1
            return config
        """,
    ),
}

# A mock standing in for parallel_config: the old expression gave False (a
# child mock is never == 1), or pipeline_parallel_size == 1 where that is set;
# the property read from the mock would be a truthy child mock, SP on.
UPDATED |= {
    "bare-mock-keyword": (
        "layer = Layer(parallel_config=MagicMock())\n",
        f"layer = Layer(parallel_config=MagicMock({GATE}=False))\n",
    ),
    "spec-mock-assigned": (
        "engine.parallel_config = Mock(spec=ParallelConfig)\n",
        f"engine.parallel_config = Mock(spec=ParallelConfig, {GATE}=False)\n",
    ),
    "mock-with-pp": (
        "parallel_config = Mock(pipeline_parallel_size=pp)\n",
        f"parallel_config = Mock(pipeline_parallel_size=pp, {GATE}=(pp == 1))\n",
    ),
}

UNTOUCHED = {
    "mock-of-something-else": "model_config = MagicMock()\n",
    "only-one-operand": "cfg = SimpleNamespace(use_sequence_parallel_moe=True, is_moe_model=True)\n",
    "already-has-it": f"cfg = SimpleNamespace(use_sequence_parallel_moe=True, pipeline_parallel_size=1, {GATE}=True)\n",
    "other-call": "cfg = dict(use_sequence_parallel_moe=True, pipeline_parallel_size=1)\n",
    "different-objects": "a.use_sequence_parallel_moe = True\nb.pipeline_parallel_size = 1\n",
}


@pytest.mark.parametrize("name", UPDATED)
def test_updated(name: str) -> None:
    before, after = (textwrap.dedent(s) for s in UPDATED[name])
    source, done = update(before, GATE)
    assert source == after and len(done) == 1
    assert update(source, GATE) == (source, [])  # a second run finds nothing


@pytest.mark.parametrize("name", UNTOUCHED)
def test_untouched(name: str) -> None:
    assert update(UNTOUCHED[name], GATE) == (UNTOUCHED[name], [])


@pytest.mark.parametrize(("moe", "pp"), [(False, 1), (True, 1), (True, 2), (False, 2)])
def test_the_value_given_is_the_rederivation_s(moe: bool, pp: int) -> None:
    import types
    from unittest.mock import MagicMock

    scope: dict[str, object] = {"SimpleNamespace": types.SimpleNamespace, "types": types,
                                "MagicMock": MagicMock}
    exec(textwrap.dedent(UPDATED["namespace-expressions-trailing-comma"][1]), scope)
    namespace = scope["make"](moe, pp)  # type: ignore[operator]
    assert getattr(namespace, GATE) == (namespace.use_sequence_parallel_moe
                                        and namespace.pipeline_parallel_size == 1)
    exec(textwrap.dedent(UPDATED["mock-assignments"][1]), scope)
    mock = scope["make"]()  # type: ignore[operator]
    assert getattr(mock.parallel_config, GATE) is False  # PP 2: not a truthy MagicMock


def test_the_cli_updates_stand_ins_in_a_checkout_s_tests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.upstream.test_cli import make_tree, run

    root = make_tree(tmp_path)
    test = root / "tests" / "models" / "test_layer.py"
    test.parent.mkdir(parents=True)
    test.write_text(textwrap.dedent(UPDATED["namespace-literals"][0]))
    code, out, _ = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 0 and "1 test stand-ins updated" in out
    assert f"{GATE}=True" in test.read_text()
    assert (root / "tests/config/test_parallel_sequence_parallel_gate.py").is_file()
    code, out, _ = run(capsys, "--vllm-src", str(root), "--write")
    assert code == 0 and out.startswith("0 file(s), +0 -0 lines")


@pytest.mark.parametrize(("pipeline", "mocked"), [(None, False), (1, True), (2, False)])
def test_a_mock_parallel_config_keeps_the_truth_the_old_expression_had(
    pipeline: int | None, mocked: bool
) -> None:
    from unittest.mock import MagicMock

    keywords = "" if pipeline is None else f"pipeline_parallel_size={pipeline}"
    source, _ = update(f"parallel_config = MagicMock({keywords})\n", GATE)
    scope: dict[str, object] = {"MagicMock": MagicMock}
    exec(source, scope)  # our own generated line
    config = scope["parallel_config"]
    old = config.use_sequence_parallel_moe and config.pipeline_parallel_size == 1  # type: ignore[attr-defined]
    assert bool(getattr(config, GATE)) is bool(old) is mocked
