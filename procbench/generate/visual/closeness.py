"""K3, closeness: one negative must be closer to the question's point than the question's radius.

The point and radius are the task's (cloze: the question mean and the answer's distance to it; coherence: the
coherent images' mean and their smallest pairwise distance). The ladder (:func:`.selection.select`): the band
levels, a neighbour of the point (``question-knn``), else the image nearest the point (``relaxed``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from procbench.generate import policy
from procbench.generate.visual.bands import Candidates
from procbench.generate.visual.sequences import VisualData, distances_to, member

__all__ = ["Closeness"]


@dataclass
class Closeness:
    """Which candidates satisfy the K3 rule: closer to ``points`` than ``radius``."""

    radius: np.ndarray  # (B,) the distance to beat
    ok: np.ndarray  # (B, K) candidates closer than radius
    q_rows: np.ndarray  # (B, Kq) the point's nearest images of other procedures
    q_dist: np.ndarray
    q_new: np.ndarray  # (B, Kq) usable ones not among the candidates
    q_extra: np.ndarray  # (B, Kq) those of them closer than radius
    q_usable: np.ndarray  # (B, Kq) not copies of the answer

    @classmethod
    def mark(
        cls,
        data: VisualData,
        cands: Candidates,
        points: np.ndarray,
        radius: np.ndarray,
        q_dist: np.ndarray,
        q_rows: np.ndarray,
    ) -> Closeness:
        """Mark the candidates within ``radius`` of ``points``, given the points' neighbours ``q_dist, q_rows`` (all
        within it: the candidates' distances are computed directly)."""
        b = np.arange(len(points), dtype=np.int64)[:, None] * data.n_rows
        q_close = (q_rows >= 0) & (q_dist < radius[:, None])
        c_valid = cands.rows >= 0
        c_codes = np.where(c_valid, b + cands.rows, -1)
        q_codes = np.where(q_close, b + q_rows, -2)
        ok = c_valid & member(c_codes, q_codes[q_close])
        copies = c_valid & (cands.dist <= policy.current().DUPLICATE_DISTANCE)
        q_usable = (q_rows >= 0) & ~member(np.where(q_rows >= 0, b + q_rows, -2), c_codes[copies])
        q_new = q_usable & ~member(np.where(q_rows >= 0, b + q_rows, -2), c_codes[c_valid])
        q_extra = q_close & q_new
        incomplete = np.flatnonzero((q_rows[:, -1] >= 0) & (q_dist[:, -1] < radius))
        if len(incomplete):
            exact = distances_to(data, cands.rows[incomplete], points[incomplete])
            ok[incomplete] = c_valid[incomplete] & (np.nan_to_num(exact, nan=np.inf) < radius[incomplete, None])
        return cls(radius, ok, q_rows, q_dist, q_new, q_extra, q_usable)
