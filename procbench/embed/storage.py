"""Embedding files: Arrow IPC, one record batch, memory-mapped on read (DESIGN §3).

``STORE/embeddings/FIELD.ENCODER-SLUG.arrow`` has the columns ``key`` (string), ``procedure_id`` (string:
the procedure a row belongs to, for same-procedure exclusion), ``content_hash`` (fixed_size_binary(16):
the first 16 bytes of the sha256 of the embedded text or image) and ``vector``
(fixed_size_list<float32>[dim], L2-normalised). Schema metadata: ``encoder``, ``revision``, ``field``,
``dim``, plus ``model`` (a description), ``rows`` and ``embedding_id`` (a digest of encoder, revision
and every key and content hash: the index built from a file records it).

``STORE/embeddings/current.json`` maps each field to the name of its current embedding (the one the last
``procbench embed`` wrote); :func:`embedding_name` reads it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench.embed.fields import FIELDS, HASH_BYTES
from procbench.errors import BadInput, StoreDamaged, StoreError
from procbench.store import Store, Transaction
from procbench.store.atomic import atomic_path

__all__ = [
    "CURRENT",
    "Embeddings",
    "HashLookup",
    "current_embeddings",
    "embedding_id",
    "embedding_name",
    "embedding_path",
    "list_embeddings",
    "load_embeddings",
    "read_embedding_file",
    "stage_current",
    "write_current",
    "write_embedding_file",
]

CURRENT = "embeddings/current.json"
FORMAT = "procbench-embeddings/1"


def embedding_path(store: Store, name: str) -> Path:
    """``STORE/embeddings/NAME.arrow``.

    Raises:
        StoreDamaged: ``name`` (e.g. read from ``current.json``) would name a file outside ``embeddings/``.
    """
    if not name or "/" in name or "\\" in name or name.startswith(".") or "\x00" in name:
        raise StoreDamaged(f"{name[:80]!r} is not an embedding name: it would leave {store.root / 'embeddings'}")
    path = store.root / "embeddings" / f"{name}.arrow"
    if path.is_symlink():
        raise StoreDamaged(f"{path} is a symbolic link; the store reads only its own files")
    return path


def file_name(field_name: str, slug: str) -> str:
    """The embedding name of ``field_name`` encoded by the encoder with ``slug``."""
    return f"{field_name}.{slug}"


def _schema(dim: int, metadata: dict[str, str] | None) -> pa.Schema:
    return pa.schema(
        [
            pa.field("key", pa.string(), nullable=False),
            pa.field("procedure_id", pa.string()),
            pa.field("content_hash", pa.binary(HASH_BYTES), nullable=False),
            pa.field("vector", pa.list_(pa.field("item", pa.float32(), nullable=False), dim), nullable=False),
        ],
        metadata=metadata,
    )


def _vector_array(vectors: np.ndarray) -> pa.FixedSizeListArray:
    n, dim = vectors.shape
    flat = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1)
    values = pa.Array.from_buffers(pa.float32(), n * dim, [None, pa.py_buffer(flat)])
    return pa.FixedSizeListArray.from_arrays(values, dim)


def _hash_array(hashes: np.ndarray) -> pa.Array:
    raw = np.ascontiguousarray(hashes, dtype=f"S{HASH_BYTES}")
    return pa.Array.from_buffers(pa.binary(HASH_BYTES), len(raw), [None, pa.py_buffer(raw)])


def embedding_id(encoder: str, revision: str, dim: int, keys: pa.Array | pa.ChunkedArray, hashes: np.ndarray) -> str:
    """A digest of what a file holds: encoder, revision, dim, and every (key, content hash) in order."""
    digest = hashlib.sha256(f"{encoder}\0{revision}\0{dim}\0{len(keys)}\0".encode())
    for start in range(0, len(keys), 65536):
        digest.update("\n".join(keys.slice(start, 65536).to_pylist()).encode("utf-8") + b"\n")
    digest.update(np.ascontiguousarray(hashes, dtype=f"S{HASH_BYTES}").tobytes())
    return digest.hexdigest()[:32]


def write_embedding_file(
    path: Path,
    *,
    keys: pa.Array | pa.ChunkedArray,
    procedure_ids: pa.Array | pa.ChunkedArray,
    hashes: np.ndarray,
    vectors: np.ndarray,
    metadata: dict[str, str],
) -> None:
    """Write one record batch (vectors may be a ``np.memmap``: it is streamed, not copied into memory)."""
    dim = int(vectors.shape[1])
    schema = _schema(dim, {k: str(v) for k, v in metadata.items()})
    keys_array = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    procs_array = procedure_ids.combine_chunks() if isinstance(procedure_ids, pa.ChunkedArray) else procedure_ids
    batch = pa.RecordBatch.from_arrays(
        [keys_array.cast(pa.string()), procs_array.cast(pa.string()), _hash_array(hashes), _vector_array(vectors)],
        schema=schema,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        writer.write_batch(batch)


@dataclass
class Embeddings:
    """An embedding file, memory-mapped: nothing is read into memory until used.

    Attributes:
        name: ``FIELD.ENCODER-SLUG``.
        keys: ``(N,)`` string array (step ``PROCEDURE_ID#INDEX``, image id, procedure id).
        procedure_ids: ``(N,)`` string array, the procedure each row belongs to.
        hashes: ``(N,)`` ``S16`` content hashes.
        vectors: ``(N, D)`` float32, L2-normalised, a read-only view on the mapped file.
        metadata: the schema metadata (``encoder``, ``revision``, ``field``, ``dim``, ...).
    """

    name: str
    path: Path
    keys: pa.Array
    procedure_ids: pa.Array
    hashes: np.ndarray
    vectors: np.ndarray
    metadata: dict[str, str] = dataclass_field(default_factory=dict)

    @property
    def field(self) -> str:
        """The embedded field."""
        return self.metadata.get("field", "")

    @property
    def encoder(self) -> str:
        """The encoder's canonical name."""
        return self.metadata.get("encoder", "")

    @property
    def revision(self) -> str:
        """What exactly the encoder was (weights fingerprint, commit, fit hash)."""
        return self.metadata.get("revision", "")

    @property
    def dim(self) -> int:
        """Vector length."""
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.keys)

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {key: i for i, key in enumerate(self.keys.to_pylist())}

    def rows(self, keys: Sequence[str]) -> np.ndarray:
        """``(n,)`` int64 row numbers of ``keys``.

        Raises:
            KeyError: a key that this file does not hold.
        """
        positions = self._positions
        try:
            return np.fromiter((positions[k] for k in keys), dtype=np.int64, count=len(keys))
        except KeyError as exc:
            raise KeyError(f"{exc.args[0]!r} is not in embedding {self.name}") from None

    def get(self, keys: Sequence[str]) -> np.ndarray:
        """``(n, D)`` float32 vectors of ``keys`` (a copy)."""
        return np.asarray(self.vectors[self.rows(keys)])


