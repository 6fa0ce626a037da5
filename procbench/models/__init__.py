"""``procbench train`` / ``evaluate``: baseline models over the store's frozen embeddings (DESIGN §8).

>>> from procbench.models import TrainConfig, evaluate, train
>>> result = train("store/questions/pair-order/default", TrainConfig("pair-order"), "runs/po")  # doctest: +SKIP
>>> report = evaluate(runs=["runs/po"], models=["chance"])  # doctest: +SKIP
>>> report.to_dict()["summary"]["tables"][0]["rows"]  # doctest: +SKIP

Importing this package is cheap: torch and scikit-learn load only when a model is built or fitted.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "MODELS",
    "EvalReport",
    "EvalResult",
    "FeatureConfig",
    "Featurised",
    "ModelSpec",
    "TrainConfig",
    "TrainResult",
    "evaluate",
    "featurisation",
    "get_model",
    "load_run",
    "question_sets",
    "resolve_inputs",
    "train",
    "train_many",
]

_LAZY = {
    "MODELS": "registry",
    "ModelSpec": "registry",
    "get_model": "registry",
    "TrainConfig": "config",
    "FeatureConfig": "featurisation",
    "Featurised": "featurisation",
    "featurise": "featurisation",
    "EvalReport": "evaluation",
    "EvalResult": "evaluation",
    "evaluate": "evaluation",
    "question_sets": "inputs",
    "resolve_inputs": "inputs",
    "TrainResult": "training",
    "load_run": "training",
    "train": "training",
    "train_many": "training",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"procbench.models.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'procbench.models' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
