"""``context-ridge``: a context reader for photo choices, fitted on the set's train split.

The zero-shot readers (:mod:`procbench.models.context_readers`) compare text with text; a photo choice cannot be
compared with a step's text that way, because the store's text and image encoders share no space. This reader
learns one: a linear map from the step-text embedding to the photo embedding, fitted by ridge regression (Hoerl
and Kennard 1970) on every step with a text and a photo of the train split's procedures. Each photo is centred on
its procedure's mean photo first, so the map learns what tells a procedure's steps apart rather than what the
procedure looks like (visual ``needs-context`` questions draw their four photos from one procedure).

A choice's similarity to a context step is the cosine of the step's mapped text with the photo, centred on the
mean of the question's choices (the only procedure mean a question shows). Then

- visual cloze: :func:`~procbench.models.context_readers.context_scores`, the context step the photo explains
  best, net of what the question's shown photos explain;
- visual coherence: the context's steps matched one-to-one with the photos (the Hungarian method, scipy's
  ``linear_sum_assignment``), the answer the photo that no step takes (or, with as many steps as photos, the
  one matched worst).

A question of the train split is answered by a map fitted on its own steps: read the ``val`` and ``test`` scores.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from procbench.errors import BadInput
from procbench.models.context_readers import context_scores
from procbench.models.featurisation import Featurised, step_pairs, store_of
from procbench.qsets.files import QuestionSet
from procbench.store import Store

__all__ = ["RIDGE_ALPHA", "ContextRidge", "coherence_scores"]

#: Ridge strength. Untuned: on the build guides (5-fold by procedure), alphas from 1 to 30 moved the map's
#: within-procedure cloze accuracy by under 3 points, inside its noise; 10 is mid-range.
RIDGE_ALPHA = 10.0


def coherence_scores(sim: np.ndarray) -> np.ndarray:
    """``(C,)`` how well each choice is matched by a context step, ``sim (J, C)`` (step x choice): the matched
    step's similarity, and a choice no step takes scores below every matched one (its best similarity minus 4,
    cosines being within [-1, 1]). The lowest score is the intruder."""
    from scipy.optimize import linear_sum_assignment

    steps, choices = linear_sum_assignment(sim, maximize=True)
    out = sim.max(axis=0) - 4.0
    out[choices] = sim[steps, choices]
    return np.asarray(out)


@dataclass
class ContextRidge:
    """The fitted map (``weights (Dt, Di)``, ``bias (Di,)``) and what it answers."""

    weights: np.ndarray
    bias: np.ndarray

    @classmethod
    def fit(cls, qset: QuestionSet, *, alpha: float = RIDGE_ALPHA) -> ContextRidge:
        """Fit on the steps of ``qset``'s train procedures (their store's step-text and photo embeddings)."""
        procedures = set(qset.split("train").column("procedure_id").to_pylist())
        return cls.fit_procedures(store_of(qset), procedures, alpha=alpha, what=f"{qset.name}'s train procedures")

    @classmethod
    def fit_procedures(
        cls, store: Store, procedures: set[str], *, alpha: float = RIDGE_ALPHA, what: str = "the procedures"
    ) -> ContextRidge:
        """Fit on the steps of ``procedures`` in ``store`` (cross-validation fits on the other folds' procedures).

        Raises:
            BadInput: fewer than two of their steps have both a text and a photo.
        """
        texts, photos, groups = step_pairs(store, procedures)
        if len(texts) < 2:
            raise BadInput(
                f"context-ridge fits a map from step texts to photos, and {what} have {len(texts)} step(s) with "
                "both (embed the store's step_text and image fields)"
            )
        return cls.from_pairs(texts, photos, groups, alpha=alpha)

    @classmethod
    def from_pairs(
        cls, texts: np.ndarray, photos: np.ndarray, groups: np.ndarray, *, alpha: float = RIDGE_ALPHA
    ) -> ContextRidge:
        """Fit on ``texts (n, Dt)`` and ``photos (n, Di)`` of steps of procedures ``groups (n,)``."""
        from sklearn.linear_model import Ridge

        centred = np.asarray(photos, dtype=np.float64).copy()
        for g in np.unique(groups):
            centred[groups == g] -= centred[groups == g].mean(axis=0)
        model = Ridge(alpha=alpha).fit(np.asarray(texts, dtype=np.float64), centred)
        return cls(np.asarray(model.coef_.T), np.asarray(model.intercept_))

    def predict(self, feats: Featurised, rows: np.ndarray) -> list[int]:
        """A choice index per question of ``rows`` (visual cloze and visual coherence; see the module docstring)."""
        if feats.contexts.shape[1] != self.weights.shape[0] or feats.items.shape[1] != self.weights.shape[1]:
            raise BadInput(
                f"context-ridge was fitted on vectors {self.weights.shape} but {feats.qset} reads context "
                f"{feats.contexts.shape[1]} and items {feats.items.shape[1]}: one store, one encoder per field"
            )
        predictions = []
        for row in rows:
            valid = feats.choice_valid[row]
            photos = feats.items[feats.choices[row, :, 0]].astype(np.float64)
            centre = photos[valid].mean(axis=0) if valid.any() else np.zeros(photos.shape[1])
            steps = _unit(feats.contexts[feats.context[row][feats.context_mask[row]]] @ self.weights + self.bias)
            if not len(steps):  # nothing to read: the first choice, worth chance over balanced positions
                predictions.append(0)
                continue
            sim = steps @ _unit(photos - centre).T  # (J, C)
            if feats.task == "visual-coherence":
                scores = -coherence_scores(sim[:, valid])
                full = np.full(len(valid), -np.inf)
                full[valid] = scores
                predictions.append(int(np.argmax(full)))
                continue
            shown = feats.question_mask[row] & ~feats.placeholder[row]
            question = _unit(feats.items[feats.question[row][shown]].astype(np.float64) - centre)
            scores = context_scores(sim.T, (steps @ question.T).T if len(question) else None)
            predictions.append(int(np.argmax(np.where(valid, scores, -np.inf))))
        return predictions


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.asarray(vectors / np.where(norms > 0, norms, 1.0))
