"""What textual and visual cloze share about the answer's distance rank among the choices.

Each question gets a target rank ``r`` of its answer by distance to the question point: ``r`` negatives closer
than the answer, ``3 - r`` farther (:data:`CLOZE_WANTS`); :func:`balanced_ranks` deals the ranks so that each
holds as many questions as the next, so no "pick the choice at rank r" rule beats chance
(:mod:`procbench.generate.visual.dealer` deals the visual tasks' ranks).
"""

from __future__ import annotations

import numpy as np

__all__ = ["CLOZE_WANTS", "balanced_ranks"]


#: Cloze: the answer is at rank ``r`` when ``r`` negatives are closer to the question mean (class 1), ``3 - r`` not.
CLOZE_WANTS = np.array([[3 - r, r] for r in range(4)], dtype=np.int64)


def balanced_ranks(feasible: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(B,)`` a target rank per question, each among its ``feasible (B, R)`` ranks, -1 where none.

    Questions with the fewest options choose first; each takes its least-used feasible rank (ties at
    random). When some rank is still fuller than every other (many questions could take only it), its
    excess is dropped (-1: the question is skipped), so every rank holds at most as many as the next.
    """
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
