"""FAISS indexes over embedding files, and the ``neighbors`` API the question generators use.

One index per embedding file, ``STORE/indexes/NAME.faiss`` with a sidecar ``NAME.json`` that records the
kind, its parameters, the embedding it was built from (``embedding_id``) and its measured recall. Up to
``exact_max_rows`` rows the index is exact (``IndexFlatL2``); above, it is an ``IndexIVFFlat`` with
``nlist ≈ 2·√N`` lists, trained on a seeded sample, whose ``nprobe`` is the smallest power of two that
reaches ``recall_target`` recall@``recall_k`` against exact search on ``recall_sample`` stored vectors.

Distances are Euclidean on the L2-normalised vectors (DESIGN §6): ``d = ‖a − b‖``, in ``[0, 2]``.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench.embed.fields import FIELDS
from procbench.embed.storage import Embeddings, embedding_name, load_embeddings
from procbench.errors import BadInput, CorruptIndex, MissingDependency, StoreError
from procbench.progress import SILENT, Progress
from procbench.store import Store

if TYPE_CHECKING:
    from procbench.store import Transaction

__all__ = [
    "IndexConfig",
    "NeighborIndex",
    "Neighbors",
    "build_faiss_index",
    "exact_knn",
    "index_paths",
    "load_index",
    "neighbors",
    "neighbors_of",
    "stable_search",
]

FORMAT = "procbench-index/1"


@dataclass(frozen=True)
class IndexConfig:
    """How indexes are built (recorded in each sidecar; a change rebuilds the index)."""

    exact_max_rows: int = 250_000
    recall_k: int = 100
    recall_target: float = 0.95
    recall_sample: int = 1000
    seed: int = 0


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - faiss-cpu is a dependency
        raise MissingDependency("FAISS is not installed: pip install faiss-cpu") from exc
    return faiss


def index_paths(store: Store, name: str) -> tuple[Path, Path]:
    """``(STORE/indexes/NAME.faiss, STORE/indexes/NAME.json)``."""
    base = store.root / "indexes"
    return base / f"{name}.faiss", base / f"{name}.json"


def exact_knn(
    queries: np.ndarray, vectors: np.ndarray, k: int, *, chunk: int = 65536
) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``k`` nearest rows of ``vectors`` (scanned in chunks: it may be memory-mapped) for each query.

    Returns:
        ``(squared L2 distances (N, k) float32, row indices (N, k) int64)``.
    """
    faiss = _faiss()
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    k = min(k, len(vectors))
    best_d = np.full((len(queries), k), np.inf, dtype=np.float32)
    best_i = np.full((len(queries), k), -1, dtype=np.int64)
    for start in range(0, len(vectors), chunk):
        block = np.ascontiguousarray(vectors[start : start + chunk], dtype=np.float32)
        d, i = faiss.knn(queries, block, min(k, len(block)))
        cat_d = np.concatenate([best_d, d], axis=1)
        cat_i = np.concatenate([best_i, i + start], axis=1)
        order = np.argsort(cat_d, axis=1, kind="stable")[:, :k]
        best_d = np.take_along_axis(cat_d, order, axis=1)
        best_i = np.take_along_axis(cat_i, order, axis=1)
    return best_d, best_i


def _recall(found: np.ndarray, truth: np.ndarray) -> float:
    pairs = zip(found, truth, strict=True)
    hits = sum(len(np.intersect1d(f[f >= 0], t[t >= 0], assume_unique=True)) for f, t in pairs)
    return hits / max(1, truth.size)


