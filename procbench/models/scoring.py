"""Per-question scores from predictions (and the exact chance level), for every task family."""

from __future__ import annotations

from typing import Any

import numpy as np

from procbench.models.featurisation import Featurised
from procbench.models.metrics import SEQUENCING_METRICS, chance_sequencing_scores, sequencing_scores

__all__ = ["chance_scores", "metric_names", "primary_metric", "question_scores"]


def metric_names(family: str) -> tuple[str, ...]:
    """The metrics reported for a task family."""
    return SEQUENCING_METRICS if family == "sequencing" else ("accuracy",)


def primary_metric(family: str) -> str:
    """The metric early stopping and summaries lead with: accuracy, or Acc for sequencing."""
    return "acc" if family == "sequencing" else "accuracy"


def question_scores(feats: Featurised, rows: np.ndarray, predictions: list[Any]) -> dict[str, np.ndarray]:
    """``{metric: (n,) float64}`` for questions ``rows`` given one prediction per row.

    Predictions are choice indices (MC), labels (pair order) or orders of question positions (sequencing),
    scored against every reference order of the question (best value kept).
    """
    if feats.family != "sequencing":
        answers = feats.answer[rows]
        return {"accuracy": (np.asarray(predictions, dtype=np.int64) == answers).astype(np.float64)}
    out = {name: np.empty(len(rows)) for name in SEQUENCING_METRICS}
    for j, (row, order) in enumerate(zip(rows, predictions, strict=True)):
        references = feats.references[row]
        scores = sequencing_scores(list(order), references)
        for name in SEQUENCING_METRICS:
            out[name][j] = scores[name]
    return out


def chance_scores(feats: Featurised, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Expected per-question scores of a uniformly random answer (1/K for MC, 1/2 for pair order, the
    exact expectation over all orders for sequencing)."""
    if feats.family == "mc":
        return {"accuracy": 1.0 / feats.choice_valid[rows].sum(axis=1).clip(min=1)}
    if feats.family == "pair-order":
        return {"accuracy": np.full(len(rows), 0.5)}
    out = {name: np.empty(len(rows)) for name in SEQUENCING_METRICS}
    for j, row in enumerate(rows):
        scores = chance_sequencing_scores(feats.references[row])
        for name in SEQUENCING_METRICS:
            out[name][j] = scores[name]
    return out
