"""``embed_store``: embed the fields of a store and index them, resumably (what ``procbench embed`` runs).

For each field the rows are hashed by content. A row whose content hash is already in the field's
current file (same encoder and revision) keeps its vector; the others are encoded (each distinct content
once, texts longest first so batches pad little) and written in chunks to ``STORE/cache/embed/NAME/``
as they are done, so an interrupted run resumes where it stopped. The new file is then assembled in
one pass (vectors streamed through a memory-mapped scratch file), its index built, and everything is
committed in one transaction.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench.embed.base import Encoder, Modality
from procbench.embed.encoding import chunk_rows, encode_inputs
from procbench.embed.fields import FIELD_MODALITY, FIELDS, content_hashes, field_table, parse_fields, small_images
from procbench.embed.index import IndexConfig, build_index_for, index_is_current, read_sidecar
from procbench.embed.registry import DEFAULT_IMAGE_ENCODER, DEFAULT_TEXT_ENCODER, EncoderSpec, resolve_encoder
from procbench.embed.storage import (
    FORMAT,
    Embeddings,
    HashLookup,
    PartCache,
    current_embeddings,
    embedding_id,
    embedding_path,
    file_name,
    read_embedding_file,
    stage_current,
    write_embedding_file,
)
from procbench.engine import LOCAL, Engine
from procbench.errors import BadInput
from procbench.progress import SILENT, Progress
from procbench.store import Store, Transaction

__all__ = ["EmbedReport", "FieldReport", "chunk_rows", "embed_store", "encode_inputs"]

log = logging.getLogger(__name__)

_ASSEMBLE_CHUNK = 65536

#: Why a field with no rows is skipped (no encoder is loaded for it).
_EMPTY_REASON = {
    "step_title": "no step has a title (headline) in the kept procedures",
    "step_text": "no step has text in the kept procedures",
    "step_first_sentence": "no step has text in the kept procedures",
    "action": "no action tuples (run `procbench extract` first)",
    "procedure_title": "no kept procedure has a title",
    "image": "no stored images (image URLs are fetched by `procbench fetch-images`)",
}


@dataclass
class FieldReport:
    """What embedding one field did.

    ``embedded`` counts distinct contents encoded by this run, ``resumed`` rows whose vectors an
    interrupted earlier run had already encoded, ``reused`` rows kept from the previous file, ``removed``
    rows of the previous file that are gone (e.g. dropped by ``clean``).
    """

    field: str
    name: str = ""
    encoder: str = ""
    revision: str = ""
    dim: int = 0
    rows: int = 0
    embedded: int = 0
    resumed: int = 0
    reused: int = 0
    removed: int = 0
    unchanged: bool = False
    skipped: str | None = None
    failed: list[tuple[str, str]] = dataclass_field(default_factory=list)
    index: dict[str, Any] = dataclass_field(default_factory=dict)
    seconds: dict[str, float] = dataclass_field(default_factory=dict)

    def counts(self) -> dict[str, Any]:
        """The numbers of this field (what the provenance log records)."""
        if self.skipped:
            return {"skipped": self.skipped}
        recall = self.index.get("recall", {})
        return {
            "name": self.name,
            "encoder": self.encoder,
            "revision": self.revision,
            "dim": self.dim,
            "rows": self.rows,
            "embedded": self.embedded,
            "resumed": self.resumed,
            "reused": self.reused,
            "removed": self.removed,
            "failed": len(self.failed),
            "index": self.index.get("kind"),
            "index_rebuilt": self.index.get("rebuilt"),
            "recall": recall.get("value"),
            "recall_k": recall.get("k"),
            "index_params": self.index.get("params", {}),
        }


@dataclass
class EmbedReport:
    """What one ``embed_store`` run did, field by field."""

    store: str
    fields: list[FieldReport] = dataclass_field(default_factory=list)
    encoders: dict[str, dict[str, Any]] = dataclass_field(default_factory=dict)
    artifacts: list[str] = dataclass_field(default_factory=list)
    seconds: dict[str, float] = dataclass_field(default_factory=dict)

    def counts(self) -> dict[str, Any]:
        """Per-field counts plus the encoders used (what the provenance log records)."""
        out: dict[str, Any] = {f.field: f.counts() for f in self.fields}
        out["embedded"] = sum(f.embedded for f in self.fields)
        out["rows"] = sum(f.rows for f in self.fields)
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (what ``--json`` prints)."""
        return {
            "store": self.store,
            "encoders": self.encoders,
            "fields": [asdict(f) for f in self.fields],
            "artifacts": self.artifacts,
            "seconds": self.seconds,
            "embedded": sum(f.embedded for f in self.fields),
            "rows": sum(f.rows for f in self.fields),
        }


