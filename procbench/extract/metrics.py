"""Paper 002's extraction metrics (§6, App. D).

Stage 1 (key sentences) is binary classification: accuracy, precision, recall, F1.

Stage 2 scores verbs and arguments separately, per evaluation unit (a sentence or step), as phrase sets:
given predicted phrases X and gold phrases G, a one-to-one assignment M of min(|X|, |G|) pairs maximises
the summed pairwise score s (Kuhn-Munkres: scipy's ``linear_sum_assignment``), TP is that sum, and over all
units P = ΣTP / Σ|X|, R = ΣTP / Σ|G|, F1 = 2PR / (P + R). Pairwise scores, on phrases compared in lower
case with whitespace collapsed (:func:`normalise_phrase`):

- ``exact``: 1 if the phrases are equal, else 0.
- ``fuzzy``: 1 − d(a, b) / max(|a|, |b|), d the Levenshtein distance (App. D writes the normalised
  distance; as a soft true-positive count it is the similarity 1 − that).
- ``partial``: with a the shorter string, the best fuzzy score of a against the length-|a| substrings of
  b: max_t 1 − d(a, t) / |a|; equal lengths are scored as ``fuzzy``.

Levenshtein distances come from ``rapidfuzz``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "MODES",
    "BinaryScores",
    "PhraseScores",
    "assignment_tp",
    "binary_scores",
    "normalise_phrase",
    "pair_score",
    "phrase_scores",
]

MODES = ("exact", "fuzzy", "partial")


def normalise_phrase(phrase: str) -> str:
    """How phrases are compared: lower case, whitespace collapsed, outer whitespace removed."""
    return " ".join(phrase.lower().split())


def pair_score(a: str, b: str, mode: str) -> float:
    """The pairwise score of two (normalised) phrases under ``mode`` (see the module docstring)."""
    from rapidfuzz.distance import Levenshtein

    if mode == "exact":
        return 1.0 if a == b else 0.0
    if not a or not b:
        return 1.0 if a == b else 0.0
    if mode == "fuzzy":
        return float(Levenshtein.normalized_similarity(a, b))
    if mode == "partial":
        short, long = (a, b) if len(a) <= len(b) else (b, a)
        n = len(short)
        best = 0
        for start in range(len(long) - n + 1):
            best = max(best, n - int(Levenshtein.distance(short, long[start : start + n])))
            if best == n:
                break
        return best / n
    raise ValueError(f"unknown matching mode {mode!r}; one of {', '.join(MODES)}")


def assignment_tp(predicted: Sequence[str], gold: Sequence[str], mode: str) -> float:
    """TP of one unit: the maximal summed score of a one-to-one assignment of predicted to gold phrases."""
    if not predicted or not gold:
        return 0.0
    from scipy.optimize import linear_sum_assignment

    pred = [normalise_phrase(p) for p in predicted]
    ref = [normalise_phrase(g) for g in gold]
    scores = np.array([[pair_score(p, g, mode) for g in ref] for p in pred], dtype=np.float64)
    rows, cols = linear_sum_assignment(scores, maximize=True)
    return float(scores[rows, cols].sum())


def _f1(precision: float, recall: float) -> float:
    """The harmonic mean of precision and recall (0 when both are 0)."""
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


@dataclass(frozen=True)
class PhraseScores:
    """Micro-averaged P/R/F1 of one phrase kind under one matching mode."""

    tp: float
    n_predicted: int
    n_gold: int

    @property
    def precision(self) -> float:
        return self.tp / self.n_predicted if self.n_predicted else 0.0

    @property
    def recall(self) -> float:
        return self.tp / self.n_gold if self.n_gold else 0.0

    @property
    def f1(self) -> float:
        return _f1(self.precision, self.recall)

    def to_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "tp": self.tp,
            "n_predicted": self.n_predicted,
            "n_gold": self.n_gold,
        }


def phrase_scores(units: Sequence[tuple[Sequence[str], Sequence[str]]], mode: str) -> PhraseScores:
    """Scores over ``(predicted phrases, gold phrases)`` per unit, TP summed over units."""
    if mode not in MODES:
        raise ValueError(f"unknown matching mode {mode!r}; one of {', '.join(MODES)}")
    tp = sum(assignment_tp(pred, gold, mode) for pred, gold in units)
    return PhraseScores(tp, sum(len(p) for p, _ in units), sum(len(g) for _, g in units))


@dataclass(frozen=True)
class BinaryScores:
    """Stage 1: key-sentence classification."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def accuracy(self) -> float:
        return (self.tp + self.tn) / self.n if self.n else 0.0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        return _f1(self.precision, self.recall)

    def to_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
        }


def binary_scores(predicted: Sequence[bool], gold: Sequence[bool]) -> BinaryScores:
    """Confusion counts of predicted vs gold key flags."""
    pairs = list(zip(predicted, gold, strict=True))
    return BinaryScores(
        tp=sum(p and g for p, g in pairs),
        fp=sum(p and not g for p, g in pairs),
        fn=sum(g and not p for p, g in pairs),
        tn=sum(not p and not g for p, g in pairs),
    )
