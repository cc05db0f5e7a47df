"""The entry point vLLM's plugin loader calls; the code is ``vllm_sp_base._plugin``."""

from vllm_sp_base._plugin import register

__all__ = ["register"]
