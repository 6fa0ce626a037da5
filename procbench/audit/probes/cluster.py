"""``cluster_balance``: do correct and wrong choices come from the same regions of embedding space?

The bias Algorithm 1 of paper 004 removes: in RecipeQA, titles such as "Ingredients" or "Enjoy" are
correct far more often than wrong. The set's choice items are clustered with KMeans (16 clusters, fewer
for small sets; Euclidean, on the embeddings' first 64 principal components); ``value`` is the
Jensen-Shannon divergence (base 2, 0..1) between the cluster distribution of the correct choices and
that of the wrong choices.

A divergence between two finite samples is positive even when nothing differs, so ``chance`` is
estimated by permutation: within every question the correct label is moved to a random choice (as if
the answer carried no information) and the divergence recomputed; ``chance`` is the mean over
permutations and ``details.p_value`` the share of permutations at least as divergent. The interval is a
procedure bootstrap, re-centred on the estimate (resampling inflates a divergence; re-centring removes
that shift and keeps the bootstrap's spread).
"""

from __future__ import annotations

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.context import FIT_SAMPLE, ProbeContext
from procbench.audit.probes.common import choices_with_vectors, require_multiple_choice
from procbench.audit.registry import register
from procbench.audit.report import ProbeResult
from procbench.audit.stats import js_divergence, recentred_ci

__all__ = ["cluster_balance", "cluster_items"]

N_CLUSTERS = 16
DIMS = 64
N_PERMUTATIONS = 200


def cluster_items(points: np.ndarray, items: np.ndarray, n_clusters: int, seed: int) -> np.ndarray:
    """KMeans cluster of every item in ``items`` (-1 elsewhere), fitted on a seeded sample of them."""
    from sklearn.cluster import KMeans

    rng = np.random.default_rng([seed, 0xC1A5])
    sample = items if len(items) <= FIT_SAMPLE else np.sort(rng.choice(items, FIT_SAMPLE, replace=False))
    model = KMeans(n_clusters=n_clusters, n_init=2, random_state=seed).fit(points[sample])
    labels = np.full(len(points), -1, dtype=np.int64)
    labels[items] = model.predict(points[items])
    return labels


def _js_from_sums(sums: np.ndarray, n_clusters: int) -> np.ndarray:
    return js_divergence(sums[..., :n_clusters], sums[..., n_clusters:])


@register("cluster_balance", kind="divergence", summary="JS divergence of correct vs wrong choices over clusters")
def cluster_balance(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Jensen-Shannon divergence between the KMeans-cluster distributions of correct and wrong choices."""
    require_multiple_choice(aset)
    if aset.kind.ordering:
        raise NotApplicable(f"every choice of a {aset.task} question holds the same items in another order")
    matrix, found = aset.item_vectors()
    index = aset.index()
    valid = index.valid
    rows = choices_with_vectors(aset, found)
    if rows.sum() < 20:
        raise NotApplicable(f"too few usable questions ({int(rows.sum())}; at least 20 are needed)")
    choice = np.where(valid, index.choice[:, :, 0], -1)[rows]
    items = np.unique(choice[choice >= 0])
    n_clusters = int(min(N_CLUSTERS, max(2, len(items) // 20)))
    if len(items) < 2 * n_clusters:
        raise NotApplicable(f"too few distinct choice items ({len(items)}) to cluster")
    points = ctx.reduced_items(aset, DIMS)
    labels = cluster_items(points, items, n_clusters, ctx.seed)
    cluster = np.full(valid.shape, -1, dtype=np.int64)
    cluster[rows] = np.where(choice >= 0, labels[np.maximum(choice, 0)], -1)
    answers = aset.answers
    n, k = valid.shape
    correct_cluster = np.where(rows, cluster[np.arange(n), np.clip(answers, 0, k - 1)], -1)
    # per question: counts of the correct choice's cluster, then of the wrong choices' clusters
    onehot = np.zeros((n, 2 * n_clusters))
    has = correct_cluster >= 0
    onehot[np.flatnonzero(has), correct_cluster[has]] = 1.0
    for j in range(k):
        wrong = rows & valid[:, j] & (answers != j) & (cluster[:, j] >= 0)
        np.add.at(onehot, (np.flatnonzero(wrong), n_clusters + cluster[wrong, j]), 1.0)
    totals = onehot.sum(axis=0)
    value = float(_js_from_sums(totals, n_clusters))
    replicates = ctx.bootstrap.statistic(onehot, lambda s: _js_from_sums(s, n_clusters))
    ci = recentred_ci(value, replicates)

    # permutation chance: the "correct" choice drawn uniformly among each question's valid choices
    rng = np.random.default_rng([ctx.seed, 0x9E3])
    used = np.flatnonzero(rows)
    n_valid = valid[used].sum(axis=1)
    all_counts = np.bincount(cluster[used][valid[used]], minlength=n_clusters).astype(np.float64)
    picks = np.minimum((rng.random((N_PERMUTATIONS, len(used))) * n_valid).astype(np.int64), n_valid - 1)
    picked = cluster[used[None, :], picks]  # (P, m); valid choices are packed first
    offsets = (np.arange(N_PERMUTATIONS) * n_clusters)[:, None]
    perm_correct = np.bincount((picked + offsets).reshape(-1), minlength=N_PERMUTATIONS * n_clusters)
    perm_correct = perm_correct.reshape(N_PERMUTATIONS, n_clusters).astype(np.float64)
    perm = js_divergence(perm_correct, all_counts[None, :] - perm_correct)
    chance = float(perm.mean())
    share_correct = totals[:n_clusters] / max(totals[:n_clusters].sum(), 1.0)
    share_wrong = totals[n_clusters:] / max(totals[n_clusters:].sum(), 1.0)
    ratio = (share_correct + 1e-9) / (share_wrong + 1e-9)
    display = aset.display()
    keys = aset.index().keys
    top = []
    for c in np.argsort(-ratio)[:3]:
        members = items[labels[items] == c]
        centre = points[members].mean(axis=0)
        near = members[np.argsort(np.linalg.norm(points[members] - centre, axis=1), kind="stable")[:3]]
        top.append(
            {
                "cluster": int(c),
                "share_correct": float(share_correct[c]),
                "share_wrong": float(share_wrong[c]),
                "examples": [display.get(keys[i], keys[i]) for i in near],
            }
        )
    return ProbeResult(
        value,
        chance,
        ci,
        details={
            "n_used": int(rows.sum()),
            "n_clusters": n_clusters,
            "n_permutations": N_PERMUTATIONS,
            "p_value": float((1 + (perm >= value).sum()) / (1 + N_PERMUTATIONS)),
            "chance_interval": [float(np.quantile(perm, 0.025)), float(np.quantile(perm, 0.975))],
            "encoder": aset.encoder,
            "most_over_represented_in_correct": top,
            "n_boot": ctx.bootstrap.n_boot,
        },
    )
