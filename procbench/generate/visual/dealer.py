"""The one dealer: the answer's rank on each tell a recipe declares, dealt evenly over a set.

Steps: :func:`tell_classes` (each candidate's class per tell), :func:`options` (the class multisets and the ranks
they give), :func:`deal_ranks`, :func:`draw`; docs/adversarial.md ("Tells, the dealer and recipes") specifies them.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from procbench.generate.visual.bands import LEVELS, QUESTION_KNN, Candidates, band_bounds, fmt_band
from procbench.generate.visual.selection import Selection, _band_ranges
from procbench.rng import stream
from procbench.tells import ChoiceView, Tell

__all__ = [
    "CLASS_BLOCK",
    "Classed",
    "Dealt",
    "deal_ranks",
    "draw",
    "even_subset",
    "evened",
    "options",
    "rank_notes",
    "tell_classes",
]

#: Questions classified at a time (their candidates' vectors are gathered at once). block-size
CLASS_BLOCK = 64
#: Which of a fuller rank's questions :func:`even_subset` drops.
_EVEN = stream("visual.dealer.even-subset")


@dataclass
class Classed:
    """A chunk's candidates classed by a recipe's tells (:func:`tell_classes`): ``classes (B, K)``, the ``radix`` per
    tell, ``additive`` (negative slots) or one answer slot, and ``extra_rows``/``extra_classes`` ``(B, Kq)``."""

    classes: np.ndarray
    radix: tuple[int, ...]
    additive: bool
    extra_rows: np.ndarray
    extra_classes: np.ndarray


@dataclass
class Dealt:
    """What :func:`deal_ranks` did: ``option (B,)`` each question's option (-1: skipped, its candidates did not allow
    every rank of the first tell) and ``unmet (B,)`` True where a further tell's least-dealt rank was not allowed."""

    option: np.ndarray
    unmet: np.ndarray


def tell_classes(
    tells: Sequence[Tell],
    gather: Callable[[np.ndarray], np.ndarray],
    candidates: np.ndarray,
    *,
    fixed: np.ndarray,
    question: np.ndarray,
    answer: np.ndarray | None,
) -> tuple[np.ndarray, tuple[int, ...]]:
    """``(classes (B, K), radix)``: each candidate's joint class over ``tells`` (-1 where ``candidates`` is -1).

    Args:
        gather: image rows ``(...)`` -> vectors ``(..., D)``.
        candidates: ``(B, K)`` candidate rows.
        fixed: ``(B, F)`` the choices no candidate replaces (cloze: none, ``F = 0``; coherence: the coherent images).
        question: ``(B, L)`` rows the question shows (-1: none).
        answer: ``(B,)`` the answer's rows, the candidates filling negative slots; None: a candidate is the answer.
    """
    n_q, k = candidates.shape
    radix = tuple(2 if answer is not None else fixed.shape[1] + 1 for _ in tells)
    out = np.zeros((n_q, k), dtype=np.int64)
    for start in range(0, n_q, CLASS_BLOCK):
        part = slice(start, start + CLASS_BLOCK)
        cand = np.maximum(candidates[part], 0)
        shown = question[part]
        q_vec, mask = gather(np.maximum(shown, 0)), shown >= 0
        if answer is not None:  # one view: the answer, then every candidate (separable tells)
            rows = np.concatenate([answer[part][:, None], fixed[part], cand], axis=1)
            views = [ChoiceView(gather(rows), q_vec, mask)]
        else:  # one view per candidate: it, then the fixed choices
            rows = np.concatenate([cand[:, :, None], np.repeat(fixed[part][:, None, :], k, axis=1)], axis=2)
            vectors = gather(rows)  # (b, K, 1 + F, D): one view of b * K questions
            flat = vectors.reshape(-1, *vectors.shape[2:])
            views = [ChoiceView(flat, np.repeat(q_vec, k, axis=0), np.repeat(mask, k, axis=0))]
        joint = np.zeros(cand.shape, dtype=np.int64)
        for t, tell in enumerate(tells):
            if answer is not None:
                values = tell.values(views[0])
                klass = values[:, 1 + fixed.shape[1] :] < values[:, :1]
            else:
                values = tell.values(views[0]).reshape(len(cand), k, -1)
                klass = (values[:, :, 1:] < values[:, :, :1]).sum(axis=2)
            joint = joint * radix[t] + klass.astype(np.int64)
        out[part] = joint
    return np.where(candidates >= 0, out, -1), radix


