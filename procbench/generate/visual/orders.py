"""Visual ordering's filter: the arena's items are the orders of a question's own images (:func:`order_vectors`,
:func:`order_features`: path length, first and last images, agreement between the orders shown)."""

from __future__ import annotations

import dataclasses
import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

from procbench.generate import policy
from procbench.generate.adversarial import AdversarialPolicy, Arena, filter_negatives, no_items, preset
from procbench.generate.visual.probes import path_probe, unit_vectors
from procbench.progress import SILENT, Progress
from procbench.shortcuts import ChoiceBatch, choice_features, within_question

if TYPE_CHECKING:
    from procbench.generate.visual.sequences import VisualData

__all__ = [
    "ORDERS",
    "PATH_TOLERANCE",
    "REVERSED",
    "dealable",
    "filter_orders",
    "order_ceiling",
    "order_features",
    "order_vectors",
    "path_lengths",
    "shorter_orders",
]

#: Every order of four items, the authored one first.
ORDERS = np.array(list(itertools.permutations(range(4))), dtype=np.int64)


def _pair_counts() -> tuple[np.ndarray, np.ndarray]:
    """``(24, 24)`` Kendall distances between the orders, and how many consecutive pairs of one are consecutive
    (in the same direction) in the other."""
    pos = np.argsort(ORDERS, axis=1)  # position of each item in each order
    i, j = np.triu_indices(4, 1)
    sign = np.sign(pos[:, j] - pos[:, i])  # (24, 6)
    kendall = (sign[:, None, :] != sign[None, :, :]).sum(axis=2)
    first, second = ORDERS[:, :-1], ORDERS[:, 1:]  # (24, 3) consecutive pairs
    follows = pos[:, second] - pos[:, first]  # (24 other, 24 order, 3): +1 where the pair is consecutive there
    adjacent = (follows == 1).sum(axis=2).T
    return kendall.astype(np.float64), adjacent.astype(np.float64)


_KENDALL, _ADJACENT = _pair_counts()


#: Relative tolerance of path-length comparisons: an order and its reverse have the same path length, which float32
#: sums of the same distances in another order may put a rounding error apart.
PATH_TOLERANCE = 1e-5


#: ``(23,)`` True at the authored order's reverse among the wrong orders: its path length ties the authored one's,
#: so no dealt path-length rank can place it (the audit breaks the tie by choice position); rank-dealt settings and
#: the filter leave it out (benchmarks/evidence.md, "Fourth pass").
REVERSED = (ORDERS[1:] == ORDERS[0][::-1]).all(axis=1)


def shorter_orders(scores: np.ndarray, authored: np.ndarray) -> np.ndarray:
    """``scores (B, ...) < authored (B,)`` beyond rounding: which orders are strictly shorter than the authored one
    (the reversed authored order ties it, and counts as not shorter)."""
    bound = authored * (1 - PATH_TOLERANCE)
    return scores < bound.reshape(bound.shape + (1,) * (scores.ndim - bound.ndim))


def path_lengths(vectors: np.ndarray) -> np.ndarray:
    """``(Q, 24)`` the path length of every order of :data:`ORDERS` (the authored one first) of the images
    ``vectors (Q, 4, D)``: the sum of its consecutive images' distances."""
    diff = vectors[:, :, None, :] - vectors[:, None, :, :]
    pair = np.sqrt(np.einsum("bijd,bijd->bij", diff, diff))
    return pair[:, ORDERS[:, :-1], ORDERS[:, 1:]].sum(axis=2)


def order_ceiling(vectors: np.ndarray, ceiling: float) -> np.ndarray:
    """``(B, 24)`` True where an order of ``vectors (B, 4, D)`` moves some image to the place of one it has cosine
    similarity below ``ceiling`` to (swapping near-copies only would make two choices right)."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=2, keepdims=True), 1e-12)
    cos = np.einsum("bid,bjd->bij", unit, unit)
    shown = cos[:, ORDERS, np.arange(4)[None, :]]  # (B, 24, 4): image shown at t vs the authored image at t
    moved = np.arange(4)[None, :] != ORDERS
    return (moved[None] & (shown < ceiling)).any(axis=2)


def dealable(vectors: np.ndarray, ceiling: float | None) -> np.ndarray:
    """``(B, 23)`` the wrong orders of ``vectors (B, 4, D)`` a dealt path-length rank may show: under
    :func:`order_ceiling` (``ceiling`` None: every one) and never the authored order's reverse (:data:`REVERSED`)."""
    if ceiling is None:
        return np.tile(~REVERSED, (len(vectors), 1))
    return order_ceiling(vectors, ceiling)[:, 1:] & ~REVERSED