def read_embedding_file(path: Path, name: str | None = None) -> Embeddings:
    """Memory-map an embedding (or cache part) file."""
    try:
        source = pa.memory_map(str(path), "r")
        reader = pa.ipc.open_file(source)
    except (OSError, pa.ArrowInvalid) as exc:
        raise StoreError(f"cannot read embedding file {path}: {exc}") from exc
    schema = reader.schema
    metadata = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
    dim = schema.field("vector").type.list_size
    if reader.num_record_batches == 1:
        batch = reader.get_batch(0)
    else:  # not written by procbench (which writes exactly one batch): readable, but loaded whole
        batches = reader.read_all().combine_chunks().to_batches()
        batch = batches[0] if batches else pa.RecordBatch.from_pylist([], schema=schema)
    n = batch.num_rows
    if n:
        vectors = batch.column("vector").flatten().to_numpy(zero_copy_only=True).reshape(n, dim)
        hash_col = batch.column("content_hash")
        hashes = np.frombuffer(hash_col.buffers()[1], dtype=f"S{HASH_BYTES}", count=n + hash_col.offset)[
            hash_col.offset :
        ]
    else:
        vectors = np.zeros((0, dim), dtype=np.float32)
        hashes = np.zeros(0, dtype=f"S{HASH_BYTES}")
    names = batch.schema.names
    keys = batch.column("key") if "key" in names else pa.array([], pa.string())
    procs = batch.column("procedure_id") if "procedure_id" in names else pa.nulls(n, pa.string())
    return Embeddings(name or path.stem, path, keys, procs, hashes, vectors, metadata)