#: One encoded chunk: its rows of the field table, their inputs, the vectors of the readable ones, and
#: per row None or why it was skipped.
Encoded = tuple[np.ndarray, list[str], np.ndarray, list["str | None"]]


def _encoded_chunks(
    store: Store, encoder: Encoder, payload: pa.ChunkedArray, todo: np.ndarray, *, batch_size: int, engine: Engine
) -> Iterator[Encoded]:
    chunk = chunk_rows(encoder.modality, batch_size)
    shards = [todo[start : start + chunk] for start in range(0, len(todo), chunk)]
    if engine.is_ray:
        from procbench.embed.distributed import encode_on_ray

        yield from encode_on_ray(store, encoder, payload, shards, batch_size=batch_size, engine=engine)
        return
    for rows in shards:
        inputs = payload.take(pa.array(rows)).to_pylist()
        vectors, errors = encode_inputs(store, encoder, inputs, batch_size=batch_size)
        yield rows, inputs, vectors, errors


@dataclass
class _Known:
    """Vectors already computed for a field: the previous file's (when the encoder matches) and an interrupted
    run's parts, looked up by content hash."""

    lookup: HashLookup
    old: Embeddings | None
    n_old_sources: int
    parts: PartCache


def _known_vectors(store: Store, name: str, encoder: Encoder) -> _Known:
    """Load the field's current file (kept only for the same encoder, revision and dimension) and the parts an
    interrupted run left under ``STORE/cache/embed/NAME/``."""
    lookup = HashLookup()
    old: Embeddings | None = None
    old_path = embedding_path(store, name)
    if old_path.is_file():
        candidate = read_embedding_file(old_path, name)
        if (candidate.encoder, candidate.revision, candidate.metadata.get("dim")) == (
            encoder.name,
            encoder.revision,
            str(encoder.dim),
        ):
            old = candidate
            lookup.add(old.hashes, old.vectors)
    n_old_sources = len(lookup.sources)
    parts = PartCache(store.root / "cache" / "embed" / name, encoder.name, encoder.revision, encoder.dim)
    for part in parts.load():
        lookup.add(part.hashes, part.vectors)
    return _Known(lookup, old, n_old_sources, parts)


def _rows_to_encode(
    known: _Known, hashes: np.ndarray, payload: pa.ChunkedArray, encoder: Encoder, report: FieldReport
) -> np.ndarray:
    """The rows whose content has no vector yet, one per distinct content, text longest first (batches pad
    little); counts the reused and resumed rows into ``report``."""
    source, _ = known.lookup.find(hashes)
    report.reused = int(np.count_nonzero((source >= 0) & (source < known.n_old_sources)))
    report.resumed = int(np.count_nonzero(source >= known.n_old_sources))
    missing = np.flatnonzero(source < 0)
    _, first = np.unique(hashes[missing], return_index=True)
    todo = missing[np.sort(first)]
    if encoder.modality == "text" and len(todo):
        lengths = pc.utf8_length(payload.take(pa.array(todo))).to_numpy(zero_copy_only=False)
        todo = todo[np.argsort(-lengths, kind="stable")]
    return todo


def _encode_rows(
    store: Store,
    field_name: str,
    encoder: Encoder,
    payload: pa.ChunkedArray,
    hashes: np.ndarray,
    todo: np.ndarray,
    known: _Known,
    report: FieldReport,
    *,
    batch_size: int,
    progress: Progress,
    engine: Engine,
) -> list[tuple[int, str, str]]:
    """Encode the rows ``todo``, writing each chunk's vectors as a part (so a re-run resumes) and adding them to
    the lookup; returns the rows that could not be read as ``(row, input, why)``, in row order."""
    failures: list[tuple[int, str, str]] = []  # (row, input, why), in row order below whatever the engine
    if not len(todo):
        return failures
    progress.start(f"embed {field_name} ({encoder.name})", total=len(todo))
    encoded = _encoded_chunks(store, encoder, payload, todo, batch_size=batch_size, engine=engine)
    for rows, inputs, vectors, errors in encoded:
        ok = np.array([e is None for e in errors], dtype=bool)
        for i in np.flatnonzero(~ok):
            failures.append((int(rows[i]), inputs[i], str(errors[i])))
        if ok.any():
            if vectors.shape != (int(ok.sum()), encoder.dim):
                raise BadInput(
                    f"encoder {encoder.name} returned shape {vectors.shape} for {int(ok.sum())} inputs "
                    f"of dimension {encoder.dim}"
                )
            part = known.parts.write(hashes[rows[ok]], vectors)
            known.lookup.add(part.hashes, part.vectors)
        report.embedded += int(ok.sum())
        progress.advance(len(rows))
    failures.sort()
    return failures


