"""Algorithm 1 of paper 004 (budgeted debiasing): KMeans over all step titles, a budget per cluster, negatives
drawn only from clusters with budget left; a draw that cannot be completed (where the paper's loop never ends)
spends nothing and is skipped, so budgets never go negative."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from procbench.errors import BadInput
from procbench.generate import policy

__all__ = ["ClusterBudget", "Clustering", "cluster_titles", "default_n_clusters", "draw_negatives", "row_hashes"]


def default_n_clusters(n_distinct: int) -> int:
    """``round(√n_distinct)``, at least 1 (2 when there are two titles), at most ``MAX_DEFAULT_CLUSTERS`` (policy)."""
    if n_distinct <= 1:
        return 1
    return max(2, min(policy.current().MAX_DEFAULT_CLUSTERS, round(math.sqrt(n_distinct))))


@dataclass(frozen=True)
class Clustering:
    """KMeans over title embeddings."""

    labels: np.ndarray  # (N,) int32 cluster of every embedding row
    n_clusters: int
    inertia: float  # of the distinct titles
    n_iter: int  # Lloyd iterations run

    def sizes(self) -> np.ndarray:
        """``(n_clusters,)`` rows per cluster."""
        return np.bincount(self.labels, minlength=self.n_clusters)


def row_hashes(vectors: np.ndarray) -> np.ndarray:
    """``(N,)`` each row of float32 ``vectors (N, D)`` as one opaque value: equal rows, equal values."""
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    return data.view(np.dtype((np.void, data.dtype.itemsize * data.shape[1]))).reshape(-1)


def cluster_titles(
    vectors: np.ndarray, *, n_clusters: int, seed: int = 0, hashes: np.ndarray | None = None
) -> Clustering:
    """KMeans of ``(N, D)`` float32 title vectors (one seeded k-means++ run on one thread: the same labels on every
    machine), fitted on the distinct titles (``hashes (N,)``, else the bytes); BadInput: bad ``n_clusters``."""
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    data = np.ascontiguousarray(vectors, dtype=np.float32)
    if hashes is None:
        hashes = row_hashes(data)
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    distinct = np.sort(first)
    rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")
    if n_clusters < 1 or n_clusters > len(distinct):
        raise BadInput(f"--clusters must be between 1 and the {len(distinct)} distinct titles, not {n_clusters}")
    model = KMeans(n_clusters=n_clusters, n_init=1, max_iter=100, random_state=seed)
    with threadpool_limits(limits=1):
        labels = model.fit_predict(data[distinct]).astype(np.int32)
    return Clustering(labels[rank[inverse.reshape(-1)]], n_clusters, float(model.inertia_), int(model.n_iter_))


class ClusterBudget:
    """How many more negatives each cluster may give; starts at ``budget`` everywhere, never below zero."""

    def __init__(self, n_clusters: int, budget: int) -> None:
        if budget < 1:
            raise BadInput(f"--budget must be at least 1, not {budget}")
        self.budget = budget
        self.left = np.full(n_clusters, budget, dtype=np.int64)

    @property
    def spent(self) -> np.ndarray:
        """``(n_clusters,)`` negatives drawn from each cluster so far."""
        return self.budget - self.left

    def spend(self, clusters: Sequence[int] | np.ndarray) -> None:
        """Spend one unit per entry of ``clusters``, all or nothing (ValueError below zero: a caller bug)."""
        need = np.bincount(np.asarray(clusters, dtype=np.int64), minlength=len(self.left))
        if np.any(need > self.left):
            raise ValueError("cluster budget would go negative")
        self.left -= need

    def summary(self) -> dict[str, Any]:
        """Budget usage: per-cluster budget, clusters, total spent, exhausted and untouched clusters."""
        spent = self.spent
        return {
            "per_cluster": self.budget,
            "clusters": len(self.left),
            "spent": int(spent.sum()),
            "exhausted": int((self.left == 0).sum()),
            "untouched": int((spent == 0).sum()),
            "spent_per_cluster": [int(s) for s in spent],
        }


def draw_negatives(
    rows: np.ndarray,
    clusters: np.ndarray | None,
    texts: Sequence[str | None],
    rng: np.random.Generator,
    *,
    n: int = 3,
    budget: ClusterBudget | None = None,
    forbidden: Collection[str] = (),
) -> tuple[list[int] | None, str | None]:
    """Draw ``n`` of ``rows (M,)`` uniformly one after another, no two equal ``texts (M,)`` (None: unusable), none in
    ``forbidden``, and with a ``budget`` only from ``clusters (M,)`` with budget left (nothing is spent here).
    Returns ``(picked, None)`` or ``(None, "few_candidates" | "budget_exhausted")``."""
    if budget is not None and clusters is None:
        raise ValueError("a budget needs the candidates' clusters")
    left = budget.left.copy() if budget is not None else None
    seen = set(forbidden)
    picked: list[int] = []
    for i in rng.permutation(len(rows)):
        text = texts[i]
        if text is None or text in seen:
            continue
        if left is not None and clusters is not None:
            cluster = int(clusters[i])
            if left[cluster] <= 0:
                continue
            left[cluster] -= 1
        seen.add(text)
        picked.append(int(rows[i]))
        if len(picked) == n:
            return picked, None
    if budget is None:
        return None, "few_candidates"
    distinct = {t for t in texts if t is not None} - set(forbidden)
    return None, "few_candidates" if len(distinct) < n else "budget_exhausted"
