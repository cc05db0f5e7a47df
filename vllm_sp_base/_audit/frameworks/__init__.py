"""What each framework the audit knows builds and calls, as data: one module
per framework, read by the rule's options (``_options.py``). The semantic core
knows no framework; a project describes its own the same way in its
configuration (``entry-points``, ``plain-entry-points``)."""

from __future__ import annotations

from vllm_sp_base._audit.frameworks import _sglang, _sklearn, _torch, _transformers, _vllm
from vllm_sp_base._audit.frameworks._model import Driven, Framework, Refusal, Wrapper

#: In the order their entry points are listed.
FRAMEWORKS: tuple[Framework, ...] = (
    _torch.TORCH, _vllm.VLLM, _sglang.SGLANG, _transformers.TRANSFORMERS, _sklearn.SKLEARN)

__all__ = ["FRAMEWORKS", "Driven", "Framework", "Refusal", "Wrapper"]
