"""``question_distance``: paper 001's Fig. 2 probe, an SVM on each choice's distance to the question.

The question is the mean of its item embeddings (the placeholder left out); a choice's feature is its
Euclidean distance to that mean (embeddings are L2-normalised). Tasks whose questions show no items
(visual coherence in RecipeQA's layout) use the mean of the *other* choices instead, the odd-one-out
distance; ordering tasks use the choice's path length, the sum of distances between consecutive items,
which is what Control-Knob 2 weights wrong orders by. A linear SVM scores each choice from its distance
relative to the question's other choices (centred, squared and standardised within the question, and its
distance *rank* among them one-hot, so it can prefer the nearest, the farthest, a middling or the second
nearest choice); the highest-scoring choice is the answer. ``value`` is the cross-validated
multiple-choice accuracy, ``chance`` the mean of 1/#choices.

A set where the answer is almost never the nearest choice is as easy as one where it always is: a model
that knows the rank reads it off. ``details.answer_rank_shares`` gives the share of answers at each
distance rank (0 = nearest) and ``details.best_rank_rule`` the cross-validated accuracy of "pick the
choice at rank r" for the best r.

``hubness``: the hubness of high-dimensional neighbourhoods (Radovanović, Nanopoulos and Ivanović 2010, "Hubs in
space", JMLR 11). A few images (texts) sit near the centre of the embedding space, in its dense regions, and are
the nearest neighbours of many; negatives drawn from an answer's neighbours (K2, paper 001) are such hubs far more
often than the answer, a random step of the procedure, is. The probe needs no context and no question: against the
distinct items the set shows as choices, a choice's centrality is its cosine similarity to their centroid and its
density its mean cosine similarity to its 10 nearest of them (:func:`procbench.shortcuts.hubness`); the value is
the cross-validated accuracy of the best of "pick the most (least) central (dense) choice".
``details.answer_rank_shares`` gives the answers' shares by density rank (0 = sparsest).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.context import ProbeContext, cv_choice_scores
from procbench.audit.probes.common import choices_with_vectors, require_multiple_choice
from procbench.audit.registry import register
from procbench.audit.report import ProbeResult
from procbench.audit.stats import cv_rule_hits, mc_hits
from procbench.tells import ChoiceView, OddOneOut, PathLength, QuestionDistance

__all__ = [
    "answer_distance_ranks",
    "choice_distances",
    "choice_hubness",
    "distance_ranks",
    "hubness",
    "question_distance",
]


def choice_distances(aset: AuditSet, matrix: np.ndarray, found: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """``(n, k)`` distance of each choice to its question (NaN where undefined), ``(n,)`` questions where every
    choice has one, and what the distance is measured to."""
    index = aset.index()
    valid = index.valid
    choice = index.choice
    padded = np.vstack([matrix, np.zeros((1, matrix.shape[1]), dtype=matrix.dtype)])  # id -1 -> a zero row
    none = np.zeros((len(valid), 0, matrix.shape[1]), dtype=matrix.dtype)
    if choice.shape[2] > 1:  # orders: the path_length tell, the generators' own
        view = ChoiceView(padded[choice], none, np.zeros((len(valid), 0), dtype=bool), valid, choice >= 0)
        dist = np.where(valid, PathLength(steps=choice.shape[2]).values(view), np.nan)
        # numpy types ndarray.any(axis=...) as `bool | array`: of a 2-d array it is an array
        return dist, cast(np.ndarray, valid.any(axis=1)), "path length (sum of consecutive distances)"
    c_vec = padded[choice[:, :, 0]]  # (n, k, D)
    q = index.question
    q_found = (q >= 0) & found[np.maximum(q, 0)]
    q_n = q_found.sum(axis=1)
    no_items = ~cast(np.ndarray, (q >= 0).any(axis=1))  # the question shows no items: compare with the other choices
    # the tells the generators deal (procbench.tells): distance to the question mean, or the odd one out
    view = ChoiceView(c_vec, padded[q], q_found, valid)
    dist = np.where(no_items[:, None], OddOneOut().values(view), QuestionDistance().values(view))
    ok = (q_n > 0) | no_items
    dist = np.where(valid & ok[:, None], dist, np.nan)
    if not no_items.any():
        what = "question mean"
    else:
        what = "mean of the other choices" if no_items.all() else "question mean, or the other choices"
    return dist, ok, what


def distance_ranks(dist: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``(n, k)`` rank of each valid choice's distance within its question (0 = nearest; ties in choice
    order); -1 for missing choices."""
    big = np.where(valid, np.nan_to_num(dist, nan=np.inf), np.inf)
    ranks = np.argsort(np.argsort(big, axis=1, kind="stable"), axis=1, kind="stable")
    return np.where(valid, ranks, -1)


