"""Selection: draw a question's negatives from its K2 band (widened when short), the first under K3.

Every draw is uniform; vectorised over questions (bands are runs of the distance-sorted candidates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from procbench.generate import policy
from procbench.generate.visual.bands import LEVELS, QUESTION_KNN, RELAXED, Candidates, band_bounds
from procbench.generate.visual.closeness import Closeness

__all__ = ["Selection", "select"]


@dataclass
class Selection:
    """Chosen images for ``B`` questions."""

    rows: np.ndarray  # (B, need) image rows (the K3 pick first), -1: failed
    cols: np.ndarray  # (B, need) each pick's column in Candidates (-1: not a candidate)
    source: np.ndarray  # (B, need) index into SOURCES
    level: np.ndarray  # (B,) the K2 picks' band level
    base_count: np.ndarray  # (B,) K2 candidates of the unwidened band
    lo: np.ndarray  # (B, len(LEVELS)) band bounds
    hi: np.ndarray
    ok: np.ndarray  # (B,) False: too few images of other procedures (skipped)
    rank: np.ndarray | None = None  # K3=2: (B,) the answer's dealt rank
    pick_class: np.ndarray | None = None  # K3=2: (B, need) each pick's class on the recipe's tells


def _row_search(keys: np.ndarray, width: int, targets: np.ndarray, side: Literal["left", "right"]) -> np.ndarray:
    """Per-row ``searchsorted``: ``keys`` are ``(B, width)`` rows of ``row << 32 | value`` flattened (so
    globally ascending) and ``targets (B, T)`` values; returns column positions ``(B, T)``."""
    base = np.arange(len(targets), dtype=np.int64)[:, None]
    return np.searchsorted(keys, (base << 32) | targets, side=side) - base * width


def _band_ranges(cands: Candidates, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(start, end)``, each ``(B, L)``: the run of candidate columns with ``max(lo, DUPLICATE_DISTANCE) < d < hi``,
    by binary search on the exact float32 distances."""
    n_q, k = cands.dist.shape
    bits = np.abs(cands.dist).astype(np.float32).view(np.int32).astype(np.int64)
    keys = ((np.arange(n_q, dtype=np.int64)[:, None] << 32) | bits).ravel()
    low = np.maximum(np.where(np.isnan(lo), np.inf, lo), policy.current().DUPLICATE_DISTANCE)  # nan: no band
    high = np.where(np.isnan(hi), 0.0, hi)
    below = low.astype(np.float32)  # d > low  <=>  d > the largest float32 <= low
    below = np.where(below > low, np.nextafter(below, np.float32(-np.inf)), below)
    above = high.astype(np.float32)  # d < high  <=>  d < the smallest float32 >= high
    above = np.where(above < high, np.nextafter(above, np.float32(np.inf)), above)
    start = _row_search(keys, k, below.view(np.int32).astype(np.int64), "right")
    end = _row_search(keys, k, np.abs(np.maximum(above, 0)).view(np.int32).astype(np.int64), "left")
    return start, np.maximum(start, end)


def _first(hit: np.ndarray) -> np.ndarray:
    """Per row of ``(B, L)``, the first column that is True; ``L`` where none."""
    return np.where(hit.any(axis=1), hit.argmax(axis=1), hit.shape[1])


def _running_count(mask: np.ndarray) -> np.ndarray:
    """``(B, K+1)`` int32: ``[:, c]`` is how many of ``mask[:, :c]`` are True."""
    seen = np.zeros((mask.shape[0], mask.shape[1] + 1), dtype=np.int32)
    np.cumsum(mask, axis=1, dtype=np.int32, out=seen[:, 1:])
    return seen


