"""K3=2, rank-uniform closeness: the answer's distance rank among the choices is drawn uniformly.

Paper 001's K3 (K3=1) puts one negative closer to the question than the answer, so the answer is the
second-closest choice in about half the questions and a "pick the second closest" rule beats chance by
20 points. With K3=2 each question that could take every rank gets a target rank ``r`` in ``0..3``, dealt
at random with equally many of each (:func:`independent_ranks`), and negatives that put the answer at
exactly rank ``r`` by distance to the question point:

- cloze: ``r`` negatives closer to the question mean than the answer, ``3 - r`` farther (marked by
  :class:`~procbench.generate.visual.closeness.Closeness`), all from one pool and strictly nearest the
  answer's own distance, so the four distances are spaced alike whichever is the answer's;
- coherence: an incoherent image whose distance to the mean of the other three choices is the
  ``r``-th smallest of the four choices' (:func:`coherence_ranks`), nearest where it would lie were the four
  spaced like four images of one procedure (:func:`coherence_misfits`, :func:`own_layouts`).

Each task states this as candidate *classes* and, per rank, how many negatives of each class it takes
(:class:`RankRule`); the pool is the narrowest K2 band level holding enough candidates of every class the
rank needs, so K2 keeps its meaning.

Cloze's knob settings then draw the negatives again from the same pool and classes (:func:`exchange_draw`), so
that the answer's mean distance to the other choices takes a rank dealt evenly and independently of ``r``: K2
draws the negatives by their distance to the answer, which otherwise leaves the answer the odd one out of its
choices (K2=1) or their hub (K2=0).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from procbench.generate.ranks import CLOZE_WANTS, balanced_ranks
from procbench.generate.visual.bands import LEVELS, QUESTION_KNN, Candidates, band_bounds, fmt_band
from procbench.generate.visual.selection import Selection, _band_ranges
from procbench.rng import stream

__all__ = [
    "CLOZE_WANTS",
    "EVEN_SPREAD_K2",
    "EXCHANGE_SHORTLIST",
    "Exchange",
    "RankRule",
    "balanced_ranks",
    "coherence_misfits",
    "coherence_ranks",
    "exchange_combos",
    "exchange_draw",
    "independent_ranks",
    "layout_ranks",
    "odd_one_out",
    "own_layouts",
    "rank_notes",
    "select_ranked",
    "spread_ranks",
]


#: The layouts coherence's ranks are drawn from.
_LAYOUTS = stream("visual.layouts")


@dataclass
class Exchange:
    """What :func:`exchange_draw` needs of a chunk's questions beside their pools.

    Attributes:
        answers: ``(B,)`` the answers' image rows.
        gather: ``gather(rows (...,))``: ``(..., D)`` the images' vectors (unit length, as the audit's).
        density: ``density(rows (...,))``: ``(...)`` the images' density (:func:`procbench.shortcuts.hubness`): the
            answer's rank by it among the choices gets a dealt target too; None: not.
    """

    answers: np.ndarray
    gather: Callable[[np.ndarray], np.ndarray]
    density: Callable[[np.ndarray], np.ndarray] | None = None


@dataclass
class RankRule:
    """How a question's negatives decide its answer's rank.

    Attributes:
        classes: ``(B, K)`` class of each K2 candidate (-1: unusable).
        wants: ``(R, C)`` how many negatives of each class put the answer at rank ``r``.
        extra_rows, extra_classes: ``(B, Kq)`` further images and their classes (-1: none), pooled with the whole
            kNN set when no band level holds enough candidates (cloze: neighbours of the question mean that are
            not candidates); None: no extras.
        preference, extra_preference: ``(B, K)`` and ``(B, Kq)``: within a class, the candidates (extras) with
            the lowest values are taken first, shuffled among about :data:`PREFERENCE_SPREAD` of them (cloze:
            how far a candidate's distance to the question mean is from the answer's; coherence: how far its
            odd-one-out distance is from a drawn target; so no gap tells the rank); None: uniformly at random.
        tolerance: ``(B,)`` a band level holds a candidate toward its class only where its preference is at most
            this (the last pool, the kNN set with the extras, takes any); None: every candidate counts.
        secondary, extra_secondary: ``(B, K)`` and ``(B, Kq)`` added to the preference when the picks are
            ordered, not when ``tolerance`` is applied (the image-statistics gaps, :func:`.adversarial.image_gaps`:
            within its class a negative that relates to the question's photos as the answer does is taken first);
            None: nothing.
        layout: ``layout(picked)``: ``(B, 1 + need)`` each choice's distance (the answer's first) were the pool
            columns ``picked (B, need)`` (into the candidates, then the extras; -1: none) drawn; with it the ranks
            are dealt so that these distances are alike at every rank (:func:`layout_ranks`). None: at random.
        exchange: what the exchangeable last draw needs (:func:`exchange_draw`: cloze); None: the most preferred
            candidates of each class are the negatives.
    """

    classes: np.ndarray
    wants: np.ndarray
    extra_rows: np.ndarray | None = None
    extra_classes: np.ndarray | None = None
    preference: np.ndarray | None = None
    extra_preference: np.ndarray | None = None
    tolerance: np.ndarray | None = None
    layout: Callable[[np.ndarray], np.ndarray] | None = None
    secondary: np.ndarray | None = None
    extra_secondary: np.ndarray | None = None
    exchange: Exchange | None = None

    def extras(self, n_q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, classes, preference)`` of the extras, each ``(B, Kq)`` (``Kq = 0`` without extras)."""
        if self.extra_rows is None or self.extra_classes is None:
            empty = np.zeros((n_q, 0), dtype=np.int64)
            return empty, empty, np.zeros((n_q, 0))
        classes = np.where(self.extra_rows >= 0, self.extra_classes, -1)
        preference = self.extra_preference if self.extra_preference is not None else np.zeros(classes.shape)
        return self.extra_rows, classes, preference


