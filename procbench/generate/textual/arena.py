"""The adversarial setting's arena over textual items (capacities, clusters, answer ranks), and the filtered titles
mapped back to distinct steps."""

from __future__ import annotations

import numpy as np

from procbench.generate import policy
from procbench.generate.adversarial import AdversarialPolicy, Arena, usable_candidates
from procbench.generate.adversarial.arena import QUESTION_BLOCK
from procbench.generate.debias import cluster_titles
from procbench.generate.ranks import CLOZE_WANTS, balanced_ranks
from procbench.generate.textual.pool import N_NEGATIVES, Pool
from procbench.rng import stream

__all__ = [
    "answer_ranks",
    "distinct_steps",
    "item_clusters",
    "negative_capacity",
    "question_closeness",
    "question_means",
]


#: The item clustering of the adversarial textual filter.
_ITEM_CLUSTERS = stream("textual.item-clusters")


def negative_capacity(pool: Pool, answers: np.ndarray) -> np.ndarray:
    """``(n_titles,)`` questions that may show each title as a negative: ``N_NEGATIVES`` times as often as it is
    correct (at least once), so negatives follow the answers' distribution of titles."""
    rows = pool.norm_codes >= 0
    share = len(answers) / max(1, int(rows.sum()))
    copies = np.bincount(pool.norm_codes[rows], minlength=len(pool.norm_counts))
    free = np.ones(len(pool.norm_codes), dtype=bool)
    free[answers] = False
    spare = np.bincount(pool.norm_codes[free & rows], minlength=len(pool.norm_counts))
    fair = np.maximum(1, np.rint(N_NEGATIVES * copies * share)).astype(np.int64)
    return np.minimum(fair, spare)


def item_clusters(pool: Pool, seed: int) -> np.ndarray:
    """``(N,)`` KMeans cluster of every item row (for the probes' cluster-frequency feature)."""
    embeddings = pool.embeddings
    n_clusters = min(policy.current().ADVERSARIAL_CLUSTERS, len(np.unique(embeddings.hashes)))
    return cluster_titles(embeddings.vectors, n_clusters=n_clusters, seed=seed, hashes=embeddings.hashes).labels


def question_means(arena: Arena) -> np.ndarray:
    """``(Q, D)`` the mean of each question's shown items (the point the probes measure distances to)."""
    shown = arena.question_items >= 0
    mean = np.einsum("ql,qld->qd", shown.astype(np.float32), arena.vectors[np.maximum(arena.question_items, 0)])
    mean /= np.maximum(shown.sum(axis=1), 1)[:, None]  # in place: float32, as the vectors
    return mean


def distinct_steps(negatives: np.ndarray, arena: Arena, ceiling: float, pool: Pool) -> np.ndarray:
    """``(Q, K)`` the negatives, each use of a title moved to a step of it (same split, another procedure, same side
    of the answer's distance, under the ceiling) not yet shown as a choice, so no step key repeats."""
    codes, groups = pool.norm_codes, pool.groups
    wanted = np.isin(codes, np.unique(codes[negatives[negatives >= 0]])) & (codes >= 0)
    wanted[arena.answers] = False
    spare: dict[tuple[int, int], list[int]] = {}
    for row in np.flatnonzero(wanted).tolist():
        spare.setdefault((int(groups[row]), int(codes[row])), []).append(row)
    vectors = arena.vectors
    shown = arena.question_items >= 0
    qmean = question_means(arena)
    used: set[int] = set()
    out = negatives.copy()
    for q, row in zip(*np.nonzero(negatives >= 0), strict=True):
        original = int(negatives[q, row])
        answer = int(arena.answers[q])
        d_answer = float(np.linalg.norm(vectors[answer] - qmean[q]))
        closer = float(np.linalg.norm(vectors[original] - qmean[q])) < d_answer
        items = arena.question_items[q][shown[q]]
        for alternative in spare.get((int(groups[original]), int(codes[original])), [original]):
            if alternative in used or pool.procedures[alternative] == pool.procedures[answer]:
                continue
            vector = vectors[alternative]
            if (float(np.linalg.norm(vector - qmean[q])) < d_answer) != closer:
                continue
            if float(vector @ vectors[answer]) >= ceiling or (
                len(items) and float((vectors[items] @ vector).max()) >= ceiling
            ):
                continue
            out[q, row] = alternative
            break
        used.add(int(out[q, row]))
    return out


def question_closeness(arena: Arena) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Q, M)`` class of each candidate (1: closer to the question mean than the answer, 0: not, -1: padding),
    ``(Q, M)`` its distance to the mean minus the answer's, and ``(Q,)`` the answer's distance to the mean."""
    vectors = arena.vectors
    qmean = question_means(arena)
    to_answer = np.linalg.norm(vectors[arena.answers] - qmean, axis=1)
    safe = np.maximum(arena.candidates, 0)
    to_candidate = np.empty(safe.shape, dtype=np.result_type(vectors.dtype, qmean.dtype))
    for start in range(0, len(safe), QUESTION_BLOCK):  # (B, M, D) at a time: bounded memory
        rows = slice(start, start + QUESTION_BLOCK)
        to_candidate[rows] = np.linalg.norm(vectors[safe[rows]] - qmean[rows, None, :], axis=2)
    classes = np.where(arena.candidates >= 0, (to_candidate < to_answer[:, None]).astype(np.int64), -1)
    return classes, (to_candidate - to_answer[:, None]).astype(np.float64), to_answer


def answer_ranks(arena: Arena, options: AdversarialPolicy, splits: np.ndarray, *, seed: int) -> np.ndarray:
    """``(Q,)`` the answer's target distance rank (-1: dropped), balanced within each split among the ranks a
    question's candidates allow."""
    rng = _ITEM_CLUSTERS.rng(seed)
    usable = usable_candidates(arena, options)
    classes = np.asarray(arena.candidate_class)
    available = np.stack([(usable & (classes == c)).sum(axis=1) for c in (0, 1)], axis=1)
    feasible = np.all(available[:, None, :] >= CLOZE_WANTS[None, :, :], axis=2)  # (Q, 4)
    ranks = np.full(len(splits), -1, dtype=np.int64)
    for split in np.unique(splits).tolist():
        members = np.flatnonzero(splits == split)
        ranks[members] = balanced_ranks(feasible[members], rng)
    return ranks