def _write_field_file(
    txn: Transaction,
    name: str,
    field_name: str,
    encoder: Encoder,
    table: pa.Table,
    hashes: np.ndarray,
    lookup: HashLookup,
    new_id: str,
) -> Embeddings:
    """Assemble the field's new embedding file in one pass (vectors streamed through a memory-mapped scratch
    file), stage it in ``txn`` and return it as read back."""
    rows = table.num_rows
    staged = txn.stage(f"embeddings/{name}.arrow")
    scratch = staged.with_name(staged.name + ".vectors")
    vectors = np.memmap(scratch, dtype=np.float32, mode="w+", shape=(rows, encoder.dim))
    for start in range(0, rows, _ASSEMBLE_CHUNK):
        found = lookup.gather(hashes[start : start + _ASSEMBLE_CHUNK], vectors[start : start + _ASSEMBLE_CHUNK])
        if not found.all():  # cannot happen: every missing hash was encoded above
            raise RuntimeError(f"internal error: {int((~found).sum())} rows of {name} have no vector")
    metadata = {
        "format": FORMAT,
        "encoder": encoder.name,
        "revision": encoder.revision,
        "field": field_name,
        "dim": str(encoder.dim),
        "model": encoder.description,
        "rows": str(rows),
        "normalised": "l2",
        "distance": "euclidean",
        "embedding_id": new_id,
    }
    write_embedding_file(
        staged,
        keys=table["key"],
        procedure_ids=table["procedure_id"],
        hashes=hashes,
        vectors=vectors,
        metadata=metadata,
    )
    del vectors
    scratch.unlink()
    return read_embedding_file(staged, name)


def _index_field(
    store: Store,
    txn: Transaction,
    current: Embeddings,
    new_id: str,
    rows: int,
    index_config: IndexConfig,
    progress: Progress,
) -> dict[str, Any]:
    """Keep the field's index when its sidecar is current for ``new_id``, else build it again; returns what the
    report records (kind, params, recall, rebuilt)."""
    sidecar = read_sidecar(store, current.name)
    if sidecar is not None and index_is_current(sidecar, new_id, rows, index_config):
        return {**{k: sidecar[k] for k in ("kind", "params", "recall") if k in sidecar}, "rebuilt": False}
    sidecar = build_index_for(store, txn, current, config=index_config, progress=progress)
    return {**{k: sidecar[k] for k in ("kind", "params", "recall")}, "rebuilt": True}


def _embed_field(
    store: Store,
    txn: Transaction,
    field_name: str,
    encoder: Encoder,
    *,
    batch_size: int,
    index_config: IndexConfig,
    progress: Progress,
    table: pa.Table | None = None,
    engine: Engine = LOCAL,
) -> tuple[FieldReport, PartCache | None]:
    report = FieldReport(field_name, encoder=encoder.name, revision=encoder.revision, dim=encoder.dim)
    started = time.perf_counter()
    table = field_table(store, field_name) if table is None else table
    if table.num_rows == 0:
        report.skipped = _EMPTY_REASON[field_name]
        return report, None
    name = file_name(field_name, encoder.slug)
    report.name = name
    payload = table["payload"]
    hashes = content_hashes(payload, field_name)
    known = _known_vectors(store, name, encoder)
    todo = _rows_to_encode(known, hashes, payload, encoder, report)
    failures = _encode_rows(
        store,
        field_name,
        encoder,
        payload,
        hashes,
        todo,
        known,
        report,
        batch_size=batch_size,
        progress=progress,
        engine=engine,
    )
    report.seconds["encode"] = round(time.perf_counter() - started, 3)
    report.failed = [(what, why) for _, what, why in failures]
    if field_name == "image":
        report.failed += small_images(store)
    failed_rows = [row for row, _, _ in failures]
    if failed_rows:
        keep = ~np.isin(hashes, hashes[np.array(failed_rows)])
        table, hashes = table.filter(pa.array(keep)), hashes[keep]
    report.rows = table.num_rows
    if report.rows == 0:
        report.skipped = "no readable stored images"
        return report, known.parts
    new_id = embedding_id(encoder.name, encoder.revision, encoder.dim, table["key"], hashes)
    old = known.old
    if old is not None:
        report.removed = int(pc.sum(pc.invert(pc.is_in(old.keys, value_set=table["key"]))).as_py() or 0)
    if old is not None and old.metadata.get("embedding_id") == new_id:
        report.unchanged = True
        current: Embeddings = old
    else:
        assembled = time.perf_counter()
        current = _write_field_file(txn, name, field_name, encoder, table, hashes, known.lookup, new_id)
        report.seconds["write"] = round(time.perf_counter() - assembled, 3)
    indexed = time.perf_counter()
    report.index = _index_field(store, txn, current, new_id, report.rows, index_config, progress)
    report.seconds["index"] = round(time.perf_counter() - indexed, 3)
    return report, known.parts