def build_faiss_index(
    vectors: np.ndarray,
    *,
    config: IndexConfig = IndexConfig(),
    progress: Progress = SILENT,
    description: str = "index",
) -> tuple[Any, dict[str, Any]]:
    """Build the index for ``(N, D)`` float32 ``vectors``; returns ``(faiss index, info)``.

    ``info`` holds ``kind`` (``flat`` or ``ivf``), ``params`` and ``recall`` (measured for ``ivf``).
    """
    faiss = _faiss()
    n, dim = vectors.shape
    add_chunk = 65536
    if n <= config.exact_max_rows:
        index = faiss.IndexFlatL2(dim)
        progress.start(f"{description} (exact)", total=n)
        for start in range(0, n, add_chunk):
            index.add(np.ascontiguousarray(vectors[start : start + add_chunk], dtype=np.float32))
            progress.advance(min(add_chunk, n - start))
        k = min(config.recall_k, n)
        return index, {
            "kind": "flat",
            "metric": "l2",
            "rows": n,
            "dim": dim,
            "params": {},
            "recall": {"k": k, "value": 1.0, "exact": True},
        }

    rng = np.random.default_rng(config.seed)
    nlist = max(1, min(int(2 * math.sqrt(n)), n // 39))
    train_rows = np.sort(rng.choice(n, size=min(n, nlist * 64), replace=False))
    quantizer = faiss.IndexFlatL2(dim)
    index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_L2)
    index.cp.seed = config.seed
    index.cp.niter = 10
    progress.start(f"{description}: train IVF ({nlist} lists)", total=None)
    index.train(np.ascontiguousarray(vectors[train_rows], dtype=np.float32))
    progress.start(f"{description}: add", total=n)
    for start in range(0, n, add_chunk):
        index.add(np.ascontiguousarray(vectors[start : start + add_chunk], dtype=np.float32))
        progress.advance(min(add_chunk, n - start))

    k = min(config.recall_k, n)
    sample_rows = np.sort(rng.choice(n, size=min(n, config.recall_sample), replace=False))
    queries = np.ascontiguousarray(vectors[sample_rows], dtype=np.float32)
    progress.start(f"{description}: measure recall@{k}", total=None)
    _, truth = exact_knn(queries, vectors, k)
    ladder = sorted({min(nlist, 2**p) for p in range(0, max(1, math.ceil(math.log2(nlist))) + 1)} | {nlist})
    by_nprobe: dict[str, float] = {}
    chosen = nlist
    for nprobe in ladder:
        index.nprobe = nprobe
        _, found = index.search(queries, k)
        by_nprobe[str(nprobe)] = round(_recall(found, truth), 4)
        if by_nprobe[str(nprobe)] >= config.recall_target:
            chosen = nprobe
            break
    index.nprobe = chosen
    info = {
        "kind": "ivf",
        "metric": "l2",
        "rows": n,
        "dim": dim,
        "params": {"nlist": nlist, "nprobe": chosen, "train_rows": len(train_rows), "niter": 10},
        "recall": {
            "k": k,
            "queries": len(sample_rows),
            "value": by_nprobe[str(chosen)],
            "target": config.recall_target,
            "by_nprobe": by_nprobe,
            "exact": False,
        },
    }
    return index, info


def build_index_for(
    store: Store, txn: Transaction, embeddings: Embeddings, *, config: IndexConfig, progress: Progress = SILENT
) -> dict[str, Any]:
    """Build the index of ``embeddings`` and stage it (``.faiss`` + sidecar ``.json``); returns the sidecar."""
    faiss = _faiss()
    index, info = build_faiss_index(
        embeddings.vectors, config=config, progress=progress, description=f"index {embeddings.name}"
    )
    sidecar = {
        "format": FORMAT,
        "embedding": embeddings.name,
        "embedding_id": embeddings.metadata.get("embedding_id", ""),
        **info,
        "config": asdict(config),
        "faiss": getattr(faiss, "__version__", ""),
    }
    faiss.write_index(index, str(txn.stage(f"indexes/{embeddings.name}.faiss")))
    txn.stage(f"indexes/{embeddings.name}.json").write_text(json.dumps(sidecar, indent=2) + "\n", encoding="utf-8")
    return sidecar


def read_sidecar(store: Store, name: str) -> dict[str, Any] | None:
    """The sidecar of index ``name``, or None when there is none (or it is unreadable)."""
    faiss_path, json_path = index_paths(store, name)
    if not (faiss_path.is_file() and json_path.is_file()):
        return None
    try:
        data: dict[str, Any] = json.loads(json_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data


def index_is_current(sidecar: dict[str, Any] | None, embedding: str, rows: int, config: IndexConfig) -> bool:
    """Whether a persisted index (its sidecar) is what ``config`` would build for embedding id ``embedding``."""
    if sidecar is None or sidecar.get("embedding_id") != embedding:
        return False
    kind = "flat" if rows <= config.exact_max_rows else "ivf"
    if sidecar.get("kind") != kind:
        return False
    if kind == "flat":
        return True
    built = dict(sidecar.get("config") or {})
    wanted = asdict(config)
    built.pop("exact_max_rows", None)
    wanted.pop("exact_max_rows")
    return built == wanted


@dataclass(frozen=True)
class Neighbors:
    """Result of a neighbour search.

    Attributes:
        distances: ``(N, k)`` float32 Euclidean distances on the normalised vectors, ascending; ``inf`` where
            fewer than ``k`` neighbours were found.
        indices: ``(N, k)`` int64 rows of the embedding file; ``-1`` where none.
    """

    distances: np.ndarray
    indices: np.ndarray
    index_keys: pa.Array = dataclass_field(repr=False)

    @property
    def keys(self) -> np.ndarray:
        """``(N, k)`` object array of keys (``None`` where no neighbour)."""
        flat = self.indices.reshape(-1)
        taken = self.index_keys.take(pa.array(np.where(flat >= 0, flat, 0))).to_numpy(zero_copy_only=False)
        out: np.ndarray = taken.astype(object)
        out[flat < 0] = None
        return out.reshape(self.indices.shape)


#: A flat search asks FAISS for this many rows more than wanted, then ranks them by exact distances.
RERANK_MARGIN = 16
#: (query, row) pairs whose distances are computed at once when re-ranking (bounds the memory).
RERANK_PAIRS = 16384

#: ``raw(queries, fetch, nprobe) -> (squared distances, rows)``: a FAISS search (see :func:`stable_search`).
RawSearch = Callable[[np.ndarray, int, "int | None"], tuple[np.ndarray, np.ndarray]]


class Searcher(Protocol):
    """Where the FAISS part of a search runs (e.g. :class:`procbench.engine.raysearch.RaySearch`)."""

    def raw(self, index: NeighborIndex) -> RawSearch:
        """The raw search of ``index`` (see :meth:`NeighborIndex.search`)."""
        ...


def stable_search(
    index: Any, queries: np.ndarray, fetch: int, nprobe: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``index.search(queries, fetch)`` whose bytes do not depend on how the queries are batched.

    FAISS's exact (flat) search computes distances with BLAS for batches of 20 or more queries: their last
    bits, and so the order of near ties, change with the batch's size and the threads BLAS uses. So a flat
    search asks FAISS for :data:`RERANK_MARGIN` more candidates, computes each (query, candidate) distance
    on its own (a sum of squared differences, the same bytes in any batch, on any worker) and keeps the
    ``fetch`` best by (distance, row). IVF searches scan their lists per query already and are returned as
    they are; ``nprobe`` scans that many lists instead of the index's own. Returns squared distances
    ``(B, fetch)`` float32 and rows ``(B, fetch)`` int64 (-1: none).
    """
    q = np.ascontiguousarray(queries, dtype=np.float32)
    if not hasattr(index, "get_xb") or not len(q):  # IVF: per query already
        params = None if nprobe is None else _faiss().SearchParametersIVF(nprobe=int(nprobe))
        squared, rows = index.search(q, fetch, params=params)
        return squared, np.asarray(rows, dtype=np.int64)
    faiss = _faiss()
    n_total, dim = int(index.ntotal), int(index.d)
    wide = min(n_total, fetch + RERANK_MARGIN)
    _, rows = index.search(q, wide)
    rows = rows.astype(np.int64)
    stored = faiss.rev_swig_ptr(index.get_xb(), n_total * dim).reshape(n_total, dim)
    flat_rows = rows.reshape(-1)
    owner = np.repeat(np.arange(len(q)), wide)
    squared = np.full(len(flat_rows), np.inf, dtype=np.float32)
    for start in range(0, len(flat_rows), RERANK_PAIRS):
        part = slice(start, start + RERANK_PAIRS)
        found = flat_rows[part] >= 0
        picked = flat_rows[part][found]
        diff = stored[picked] - q[owner[part][found]]
        squared[start : start + found.size][found] = np.square(diff).sum(axis=1, dtype=np.float32)
    squared = squared.reshape(rows.shape)
    order = np.lexsort((np.where(rows >= 0, rows, n_total), squared), axis=1)[:, :fetch]
    return np.take_along_axis(squared, order, axis=1), np.take_along_axis(rows, order, axis=1)


class NeighborIndex:
    """A loaded FAISS index with the keys and procedure of every row (see :func:`load_index`)."""

    def __init__(
        self, name: str, index: Any, embeddings: Embeddings, info: dict[str, Any], searcher: Searcher | None = None
    ) -> None:
        self.name = name
        self.index = index
        self.embeddings = embeddings
        self.info = info
        #: where its searches run (None: in this process); see :meth:`served_by`
        self.searcher = searcher
        procedure_ids = embeddings.procedure_ids
        if isinstance(procedure_ids, pa.ChunkedArray):
            procedure_ids = procedure_ids.combine_chunks()
        encoded = pc.dictionary_encode(pc.fill_null(procedure_ids, ""))
        self.groups = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        self._group_code = {name: i for i, name in enumerate(encoded.dictionary.to_pylist())}
        self.max_group_size = int(np.bincount(self.groups).max()) if len(self.groups) else 0

    @property
    def keys(self) -> pa.Array:
        """``(N,)`` keys of the indexed rows."""
        return self.embeddings.keys

    @property
    def kind(self) -> str:
        """``flat`` (exact) or ``ivf``."""
        return str(self.info.get("kind", ""))

    @property
    def probes(self) -> tuple[int, int]:
        """``(nprobe, nlist)`` of an IVF index: the lists a search scans, and all of them (``(0, 0)``: exact)."""
        params = self.info.get("params") or {}
        return (int(params.get("nprobe", 0)), int(params.get("nlist", 0))) if self.kind == "ivf" else (0, 0)

    def served_by(self, searcher: Searcher | None) -> NeighborIndex:
        """This index with its searches run by ``searcher`` (e.g. Ray tasks; None: in this process), and those of
        its :meth:`subset` indexes: a generation run binds its engine's searcher to the indexes it loads."""
        served = copy.copy(self)
        served.searcher = searcher
        return served

    @property
    def exact_max_rows(self) -> int:
        """Up to how many rows this store's indexes are exact (its :class:`IndexConfig`, from the sidecar)."""
        config = self.info.get("config") or {}
        return int(config.get("exact_max_rows", IndexConfig().exact_max_rows))

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def subset(self, rows: np.ndarray) -> NeighborIndex:
        """An exact (flat) index over ``rows (n,)`` (ascending) of this one's embedding: its rows are positions in
        ``rows``. Searching a part of a store (one split's items) this way costs what the part costs, where
        filtering the whole index costs what the whole store does."""
        faiss = _faiss()
        emb = self.embeddings
        vectors = np.ascontiguousarray(emb.vectors[rows], dtype=np.float32)
        index = faiss.IndexFlatL2(emb.dim)
        index.add(vectors)
        taken = pa.array(np.asarray(rows, dtype=np.int64))
        part = Embeddings(
            emb.name, emb.path, emb.keys.take(taken), emb.procedure_ids.take(taken), emb.hashes[rows], vectors,
            dict(emb.metadata),
        )  # fmt: skip
        return NeighborIndex(f"{self.name}[{len(rows)} rows]", index, part, {"kind": "flat"}, self.searcher)

    def search(
        self,
        queries: np.ndarray,
        k: int,
        *,
        exclude: Sequence[str | None] | None = None,
        exclude_keys: Sequence[Collection[str]] | None = None,
        raw: RawSearch | None = None,
        nprobe: int | None = None,
    ) -> Neighbors:
        """See :func:`neighbors`; ``raw`` runs the FAISS search (default: :attr:`searcher`'s, else
        :func:`stable_search` here); ``nprobe``: an IVF index scans that many lists (None: its own
        :attr:`nprobe`)."""
        q = np.ascontiguousarray(queries, dtype=np.float32)
        if q.ndim == 1:
            q = q.reshape(1, -1)
        if q.ndim != 2 or q.shape[1] != self.embeddings.dim:
            raise BadInput(f"queries must be (N, {self.embeddings.dim}) float32; got shape {queries.shape}")
        if k < 1:
            raise BadInput(f"k must be at least 1, got {k}")
        n_total = len(self)
        extra = 0
        query_groups = None
        if exclude is not None:
            if len(exclude) != len(q):
                raise BadInput(f"exclude has {len(exclude)} entries for {len(q)} queries")
            query_groups = np.array([self._group_code.get(p, -2) if p is not None else -2 for p in exclude])
            extra += self.max_group_size
        excluded_rows: list[np.ndarray] | None = None
        if exclude_keys is not None:
            if len(exclude_keys) != len(q):
                raise BadInput(f"exclude_keys has {len(exclude_keys)} entries for {len(q)} queries")
            positions = self.embeddings._positions
            excluded_rows = [
                np.array(sorted(positions[key] for key in keys if key in positions), dtype=np.int64)
                for keys in exclude_keys
            ]
            extra += max((len(r) for r in excluded_rows), default=0)
        fetch = max(1, min(n_total, k + extra))
        if n_total == 0:
            return Neighbors(np.full((len(q), k), np.inf, np.float32), np.full((len(q), k), -1, np.int64), self.keys)
        if raw is None and self.searcher is not None:
            raw = self.searcher.raw(self)
        squared, rows = raw(q, fetch, nprobe) if raw is not None else stable_search(self.index, q, fetch, nprobe)
        rows = rows.astype(np.int64)
        mask = rows < 0
        if query_groups is not None:
            mask |= self.groups[np.maximum(rows, 0)] == query_groups[:, None]
        if excluded_rows is not None:
            for r, drop in enumerate(excluded_rows):
                if len(drop):
                    mask[r] |= np.isin(rows[r], drop)
        order = np.argsort(mask, axis=1, kind="stable")[:, :k]
        rows = np.take_along_axis(rows, order, axis=1)
        dropped = np.take_along_axis(mask, order, axis=1)
        distances = np.sqrt(np.maximum(np.take_along_axis(squared, order, axis=1), 0)).astype(np.float32)
        rows[dropped] = -1
        distances[dropped] = np.inf
        if rows.shape[1] < k:
            pad = k - rows.shape[1]
            rows = np.pad(rows, ((0, 0), (0, pad)), constant_values=-1)
            distances = np.pad(distances, ((0, 0), (0, pad)), constant_values=np.inf)
        return Neighbors(distances, rows, self.keys)


def load_index(store: Store | str | Path, name: str) -> NeighborIndex:
    """Load the persisted index of an embedding (by file name or field) without rebuilding it.

    Raises:
        BadInput: the embedding or its index does not exist.
        StoreError: the index was built from other embeddings than the file now holds (run ``procbench embed``).
        CorruptIndex: the ``.faiss`` file is damaged (unreadable, or not the size of its embeddings).
    """
    if not isinstance(store, Store):
        store = Store.open(store)
    if name in FIELDS:
        name = embedding_name(store, name)
    embeddings = load_embeddings(store, name)
    sidecar = read_sidecar(store, name)
    if sidecar is None:
        raise BadInput(f"no index for embedding {name} in {store.root}; run `procbench embed` to build it")
    if sidecar.get("embedding_id") != embeddings.metadata.get("embedding_id"):
        raise StoreError(
            f"index {name} was built from other embeddings than embeddings/{name}.arrow holds; "
            "run `procbench embed` to rebuild it"
        )
    faiss = _faiss()
    path = index_paths(store, name)[0]
    fix = f"delete {path} and its .json and run `procbench embed` to rebuild it"
    try:
        index = faiss.read_index(str(path))
    except RuntimeError as exc:  # truncated, overwritten, not a FAISS file
        raise CorruptIndex(f"index {path} is damaged (FAISS cannot read it); {fix}") from exc
    if index.ntotal != len(embeddings) or index.d != embeddings.dim:
        raise CorruptIndex(
            f"index {path} holds {index.ntotal} vectors of {index.d} dimensions, its embeddings "
            f"{len(embeddings)} of {embeddings.dim}; {fix}"
        )
    if sidecar.get("kind") == "ivf":
        index.nprobe = int(sidecar["params"]["nprobe"])
    return NeighborIndex(name, index, embeddings, sidecar)


def neighbors(
    source: NeighborIndex | Store | str | Path,
    queries: np.ndarray,
    k: int,
    *,
    field: str | None = None,
    exclude: Sequence[str | None] | None = None,
    exclude_keys: Sequence[Collection[str]] | None = None,
) -> Neighbors:
    """The ``k`` nearest stored rows of each query, by Euclidean distance on the normalised vectors.

    Args:
        source: a loaded :class:`NeighborIndex` (load once, query many times), or a store with ``field``.
        queries: ``(N, D)`` float32 (e.g. rows of ``index.embeddings.vectors``, or a mean of some).
        k: neighbours per query.
        field: with a store: a field (``step_title``...; its current embedding) or an embedding name.
        exclude: per query, a procedure id whose rows are left out (same-procedure exclusion), or None.
        exclude_keys: per query, keys to leave out (e.g. the query's own key, choices already drawn).

    Returns:
        :class:`Neighbors` with ``(N, k)`` ``distances`` and ``indices`` (and ``keys``). With an exact index
        the result is the exact top ``k`` after exclusions; with an IVF index it is approximate.
    """
    if not isinstance(source, NeighborIndex):
        if field is None:
            raise BadInput("neighbors(store, ...) needs field= (a field or an embedding name)")
        source = load_index(source, field)
    return source.search(queries, k, exclude=exclude, exclude_keys=exclude_keys)


def neighbors_of(
    index: NeighborIndex, keys: Sequence[str], k: int, *, exclude_same_procedure: bool = True
) -> Neighbors:
    """Neighbours of stored rows (by key), never the row itself and, by default, none of its own procedure."""
    emb = index.embeddings
    rows = emb.rows(keys)
    queries = np.asarray(emb.vectors[rows])
    exclude = None
    if exclude_same_procedure:
        procs = emb.procedure_ids.take(pa.array(rows)).to_pylist()
        exclude = procs
    return index.search(queries, k, exclude=exclude, exclude_keys=[[key] for key in keys])
