"""The vLLM names the series reads and writes, in one place: every part of
``_upstream`` imports them from here."""

from __future__ import annotations

from typing import Final

from vllm_sp_base._contract import SEQUENCE_PARALLEL_DEFAULTS

#: The flags a class may be given a class-level default for, and that default.
FLAGS: Final = frozenset(SEQUENCE_PARALLEL_DEFAULTS)
DEFAULT: Final = False

#: The two operands of the hand re-derivation ``X.<MOE_GATE> and X.<PIPELINE_SIZE> == 1``.
MOE_GATE: Final = "use_sequence_parallel_moe"
PIPELINE_SIZE: Final = "pipeline_parallel_size"

#: The vLLM test file the series extends (``tests/AGENTS.md``: reuse before
#: create): it already tests these classes' forward on CPU, and a CPU step runs it.
TEST_PATH: Final = "tests/models/deepseek_v32/test_sequence_parallel.py"
#: What the added test reuses from that file.
TEST_HELPERS: Final = ("_IdentityNorm", "_RecordingModule", "_mock_sequence_parallel_collectives")
#: The module alias that file imports the classes under.
TEST_MODULE_ALIAS: Final = "deepseek_v32_model"
TEST_NAME: Final = "test_subclass_skipping_init_runs_forward_without_sequence_parallelism"
