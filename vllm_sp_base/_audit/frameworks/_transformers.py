"""transformers: a training script runs its ``Trainer``'s ``train()``, then
``save_model()``, as every example script does."""

from __future__ import annotations

from vllm_sp_base._audit.frameworks._model import Driven, Framework

TRANSFORMERS = Framework(
    "transformers",
    driven=(Driven("transformers.trainer.Trainer", ("train", "save_model")),),
)
