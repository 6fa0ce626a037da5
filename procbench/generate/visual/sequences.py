"""Image sequences and the image data of a store, loaded once per build.

A procedure's image sequence is, per step in authored order, the step's first embedded image that no earlier
step used (steps without one stay in the textual context only); the knob rules' ``n_steps`` is its length.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench.formats.recipeqa import PLACEHOLDER
from procbench.generate.search import Searcher, search_until_k
from procbench.store import Store, is_image_id
from procbench.store.views import kept_steps

if TYPE_CHECKING:
    from procbench.embed import Embeddings, NeighborIndex
    from procbench.image_stats import ImageStats

__all__ = ["GATHER_BATCH", "SEARCH_BATCH", "Sequences", "VisualData", "distances_to", "member", "repeated"]

#: Queries per neighbour search.
SEARCH_BATCH = 8192
#: Questions whose candidate vectors are gathered at once.
GATHER_BATCH = 4096


@dataclass
class Sequences:
    """Each procedure's image sequence, flat: ``names (P,)`` sorted, ``offsets (P+1,)`` into ``steps (M,)`` (step
    indices) and ``rows (M,)`` (image embedding rows), ``context_offsets (P+1,)`` into ``context_steps`` (every
    kept step index: the textual context)."""

    names: list[str]
    offsets: np.ndarray
    steps: np.ndarray
    rows: np.ndarray
    context_offsets: np.ndarray
    context_steps: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        """``(P,)`` sequence length of each procedure."""
        return np.diff(self.offsets)

    @functools.cached_property
    def name_array(self) -> pa.Array:
        """:attr:`names` as an Arrow array."""
        return pa.array(self.names, pa.string())

    def context_lists(self) -> pa.ListArray:
        """Every procedure's context (all its kept step indices) as an Arrow list array (int32)."""
        offsets = pa.array(self.context_offsets.astype(np.int32))
        return pa.ListArray.from_arrays(offsets, pa.array(self.context_steps.astype(np.int32)))


def _load_sequences(store: Store, embeddings: Embeddings) -> tuple[Sequences, np.ndarray, np.ndarray]:
    """Every kept procedure's sequence, and the images its kept steps show: procedure codes ``(n,)``, rows ``(n,)``."""
    steps = kept_steps(store, ["procedure_id", "index", "image_ids"]).combine_chunks()
    encoded = pc.dictionary_encode(steps["procedure_id"]).combine_chunks()
    names = [str(x) for x in encoded.dictionary.to_pylist()]
    step_proc = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    step_index = steps["index"].to_numpy(zero_copy_only=False).astype(np.int64)
    lists = steps["image_ids"].combine_chunks()
    parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    found = pc.index_in(pc.list_flatten(lists), value_set=embeddings.keys)
    has = found.is_valid().to_numpy(zero_copy_only=False)
    parents = parents[has]
    rows = found.filter(pa.array(has)).to_numpy(zero_copy_only=False).astype(np.int64)
    seq_step_rows, seq_rows = _first_unused(step_proc, parents, rows, max(1, len(embeddings)))
    seq_proc = step_proc[seq_step_rows]
    procs = np.arange(len(names) + 1)
    sequences = Sequences(
        names=names,
        offsets=np.searchsorted(seq_proc, procs).astype(np.int64),
        steps=step_index[seq_step_rows],
        rows=seq_rows,
        context_offsets=np.searchsorted(step_proc, procs).astype(np.int64),
        context_steps=step_index,
    )
    return sequences, step_proc[parents], rows


