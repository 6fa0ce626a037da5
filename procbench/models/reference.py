"""The distance-SVM probe of paper 001 (Fig. 2) as a model: answers without reading the context.

Each choice is described by its distance to the question (the mean of the question's item vectors, the
placeholder left out) and by how that distance compares with the question's other choices; an SVM
trained on the set's train split tells correct choices from wrong ones, and the choice with the highest
decision value is the answer. For a choice that is an order of items (visual ordering) the distance is
the sum of distances between consecutive items, the quantity Control-Knob 2 samples by. A high score
means the set can be answered from distances alone: the bias the Control-Knobs remove.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from procbench.errors import BadInput
from procbench.models.featurisation import Featurised

__all__ = ["DistanceSVM"]


class DistanceSVM:
    """Fit on one question set's train split, predict a choice per question (MC tasks only)."""

    def __init__(self, *, max_train: int = 2000, seed: int = 0) -> None:
        self.max_train = max_train
        self.seed = seed
        self._svm: Any = None  # a fitted sklearn SVC (sklearn has no type information)

    @staticmethod
    def choice_features(feats: Featurised, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(n, K, 2)`` float64 [distance, distance - mean distance of the question's choices] and
        ``(n, K)`` bool for real choices."""
        if feats.family != "mc":
            raise BadInput(f"distance-svm answers multiple-choice questions, not {feats.task}")
        items = feats.items
        out = np.zeros((len(rows), feats.choices.shape[1], 2))
        valid = feats.choice_valid[rows]
        for start in range(0, len(rows), 1000):
            part = rows[start : start + 1000]
            q_mask = (feats.question_mask[part] & ~feats.placeholder[part]).astype(np.float32)
            q = (items[feats.question[part]] * q_mask[..., None]).sum(1) / q_mask.sum(1, keepdims=True).clip(min=1)
            c = items[feats.choices[part]]  # (n, K, Lch, D)
            c_mask = feats.choice_mask[part]
            if c.shape[2] == 1:
                dist = np.linalg.norm(c[:, :, 0] - q[:, None], axis=-1)
            else:
                steps = np.linalg.norm(c[:, :, 1:] - c[:, :, :-1], axis=-1)
                dist = (steps * (c_mask[:, :, 1:] & c_mask[:, :, :-1])).sum(-1)
            v = valid[start : start + 1000]
            mean = (dist * v).sum(1, keepdims=True) / v.sum(1, keepdims=True).clip(min=1)
            out[start : start + len(part), :, 0] = dist
            out[start : start + len(part), :, 1] = dist - mean
        return out, valid

    def fit(self, feats: Featurised, rows: np.ndarray) -> DistanceSVM:
        """Train on questions ``rows`` (at most ``max_train`` of them, a seeded sample)."""
        from sklearn.svm import SVC

        if len(rows) == 0:
            raise BadInput(f"distance-svm trains on the train split, and {feats.qset} has no train questions")
        if len(rows) > self.max_train:
            rows = np.sort(np.random.default_rng(self.seed).choice(rows, self.max_train, replace=False))
        x, valid = self.choice_features(feats, rows)
        y = np.zeros(valid.shape, dtype=np.int64)
        y[np.arange(len(rows)), feats.answer[rows]] = 1
        svm = SVC(kernel="rbf", C=1.0, gamma="scale", class_weight="balanced", random_state=self.seed)
        svm.fit(x[valid], y[valid])
        self._svm = svm
        return self

    def predict(self, feats: Featurised, rows: np.ndarray) -> list[int]:
        """The chosen choice index of each question ``rows``."""
        if self._svm is None:
            raise RuntimeError("fit the probe before predicting")
        x, valid = self.choice_features(feats, rows)
        decision = np.full(valid.shape, -np.inf)
        if valid.any():
            decision[valid] = self._svm.decision_function(x[valid])
        return [int(i) for i in decision.argmax(axis=1)]
