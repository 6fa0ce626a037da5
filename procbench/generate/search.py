"""Neighbour searches and distances in an embedding, as every generator uses them.

Every FAISS neighbour search of the generators goes through :func:`knn`, so that a different engine (a
pool of workers, a cluster) has one place to go. :func:`search_until_k` adds what generators need on top:
neighbours a generator cannot use (its own procedure's images, copies of the answer, titles of another
split) are dropped, and the search is widened until ``k`` usable ones remain. :func:`median_pair_distance`
is the RecipeQA style's fixed distance: the median distance between random items of different procedures.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from procbench.embed import NeighborIndex
    from procbench.embed.index import RawSearch

__all__ = ["PAIRS", "Searcher", "knn", "median_pair_distance", "search_until_k", "searching_with"]

#: Random pairs drawn to estimate the RecipeQA style's fixed distance.
PAIRS = 10_000
#: Queries one :func:`search_until_k` call hands :func:`knn` at a time (bounds the ``(queries, fetch)`` arrays).
SEARCH_BLOCK = 32_768


class Searcher(Protocol):
    """Where the FAISS part of a search runs (e.g. :class:`procbench.engine.raysearch.RaySearch`)."""

    def raw(self, index: NeighborIndex) -> RawSearch:
        """The raw search of ``index`` (see :meth:`NeighborIndex.search`)."""
        ...


_searcher: Searcher | None = None


@contextlib.contextmanager
def searching_with(searcher: Searcher | None) -> Iterator[None]:
    """Within the block, :func:`knn` runs its FAISS searches through ``searcher`` (None: in this process).

    Process-wide, not per thread: the visual generators search on a worker thread.
    """
    global _searcher
    previous, _searcher = _searcher, searcher
    try:
        yield
    finally:
        _searcher = previous


def knn(
    index: NeighborIndex, queries: np.ndarray, k: int, *, exclude: Sequence[str | None] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest rows of ``index`` to each of ``queries (B, D)``, none of procedure ``exclude[b]``.

    Returns:
        ``(distances (B, k) float32 ascending, inf where none; ids (B, k) int64 rows, -1 where none)``.
    """
    raw = _searcher.raw(index) if _searcher is not None else None
    found = index.search(np.ascontiguousarray(queries, dtype=np.float32), k, exclude=exclude, raw=raw)
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
    """Per query, the first ``k`` of its neighbours that ``keep`` keeps, in distance order.

    ``fetch`` neighbours are searched (:func:`knn`); the queries left with fewer than ``k`` kept ones are
    searched again with twice as many, up to ``limit`` (the whole index, or a ``fetch`` known to suffice), unless
    their search came back short: an exact index had no more rows, an IVF index's probed lists are exhausted, and
    a wider search would return the same (asking an IVF index for the whole store held 18 GB at 100k procedures).
    Queries are searched :data:`SEARCH_BLOCK` at a time (the result does not depend on the batching).

    Args:
        exclude: the procedure of each query (its rows are never neighbours).
        keep: ``keep(queries_idx (b,), ids (b, F)) -> (b, F) bool``: which neighbours of the queries
            ``queries_idx`` (indices into ``queries``) are usable; ids < 0 are never kept.

    Returns:
        ``(distances (B, k) float32, inf where none; ids (B, k) int64, -1 where none)``.
    """
    n = len(queries)
    out_d = np.full((n, k), np.inf, dtype=np.float32)
    out_i = np.full((n, k), -1, dtype=np.int64)
    todo = np.arange(n)
    while len(todo):
        wider = []
        for start in range(0, len(todo), SEARCH_BLOCK):
            block = todo[start : start + SEARCH_BLOCK]
            dist, ids = knn(index, queries[block], fetch, exclude=[exclude[i] for i in block.tolist()])
            kept = keep(block, ids) & (ids >= 0)
            order = np.argsort(~kept, axis=1, kind="stable")[:, :k]
            width = order.shape[1]
            valid = np.arange(width) < kept.sum(axis=1)[:, None]
            out_i[block, :width] = np.where(valid, np.take_along_axis(ids, order, axis=1), -1)
            out_d[block, :width] = np.where(valid, np.take_along_axis(dist, order, axis=1), np.inf)
            # widen only what is short of k and whose search filled every slot (so more may be found)
            wider.append(block[(kept.sum(axis=1) < k) & ((ids >= 0).sum(axis=1) >= ids.shape[1])])
        if fetch >= limit:
            break
        todo = np.concatenate(wider)
        fetch = min(limit, fetch * 2)
    return out_d, out_i


def median_pair_distance(
    groups: np.ndarray,
    distance: Callable[[np.ndarray, np.ndarray], np.ndarray],
    rng: np.random.Generator,
    *,
    pairs: int = PAIRS,
) -> float:
    """The median of ``distance(i, j)`` over ``pairs`` random pairs of rows of different ``groups``.

    Args:
        groups: ``(N,)`` int64 the procedure of each row (rows of one procedure are never paired).
        distance: the distances between rows ``i`` and ``j`` (each ``(P,)``), in the embedding's own precision.

    Returns:
        0.0 when fewer than two rows or no pair of different groups exist.
    """
    n = len(groups)
    if n < 2:
        return 0.0
    i, j = rng.integers(0, n, pairs), rng.integers(0, n, pairs)
    keep = groups[i] != groups[j]
    if not keep.any():
        return 0.0
    return float(np.median(distance(i[keep], j[keep])))
