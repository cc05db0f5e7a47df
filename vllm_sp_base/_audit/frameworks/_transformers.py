"""transformers: a training script runs its ``Trainer``'s ``train()``, then
``save_model()``, as every example script does; a ``Pipeline`` is built to
be called (``pipe(inputs)`` runs ``__call__``), and saved with
``save_pretrained`` when a user saves it (a feature: not every use)."""

from __future__ import annotations

from vllm_sp_base._audit.frameworks._model import Driven, Framework

TRANSFORMERS = Framework(
    "transformers",
    feature_entry_points=("save_pretrained",),
    driven=(
        Driven("transformers.trainer.Trainer", ("train", "save_model")),
        Driven("transformers.pipelines.base.Pipeline", ("__call__", "save_pretrained")),
    ),
)