def _field_tables(
    store: Store, chosen: Sequence[str], *, listed: bool, named: dict[str, str]
) -> tuple[dict[str, pa.Table], dict[str, str]]:
    """The rows of each chosen field to embed, and why each other chosen field is skipped: it has no rows, or
    only the other modality's encoder was named and the fields were not ``listed``."""
    tables: dict[str, pa.Table] = {}
    skipped: dict[str, str] = {}
    for field_name in chosen:
        modality = FIELD_MODALITY[field_name]
        table = field_table(store, field_name)
        if table.num_rows == 0:
            skipped[field_name] = _EMPTY_REASON[field_name]
        elif not listed and named and modality not in named:
            flag = "-i/--image-encoder" if modality == "image" else "-t/--text-encoder"
            skipped[field_name] = (
                f"{table.num_rows} rows not embedded: no {modality} encoder named (pass {flag}, or list the field "
                "in --fields to use the default)"
            )
        else:
            tables[field_name] = table
    return tables, skipped


def _load_encoders(
    store: Store,
    specs: dict[Modality, EncoderSpec],
    needed: set[Modality],
    report: EmbedReport,
    *,
    seed: int,
    refit: bool,
    progress: Progress,
) -> dict[Modality, Encoder]:
    """Load the encoders of the ``needed`` modalities, recording each (and the time taken) in ``report``."""
    encoders: dict[Modality, Encoder] = {}
    loading = time.perf_counter()
    for modality, spec in specs.items():
        if modality not in needed:
            continue
        progress.start(f"load {modality} encoder {spec.name}", total=None)
        encoders[modality] = spec.load(store=store, seed=seed, refit=refit)
    report.seconds["load"] = round(time.perf_counter() - loading, 3)
    for modality, enc in encoders.items():
        report.encoders[modality] = {
            "name": enc.name,
            "revision": enc.revision,
            "dim": enc.dim,
            "model": enc.description,
        }
    return encoders


