"""The RecipeQA style: random images of other procedures beyond a fixed distance (given, or the median distance
of random image pairs: :func:`resolve_min_distance`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from procbench.generate import policy
from procbench.generate.search import median_pair_distance
from procbench.generate.visual.plans import Plan
from procbench.generate.visual.sequences import GATHER_BATCH, VisualData, repeated
from procbench.generate.visual.settings import PlanKey
from procbench.rng import stream

__all__ = ["random_far_images", "resolve_min_distance"]


#: The random image pairs of the RecipeQA style's fixed distance.
_MIN_DISTANCE = stream("visual.recipeqa.min-distance")


def resolve_min_distance(
    data: VisualData, plans: Mapping[PlanKey, Plan], min_distance: float | None, *, seed: int, code: int
) -> float:
    """The RecipeQA style's fixed distance when a plan resamples freely: ``min_distance`` if given, else the median
    distance between random images of different procedures; 0.0 when no setting needs it."""
    if PlanKey(None) not in plans:
        return 0.0
    if min_distance is not None:
        return min_distance
    groups = np.where(data.owner < 0, -1 - np.arange(data.n_rows), data.owner)  # an image of no procedure: its own

    def distance(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        diff = data.gather(i) - data.gather(j)
        return np.sqrt(np.einsum("nd,nd->n", diff, diff))

    return median_pair_distance(groups, distance, _MIN_DISTANCE.rng(seed, code))


def random_far_images(
    data: VisualData, proc: np.ndarray, anchors: np.ndarray, need: int, min_distance: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Images of other procedures drawn uniformly beyond ``min_distance`` of every ``anchors (B, A)`` image (``8·need``
    a round; still short after 8 rounds: the farthest drawn): ``rows (B, need)`` (-1: none), ``short (B,)``."""
    n_q = len(proc)
    rounds, per_round = 8, 8 * need
    chosen = np.full((n_q, need), -1, dtype=np.int64)
    n_chosen = np.zeros(n_q, dtype=np.int64)
    hist_rows = np.full((n_q, rounds * per_round), -1, dtype=np.int64)
    hist_d = np.full((n_q, rounds * per_round), -np.inf, dtype=np.float32)
    anchor_vecs = data.gather(anchors)
    for r in range(rounds):
        todo = np.flatnonzero(n_chosen < need)
        if not len(todo) or data.n_rows == 0:
            break
        draw = rng.integers(0, data.n_rows, (len(todo), per_round))
        dist = np.empty(draw.shape, dtype=np.float32)
        for start in range(0, len(todo), GATHER_BATCH // 4):
            part = slice(start, start + GATHER_BATCH // 4)
            dots = np.einsum("brd,bad->bra", data.gather(draw[part]), anchor_vecs[todo[part]])
            dist[part] = np.sqrt(np.maximum(0.0, 2.0 - 2.0 * dots)).min(axis=2)  # unit vectors
        usable = ~data.is_own(proc[todo], draw)
        usable &= ~repeated(draw) & ~(draw[:, :, None] == chosen[todo][:, None, :]).any(axis=2)
        hist_rows[todo, r * per_round : (r + 1) * per_round] = np.where(usable, draw, -1)
        hist_d[todo, r * per_round : (r + 1) * per_round] = np.where(usable, dist, -np.inf)
        usable &= dist > policy.current().DUPLICATE_DISTANCE
        far = usable & (dist > min_distance)
        rank = np.cumsum(far, axis=1) + n_chosen[todo][:, None]
        accept = far & (rank <= need)
        qi, cj = np.nonzero(accept)
        slot = rank[qi, cj] - 1
        chosen[todo[qi], slot] = draw[qi, cj]
        n_chosen[todo] = np.minimum(need, n_chosen[todo] + far.sum(axis=1))
    short = n_chosen < need
    for q in np.flatnonzero(short).tolist():  # rare: only questions whose draws all fell near the answer
        have = set(chosen[q, : n_chosen[q]].tolist())
        order = np.argsort(-hist_d[q], kind="stable")
        for j in order.tolist():
            row = int(hist_rows[q, j])
            if n_chosen[q] == need or row < 0:
                break
            if row in have:
                continue
            have.add(row)
            chosen[q, n_chosen[q]] = row
            n_chosen[q] += 1
    return chosen, short