def order_features(batch: ChoiceBatch, scores: np.ndarray) -> np.ndarray:
    """``(Q, 4, F)`` features of order choices (``choice_ids``: ``question * 24 + order``): :func:`choice_features`,
    then the path length (``scores (Q' * 24,)``) and the agreement with the other orders shown, within question."""
    if batch.choice_ids is None:  # pragma: no cover - a programming error
        raise ValueError("order features need the choices' ids")
    ids = np.maximum(batch.choice_ids, 0)
    order = ids % 24
    valid = batch.valid
    others = valid[:, :, None] & valid[:, None, :] & ~np.eye(valid.shape[1], dtype=bool)[None]
    n_others = np.maximum(others.sum(axis=2), 1)

    def mean_over_others(table: np.ndarray) -> np.ndarray:
        return np.where(others, table[order[:, :, None], order[:, None, :]], 0.0).sum(axis=2) / n_others

    first = ORDERS[order, 0]
    last = ORDERS[order, -1]
    ends = np.where(others, (first[:, :, None] == first[:, None, :]) + (last[:, :, None] == last[:, None, :]), 0)
    extra = [scores[ids], mean_over_others(_KENDALL), mean_over_others(_ADJACENT), ends.sum(axis=2) / n_others]
    # every order shows the same images: the hubness columns are constant (the audit's hubness does not apply)
    flat = (np.zeros(valid.shape), np.zeros(valid.shape))
    base = choice_features(ChoiceBatch(**{**batch.__dict__, "choice_ids": None, "hubness": flat}))
    return np.concatenate([base, *(within_question(x.astype(np.float64), valid) for x in extra)], axis=2)


def order_vectors(data: VisualData, rows: np.ndarray) -> np.ndarray:
    """``(Q * 24, 4 * d)`` L2-normalised vectors of every order of each question's images: the images' first
    ``d`` principal components (over the set's images), concatenated in the order shown."""
    images = np.unique(rows)
    vectors = unit_vectors(data, images).astype(np.float64)
    centred = vectors - vectors.mean(axis=0)
    dims = int(min(policy.current().ORDER_DIMS, *centred.shape))
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    reduced = (centred @ vt[:dims].T)[np.searchsorted(images, rows)]  # (Q, 4, d)
    orders = reduced[:, ORDERS, :].reshape(len(rows) * 24, 4 * dims)
    return (orders / np.maximum(np.linalg.norm(orders, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def filter_orders(
    data: VisualData,
    proc: np.ndarray,
    rows: np.ndarray,
    picked: np.ndarray,
    *,
    options: AdversarialPolicy | None = None,
    seed: int = 0,
    progress: Progress = SILENT,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Filtered wrong orders ``picked (Q, 3)`` (1-23 into :data:`ORDERS`) of the images ``rows (Q, 4)``: each keeps
    its side of the authored path length among the :func:`dealable` orders (docs/adversarial.md, "Per task").
    Returns ``(picked (Q, 3), replacements (Q,), kept (Q,), summary)``."""
    options = options or preset("image")
    n_q = len(rows)
    if why := options.not_filtered(len(np.unique(proc)), n_q):
        return picked.copy(), np.zeros(n_q, dtype=np.int64), np.ones(n_q, bool), options.unfiltered(why)
    vectors = data.gather(rows)
    scores = path_lengths(vectors)
    shorter = shorter_orders(scores[:, 1:], scores[:, 0])
    base = np.arange(n_q, dtype=np.int64)[:, None] * 24
    candidates = np.where(dealable(vectors, options.ceiling), base + np.arange(1, 24), -1)
    negative_class = np.take_along_axis(shorter, picked - 1, axis=1)
    # the items are the orders of each question's images (item question * 24 + order, the authored one the answer);
    # strata: the authored order's path-length rank (its wrong orders shorter)
    flat_scores = scores.reshape(-1)
    arena = Arena(
        order_vectors(data, rows), np.arange(n_q * 24, dtype=np.int64), base[:, 0], no_items(n_q), base + picked,
        candidates, proc, features=lambda batch: order_features(batch, flat_scores), probes=path_probe(),
        candidate_class=shorter, negative_class=negative_class, strata=negative_class.sum(axis=1),
    )  # fmt: skip
    # the order vectors' own similarity is no paraphrase test: the ceiling is applied to the moved images above
    result = filter_negatives(arena, dataclasses.replace(options, ceiling=2.0), seed=seed, progress=progress)
    summary = {
        **result.summary(),
        "ceiling": options.ceiling,
        "replaced": "wrong orders",
        "ceiling_rule": "a wrong order moves some image to the place of one it has cosine similarity below the "
        "ceiling to (it never looks like the authored order)",
    }
    return result.negatives - base, result.replacements, result.kept_questions(), summary