def embed_store(
    store: Store | str | Path,
    *,
    text_encoder: str | None = None,
    image_encoder: str | None = None,
    fields: str | Sequence[str] | None = None,
    batch_size: int | None = None,
    seed: int = 0,
    refit: bool = False,
    index_config: IndexConfig | None = None,
    progress: Progress = SILENT,
    engine: Engine = LOCAL,
) -> EmbedReport:
    """Embed ``fields`` (default: step_title, step_text, procedure_title, image, and the fields embedded only when
    asked, step_first_sentence and action, once the store has embeddings of them) of the kept procedures and
    build their FAISS indexes, in one atomic transaction.

    Only the encoders that are needed are resolved: those of fields that have rows or are listed in
    ``fields``. A field with no rows (no step headlines, no stored images) is skipped without loading an
    encoder, and when exactly one encoder is named (and ``fields`` is not given) the fields of the other
    modality are skipped rather than embedded with its default. Every skipped field is reported with the
    reason. An encoder that is needed but cannot be loaded here fails at once (before anything is written)
    with a one-line message naming what to use instead. A re-run
    embeds only new or changed rows; an interrupted run resumes from the chunks it had finished. The fields
    embedded become the store's current embeddings (``embedding_name(store, field)``).

    Args:
        text_encoder: a built-in text encoder (``hashed``, ``minilm-offline``), a local sentence-transformers
            model directory, or a hub id (None: not named; ``DEFAULT_TEXT_ENCODER`` when text is embedded).
        image_encoder: a built-in image encoder (``colour-layout``, ``efficientnet-lite0``), a local CLIP
            model directory, or a hub id (None: not named; ``DEFAULT_IMAGE_ENCODER`` when images are embedded).
        fields: the fields to embed (None: every field, subject to the rules above).
        batch_size: encoder batch size (default: the encoder's own).
        seed: seeds the hashed encoder's fit and the approximate index's training and recall sample.
        refit: fit the ``hashed`` encoder again on the current texts instead of reusing the store's fit.
        engine: where the encoders run: ``Engine("ray", ...)`` runs them in a Ray Data actor pool (one
            model per actor, a GPU per actor when the cluster has GPUs); the files written are the same.

    Raises:
        EncoderUnavailable: a needed encoder cannot be loaded here.
        BadInput: unknown field, empty store.
    """
    wall = time.perf_counter()
    if not isinstance(store, Store):
        store = Store.open(store)
    chosen = parse_fields(fields)
    if fields is None:  # fields embedded only when asked are kept current once they are embedded
        present = current_embeddings(store)
        chosen = tuple(f for f in FIELDS if f in chosen or f in present)
    if batch_size is not None and batch_size < 1:
        raise BadInput(f"batch size must be at least 1, got {batch_size}")
    config = index_config or IndexConfig(seed=seed)
    named = {m: n for m, n in (("text", text_encoder), ("image", image_encoder)) if n is not None}
    if not store.has_table("procedures") or store.table("procedures", ["id"]).num_rows == 0:
        raise BadInput(f"{store.root} holds no procedures; import some first (`procbench ingest` or `demo`)")
    tables, skipped = _field_tables(store, chosen, listed=fields is not None, named=named)
    # An encoder is resolved when a field of its modality has rows, or was listed in ``fields``.
    needed = {FIELD_MODALITY[f] for f in tables}
    wanted = needed | ({FIELD_MODALITY[f] for f in chosen} if fields is not None else set())
    defaults = {"text": DEFAULT_TEXT_ENCODER, "image": DEFAULT_IMAGE_ENCODER}
    names = {m: named.get(m, defaults[m]) for m in ("text", "image") if m in wanted}
    specs: dict[Modality, EncoderSpec] = {m: resolve_encoder(n, m) for m, n in names.items()}
    for field_name, why in skipped.items():
        log.info("embed: %s skipped: %s", field_name, why)

    report = EmbedReport(store=str(store.root))
    args = {
        "fields": list(chosen),
        "batch_size": batch_size,
        "refit": refit,
        "index": asdict(config),
        **{f"{m}_encoder": names[m] for m in specs},
        **({"engine": engine.describe()} if engine.is_ray else {}),
    }
    caches: list[PartCache] = []
    with contextlib.ExitStack() as stack:
        if engine.is_ray:
            from procbench.engine.raycluster import ray_runtime

            started_ray = time.perf_counter()
            stack.enter_context(ray_runtime(engine))
            report.seconds["ray_start"] = round(time.perf_counter() - started_ray, 3)
        txn = stack.enter_context(store.transaction("embed", args=args, seed=seed, packages=("faiss-cpu",)))
        encoders = _load_encoders(store, specs, needed, report, seed=seed, refit=refit, progress=progress)
        txn.packages = tuple(dict.fromkeys(["faiss-cpu", *(p for e in encoders.values() for p in e.packages)]))
        current: dict[str, str] = {}
        for field_name in chosen:
            if field_name in skipped:
                report.fields.append(FieldReport(field_name, skipped=skipped[field_name]))
                continue
            enc = encoders[FIELD_MODALITY[field_name]]
            field_report, cache = _embed_field(
                store,
                txn,
                field_name,
                enc,
                batch_size=batch_size or enc.default_batch_size,
                index_config=config,
                progress=progress,
                table=tables.pop(field_name),
                engine=engine,
            )
            report.fields.append(field_report)
            if cache is not None:
                caches.append(cache)
            if not field_report.skipped:
                current[field_name] = field_report.name
        for enc in encoders.values():
            report.artifacts.extend(enc.stage_artifacts(store, txn))
        stage_current(store, txn, current)
        txn.counts.update(report.counts())
    for cache in caches:
        cache.clear()
    report.seconds["total"] = round(time.perf_counter() - wall, 3)
    return report
