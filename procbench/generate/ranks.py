"""What textual and visual cloze share about the answer's distance rank among the choices (rank ``r``: ``r``
negatives closer to the question than the answer, ``3 - r`` farther)."""

from __future__ import annotations

import numpy as np

__all__ = ["CLOZE_WANTS", "balanced_ranks"]


#: Cloze: the answer is at rank ``r`` when ``r`` negatives are closer to the question mean (class 1), ``3 - r`` not.
CLOZE_WANTS = np.array([[3 - r, r] for r in range(4)], dtype=np.int64)


def balanced_ranks(feasible: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(B,)`` a target rank per question among its ``feasible (B, R)`` ranks (-1: skipped): the fewest options
    first, each its least-used rank (ties at random), a rank's excess over every other dropped."""
    n_q, n_ranks = feasible.shape
    n_options = feasible.sum(axis=1)
    order = np.lexsort((rng.random(n_q), n_options))
    ties = rng.random((n_q, n_ranks))
    used = np.zeros(n_ranks, dtype=np.int64)
    out = np.full(n_q, -1, dtype=np.int64)
    for b in order[n_options[order] > 0].tolist():
        score = np.where(feasible[b], used + ties[b], np.inf)
        r = int(np.argmin(score))
        out[b] = r
        used[r] += 1
    # a rank more questions could only take than any other rank got: keep as many as the next-fullest rank
    # (those with fewest options go first), so no rank rule beats chance
    if n_ranks > 1 and used.sum():
        top = int(np.argmax(used))
        cap = int(np.sort(used)[-2])
        if used[top] > cap:
            members = [b for b in order.tolist() if out[b] == top]
            out[members[: used[top] - cap]] = -1
    return out
