"""K2, bands: the negatives' distance band from the correct choice's nearest images of other procedures.

The K_C nearest images of other procedures give m and s of their distances; negatives come from the band
(0, m−s) at K2=0 or (m−s, m+s) at K2=1, never closer than ``DUPLICATE_DISTANCE`` (a copy of the answer); a band
too small is widened (:data:`LEVELS`) and the widening recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from procbench.generate import policy
from procbench.generate.visual.sequences import repeated

__all__ = [
    "ADVERSARIAL",
    "LEVELS",
    "QUESTION_KNN",
    "RANDOM",
    "RELAXED",
    "SOURCES",
    "Candidates",
    "band_bounds",
    "fmt_band",
]

#: Band levels, narrowest first: the K2 band, widened by s/2 and by s on both sides, the whole kNN set.
LEVELS = ("band", "band±s/2", "band±s", "knn")
#: Where a negative came from: a band level, a neighbour of the question point (K3), the image nearest it,
#: a random image (RecipeQA style), or adversarial filtering's replacement.
SOURCES = (*LEVELS, "question-knn", "relaxed", "random", "adversarial")
QUESTION_KNN, RELAXED, RANDOM, ADVERSARIAL = 4, 5, 6, 7


@dataclass
class Candidates:
    """A question's K2 candidates: kNN rows of other procedures and the distances bands apply to."""

    rows: np.ndarray  # (B, K) image rows, -1: none
    dist: np.ndarray  # (B, K) float32 distances to the answer, ascending, inf: none
    m: np.ndarray  # (B,) mean and population std of the valid distances (nan: none)
    s: np.ndarray
    found: np.ndarray  # (B,) valid candidates

    @classmethod
    def from_rows(cls, dist: np.ndarray, rows: np.ndarray) -> Candidates:
        """Candidates from kNN results, computing m and s over the valid entries."""
        valid = rows >= 0
        found = valid.sum(axis=1)
        d = np.where(valid, dist, 0).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = d.sum(axis=1) / found
            s = np.sqrt((np.where(valid, d - m[:, None], 0) ** 2).sum(axis=1) / found)
        return cls(rows, np.where(valid, dist, np.inf).astype(np.float32), m, s, found)

    @classmethod
    def union(cls, dist: np.ndarray, rows: np.ndarray) -> Candidates:
        """Candidates from ``(B, r, K)`` kNN lists (of ``r`` anchors): each image once, with its smallest
        distance."""
        n_q = len(rows)
        if rows.shape[1] == 1:
            return cls.from_rows(dist[:, 0], rows[:, 0])
        d = dist.reshape(n_q, -1)
        r = rows.reshape(n_q, -1)
        order = np.argsort(d, axis=1, kind="stable")
        d, r = np.take_along_axis(d, order, axis=1), np.take_along_axis(r, order, axis=1)
        dup = repeated(r) & (r >= 0)
        r = np.where(dup, -1, r)
        d = np.where(dup, np.inf, d)
        keep = np.argsort(r < 0, axis=1, kind="stable")
        return cls.from_rows(np.take_along_axis(d, keep, axis=1), np.take_along_axis(r, keep, axis=1))


def band_bounds(m: np.ndarray, s: np.ndarray, k2: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``, each ``(B, len(LEVELS))``: the K2 band and its widenings (the last level is ``(0, inf)``)."""
    m2, s2 = m[:, None], s[:, None]
    widen = np.asarray(policy.current().BAND_WIDENING)
    if k2 == 0:
        hi = m2 - s2 + widen * s2
        lo = np.zeros_like(hi)
    else:
        lo = np.maximum(0.0, m2 - s2 - widen * s2)
        hi = m2 + s2 + widen * s2
    lo = np.concatenate([lo, np.zeros((len(m), 1))], axis=1)
    hi = np.concatenate([hi, np.full((len(m), 1), np.inf)], axis=1)
    return lo, hi


def fmt_band(lo: float, hi: float) -> str:
    """``(0.1234, 0.5678)``."""
    return f"({lo:.4f}, {hi:.4f})"