def current_embeddings(store: Store) -> dict[str, str]:
    """Field -> the name of its current embedding (what ``procbench embed`` last wrote for it)."""
    path = store.root / CURRENT
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read {path}: {exc}") from exc
    return {str(k): str(v) for k, v in data.items()}


def list_embeddings(store: Store) -> dict[str, dict[str, str]]:
    """Every embedding file of the store: name → schema metadata (plus ``current``: whether it is the default)."""
    current = set(current_embeddings(store).values())
    out: dict[str, dict[str, str]] = {}
    for path in sorted((store.root / "embeddings").glob("*.arrow")):
        with pa.memory_map(str(path), "r") as source:
            meta = {k.decode(): v.decode() for k, v in (pa.ipc.open_file(source).schema.metadata or {}).items()}
        out[path.stem] = {**meta, "current": str(path.stem in current).lower()}
    return out


def embedding_name(store: Store, field_name: str) -> str:
    """The current embedding of ``field_name`` (what the last ``procbench embed`` of that field wrote).

    Raises:
        BadInput: unknown field, or the field has not been embedded.
    """
    if field_name not in FIELDS:
        raise BadInput(f"unknown field {field_name!r}; choose from {', '.join(FIELDS)}")
    current = current_embeddings(store)
    if field_name not in current:
        raise BadInput(f"{store.root} has no {field_name} embeddings yet; {_why_not_embedded(store, field_name)}")
    return current[field_name]


def _why_not_embedded(store: Store, field_name: str) -> str:
    """What to do about a field without embeddings: run ``embed``, unless images cannot be embedded at all (none
    stored: every file missing or unreadable at ingest, or URLs not yet fetched; or every one too small)."""
    if field_name != "image" or not store.has_table("images"):
        return "run `procbench embed` first"
    from procbench.embed.fields import MIN_IMAGE_SIDE, field_table

    images = store.table("images", ["stored"])
    stored = int(pc.sum(pc.fill_null(images["stored"], False)).as_py() or 0)
    if stored == 0:
        return (
            "the store holds no image file to embed (ingest stores none of the local files it reports as missing or "
            "unreadable; image URLs are stored by `procbench fetch-images`)"
        )
    if field_table(store, "image").num_rows == 0:
        return (
            f"none of its {stored} stored images is both of a kept procedure and at least {MIN_IMAGE_SIDE} pixels "
            "on a side (embed leaves the others out), so there is nothing to embed"
        )
    return "run `procbench embed` first"


def load_embeddings(store: Store | str | Path, name: str) -> Embeddings:
    """Open an embedding memory-mapped, by file name (``step_title.minilm-offline``) or field (``step_title``).

    Raises:
        BadInput: no such embedding in the store.
    """
    if not isinstance(store, Store):
        store = Store.open(store)
    if name in FIELDS:
        name = embedding_name(store, name)
    path = embedding_path(store, name)
    if not path.is_file():
        available = ", ".join(list_embeddings(store)) or "none"
        raise BadInput(f"no embedding {name!r} in {store.root} (available: {available})")
    return read_embedding_file(path, name)


def stage_current(store: Store, txn: Transaction, updates: dict[str, str]) -> dict[str, str]:
    """Stage ``current.json`` with ``updates`` (field → embedding name) merged into what the store has."""
    current = {**current_embeddings(store), **updates}
    write_current(txn.stage(CURRENT), current)
    return current


def write_current(path: Path, current: dict[str, str]) -> None:
    """Write ``current.json`` content (fields in canonical order)."""
    ordered = {f: current[f] for f in FIELDS if f in current}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(ordered, indent=2) + "\n", encoding="utf-8")