def _random_true(seen: np.ndarray, start: np.ndarray, end: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per row, a uniformly drawn column ``c`` in ``[start, end)`` of a mask whose :func:`_running_count` is
    ``seen`` (``u`` uniform in [0, 1)); -1 where the mask has no True there."""
    n_q, k = seen.shape[0], seen.shape[1] - 1
    b = np.arange(n_q)
    before = seen[b, np.minimum(start, k)].astype(np.int64)
    count = seen[b, np.minimum(end, k)] - before
    j = np.minimum((u * count).astype(np.int64), np.maximum(count - 1, 0))
    keys = ((b.astype(np.int64)[:, None] << 32) | seen[:, 1:]).ravel()
    col = _row_search(keys, k, (before + j + 1)[:, None], "left")[:, 0]
    return np.where(count > 0, col, -1)


def _distinct(n: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``(B, m)`` distinct integers drawn uniformly from ``[0, n)`` in draw order (``u (B, m)`` uniform)."""
    picks = np.zeros(u.shape, dtype=np.int64)
    for i in range(u.shape[1]):
        j = np.minimum((u[:, i] * np.maximum(n - i, 0)).astype(np.int64), np.maximum(n - i - 1, 0))
        for p in np.sort(picks[:, :i], axis=1).T:  # skip the earlier picks, smallest first
            j += j >= p
        picks[:, i] = j
    return picks


def select(
    cands: Candidates, *, k2: int, need: int, closeness: Closeness | None, rng: np.random.Generator
) -> Selection:
    """Draw ``need`` distinct images per question uniformly from the narrowest band level holding enough; with
    ``closeness`` (K3) the first pick satisfies it (:mod:`.closeness`'s ladder)."""
    n_q, k = cands.rows.shape
    n_levels = len(LEVELS)
    lo, hi = band_bounds(cands.m, cands.s, k2)
    start, end = _band_ranges(cands, lo, hi)
    first = 1 if closeness is not None else 0
    u = rng.random((n_q, 2 + need - first))
    rows = np.full((n_q, need), -1, dtype=np.int64)
    cols = np.full((n_q, need), -1, dtype=np.int64)
    source = np.full((n_q, need), -1, dtype=np.int64)
    ok = np.ones(n_q, dtype=bool)
    b = np.arange(n_q)
    taken = np.full(n_q, -1, dtype=np.int64)  # the K3 pick's candidate column
    if closeness is not None:
        seen = _running_count(closeness.ok)
        fits = np.take_along_axis(seen, end, axis=1) - np.take_along_axis(seen, start, axis=1)  # (B, L)
        level = _first(fits > 0)
        at = level < n_levels
        lv = np.minimum(level, n_levels - 1)
        col = _random_true(seen, start[b, lv], end[b, lv], u[:, 0])
        cols[at, 0] = col[at]
        rows[at, 0] = cands.rows[at, col[at]]
        source[at, 0] = level[at]
        q_k = closeness.q_rows.shape[1]
        q_col = _random_true(_running_count(closeness.q_extra), np.zeros(n_q, np.int64), np.full(n_q, q_k), u[:, 1])
        extra = ~at & (q_col >= 0)
        rows[extra, 0] = closeness.q_rows[extra, q_col[extra]]
        source[extra, 0] = QUESTION_KNN
        relaxed = np.flatnonzero(~at & ~extra & closeness.q_usable.any(axis=1))
        rows[relaxed, 0] = closeness.q_rows[relaxed, closeness.q_usable[relaxed].argmax(axis=1)]
        source[relaxed, 0] = RELAXED
        same = cands.rows[relaxed] == rows[relaxed, :1]  # the image nearest the point may be a candidate
        cols[relaxed, 0] = np.where(same.any(axis=1), same.argmax(axis=1), -1)
        ok[~at & ~extra] = False
        ok[relaxed] = True
        taken = cols[:, 0]
        level_out = source[:, 0].copy()
        base_count = fits[:, 0]
    others = need - first
    if others:
        inside = (taken[:, None] >= start) & (taken[:, None] < end)
        avail = end - start - inside  # (B, L)
        level = _first(avail >= others)
        good = level < n_levels
        lv = np.minimum(level, n_levels - 1)
        picks = _distinct(avail[b, lv], u[:, 2:]) + start[b, lv][:, None]
        picks += inside[b, lv][:, None] & (picks >= taken[:, None])  # step over the K3 pick
        picks = np.where(good[:, None], np.minimum(picks, k - 1), -1)
        cols[:, first:] = picks
        rows[:, first:] = np.where(good[:, None], np.take_along_axis(cands.rows, np.maximum(picks, 0), axis=1), -1)
        source[:, first:] = np.where(good, level, -1)[:, None]
        ok &= good
        level_out = level
        base_count = avail[:, 0]
    return Selection(rows, cols, source, level_out, base_count, lo, hi, ok)
