"""The names the series writes into vLLM and the vLLM names it reads, in one
place: every part of ``_upstream`` imports them from here."""

from __future__ import annotations

from typing import Final

from vllm_sp_base._contract import SEQUENCE_PARALLEL_DEFAULTS, SequenceParallelDefaults

#: vLLM's parallel config, where the gate the first patch adds goes.
CONFIG_PATH: Final = "vllm/config/parallel.py"
CONFIG_CLASS: Final = "ParallelConfig"
#: ``VllmConfig``'s field holding the ``ParallelConfig``.
CONFIG_FIELD: Final = "parallel_config"
#: The two operands of the hand re-derivation ``X.<MOE_GATE> and X.<PIPELINE_SIZE> == 1``.
MOE_GATE: Final = "use_sequence_parallel_moe"
PIPELINE_SIZE: Final = "pipeline_parallel_size"
#: The ``ParallelConfig`` property the first patch adds. Not ``use_sequence_parallel``:
#: DeepSeek V4/V4.1, Step5 and MuseSpark set a ``self.use_sequence_parallel`` of
#: their own from other conditions, and two things of one name must not disagree.
MODEL_GATE: Final = "use_sequence_parallel_moe_without_pp"

#: Where the contract module of the second patch goes, and what it is imported as.
CONTRACT_PATH: Final = "vllm/models/common/sequence_parallel_defaults.py"
CONTRACT_MODULE: Final = "vllm.models.common.sequence_parallel_defaults"
MIXIN: Final = SequenceParallelDefaults.__name__
#: The attributes the mixin gives a class-level default.
FLAGS: Final = frozenset(SEQUENCE_PARALLEL_DEFAULTS)

SPDX_HEADER: Final = """\
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: Copyright contributors to the vLLM project
"""