def answer_distance_ranks(aset: AuditSet) -> np.ndarray:
    """``(n,)`` each answer's rank among its question's choices by :func:`choice_distances` (0 = nearest; -1 where
    a distance is missing): the rank K3 = 2 and ``adversarial`` deal evenly, which every rank-aware probe's folds
    are stratified by (:meth:`~procbench.audit.context.ProbeContext.stratified_folds`).

    Raises:
        NotApplicable: the set has no item vectors.
    """
    dist, ok, _ = choice_distances(aset, *aset.item_vectors())
    valid = aset.index().valid
    k = valid.shape[1]
    answers = aset.answers
    usable = ok & (answers >= 0) & (answers < k) & np.isfinite(np.where(valid, dist, 0.0)).all(axis=1)
    ranks = distance_ranks(dist, valid)
    return np.where(usable, ranks[np.arange(len(answers)), np.clip(answers, 0, k - 1)], -1)


def distance_features(dist: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``(n, k, 3 + k)``: distance minus the question's mean distance, its square, its within-question
    z-score, and its rank among the question's choices one-hot."""
    masked = np.where(valid, dist, np.nan)
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(masked, axis=1, keepdims=True)
        std = np.nanstd(masked, axis=1, keepdims=True)
    centred = np.nan_to_num(masked - mean)
    z = centred / (np.nan_to_num(std) + 1e-6)
    ranks = distance_ranks(dist, valid)
    onehot = (ranks[:, :, None] == np.arange(valid.shape[1])[None, None, :]).astype(np.float64)
    return np.concatenate([np.stack([centred, centred**2, z], axis=2), onehot], axis=2)


def _model(seed: int) -> Any:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    return make_pipeline(StandardScaler(), LinearSVC(C=1.0, dual=False, random_state=seed))


@register("question_distance", kind="accuracy", summary="SVM on each choice's distance to the question (paper 001)")
def question_distance(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Cross-validated accuracy of a linear SVM on choice-to-question distances."""
    require_multiple_choice(aset)
    matrix, found = aset.item_vectors()
    dist, ok, reference = choice_distances(aset, matrix, found)
    index = aset.index()
    valid = index.valid
    rows = choices_with_vectors(aset, found) & ok & np.isfinite(np.where(valid, dist, 0.0)).all(axis=1)
    ctx.require_cv(rows)
    answers = aset.answers
    features = distance_features(dist, valid)
    ranks = distance_ranks(dist, valid)
    k = valid.shape[1]
    answer_ranks = np.where(rows, ranks[np.arange(len(answers)), np.clip(answers, 0, k - 1)], -1)
    folds = ctx.stratified_folds(answer_ranks)  # K3=2 deals the ranks exactly evenly: see stratified_folds
    scores = cv_choice_scores(features, valid, answers, folds, rows, lambda: _model(ctx.seed))
    rows = rows & np.isfinite(np.where(valid, scores, 0.0)).all(axis=1)
    hits = mc_hits(scores, answers, valid)
    rules = {f"rank_{r}": (ranks == r).astype(np.float64) for r in range(k)}
    rank_hits, _, chosen, _ = cv_rule_hits(rules, answers, valid, folds, rows)
    answer_rank = answer_ranks[rows]
    rank_shares = np.bincount(answer_rank[answer_rank >= 0], minlength=k) / max(len(answer_rank), 1)
    nearest = mc_hits(-np.nan_to_num(dist, nan=np.inf), answers, valid)
    farthest = mc_hits(np.nan_to_num(dist, nan=-np.inf), answers, valid)
    correct = np.arange(valid.shape[1])[None, :] == answers[:, None]
    d_correct = dist[rows][correct[rows] & valid[rows]]
    d_wrong = dist[rows][~correct[rows] & valid[rows]]
    result = ctx.accuracy(
        hits,
        rows,
        valid,
        details={
            "model": "linear SVM per choice on within-question distance features, argmax over choices",
            "distance_to": reference,
            "encoder": aset.encoder,
            "nearest_accuracy": float(nearest[rows].mean()),
            "answer_rank_shares": rank_shares.tolist(),
            "best_rank_rule": {"accuracy": float(rank_hits[rows].mean()), "rule_per_fold": chosen},
            "farthest_accuracy": float(farthest[rows].mean()),
            "mean_distance_correct": float(d_correct.mean()) if len(d_correct) else None,
            "mean_distance_wrong": float(d_wrong.mean()) if len(d_wrong) else None,
            "n_skipped": int(len(aset) - rows.sum()),
        },
    )
    result.arrays = {"distance_correct": d_correct, "distance_wrong": d_wrong, "distance_to": reference}
    return result


def choice_hubness(aset: AuditSet, matrix: np.ndarray, found: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(n, k)`` each choice's centrality and ``(n, k)`` density (:func:`procbench.shortcuts.hubness`) against the
    distinct items the set shows as choices (NaN for a missing choice or vector). Choices of one item only
    (``matrix (u, D)``, ``found (u,)``: :meth:`AuditSet.item_vectors`)."""
    from procbench.shortcuts import HubnessTable

    index = aset.index()
    first = index.choice[:, :, 0]
    present = index.valid & (first >= 0)
    present &= found[np.where(present, first, 0)]
    unit = matrix.astype(np.float32) / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    rows = np.where(present, first, -1)
    return tuple(np.where(present, v, np.nan) for v in HubnessTable.of_shown(unit, rows)(rows))  # type: ignore[return-value]


@register("hubness", kind="accuracy", summary="the most or least central (dense) choice in the set's embedding space")
def hubness(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Cross-validated accuracy of the best of the most and least central and dense choice (:func:`choice_hubness`)."""
    require_multiple_choice(aset)
    if aset.index().choice.shape[2] > 1:
        raise NotApplicable(f"{aset.task} choices are orders of the same items: their hubness is one value")
    matrix, found = aset.item_vectors()
    central, density = choice_hubness(aset, matrix, found)
    valid = aset.index().valid
    rows = choices_with_vectors(aset, found) & np.isfinite(np.where(valid, central + density, 0.0)).all(axis=1)
    ctx.require_cv(rows)
    central, density = np.nan_to_num(central), np.nan_to_num(density)
    rules = {"most_central": central, "least_central": -central, "densest": density, "sparsest": -density}
    hits, overall, chosen, replicates = cv_rule_hits(rules, aset.answers, valid, ctx.folds, rows, ctx.bootstrap)
    k = valid.shape[1]
    ranks = distance_ranks(density, valid)  # 0 = sparsest
    answer_rank = ranks[np.arange(len(aset)), np.clip(aset.answers, 0, k - 1)][rows]
    return ctx.accuracy(
        hits,
        rows,
        valid,
        replicates=replicates,
        details={
            "model": "no training: the best of the most and least central and dense choice, chosen on the other folds",
            "measured_against": "the distinct items the set shows as choices",
            "encoder": aset.encoder,
            "rule_accuracy": overall,
            "rule_per_fold": chosen,
            "answer_rank_shares": (np.bincount(answer_rank, minlength=k) / max(len(answer_rank), 1)).tolist(),
        },
    )
