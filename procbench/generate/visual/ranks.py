"""K3=2, rank-uniform closeness: the answer's distance rank among the choices is drawn uniformly.

Paper 001's K3 (K3=1) puts one negative closer to the question than the answer, so the answer is the
second-closest choice in about half the questions and a "pick the second closest" rule beats chance by
20 points. With K3=2 each question instead gets a target rank ``r`` in ``0..3`` (balanced over the set's
questions, among the ranks its candidates can give) and negatives that put the answer at exactly rank
``r`` by distance to the question point:

- cloze: ``r`` negatives closer to the question mean than the answer, ``3 - r`` farther (the closer ones
  from the K2 candidates marked by :class:`~procbench.generate.visual.closeness.Closeness`, else from the
  question mean's own neighbours);
- coherence: an incoherent image whose distance to the mean of the other three choices is the
  ``r``-th smallest of the four choices' (:func:`coherence_ranks`).

Each task states this as candidate *classes* and, per rank, how many negatives of each class it takes
(:class:`RankRule`); every pick still comes from the narrowest K2 band level holding enough candidates of
its class, so K2 keeps its meaning.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from procbench.generate.visual.bands import LEVELS, QUESTION_KNN, Candidates, band_bounds, fmt_band
from procbench.generate.visual.selection import Selection, _band_ranges

__all__ = [
    "CLOZE_WANTS",
    "RankRule",
    "balanced_ranks",
    "coherence_gaps",
    "coherence_ranks",
    "rank_notes",
    "select_ranked",
]


#: Cloze: the answer is at rank ``r`` when ``r`` negatives are closer to the question mean (class 1), ``3 - r`` not.
CLOZE_WANTS = np.array([[3 - r, r] for r in range(4)], dtype=np.int64)


@dataclass
class RankRule:
    """How a question's negatives decide its answer's rank.

    Attributes:
        classes: ``(B, K)`` class of each K2 candidate (-1: unusable).
        wants: ``(R, C)`` how many negatives of each class put the answer at rank ``r``.
        extra_rows: ``(B, Kq)`` further images of class ``extra_class`` (-1: none), used when the candidates
            run short (cloze: neighbours of the question mean closer than the answer); None: no extras.
        extra_class: the class of ``extra_rows``.
        preference, extra_preference: ``(B, K)`` and ``(B, Kq)``: within a class, the candidates (extras) with
            the lowest values are taken first, shuffled among about :data:`PREFERENCE_SPREAD` of them (cloze:
            how far a candidate's distance to the question mean is from the answer's; coherence: how far its
            odd-one-out distance is from the nearest coherent image's; so no gap tells the rank); None:
            uniformly at random.
    """

    classes: np.ndarray
    wants: np.ndarray
    extra_rows: np.ndarray | None = None
    extra_class: int = -1
    preference: np.ndarray | None = None
    extra_preference: np.ndarray | None = None


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


#: A ranked draw with a preference takes each pick among about this many of the most preferred candidates left
#: (the strictly nearest would reuse the same few images as negatives across questions).
PREFERENCE_SPREAD = 6.0


def _take(
    mask: np.ndarray, count: np.ndarray, width: int, rng: np.random.Generator, preference: np.ndarray | None = None
) -> np.ndarray:
    """``(B, width)`` columns of ``mask (B, K)``: ``count[b]`` of its True columns, then -1; uniformly at random,
    or the lowest ``preference (B, K)`` first, each pick among about :data:`PREFERENCE_SPREAD` of the most
    preferred left (nan: least preferred)."""
    keys = rng.random(mask.shape)
    if preference is not None:  # the preferred first, shuffled among neighbours (PREFERENCE_SPREAD places)
        order = np.where(mask, np.nan_to_num(preference.astype(np.float64), nan=np.inf), np.inf)
        places = np.argsort(np.argsort(order, axis=1, kind="stable"), axis=1, kind="stable")
        keys = places + keys * PREFERENCE_SPREAD
    keys = np.where(mask, keys, np.inf)
    order = np.argsort(keys, axis=1, kind="stable")[:, :width]
    if order.shape[1] < width:
        order = np.pad(order, ((0, 0), (0, width - order.shape[1])), constant_values=-1)
    return np.where(np.arange(width)[None, :] < count[:, None], order, -1)


def select_ranked(cands: Candidates, rule: RankRule, *, k2: int, need: int, rng: np.random.Generator) -> Selection:
    """Draw ``need`` negatives per question that put the answer at a balanced target rank (see the module).

    ``Selection.rank`` holds the target rank and ``Selection.pick_class`` each pick's class; ``source``
    the band level of each pick (or ``question-knn`` for an extra) and ``level`` the widest level used.
    """
    n_q, k = cands.rows.shape
    n_levels = len(LEVELS)
    wants = np.asarray(rule.wants, dtype=np.int64)
    n_classes = wants.shape[1]
    lo, hi = band_bounds(cands.m, cands.s, k2)
    start, end = _band_ranges(cands, lo, hi)
    col = np.arange(k)
    in_band = (col[None, None, :] >= start[:, :, None]) & (col[None, None, :] < end[:, :, None])  # (B, L, K)
    of_class = rule.classes[:, None, :] == np.arange(n_classes)[None, :, None]  # (B, C, K)
    counts = np.einsum("blk,bck->blc", in_band.astype(np.int32), of_class.astype(np.int32))  # (B, L, C)
    avail = counts[:, -1, :].copy()
    if rule.extra_rows is not None:
        avail[:, rule.extra_class] += (rule.extra_rows >= 0).sum(axis=1)
    feasible = (avail[:, None, :] >= wants[None, :, :]).all(axis=2)
    rank = balanced_ranks(feasible, rng)
    want = np.where(rank[:, None] >= 0, wants[np.maximum(rank, 0)], 0)  # (B, C)

    b = np.arange(n_q)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # rows, cols, source, class
    level_out = np.zeros(n_q, dtype=np.int64)
    for c in range(n_classes):
        w = want[:, c]
        if not w.any():
            continue
        enough = counts[:, :, c] >= w[:, None]
        level = np.where(enough.any(axis=1), enough.argmax(axis=1), n_levels - 1)
        from_cands = np.minimum(w, counts[b, level, c])
        picked = _take(in_band[b, level] & of_class[:, c, :], from_cands, need, rng, rule.preference)
        cand_rows = np.where(picked >= 0, np.take_along_axis(cands.rows, np.maximum(picked, 0), axis=1), -1)
        parts.append((cand_rows, picked, np.where(picked >= 0, level[:, None], -1), np.full_like(picked, c)))
        short = w - from_cands
        if rule.extra_rows is not None and c == rule.extra_class and short.any():
            extra = _take(rule.extra_rows >= 0, short, need, rng, rule.extra_preference)
            extra_rows = np.where(extra >= 0, np.take_along_axis(rule.extra_rows, np.maximum(extra, 0), axis=1), -1)
            none = np.full_like(extra, -1)
            parts.append((extra_rows, none, np.where(extra >= 0, QUESTION_KNN, -1), np.full_like(extra, c)))
        level_out = np.maximum(level_out, np.where(w > 0, np.where(short > 0, QUESTION_KNN, level), 0))
    if not parts:
        empty = np.full((n_q, need), -1, dtype=np.int64)
        parts.append((empty, empty, empty, empty))
    # each question's picks, class by class, packed to the left
    rows, cols, source, pick_class = (np.concatenate([p[i] for p in parts], axis=1) for i in range(4))
    packed = np.argsort(rows < 0, axis=1, kind="stable")[:, :need]
    rows, cols, source, pick_class = (np.take_along_axis(x, packed, axis=1) for x in (rows, cols, source, pick_class))
    ok = (rank >= 0) & (rows >= 0).all(axis=1)
    base_count = (counts[:, 0, :] * (want > 0)).sum(axis=1)
    return Selection(rows, cols, source, level_out, base_count, lo, hi, ok, rank=rank, pick_class=pick_class)


def coherence_ranks(
    d_candidate_coherent: np.ndarray, d_candidate_mean: np.ndarray, d_coherent_mean: np.ndarray
) -> np.ndarray:
    """``(B, K)`` the rank (0: closest) of each candidate incoherent image's distance to the mean of the other
    three choices, among the four choices', were it drawn.

    Args:
        d_candidate_coherent: ``(3, B, K)`` each candidate's distance to each coherent image.
        d_candidate_mean: ``(B, K)`` its distance to the coherent images' mean ``m``.
        d_coherent_mean: ``(B, 3)`` each coherent image's distance to ``m``.
    """
    coherent_to_c, mine = _to_centroid(d_candidate_coherent, d_candidate_mean, d_coherent_mean)
    rank = (coherent_to_c < mine[None]).sum(axis=0)
    return np.where(np.isnan(d_candidate_mean), -1, rank).astype(np.int64)


def coherence_gaps(
    d_candidate_coherent: np.ndarray, d_candidate_mean: np.ndarray, d_coherent_mean: np.ndarray
) -> np.ndarray:
    """``(B, K)`` how far each candidate's distance to the mean of the other three choices is from the nearest
    such distance of a coherent image, were it drawn (nan for a missing candidate): a small gap leaves the
    intruder among the coherent images, where its rank is not told by a gap. Arguments as
    :func:`coherence_ranks`'."""
    coherent_to_c, mine = _to_centroid(d_candidate_coherent, d_candidate_mean, d_coherent_mean)
    gaps = np.abs(np.sqrt(np.maximum(coherent_to_c, 0.0)) - np.sqrt(np.maximum(mine, 0.0))[None])
    return np.asarray(gaps.min(axis=0) * 4 / 3)


def _to_centroid(
    d_candidate_coherent: np.ndarray, d_candidate_mean: np.ndarray, d_coherent_mean: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(3, B, K)`` each coherent image's and ``(B, K)`` each candidate's squared distance to the centroid of
    the four choices, were the candidate drawn.

    With choices ``a1..a3, x`` and centroid ``c = (3m + x) / 4``, a choice's distance to the mean of the other
    three is 4/3 of its distance to ``c``, and ``|x - c|² = 9/16 |x - m|²``,
    ``|a - c|² = |a - m|² - (a - m)·(x - m) / 2 + |x - m|² / 16``, with the dot product from the distances.
    """
    dxm2 = d_candidate_mean.astype(np.float64) ** 2
    dam2 = np.moveaxis(d_coherent_mean.astype(np.float64) ** 2, 1, 0)[:, :, None]  # (3, B, 1)
    dax2 = d_candidate_coherent.astype(np.float64) ** 2
    dot = (dam2 + dxm2[None] - dax2) / 2
    return dam2 - dot / 2 + dxm2[None] / 16, dxm2 * 9 / 16


def rank_notes(sel: Selection, keep: np.ndarray, tally: Counter[str]) -> dict[int, list[str]]:
    """The widening recorded for each kept question of a K3=2 draw that needed one (by question index)."""
    notes: dict[int, list[str]] = {}
    rank = sel.rank if sel.rank is not None else np.full(len(sel.level), -1)
    for b in np.flatnonzero(keep & (sel.level > 0)).tolist():
        level, lo, hi = int(sel.level[b]), sel.lo[b].tolist(), sel.hi[b].tolist()
        head = f"k3 rank {int(rank[b])}: the band {fmt_band(lo[0], hi[0])} held too few of the negatives it needs"
        if level < len(LEVELS):
            tally[f"k3-rank:{LEVELS[level]}"] += 1
            notes[b] = [f"{head}; widened to {LEVELS[level]} {fmt_band(lo[level], hi[level])}"]
        else:
            tally["k3-rank:question-knn"] += 1
            notes[b] = [f"{head}; took neighbours of the question point closer than the answer"]
    return notes