def _first_unused(
    step_proc: np.ndarray, parents: np.ndarray, rows: np.ndarray, n_rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per step (``parents``: each ``rows`` entry's step), its first image no earlier step of the procedure chose."""
    codes = step_proc[parents] * n_rows + rows
    uniq, counts = np.unique(codes, return_counts=True)
    repeats = member(step_proc[parents], np.unique(uniq[counts > 1] // n_rows))
    simple = np.flatnonzero(~repeats)
    _, first = np.unique(parents[simple], return_index=True)
    picked = [simple[first]]
    used: set[tuple[int, int]] = set()  # (procedure, row) chosen
    done: set[int] = set()
    for j in np.flatnonzero(repeats).tolist():
        step, key = int(parents[j]), (int(step_proc[parents[j]]), int(rows[j]))
        if step not in done and key not in used:
            used.add(key)
            done.add(step)
            picked.append(np.array([j]))
    order = np.sort(np.concatenate(picked))
    return parents[order], rows[order]


class VisualData:
    """The image embedding, its FAISS index and the image sequences of a store, loaded once per build."""

    def __init__(self, store: Store, *, with_index: bool, searcher: Searcher | None = None) -> None:
        from procbench.embed import load_embeddings, load_index

        self.embeddings: Embeddings = load_embeddings(store, "image")
        with ThreadPoolExecutor(max_workers=1) as loader:  # FAISS reads the index without holding the GIL
            index = loader.submit(load_index, store, "image") if with_index else None
            self.vectors: np.ndarray = self.embeddings.vectors
            self.n_rows = len(self.embeddings)
            self.seqs, shown_procs, shown_rows = _load_sequences(store, self.embeddings)
            self.queries = {"answer": 0, "question_mean": 0}
            owner = pc.index_in(pc.fill_null(self.embeddings.procedure_ids, ""), value_set=pa.array(self.seqs.names))
            self.owner = pc.fill_null(owner, -1).to_numpy(zero_copy_only=False).astype(np.int64)
            self._own_codes, self.extra = self._shared_images(shown_procs, shown_rows)
            self.index: NeighborIndex | None = index.result().served_by(searcher) if index else None
        self._store = store

    def image_stats(self, rows: np.ndarray) -> tuple[ImageStats, np.ndarray]:
        """The :class:`~procbench.image_stats.ImageStats` of ``rows`` (any shape; -1 ignored), and ``(n_rows,)``
        each row's position in them (-1: not asked for)."""
        from procbench.image_stats import ImageStats

        wanted = np.unique(rows[rows >= 0])
        keys = self.embeddings.keys.take(pa.array(wanted)).cast(pa.string()).to_pylist()
        position = np.full(self.n_rows, -1, dtype=np.int64)
        position[wanted] = np.arange(len(wanted))

        def locate(key: str) -> Path | None:
            return self._store.image_path(key) if is_image_id(key) else None

        return ImageStats.read_cached(keys, locate), position

    def _shared_images(self, procs: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, int]:
        """Codes ``procedure * N + row`` of the shown images filed under another procedure (a photo two guides
        share), and the most such images of one procedure."""
        foreign = self.owner[rows] != procs
        codes = np.unique(procs[foreign] * self.n_rows + rows[foreign])
        extra = int(np.bincount(codes // self.n_rows).max()) if len(codes) else 0
        return codes, extra

    @functools.cached_property
    def image_dictionary(self) -> pa.Array:
        """The image id of each embedding row, then :data:`PLACEHOLDER` (row ``n_rows``), as an Arrow array."""
        return pa.concat_arrays([self.embeddings.keys.cast(pa.string()), pa.array([PLACEHOLDER], pa.string())])

    def is_own(self, proc: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``(B, R)`` whether image ``rows[b, j]`` belongs to procedure ``proc[b]`` (filed under it or shared)."""
        own = self.owner[np.maximum(rows, 0)] == proc[:, None]
        if len(self._own_codes):
            own |= member(proc[:, None] * self.n_rows + rows, self._own_codes)
        return own

    def search(self, queries: np.ndarray, proc: np.ndarray, k: int, *, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest images of other procedures than ``proc[b]``: distances ``(B, k)`` float32 ascending
        (inf: none) and rows ``(B, k)`` int64 (-1: none)."""
        if self.index is None:  # pragma: no cover - the tasks that search load the index
            raise RuntimeError("VisualData was loaded without its index")
        n = len(queries)
        out_d = np.empty((n, k), dtype=np.float32)
        out_r = np.empty((n, k), dtype=np.int64)
        names = self.seqs.names
        for start in range(0, n, SEARCH_BATCH):
            stop = min(n, start + SEARCH_BATCH)
            part = proc[start:stop]

            def foreign(queries: np.ndarray, rows: np.ndarray, part: np.ndarray = part) -> np.ndarray:
                if not len(self._own_codes):
                    return np.ones(rows.shape, dtype=bool)
                return ~member(part[queries, None] * self.n_rows + rows, self._own_codes)

            # k + extra neighbours always hold k of other procedures: never searched again
            exclude, wide = [names[p] for p in part.tolist()], k + self.extra
            out_d[start:stop], out_r[start:stop] = search_until_k(
                self.index, queries[start:stop], k, exclude=exclude, keep=foreign, fetch=wide, limit=wide
            )
        self.queries[kind] = self.queries.get(kind, 0) + n
        return out_d, out_r

    def gather(self, rows: np.ndarray) -> np.ndarray:
        """Vectors of ``rows`` (any shape), float32; rows < 0 give zero vectors."""
        flat = rows.reshape(-1)
        missing = flat < 0
        out = np.asarray(self.vectors[np.where(missing, 0, flat) if missing.any() else flat], dtype=np.float32)
        if missing.any():
            out[missing] = 0
        return out.reshape(*rows.shape, self.vectors.shape[1])


def distances_to(data: VisualData, rows: np.ndarray, *points: np.ndarray) -> np.ndarray:
    """``(P, B, n)`` distances from images ``rows (B, n)`` to each of ``points (B, D)`` (one point: ``(B, n)``); nan
    where a row is < 0. FAISS reads the vectors in place."""
    import faiss

    rows = np.ascontiguousarray(rows, dtype=np.int64)
    missing = rows < 0
    ids = np.where(missing, 0, rows) if missing.any() else rows
    vectors = np.ascontiguousarray(data.vectors, dtype=np.float32)
    out = np.empty((len(points), *rows.shape), dtype=np.float32)
    n_q, width = rows.shape
    for i, point in enumerate(points):
        x = np.ascontiguousarray(point, dtype=np.float32)
        if n_q and width:
            faiss.fvec_L2sqr_by_idx(  # type: ignore[attr-defined]  # SWIG-exported, missing from faiss's .pyi
                faiss.swig_ptr(out[i]), faiss.swig_ptr(x), faiss.swig_ptr(vectors), faiss.swig_ptr(ids),
                x.shape[1], n_q, width,
            )  # fmt: skip
    np.sqrt(np.maximum(out, 0.0, out=out), out=out)
    out[:, missing] = np.nan
    return out[0] if len(points) == 1 else out


def repeated(values: np.ndarray) -> np.ndarray:
    """``(B, K)`` True where ``values[b, k]`` equals an earlier entry of row ``b``."""
    order = np.argsort(values, axis=1, kind="stable")
    ordered = np.take_along_axis(values, order, axis=1)
    later = np.zeros(values.shape, dtype=bool)
    later[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
    out = np.zeros_like(later)
    np.put_along_axis(out, order, later, axis=1)
    return out


def member(values: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """``np.isin(values, pool)`` for int64 codes, by sorting ``pool`` once and binary search."""
    if not len(pool):
        return np.zeros(values.shape, dtype=bool)
    ordered = np.sort(pool)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return ordered[at] == values