def independent_ranks(feasible: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(B,)`` a target rank per question that could take every rank (``feasible (B, R)`` all True), -1 for the
    others: the ranks, equally many of each, are dealt in random order.

    Unlike :func:`balanced_ranks`, a question's rank does not depend on what its candidates allow. A question
    whose answer is nearer its question than every image of another procedure can only take rank 0; were it
    kept, rank 0 would gather exactly the questions whose answer stands apart from its negatives, and the
    spacing of the choices' distances would tell the answer (measured: a linear probe on them read 0.52 on a
    set whose every rank held a quarter of the answers).
    """
    n_q, n_ranks = feasible.shape
    out = np.full(n_q, -1, dtype=np.int64)
    every = np.flatnonzero(feasible.all(axis=1))
    dealt = len(every) - len(every) % n_ranks
    chosen = rng.permutation(every)[:dealt]
    out[np.sort(chosen)] = rng.permutation(np.arange(dealt) % n_ranks)
    return out


#: A ranked draw with a preference takes each pick among about this many of the most preferred candidates left.
#: One: strictly the nearest in turn (deterministic); a wider spread reuses fewer images as negatives
#: but leaves the answer's distance set apart from its negatives' (measured on synthetic cloze, audit
#: ``question_distance``: 0.27 at 1, 0.30 at 3, 0.31 at 6).
PREFERENCE_SPREAD = 1.0


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


def select_ranked(
    cands: Candidates,
    rule: RankRule,
    *,
    k2: int,
    need: int,
    rng: np.random.Generator,
    deal: Callable[[np.ndarray, np.random.Generator], np.ndarray] | None = None,
    exchange: bool = False,
) -> Selection:
    """Draw ``need`` negatives per question that put the answer at the target rank ``deal`` gives it
    (:func:`balanced_ranks` keeps more questions, for a set that adversarial filtering then takes further). By
    default the ranks are :func:`independent_ranks`; with ``rule.layout`` every question is drawn at every rank
    and the ranks, still equally many of each, are then dealt so that the choices' distances are shaped alike at
    every rank (:func:`layout_ranks`).

    Every negative of a question comes from one pool: the narrowest K2 band level that holds enough candidates
    of every class the rank needs (within ``rule.tolerance`` of the preference, if given), else the whole kNN set
    with the extras (``question-knn``). One pool for every class keeps the spacing of the choices' distances the
    same on both sides of the answer's, so the answer's place among them tells nothing.

    With ``exchange`` and ``rule.exchange`` (cloze's knob settings: the ``adversarial`` draft keeps its own), the
    negatives at the dealt rank are then drawn again from the same pool by :func:`exchange_draw`.

    ``Selection.rank`` holds the target rank and ``Selection.pick_class`` each pick's class; ``source``
    the band level of each pick (or ``question-knn`` for an extra) and ``level`` the pool's level.
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
    extra_rows, extra_classes, extra_preference = rule.extras(n_q)
    extra_counts = (extra_classes[:, None, :] == np.arange(n_classes)[None, :, None]).sum(axis=2)  # (B, C)
    avail = counts[:, -1, :] + extra_counts
    if rule.tolerance is not None and rule.preference is not None:  # a level holds only the candidates that fit
        fits = np.nan_to_num(rule.preference, nan=np.inf) <= rule.tolerance[:, None]
        counts = np.einsum("blk,bck->blc", in_band.astype(np.int32), (of_class & fits[:, None, :]).astype(np.int32))
    feasible = (avail[:, None, :] >= wants[None, :, :]).all(axis=2)
    classes = np.concatenate([rule.classes, extra_classes], axis=1)
    pool_rows = np.concatenate([cands.rows, extra_rows], axis=1)
    preference = None
    if rule.preference is not None:
        preference = np.concatenate([rule.preference, extra_preference], axis=1)
    if preference is not None and rule.secondary is not None:
        extra_secondary = rule.extra_secondary if rule.extra_secondary is not None else np.zeros(extra_rows.shape)
        preference = preference + np.concatenate([rule.secondary, extra_secondary], axis=1)

    def pool_at(level: np.ndarray) -> np.ndarray:
        """``(B, K + Kq)`` each question's pool at its ``level (B,)``: its band level's candidates, or the kNN set
        with the extras."""
        with_extras = level == QUESTION_KNN
        return np.concatenate(
            [in_band[np.arange(n_q), np.minimum(level, n_levels - 1)], (extra_classes >= 0) & with_extras[:, None]],
            axis=1,
        )

    def draw(rank: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(picked, pick_class, level)``: the pool columns that put each answer at ``rank (B,)`` (-1: none)."""
        want = np.where(rank[:, None] >= 0, wants[np.maximum(rank, 0)], 0)  # (B, C)
        enough = (counts >= want[:, None, :]).all(axis=2)  # (B, L)
        level = np.where(enough.any(axis=1), enough.argmax(axis=1), QUESTION_KNN)
        pool = pool_at(level)  # (B, K + Kq)
        parts = []
        for c in range(n_classes):
            if want[:, c].any():
                picked = _take(pool & (classes == c), want[:, c], need, rng, preference)
                parts.append((picked, np.where(picked >= 0, c, -1)))
        if not parts:
            parts.append((np.full((n_q, need), -1, dtype=np.int64),) * 2)
        # each question's picks, class by class, packed to the left
        picked, pick_class = (np.concatenate([p[i] for p in parts], axis=1) for i in range(2))
        packed = np.argsort(picked < 0, axis=1, kind="stable")[:, :need]
        picked, pick_class = (np.take_along_axis(x, packed, axis=1) for x in (picked, pick_class))
        return picked, pick_class, level

    if deal is None and rule.layout is not None:  # every rank drawn, then the ranks dealt to balance the layouts
        dealt = independent_ranks(feasible, rng)
        by_rank = [draw(np.where(dealt >= 0, r, -1)) for r in range(len(wants))]
        layouts = np.stack([rule.layout(d[0]) for d in by_rank], axis=1)  # (B, R, 1 + need)
        rank = layout_ranks(layouts, dealt, rng)
        at = np.maximum(rank, 0)
        picked, pick_class, level = (np.stack([d[i] for d in by_rank], axis=1)[np.arange(n_q), at] for i in range(3))
    else:
        rank = (deal or independent_ranks)(feasible, rng)
        picked, pick_class, level = draw(rank)
    target: np.ndarray | None = None
    reached: np.ndarray | None = None
    if exchange and rule.exchange is not None:
        again, target, reached = exchange_draw(
            pool_at(level), classes, preference, np.where((picked >= 0).all(axis=1), rank, -1), wants, pool_rows,
            rule.exchange, rng, even_spread=k2 in EVEN_SPREAD_K2,
        )  # fmt: skip
        drawn: np.ndarray = np.asarray((again >= 0).all(axis=1))
        picked = np.where(drawn[:, None], again, picked)
        pick_class = np.where(picked >= 0, np.take_along_axis(classes, np.maximum(picked, 0), axis=1), -1)
    want = np.where(rank[:, None] >= 0, wants[np.maximum(rank, 0)], 0)
    rows = np.where(picked >= 0, np.take_along_axis(pool_rows, np.maximum(picked, 0), axis=1), -1)
    cols = np.where((picked >= 0) & (picked < k), picked, -1)
    source = np.where(picked < 0, -1, np.where(picked < k, np.minimum(level, n_levels - 1)[:, None], QUESTION_KNN))
    ok = (rank >= 0) & (rows >= 0).all(axis=1)
    base_count = (counts[:, 0, :] * (want > 0)).sum(axis=1)
    return Selection(
        rows, cols, source, level, base_count, lo, hi, ok, rank=rank, pick_class=pick_class, spread_target=target,
        spread_reached=reached,
    )  # fmt: skip


#: The exchangeable last draw (:func:`exchange_draw`) takes each class's negatives among this many of its most
#: preferred candidates.
EXCHANGE_SHORTLIST = 6
#: The K2 values whose exchangeable draw also evens out the four choices' odd-one-out distances (``even_spread``):
#: K2 = 1 draws the negatives in a band of distances from the answer, nearer each other than the answer is, so
#: the answer's distance to the others told it apart by its size even at an evenly dealt rank. K2 = 0 (the answer
#: their hub) read worse with it (measurements: benchmarks/real_photos.md, session 16).
EVEN_SPREAD_K2 = (1,)


def _places(values: np.ndarray) -> np.ndarray:
    """``(b, n)`` each entry's place (0: smallest) along the last axis of ``values (b, n)`` (ties in order)."""
    return np.argsort(np.argsort(values, axis=1, kind="stable"), axis=1, kind="stable").astype(np.float64)


def exchange_combos(wants: np.ndarray, shortlist: int) -> list[np.ndarray]:
    """Per rank ``r``, ``(n, need)``: every way to take ``wants[r, c]`` of class ``c``'s ``shortlist`` columns
    (class ``c``'s at ``c * shortlist`` and on), each class's in increasing order."""
    from itertools import combinations, product

    out = []
    for want in np.asarray(wants, dtype=np.int64):
        per_class = [list(combinations(range(c * shortlist, (c + 1) * shortlist), int(w))) for c, w in enumerate(want)]
        out.append(np.array([sum(parts, ()) for parts in product(*per_class)], dtype=np.int64))
    return out


def spread_ranks(dist: np.ndarray) -> np.ndarray:
    """``(...)`` the rank (0: smallest) of the first choice's mean distance to the other choices among the choices'
    own, from their distances ``dist (..., k, k)`` (ties count for the first)."""
    spread = dist.sum(axis=-1) / (dist.shape[-1] - 1)
    return np.asarray((spread[..., 1:] < spread[..., :1]).sum(axis=-1))


#: With a density to deal (:attr:`Exchange.density`), half of each class's shortlist is its most preferred images
#: sparser than the answer among those whose preference is at most this many times the class's
#: :data:`EXCHANGE_SHORTLIST`-th best. Measured (cloze K3 = 2, 5 seeds, benchmarks/real_photos.md, session 20):
#: 1.5 took the build guides' knobs-012 hubness 0.476 -> 0.338 with question_distance 0.27 -> 0.29; on the synthetic
#: test store the K3 = 2 question_distance stayed at chance at 1.2 and 1.5 and read 0.33 at 2.0, 0.50 unbounded.
DENSITY_TOLERANCE = 1.5


def _shortlist(
    usable: np.ndarray, below: np.ndarray | None, m: int, rng: np.random.Generator, preference: np.ndarray | None
) -> np.ndarray:
    """``(B, m)`` pool columns of ``usable (B, P)``: the ``m`` most preferred; or, with ``below (B, P)`` (sparser than
    the answer), up to half of them among the sparser images whose preference is within :data:`DENSITY_TOLERANCE`
    of the ``m``-th best and the rest among the others, so a combination can put the answer at any density rank
    without taking negatives far down the preference."""
    if below is None or preference is None:
        return _take(usable, np.minimum(usable.sum(axis=1), m), m, rng, preference)
    pref = np.where(usable, np.nan_to_num(preference, nan=np.inf), np.inf)
    kth = np.sort(pref, axis=1)[:, min(m, pref.shape[1]) - 1][:, None]
    low = usable & below & (pref <= np.where(np.isfinite(kth), kth * DENSITY_TOLERANCE, np.inf))
    high = usable & ~low
    n_low, n_high = low.sum(axis=1), high.sum(axis=1)
    take_low = np.minimum(n_low, np.maximum(m // 2, m - n_high))
    take_high = np.minimum(n_high, m - take_low)
    picks = [_take(low, take_low, m, rng, preference), _take(high, take_high, m, rng, preference)]
    both = np.concatenate(picks, axis=1)
    packed = np.argsort(both < 0, axis=1, kind="stable")[:, :m]
    return np.take_along_axis(both, packed, axis=1)


def exchange_draw(
    pool: np.ndarray,
    classes: np.ndarray,
    preference: np.ndarray | None,
    rank: np.ndarray,
    wants: np.ndarray,
    pool_rows: np.ndarray,
    exchange: Exchange,
    rng: np.random.Generator,
    *,
    even_spread: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(picked, target, reached)``: each question's negatives (pool columns, ``(B, need)``, -1: none), drawn so
    that the answer does not stand out by how far it lies from the other choices.

    Each choice's mean distance to the other three (the audit's ``other_choices``) is the odd-one-out statistic:
    negatives drawn by their distance to the answer (K2) leave the answer the choice farthest from the others
    (the negatives near each other: "pick the choice farthest from the rest" read 0.44-0.51 on the real photos'
    K3 = 2, K2 = 1) or their hub (near the answer, far from each other). So every question at rank ``r >= 0``
    gets a target rank ``target (B,)`` of the answer's statistic among the four choices', dealt equally often at
    each rank and independently of ``r`` (a fair deal within each K3 rank), and takes ``wants[r]`` negatives of
    each class from its pool (``pool (B, P)``, ``classes (B, P)``: as the ranked draw) among the
    :data:`EXCHANGE_SHORTLIST` most preferred of each class: of the combinations that put the answer's
    statistic at its target rank (else at the nearest rank any does), the most preferred (least sum of
    ``preference``; without one, of the places in the shortlists). With ``exchange.density``, the answer's rank by
    density (:func:`procbench.shortcuts.hubness`) among the choices gets a target too, dealt the same way, and
    each class's shortlist holds sparser images than the answer (:func:`_shortlist`); among the combinations
    nearest the spread's target, those nearest the density's are taken. An answer's neighbours are hubs, in denser
    regions than the answer: drawn without it, the answer was the sparsest choice in 54% of the questions (real
    photos, K3 = 2, K2 = 1), which the audit's ``hubness`` reads. With ``even_spread``, the one whose place by
    preference plus place by the spread of the four choices' statistics (their coefficient of variation: all four
    as central, so the answer's value tells nothing by its size either) is least, ties by preference.

    ``reached (B,)``: the target rank was met.
    """
    n_q = len(rank)
    m = EXCHANGE_SHORTLIST
    need = int(wants[0].sum())
    below = None  # (B, P) the pool's images in sparser regions than the answer
    if exchange.density is not None:
        own = exchange.density(exchange.answers)[:, None]
        below = np.where(pool_rows >= 0, exchange.density(np.maximum(pool_rows, 0)), np.inf) < own
    short = np.concatenate(
        [_shortlist(pool & (classes == c), below, m, rng, preference) for c in range(wants.shape[1])], axis=1
    )
    short_rows = np.where(short >= 0, np.take_along_axis(pool_rows, np.maximum(short, 0), axis=1), -1)
    if preference is None:
        short_pref = np.tile(np.arange(short.shape[1]) % m, (n_q, 1)).astype(np.float64)
    else:
        short_pref = np.take_along_axis(np.nan_to_num(preference, nan=np.inf), np.maximum(short, 0), axis=1)
    short_pref = np.where(short >= 0, short_pref, np.inf)
    target = np.full(n_q, -1, dtype=np.int64)
    picked = np.full((n_q, need), -1, dtype=np.int64)
    reached = np.zeros(n_q, dtype=bool)
    combos = exchange_combos(wants, m)
    sparser = None  # (B, S): the shortlisted images sparser than the answer
    if below is not None:
        sparser = np.take_along_axis(below, np.maximum(short, 0), axis=1) & (short >= 0)
    for r in range(len(wants)):
        b = np.flatnonzero(rank == r)
        target[b] = rng.permutation(np.arange(len(b)) % (need + 1))
        density_target = rng.permutation(np.arange(len(b)) % (need + 1)) if sparser is not None else None
        if not len(b):
            continue
        vectors = exchange.gather(np.concatenate([exchange.answers[b, None], short_rows[b]], axis=1))
        vectors = vectors.astype(np.float64) / np.maximum(np.linalg.norm(vectors, axis=2, keepdims=True), 1e-12)
        gram = np.einsum("bsd,btd->bst", vectors, vectors)
        dist = np.sqrt(np.maximum(2.0 - 2.0 * gram, 0.0))  # (b, S, S): the answer, then the shortlist
        dist[:, np.arange(dist.shape[1]), np.arange(dist.shape[1])] = 0.0  # exactly: rounding leaves ~1e-8
        idx = combos[r]  # (n, need) into the shortlist
        four = np.concatenate([np.zeros((len(idx), 1), dtype=np.int64), idx + 1], axis=1)  # (n, 1 + need) into S
        foursomes = dist[:, four[:, :, None], four[:, None, :]]  # (b, n, 1 + need, 1 + need)
        at = spread_ranks(foursomes)  # (b, n)
        miss = np.abs(at - target[b][:, None])
        value = short_pref[b][:, idx].sum(axis=2)  # (b, n); inf where a pick is missing
        both = miss * (need + 2)  # the spread's target first, then the density's
        if sparser is not None and density_target is not None:
            both = both + np.abs(sparser[b][:, idx].sum(axis=2) - density_target[:, None])
        best_both = np.where(np.isfinite(value), both, (need + 2) ** 2).min(axis=1, keepdims=True)
        cost = np.where(both == best_both, value, np.inf)
        if even_spread:
            spreads = foursomes.sum(axis=-1) / need  # (b, n, 1 + need): each choice's mean distance to the others
            evenness = spreads.std(axis=-1) / np.maximum(spreads.mean(axis=-1), 1e-12)
            by_value = _places(cost)  # the combinations off target are inf, so they come last
            by_evenness = _places(np.where(np.isfinite(cost), evenness, np.inf))
            cost = np.where(np.isfinite(cost), by_value + by_evenness + by_value / (2.0 * cost.shape[1]), np.inf)
        best = np.argmin(cost, axis=1)
        found = np.isfinite(cost[np.arange(len(b)), best])
        picked[b[found]] = short[b][np.arange(len(b))[:, None], idx[best]][found]
        reached[b] = found & (miss[np.arange(len(b)), best] == 0)
    return picked, target, reached


#: Fewer questions than this keep the ranks dealt at random: too few to balance.
LAYOUT_MIN_QUESTIONS = 40
#: Questions balanced at once (a linear programme of 4 variables per question: about 0.6 s for 1000).
LAYOUT_BLOCK = 1000


def layout_shapes(values: np.ndarray) -> np.ndarray:
    """``(Q, 2C + 2)``: the sorted deviations of ``values (Q, C)`` from their mean, the sorted standardised
    deviations, their standard deviation and mean. A probe on each choice's distance, its deviation, standardised
    deviation and rank within the question sees the question's shape and the rank of each choice; so how well
    the shape tells the answer's rank bounds every such probe."""
    v = np.sort(values, axis=1)
    centred = v - v.mean(axis=1, keepdims=True)
    std = centred.std(axis=1, keepdims=True)
    return np.concatenate([centred, centred / np.maximum(std, 1e-12), std, v.mean(axis=1, keepdims=True)], axis=1)


def layout_ranks(layouts: np.ndarray, dealt: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(B,)`` a rank per question dealt ``dealt (B,)`` one (-1: none), as many of each as ``dealt`` has, chosen so
    that the shape of the choices' distances does not tell the answer's rank.

    ``layouts (B, R, C)`` are each choice's distance (the answer's first) were the question drawn at rank ``r``
    (nan: it could not be). The questions are split at random into blocks of :data:`LAYOUT_BLOCK`, each balanced
    by :func:`_balanced_ranks` (one linear programme; its time grows faster than its size).
    """
    chosen = np.flatnonzero(dealt >= 0)
    out = dealt.copy()
    n_blocks = max(1, -(-len(chosen) // LAYOUT_BLOCK))
    for block in np.array_split(rng.permutation(chosen), n_blocks):
        block = np.sort(block)
        out[block] = _balanced_ranks(layouts[block], dealt[block], rng)
    return out


def _balanced_ranks(layouts: np.ndarray, dealt: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(n,)`` the ranks ``dealt (n,)`` holds, dealt again to balance ``layouts (n, R, C)`` over the ranks.

    The ranks are the solution of one linear programme: the questions at each rank have the mean of every
    :func:`layout_shapes` feature and of its square (standardised) within a standard error of a random rank's of
    the set's mean, as nearly as the draws allow (the sum of the excess is minimised). With first and second
    moments alike at every rank, a linear or quadratic probe of the rank on the shape finds nothing. Balanced
    exactly, every fold of a cross-validated probe would lack what its training folds hold, and it would read
    below chance; pushed against a fitted probe instead (each question where the probe least expects its
    answer), the dealing leaves the opposite pattern, which a probe reads as well (both measured). The few
    questions the programme splits between ranks go where it put the most of them, the counts kept
    (:func:`_cheapest`).
    """
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix, hstack, identity, vstack

    n, n_ranks, n_choices = layouts.shape
    if n < LAYOUT_MIN_QUESTIONS:
        return dealt
    missing = ~np.isfinite(layouts).all(axis=2)  # (n, R): a rank the question could not be drawn at
    shapes = layout_shapes(np.where(missing[:, :, None], 0.0, layouts).reshape(n * n_ranks, n_choices))
    feats = np.concatenate([shapes, shapes**2], axis=1)
    usable = ~missing.reshape(-1)
    feats = (feats - feats[usable].mean(axis=0)) / np.maximum(feats[usable].std(axis=0), 1e-12)
    feats = np.where(usable[:, None], feats, 0.0).reshape(n, n_ranks, -1)  # (n, R, F)
    n_feats = feats.shape[2]
    capacity = np.bincount(dealt, minlength=n_ranks).astype(np.float64)
    cells = np.arange(n * n_ranks)
    per_question, per_rank = _assignment_rows(n, n_ranks)
    # balance rows (r, f): mean of f over the questions at rank r minus its mean over all questions
    rank_of = cells % n_ranks
    rows, cols, vals = [], [], []
    for r in range(n_ranks):
        own = np.where(rank_of == r, 1.0 / max(capacity[r], 1.0), 0.0) - 1.0 / n  # (n R,)
        for f in range(n_feats):
            coef = own * feats[:, :, f].reshape(-1)
            nz = np.flatnonzero(coef)
            rows.append(np.full(len(nz), r * n_feats + f))
            cols.append(nz)
            vals.append(coef[nz])
    n_balance = n_ranks * n_feats
    balance = csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_balance, n * n_ranks)
    )
    slack = identity(n_balance, format="csr")
    a_eq = vstack(
        [
            hstack([per_question, csr_matrix((n, 4 * n_balance))]),
            hstack([per_rank, csr_matrix((n_ranks, 4 * n_balance))]),
            hstack([balance, -slack, slack, -slack, slack]),
        ]
    )
    b_eq = np.concatenate([np.ones(n), capacity, np.zeros(n_balance)])
    tie = rng.random(n * n_ranks) * 1e-6  # a question's ranks that balance alike: chosen at random
    objective = np.concatenate([tie, np.zeros(2 * n_balance), np.ones(2 * n_balance)])
    # a rank's mean may stray from the set's by the standard error of a random rank's (free slack), no more:
    # balanced exactly, every fold of a cross-validated probe would lack what its training folds hold
    noise = np.repeat(np.sqrt(np.maximum(1.0 / np.maximum(capacity, 1.0) - 1.0 / n, 0.0)), n_feats)
    upper = np.concatenate([np.where(missing.reshape(-1), 0.0, 1.0), noise, noise, np.full(2 * n_balance, np.inf)])
    bounds = np.stack([np.zeros(len(upper)), upper], axis=1)
    result = linprog(objective, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if not result.success:  # pragma: no cover - dealt ranks are always a feasible point
        return dealt
    share = result.x[: n * n_ranks].reshape(n, n_ranks)
    return _cheapest(np.where(missing, np.inf, -share), capacity.astype(np.int64), rng)


def _assignment_rows(n: int, n_ranks: int) -> tuple[Any, Any]:
    """The equality rows of assigning ``n`` questions to ``n_ranks`` ranks, over the ``n * n_ranks`` cells
    (question-major): one row per question (its cells sum to 1) and one per rank (its cells sum to its count)."""
    from scipy.sparse import csr_matrix

    cells = np.arange(n * n_ranks)
    ones = np.ones(n * n_ranks)
    per_question = csr_matrix((ones, (cells // n_ranks, cells)), shape=(n, n * n_ranks))
    per_rank = csr_matrix((ones, (cells % n_ranks, cells)), shape=(n_ranks, n * n_ranks))
    return per_question, per_rank


def _cheapest(cost: np.ndarray, capacity: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(n,)`` a column per row of ``cost (n, R)``, ``capacity[r]`` rows per column (summing to ``n``), of least
    total cost: a transportation problem, whose linear programme has an integral optimum. Ties are broken at
    random; inf costs (a rank a question cannot take) are never chosen while any other fits."""
    from scipy.optimize import linprog
    from scipy.sparse import vstack

    n, n_ranks = cost.shape
    finite = np.isfinite(cost)
    big = (np.abs(cost[finite]).max() if finite.any() else 0.0) * n + 1.0
    c = np.where(finite, cost, big) + rng.random(cost.shape) * 1e-9
    per_row, per_col = _assignment_rows(n, n_ranks)
    result = linprog(
        c.reshape(-1),
        A_eq=vstack([per_row, per_col]),
        b_eq=np.concatenate([np.ones(n), capacity.astype(np.float64)]),
        bounds=(0, 1),
        method="highs",
    )
    if not result.success:  # pragma: no cover - a feasible transportation problem always has an optimum
        raise RuntimeError(f"rank dealing failed: {result.message}")
    return np.asarray(result.x.reshape(n, n_ranks).argmax(axis=1), dtype=np.int64)


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


def coherence_misfits(odd: np.ndarray, gaps: np.ndarray) -> np.ndarray:
    """``(B, K)`` how far each candidate's odd-one-out distance (to the mean of the other three choices, were it
    drawn) is from where it would lie at its rank were the four choices spaced like ``gaps``, in units of the
    coherent images' spread ``c3 - c1`` (nan for a missing one). ``odd (4, B, K)``: :func:`odd_one_out`.

    ``gaps (B, 3)`` is one layout per question: the three gaps between the sorted odd-one-out distances of four
    images of one procedure (:func:`own_layouts`). With the coherent images' distances ``c1 <= c2 <= c3`` in the
    layout's other three places, the target at rank 0 lies below ``c1`` by ``g1 / (g2 + g3)`` of ``c3 - c1``, at
    rank 3 above ``c3`` by ``g3 / (g1 + g2)`` of it, and at ranks 1, 2 the layout's share of the way between its
    neighbours. The candidate nearest the target leaves the four distances spaced as four images of one procedure
    are: neither hugging a coherent image's nor set apart from them (an intruder just above the top coherent image
    was the tell of rank 3), so no gap tells which choice is the intruder.
    """
    x, c = odd[0], np.sort(odd[1:], axis=0)  # (B, K), (3, B, K)
    rank = (c < x[None]).sum(axis=0)
    g = np.asarray(gaps, dtype=np.float64)[:, :, None]  # (B, 3, 1)
    g1, g2, g3 = g[:, 0], g[:, 1], g[:, 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = [g1 / (g2 + g3), g1 / (g1 + g2), g2 / (g2 + g3), g3 / (g1 + g2)]
    share = [np.nan_to_num(s, nan=0.5, posinf=0.5) for s in share]
    spread = c[2] - c[0]
    target = np.choose(
        rank,
        [
            c[0] - share[0] * spread,
            c[0] + share[1] * (c[1] - c[0]),
            c[1] + share[2] * (c[2] - c[1]),
            c[2] + share[3] * spread,
        ],
    )
    return np.asarray(np.abs(x - target) / np.maximum(spread, 1e-9))


#: Layouts :func:`own_layouts` samples (four images of one procedure each).
LAYOUT_SAMPLES = 4096


def own_layouts(vectors: np.ndarray, offsets: np.ndarray, rows: np.ndarray, seed: int = 0) -> np.ndarray:
    """``(N, 3)`` gaps between the sorted odd-one-out distances (each image's distance to the mean of the other
    three) of four images of one procedure, for up to :data:`LAYOUT_SAMPLES` foursomes drawn at random from the
    procedures with four images or more (``offsets (P+1,)`` into ``rows (M,)``, rows of ``vectors (N, D)``).

    These are how a coherence question's four choices would be spaced if the intruder were one more image of the
    procedure. With no such procedure the gaps are the spacings of four uniform draws (Dirichlet(1, 1, 1)).
    """
    rng = _LAYOUTS.rng(seed)
    lengths = np.diff(offsets)
    big = np.flatnonzero(lengths >= 4)
    if not len(big):
        return rng.dirichlet(np.ones(3), size=LAYOUT_SAMPLES)
    procs = big[rng.integers(len(big), size=LAYOUT_SAMPLES)]
    picks = np.stack([offsets[p] + rng.choice(lengths[p], 4, replace=False) for p in procs.tolist()])
    four = vectors[rows[picks]].astype(np.float32)  # (N, 4, D)
    others = (four.sum(axis=1, keepdims=True) - four) / 3
    odd = np.sort(np.linalg.norm(four - others, axis=2), axis=1)
    return np.diff(odd, axis=1).astype(np.float64)


def odd_one_out(
    d_candidate_coherent: np.ndarray, d_candidate_mean: np.ndarray, d_coherent_mean: np.ndarray
) -> np.ndarray:
    """``(4, B, K)`` each choice's distance to the mean of the other three, were the candidate drawn: the
    candidate's, then each coherent image's. Arguments as :func:`coherence_ranks`'."""
    coherent_to_c, mine = _to_centroid(d_candidate_coherent, d_candidate_mean, d_coherent_mean)
    return np.concatenate([mine[None], coherent_to_c]).clip(min=0.0) ** 0.5 * 4 / 3


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
            notes[b] = [f"{head}; drew from the whole kNN set and the question point's own neighbours"]
    if sel.spread_target is not None and sel.spread_reached is not None:
        for b in np.flatnonzero(keep & ~sel.spread_reached).tolist():
            tally["spread:nearest-rank"] += 1
            notes.setdefault(b, []).append(
                f"spread: none of the {EXCHANGE_SHORTLIST} most preferred negatives of each class put the answer's "
                f"mean distance to the other choices at rank {int(sel.spread_target[b])} of 4; took the nearest rank "
                "they allow"
            )
    return notes
