"""The sequence-parallel attribute contract for vLLM model classes."""

from vllm_sp_base._contract import SEQUENCE_PARALLEL_DEFAULTS, SequenceParallelDefaults
from vllm_sp_base._gates import (
    ALL2ALL_BACKENDS,
    SEQUENCE_PARALLEL_MOE_BACKENDS,
    Layout,
    UnknownBackendError,
    use_sequence_parallel,
    use_sequence_parallel_moe,
)
from vllm_sp_base._protocols import (
    ModuleTree,
    ParallelLayout,
    SequenceParallelLayer,
    SequenceParallelModel,
)
from vllm_sp_base._verify import FlagProblem, verify_sequence_parallel

__version__ = "0.1.0"

__all__ = [
    "ALL2ALL_BACKENDS",
    "SEQUENCE_PARALLEL_DEFAULTS",
    "SEQUENCE_PARALLEL_MOE_BACKENDS",
    "FlagProblem",
    "Layout",
    "ModuleTree",
    "ParallelLayout",
    "SequenceParallelDefaults",
    "SequenceParallelLayer",
    "SequenceParallelModel",
    "UnknownBackendError",
    "use_sequence_parallel",
    "use_sequence_parallel_moe",
    "verify_sequence_parallel",
]