class HashLookup:
    """Where already computed vectors are, by content hash: rows of one or more memory-mapped sources."""

    def __init__(self) -> None:
        self.sources: list[np.ndarray] = []
        self._hashes: list[np.ndarray] = []
        self._sorted: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def add(self, hashes: np.ndarray, vectors: np.ndarray) -> None:
        """Make ``vectors[i]`` available for ``hashes[i]``."""
        self.sources.append(vectors)
        self._hashes.append(np.asarray(hashes, dtype=f"S{HASH_BYTES}"))
        self._sorted = None

    def __len__(self) -> int:
        return sum(len(h) for h in self._hashes)

    def _index(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._sorted is None:
            if self._hashes:
                hashes = np.concatenate(self._hashes)
                source = np.concatenate([np.full(len(h), i, dtype=np.int32) for i, h in enumerate(self._hashes)])
                row = np.concatenate([np.arange(len(h), dtype=np.int64) for h in self._hashes])
                order = np.argsort(hashes, kind="stable")
                self._sorted = (hashes[order], source[order], row[order])
            else:
                self._sorted = (np.zeros(0, f"S{HASH_BYTES}"), np.zeros(0, np.int32), np.zeros(0, np.int64))
        return self._sorted

    def find(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(source, row)`` for each hash; ``source`` is -1 where the hash is unknown."""
        sorted_hashes, source, row = self._index()
        if len(sorted_hashes) == 0:
            return np.full(len(hashes), -1, np.int32), np.zeros(len(hashes), np.int64)
        pos = np.minimum(np.searchsorted(sorted_hashes, hashes), len(sorted_hashes) - 1)
        hit = sorted_hashes[pos] == hashes
        return np.where(hit, source[pos], -1).astype(np.int32), np.where(hit, row[pos], 0)

    def gather(self, hashes: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Fill ``out[i]`` with the vector of ``hashes[i]``; returns the mask of hashes found."""
        source, row = self.find(hashes)
        for s, vectors in enumerate(self.sources):
            mask = source == s
            if mask.any():
                out[mask] = vectors[row[mask]]
        return source >= 0


@dataclass
class PartCache:
    """Vectors encoded by an unfinished run, kept under ``STORE/cache/embed/NAME/`` so a re-run resumes.

    Parts are only reused by the same encoder and revision; they are deleted once the run commits.
    """

    directory: Path
    encoder: str
    revision: str
    dim: int
    parts: list[Embeddings] = dataclass_field(default_factory=list)

    def _meta(self) -> dict[str, str]:
        return {"format": FORMAT + "+part", "encoder": self.encoder, "revision": self.revision, "dim": str(self.dim)}

    def load(self) -> list[Embeddings]:
        """Read the usable parts; stale ones (another encoder or revision, unreadable) are deleted."""
        self.parts = []
        for path in sorted(self.directory.glob("part-*.arrow")):
            try:
                part = read_embedding_file(path)
            except StoreError:
                path.unlink(missing_ok=True)
                continue
            if {k: part.metadata.get(k) for k in ("encoder", "revision", "dim")} != {
                "encoder": self.encoder,
                "revision": self.revision,
                "dim": str(self.dim),
            }:
                path.unlink(missing_ok=True)
                continue
            self.parts.append(part)
        return self.parts

    def write(self, hashes: np.ndarray, vectors: np.ndarray) -> Embeddings:
        """Persist one encoded chunk (atomically) and return it memory-mapped."""
        target = self.directory / f"part-{len(self.parts):06d}.arrow"
        while target.exists():
            target = target.with_name(f"part-{int(target.stem.split('-')[1]) + 1:06d}.arrow")
        keys = pa.array([""] * len(hashes), pa.string())
        with atomic_path(target) as tmp:
            write_embedding_file(
                tmp,
                keys=keys,
                procedure_ids=pa.nulls(len(hashes), pa.string()),
                hashes=hashes,
                vectors=vectors,
                metadata=self._meta(),
            )
        part = read_embedding_file(target)
        self.parts.append(part)
        return part

    def clear(self) -> None:
        """Delete every part (after the run that needed them committed)."""
        for path in self.directory.glob("*"):  # parts, and temporary files of a part cut short by a kill
            if path.is_file():
                path.unlink(missing_ok=True)
        for path in (self.directory, self.directory.parent):
            try:
                path.rmdir()
            except OSError:
                pass


def metadata_of(**values: Any) -> dict[str, str]:
    """Schema metadata as strings."""
    return {k: str(v) for k, v in values.items()}