def options(radix: tuple[int, ...], need: int, *, additive: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(wants (O, C), ranks (O, T))``: each option's count of each joint class (``C = prod(radix)``) and the
    answer's rank on each tell. ``additive``: negative slots (a class's digits add up over the picks); else one
    slot whose class digits are the ranks."""
    n_classes = int(np.prod(radix)) if radix else 1
    digits = np.array(list(itertools.product(*(range(r) for r in radix))), dtype=np.int64).reshape(n_classes, -1)
    combos = list(itertools.combinations_with_replacement(range(n_classes), need if additive else 1))
    wants = np.zeros((len(combos), n_classes), dtype=np.int64)
    ranks = np.zeros((len(combos), len(radix)), dtype=np.int64)
    for o, combo in enumerate(combos):
        for c in combo:
            wants[o, c] += 1
            ranks[o] += digits[c]
    return wants, ranks


def deal_ranks(feasible: np.ndarray, ranks: np.ndarray, rng: np.random.Generator) -> Dealt:
    """Deal an option to each question (``feasible (B, O)``; ``ranks (O, T)``). Only questions whose candidates
    allow every rank of the first tell are dealt: dealing one of the few ranks a question allows gives it away
    (benchmarks/evidence.md, "Coherence adversarial's yield")."""
    n_q, _ = feasible.shape
    first = ranks[:, 0]
    values = np.unique(first)
    every = np.stack([(feasible & (first == r)[None, :]).any(axis=1) for r in values], axis=1).all(axis=1)
    eligible = np.flatnonzero(every)
    dealt_n = len(eligible) - len(eligible) % len(values)
    chosen = np.sort(rng.permutation(eligible)[:dealt_n])
    target = np.full(n_q, -1, dtype=np.int64)
    target[chosen] = values[rng.permutation(np.arange(dealt_n) % len(values))]
    option = np.full(n_q, -1, dtype=np.int64)
    unmet = np.zeros(n_q, dtype=bool)
    n_tells = ranks.shape[1]
    counts = [np.zeros(int(ranks[:, t].max()) + 1, dtype=np.int64) for t in range(n_tells)]
    ties = rng.random((n_q, len(ranks)))
    for q in chosen.tolist():
        allowed = np.flatnonzero(feasible[q] & (first == target[q]))
        cost = sum((counts[t][ranks[allowed, t]] for t in range(1, n_tells)), np.zeros(len(allowed), np.int64))
        best = allowed[np.argmin(cost + ties[q, allowed])]
        option[q] = best
        for t in range(1, n_tells):
            unmet[q] |= counts[t][ranks[best, t]] > counts[t].min()
            counts[t][ranks[best, t]] += 1
    return Dealt(option, unmet)


def even_subset(kept: np.ndarray, ranks: np.ndarray, seed: int) -> np.ndarray:
    """``(Q,)`` ``kept (Q,)`` with questions of the fuller dealt ``ranks (Q,)`` dropped at random so that every rank
    keeps as many as the scarcest (a filter that drops questions unevenly over the ranks, as pruning the ones the
    probes still solve does, would leave a rank rule above chance)."""
    out = np.asarray(kept, dtype=bool).copy()
    values = np.unique(ranks)
    per_rank = [np.flatnonzero(out & (ranks == r)) for r in values]
    least = min((len(rows) for rows in per_rank), default=0)
    rng = _EVEN.rng(seed)
    for rows in per_rank:
        out[rng.permutation(rows)[least:]] = False
    return out


def evened(kept: np.ndarray, ranks: np.ndarray, seed: int, summary: dict[str, Any], ranked: str) -> np.ndarray:
    """:func:`even_subset` after a filter's pruning, the questions it drops counted in ``summary`` (``rank_balanced``)
    and said in its ``rules`` (``ranked``: what the ranks are of)."""
    even = even_subset(kept, ranks, seed)
    if (even != kept).any():
        summary["rank_balanced"] = int((even != kept).sum())
        summary["rules"] = [
            *summary.get("rules", []),
            f"after pruning, {summary['rank_balanced']} more questions dropped at random from the fuller {ranked} "
            "ranks, so every rank the dealer dealt keeps as many questions",
        ]
    return even


def draw(
    cands: Candidates,
    classes: np.ndarray,
    wants: np.ndarray,
    ranks: np.ndarray,
    *,
    extra_rows: np.ndarray,
    extra_classes: np.ndarray,
    k2: int,
    need: int,
    rng: np.random.Generator,
) -> tuple[Selection, Dealt]:
    """Deal and draw ``need`` negatives per question from its K2 candidates ``cands`` (``classes (B, K)``) and the
    ``extra_rows (B, Kq)`` (``extra_classes``) that join the last pool (a neighbour of the question point).

    ``Selection.rank`` is the first tell's dealt rank (-1: skipped), ``pick_class`` each pick's joint class.
    """
    n_q, k = cands.rows.shape
    n_levels = len(LEVELS)
    n_classes = wants.shape[1]
    lo, hi = band_bounds(cands.m, cands.s, k2)
    start, end = _band_ranges(cands, lo, hi)
    col = np.arange(k)
    in_band = (col[None, None, :] >= start[:, :, None]) & (col[None, None, :] < end[:, :, None])  # (B, L, K)
    of_class = classes[:, None, :] == np.arange(n_classes)[None, :, None]  # (B, C, K)
    counts = np.einsum("blk,bck->blc", in_band.astype(np.int32), of_class.astype(np.int32))  # (B, L, C)
    extra_counts = (extra_classes[:, None, :] == np.arange(n_classes)[None, :, None]).sum(axis=2)
    avail = counts[:, -1, :] + extra_counts  # (B, C): the whole kNN set and the extras
    dealt = deal_ranks((avail[:, None, :] >= wants[None, :, :]).all(axis=2), ranks, rng)
    want = np.where(dealt.option[:, None] >= 0, wants[np.maximum(dealt.option, 0)], 0)  # (B, C)
    enough = (counts >= want[:, None, :]).all(axis=2)
    level = np.where(enough.any(axis=1), enough.argmax(axis=1), QUESTION_KNN)
    last = (extra_classes >= 0) & (level == QUESTION_KNN)[:, None]
    pool = np.concatenate([in_band[np.arange(n_q), np.minimum(level, n_levels - 1)], last], axis=1)
    all_classes = np.concatenate([classes, extra_classes], axis=1)
    keys = np.where(pool, rng.random(pool.shape), np.inf)
    picked = np.full((n_q, need), -1, dtype=np.int64)
    filled = np.zeros(n_q, dtype=np.int64)
    for c in np.flatnonzero(want.any(axis=0)).tolist():  # each class's picks, uniformly at random within it
        order = np.argsort(np.where(all_classes == c, keys, np.inf), axis=1, kind="stable")[:, :need]
        for j in range(need):
            take = j < want[:, c]
            picked[take, np.minimum(filled[take], need - 1)] = order[take, j]
            filled += take
    rows_all = np.concatenate([cands.rows, extra_rows], axis=1)
    rows = np.where(picked >= 0, np.take_along_axis(rows_all, np.maximum(picked, 0), axis=1), -1)
    cols = np.where((picked >= 0) & (picked < k), picked, -1)
    source = np.where(picked < 0, -1, np.where(picked < k, np.minimum(level, n_levels - 1)[:, None], QUESTION_KNN))
    pick_class = np.where(picked >= 0, np.take_along_axis(all_classes, np.maximum(picked, 0), axis=1), -1)
    ok = (dealt.option >= 0) & (rows >= 0).all(axis=1)
    rank = np.where(dealt.option >= 0, ranks[np.maximum(dealt.option, 0), 0], -1)
    base_count = (counts[:, 0, :] * (want > 0)).sum(axis=1)
    selection = Selection(rows, cols, source, level, base_count, lo, hi, ok, rank=rank, pick_class=pick_class)
    return selection, dealt


def rank_notes(sel: Selection, keep: np.ndarray, dealt: Dealt, tally: Counter[str]) -> dict[int, list[str]]:
    """The widening (and a further tell's unmet rank) recorded for each kept question of a dealt draw."""
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
    for b in np.flatnonzero(keep & dealt.unmet).tolist():
        tally["dealt:further-tell-unmet"] += 1
        notes.setdefault(b, []).append("dealt: a further tell's least-dealt rank was not among the candidates'")
    return notes
