"""scikit-learn: an estimator is built to be fit; ``fit`` runs on every use
(a ``Pipeline``'s reads ``transform_input`` and ``steps``, which its
``__init__`` sets: tsai 1.0.1's ``MiniRocketClassifier`` skipped it). Every
estimator derives from ``BaseEstimator``, which has no ``__init__`` of its
own: an estimator that follows sklearn's convention and sets its parameters
itself skips nothing."""

from __future__ import annotations

from vllm_sp_base._audit.frameworks._model import Driven, Framework

SKLEARN = Framework(
    "sklearn",
    driven=(Driven("sklearn.base.BaseEstimator", ("fit",)),),
)
