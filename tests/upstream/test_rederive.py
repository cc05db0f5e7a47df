"""The re-derivation matcher and its rewrite: each example is a source a reader
can scan, with what the patch makes of it (REWRITTEN) or why it leaves it (LEFT)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from vllm_sp_base._upstream._names import MODEL_GATE
from vllm_sp_base._upstream.plan._edits import FileEdits
from vllm_sp_base._upstream.plan._plan import _in_characters
from vllm_sp_base._upstream.plan._rederive import find_sites
from vllm_sp_base._upstream.rewrite._codemod import rewrite

GATE = MODEL_GATE

#: (before, after): the rewrite keeps the value, so it is made.
REWRITTEN = {
    "assigned-from-vllm-config": (
        """\
        def f(vllm_config):
            parallel_config = vllm_config.parallel_config
            x = (
                parallel_config.use_sequence_parallel_moe
                and parallel_config.pipeline_parallel_size == 1
            )
        """,
        f"""\
        def f(vllm_config):
            parallel_config = vllm_config.parallel_config
            x = parallel_config.{GATE}
        """,
    ),
    "annotated-parameter-reversed-with-a-bool": (
        """\
        def f(pc: ParallelConfig, is_moe_layer: bool):
            is_moe = is_moe_layer is True
            return pc.pipeline_parallel_size == 1 and pc.use_sequence_parallel_moe and is_moe
        """,
        f"""\
        def f(pc: ParallelConfig, is_moe_layer: bool):
            is_moe = is_moe_layer is True
            return pc.{GATE} and is_moe
        """,
    ),
    "attribute-receiver-in-a-condition": (
        """\
        def f(self, y):
            if self.vllm_config.parallel_config.use_sequence_parallel_moe and self.vllm_config.parallel_config.pipeline_parallel_size == 1 and y:
                pass
        """,
        f"""\
        def f(self, y):
            if self.vllm_config.parallel_config.{GATE} and y:
                pass
        """,
    ),
    "comments-kept": (
        """\
        def f(vllm_config):
            parallel_config = vllm_config.parallel_config
            return (
                parallel_config.use_sequence_parallel_moe  # SP-MoE
                # not across stages
                and parallel_config.pipeline_parallel_size == 1  # no PP
                and not vllm_config.x  # why
            )
        """,
        f"""\
        def f(vllm_config):
            parallel_config = vllm_config.parallel_config
            return (
                # SP-MoE
                # not across stages
                parallel_config.{GATE}  # no PP
                and not vllm_config.x  # why
            )
        """,
    ),
}

#: (source, why): left as is, with the reason said.
LEFT = {
    "namespace-receiver": (
        """\
        def f(ns):
            return ns.use_sequence_parallel_moe and ns.pipeline_parallel_size == 1
        """,
        "ns is not known to be a ParallelConfig (a parameter not annotated ParallelConfig)",
    ),
    "draft-config": (
        """\
        def f(spec):
            return (spec.draft_parallel_config.use_sequence_parallel_moe
                    and spec.draft_parallel_config.pipeline_parallel_size == 1)
        """,
        "spec.draft_parallel_config is not known to be a ParallelConfig",
    ),
    "not-adjacent": (
        """\
        def f(vllm_config, hf):
            pc = vllm_config.parallel_config
            return pc.use_sequence_parallel_moe and hf.num_experts > 0 and pc.pipeline_parallel_size == 1
        """,
        "not next to each other",
    ),
    "value-not-a-bool": (
        """\
        def f(vllm_config, n):
            pc = vllm_config.parallel_config
            x = pc.use_sequence_parallel_moe and pc.pipeline_parallel_size == 1 and n
        """,
        "its value is used, and `n` may not be a bool",
    ),
    "name-rebound": (
        """\
        def f(vllm_config, other):
            pc = vllm_config.parallel_config
            pc = other
            return pc.use_sequence_parallel_moe and pc.pipeline_parallel_size == 1
        """,
        "pc is not known to be a ParallelConfig (assigned a value not known to be a ParallelConfig)",
    ),
    "comment-with-no-line": (
        """\
        def f(vllm_config):
            pc = vllm_config.parallel_config
            return pc.use_sequence_parallel_moe and (  # kept?
                pc.pipeline_parallel_size == 1)
        """,
        None,  # the matcher accepts it; the rewrite declines: the comment has nowhere to go
    ),
}

#: Not a re-derivation at all: nothing is rewritten and nothing said.
UNRELATED = {
    "or": "def f(pc: ParallelConfig):\n    return pc.use_sequence_parallel_moe or pc.pipeline_parallel_size == 1\n",
    "pp-2": "def f(pc: ParallelConfig):\n    return pc.use_sequence_parallel_moe and pc.pipeline_parallel_size == 2\n",
    "the-gate-itself": (
        f"class ParallelConfig:\n    @property\n    def {GATE}(self):\n"
        "        return self.use_sequence_parallel_moe and self.pipeline_parallel_size == 1\n"
    ),
}


def _patch(source: str) -> tuple[str, list[str], int]:
    """(rewritten source, why each site was left, sites rewritten)."""
    source = textwrap.dedent(source)
    sites, left = find_sites(ast.parse(source), skip_function=GATE)
    done = rewrite(source, FileEdits(rederivations=_in_characters(source.encode(), sites)))
    return done.source, [x.reason for x in left] + [why for _, why in done.left], done.done["rederivation"]


@pytest.mark.parametrize("name", REWRITTEN)
def test_rewritten(name: str) -> None:
    before, after = REWRITTEN[name]
    source, left, made = _patch(before)
    assert (source, left, made) == (textwrap.dedent(after), [], 1)
    compile(source, name, "exec")
    assert _patch(source)[2] == 0  # a second run finds nothing


@pytest.mark.parametrize("name", LEFT)
def test_left_as_is_with_the_reason(name: str) -> None:
    before, why = LEFT[name]
    source, left, made = _patch(before)
    assert (source, made) == (textwrap.dedent(before), 0)
    assert len(left) == 1
    assert why is None or why in left[0]
    if why is None:
        assert left[0] == "a comment inside it would have no line to go on"


@pytest.mark.parametrize("name", UNRELATED)
def test_unrelated_code_is_neither_rewritten_nor_reported(name: str) -> None:
    assert _patch(UNRELATED[name]) == (UNRELATED[name], [], 0)


def test_the_rewrite_has_the_same_value_as_the_expression_it_replaces() -> None:
    """Every example the patch rewrites, run before and after on every layout."""
    import itertools
    import types

    class Config(types.SimpleNamespace):
        @property
        def use_sequence_parallel_moe_without_pp(self) -> bool:
            return self.use_sequence_parallel_moe and self.pipeline_parallel_size == 1

    for name, (before, after) in REWRITTEN.items():
        scopes: list[dict[str, object]] = [{}, {}]
        for scope, source in zip(scopes, (before, after)):
            exec(compile(textwrap.dedent(source), name, "exec"), scope)
        for moe, pp, flag in itertools.product((False, True), (1, 2), (False, True)):
            config = Config(use_sequence_parallel_moe=moe, pipeline_parallel_size=pp)
            vllm = types.SimpleNamespace(parallel_config=config, x=not flag)
            holder = types.SimpleNamespace(vllm_config=vllm)
            args = {
                "assigned-from-vllm-config": (vllm,),
                "annotated-parameter-reversed-with-a-bool": (config, flag),
                "attribute-receiver-in-a-condition": (holder, flag),
                "comments-kept": (vllm,),
            }[name]
            results = [scope["f"](*args) for scope in scopes]  # type: ignore[operator]
            assert results[0] == results[1], (name, moe, pp, flag)
