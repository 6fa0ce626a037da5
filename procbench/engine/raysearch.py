"""Neighbour searches of ``generate`` as Ray tasks: query shards against one shared index.

The driver puts the FAISS index in the object store once (``faiss.serialize_index``); each task gets a shard
of the queries and a reference to it, and every worker process deserialises an index once and keeps it for
the following tasks. A task runs :func:`procbench.embed.index.stable_search`, whose bytes do not depend on
the batch, so the sharded search returns what a local one returns; the exclusions, the widening of
:func:`procbench.generate.search.search_until_k` and all sampling stay in the driver.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import numpy as np

from procbench.embed.index import RawSearch, stable_search

if TYPE_CHECKING:
    from procbench.embed import NeighborIndex

__all__ = ["MIN_SHARD", "SHARED_KEPT", "RaySearch"]

#: Fewest queries a task gets (fewer are searched in the driver: a task costs milliseconds).
MIN_SHARD = 64
#: Indexes kept in the object store at once (a run searches its persisted indexes and each split's own).
SHARED_KEPT = 4

# Indexes a worker process has deserialised: token -> index (a run uses one or two).
_LOADED: dict[str, Any] = {}


def _search_shard(
    blob: np.ndarray, token: str, nprobe: int, queries: np.ndarray, fetch: int, wider: int | None = None
) -> Any:
    index: Any = _LOADED.get(token)
    if index is None:
        import faiss

        index = faiss.deserialize_index(blob)
        if nprobe:
            index.nprobe = nprobe
        if len(_LOADED) >= 2:
            _LOADED.clear()
        _LOADED[token] = index
    return stable_search(index, queries, fetch, wider)


class RaySearch:
    """Runs the FAISS part of :meth:`NeighborIndex.search` as Ray tasks (see the module).

    Args:
        ray: the connected ``ray`` module.
        workers: tasks a search is split into (at most; each gets at least :data:`MIN_SHARD` queries).
    """

    def __init__(self, ray: Any, workers: int) -> None:
        self.ray = ray
        self.workers = max(1, workers)
        self.task = ray.remote(num_cpus=1)(_search_shard)
        self.shared: dict[int, tuple[Any, Any, str, int]] = {}
        self.tasks = 0
        self.queries = 0

    def _shared(self, index: NeighborIndex) -> tuple[Any, str, int]:
        """The index's serialised copy in the object store, its token and ``nprobe``, put there once per index.

        Keyed by the FAISS object's ``id``, with the object kept beside it: a search of a split's rows builds a
        short-lived index (:meth:`NeighborIndex.subset`), and a later one can get a freed one's ``id``; the kept
        object tells them apart. Only the last :data:`SHARED_KEPT` are kept (each holds its vectors)."""
        key = id(index.index)
        cached = self.shared.get(key)
        if cached is None or cached[1] is not index.index:
            import faiss

            nprobe = int(index.info.get("params", {}).get("nprobe", 0)) if index.kind == "ivf" else 0
            cached = (self.ray.put(faiss.serialize_index(index.index)), index.index, uuid.uuid4().hex, nprobe)
            self.shared.pop(key, None)
            self.shared[key] = cached
            while len(self.shared) > SHARED_KEPT:
                self.shared.pop(next(iter(self.shared)))
        return cached[0], cached[2], cached[3]

    def raw(self, index: NeighborIndex) -> RawSearch:
        """The ``raw`` search of ``index`` for :meth:`NeighborIndex.search`."""

        def run(queries: np.ndarray, fetch: int, wider: int | None = None) -> tuple[np.ndarray, np.ndarray]:
            n = len(queries)
            shards = min(self.workers, n // MIN_SHARD)
            if shards < 2:
                return stable_search(index.index, queries, fetch, wider)
            blob, token, nprobe = self._shared(index)
            bounds = np.linspace(0, n, shards + 1).astype(int)
            refs = [
                self.task.remote(blob, token, nprobe, queries[a:b], fetch, wider)
                for a, b in zip(bounds[:-1], bounds[1:], strict=True)
            ]
            found = self.ray.get(refs)
            self.tasks += len(refs)
            self.queries += n
            return np.concatenate([d for d, _ in found]), np.concatenate([r for _, r in found])

        return run
