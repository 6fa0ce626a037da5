"""Neighbour searches in an embedding: every search of the generators goes through :func:`knn` (one place for
another engine); :func:`search_until_k` widens it until ``k`` usable neighbours remain."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from procbench.embed.index import Searcher
from procbench.generate import policy

if TYPE_CHECKING:
    from procbench.embed import NeighborIndex

__all__ = ["Searcher", "knn", "median_pair_distance", "search_until_k"]

#: Queries one :func:`search_until_k` call hands :func:`knn` at a time (bounds the ``(queries, fetch)`` arrays).
SEARCH_BLOCK = 32_768


def knn(
    index: NeighborIndex,
    queries: np.ndarray,
    k: int,
    *,
    exclude: Sequence[str | None] | None = None,
    nprobe: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest rows of ``index`` to ``queries (B, D)``, none of procedure ``exclude[b]``, where the index is
    served: distances ``(B, k)`` float32 ascending (inf: none), ids ``(B, k)`` int64 (-1: none)."""
    vectors = np.ascontiguousarray(queries, dtype=np.float32)
    found = index.search(vectors, k, exclude=exclude, nprobe=nprobe)
    return found.distances, found.indices


def search_until_k(
    index: NeighborIndex,
    queries: np.ndarray,
    k: int,
    *,
    exclude: Sequence[str | None],
    keep: Callable[[np.ndarray, np.ndarray], np.ndarray],
    fetch: int,
    limit: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the first ``k`` neighbours ``keep(queries_idx (b,), ids (b, F)) -> (b, F)`` keeps, none of
    procedure ``exclude[b]``: ``fetch`` searched, doubled up to ``limit`` for the queries left short (an IVF index
    comes back short: it is searched again scanning twice as many lists). Distances ``(B, k)`` (inf: none) and ids
    ``(B, k)`` (-1: none)."""
    n = len(queries)
    out_d = np.full((n, k), np.inf, dtype=np.float32)
    out_i = np.full((n, k), -1, dtype=np.int64)
    nprobe, nlist = index.probes
    todo, fetch_of, probe_of = np.arange(n), np.full(n, fetch), np.full(n, nprobe)
    while len(todo):
        again = []
        # queries searched alike (fetch, lists) go together, in blocks
        kinds, kind_of = np.unique(np.stack([fetch_of[todo], probe_of[todo]], axis=1), axis=0, return_inverse=True)
        for kind, (width_asked, lists) in enumerate(kinds.tolist()):
            group = todo[kind_of.reshape(-1) == kind]
            for start in range(0, len(group), SEARCH_BLOCK):
                block = group[start : start + SEARCH_BLOCK]
                dist, ids = knn(
                    index,
                    queries[block],
                    int(width_asked),
                    exclude=[exclude[i] for i in block.tolist()],
                    nprobe=int(lists) if lists != nprobe else None,
                )
                kept = keep(block, ids) & (ids >= 0)
                order = np.argsort(~kept, axis=1, kind="stable")[:, :k]
                width = order.shape[1]
                valid = np.arange(width) < kept.sum(axis=1)[:, None]
                out_i[block, :width] = np.where(valid, np.take_along_axis(ids, order, axis=1), -1)
                out_d[block, :width] = np.where(valid, np.take_along_axis(dist, order, axis=1), np.inf)
                short_of_k = kept.sum(axis=1) < k
                full = (ids >= 0).sum(axis=1) >= ids.shape[1]
                # filled every slot: ask for more rows; came back short: scan more lists (IVF), else done
                wider = block[short_of_k & full & (width_asked < limit)]
                fetch_of[wider] = np.minimum(limit, width_asked * 2)
                deeper = block[short_of_k & ~full & (lists < nlist)]
                probe_of[deeper] = np.minimum(nlist, lists * 2)
                again += [wider, deeper]
        todo = np.sort(np.concatenate(again)) if again else np.zeros(0, dtype=np.int64)
    return out_d, out_i


def median_pair_distance(
    groups: np.ndarray, distance: Callable[[np.ndarray, np.ndarray], np.ndarray], rng: np.random.Generator
) -> float:
    """The median ``distance(i, j) -> (P,)`` over ``MIN_DISTANCE_PAIRS`` (policy) random pairs of rows of different
    ``groups (N,)``; 0.0 when there is no such pair."""
    n = len(groups)
    if n < 2:
        return 0.0
    pairs = policy.current().MIN_DISTANCE_PAIRS
    i, j = rng.integers(0, n, pairs), rng.integers(0, n, pairs)
    keep = groups[i] != groups[j]
    if not keep.any():
        return 0.0
    return float(np.median(distance(i[keep], j[keep])))
