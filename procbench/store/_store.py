"""The store: one directory holding every table, image, embedding and question set (DESIGN §3)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from procbench.errors import StoreChanged, StoreDamaged, StoreError, StoreLocked, StoreNotFound, StoreReadOnly
from procbench.store.atomic import atomic_write_bytes
from procbench.store.images import BadImage, NormalisedImage, decode_image
from procbench.store.provenance import RUN, provenance_entry, transactions, utc_now
from procbench.store.schema import SCHEMA_VERSION, TABLES
from procbench.store.tables import (
    FILE,
    FORMAT_FILES_ONLY,
    FORMAT_WITH_PARTS,
    PARTS,
    PARTS_LIST,
    Layout,
    count_rows,
    locate,
    read_schema,
    read_table,
)
from procbench.store.transaction import Transaction, recover

__all__ = ["FORMAT_VERSION", "Store", "is_image_id"]

#: Newest store format this procbench reads; a store written in a newer one is refused rather than misread.
#: 1: every table one Parquet file; 2: some tables are directories of part-files (:mod:`procbench.store.tables`).
FORMAT_VERSION = FORMAT_WITH_PARTS
_META = "store.json"
#: A stored image's id: the sha256 hex digest of its JPEG bytes (nothing else names a file under images/).
_IMAGE_ID = re.compile(r"^[0-9a-f]{64}$")
_LOCK = ".lock"
#: Where images are written before being renamed into place (emptied when a transaction starts).
_PARTIAL = ".partial"
#: Largest stored image file read back (stored images are JPEGs of at most 512 pixels a side: far smaller).
MAX_STORED_IMAGE_BYTES = 20 * 2**20


def is_image_id(value: object) -> bool:
    """Whether ``value`` is a stored image's id (64 lowercase hex digits), the only name of a file in ``images/``."""
    return isinstance(value, str) and _IMAGE_ID.match(value) is not None


class Store:
    """A procbench store on disk.

    Open (or create) one with :meth:`Store.open`; read tables with :meth:`table`; change it only inside
    :meth:`transaction`, which is atomic and appends an entry to the provenance log.

    Reading needs no lock (a read-only store can be read). A writer may read before its transaction: the
    store's version (the length of the provenance log) when this object first read it is checked when the
    transaction starts, under the write lock, and a store changed in between by another process is never
    overwritten (:class:`~procbench.errors.StoreChanged`). Reads inside a transaction are under the lock.

    >>> store = Store.open("procbench-store", create=True)   # doctest: +SKIP
    >>> store.table("procedures").num_rows                   # doctest: +SKIP
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._read_version: int | None = None  # the version this object read, when outside a transaction
        self._in_transaction = False

    # -- opening -----------------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str], *, create: bool = False) -> Store:
        """Open the store at ``path``; with ``create=True`` make an empty one if none exists.

        Raises:
            StoreNotFound: no store at ``path`` and ``create`` is False.
            StoreError: the directory is not a procbench store, or has a newer format.
        """
        root = Path(path)
        meta_path = root / _META
        if root.exists() and not root.is_dir():
            raise StoreNotFound(f"{root} is a file, not a procbench store (a store is a directory)")
        if not meta_path.is_file():
            if not create:
                raise StoreNotFound(f"no procbench store at {root} (create one with `procbench ingest` or `demo`)")
            if root.exists() and any(p.name not in {_LOCK} for p in root.iterdir()):
                raise StoreError(f"{root} exists, is not empty and holds no {_META}; refusing to turn it into a store")
            root.mkdir(parents=True, exist_ok=True)
            meta: dict[str, Any] = {
                "format": "procbench-store",
                "format_version": FORMAT_FILES_ONLY,
                "schema_version": SCHEMA_VERSION,
                "created": utc_now(),
                "provenance": [],
            }
            atomic_write_bytes(meta_path, (json.dumps(meta, indent=2) + "\n").encode("utf-8"))
        store = cls(root)
        meta = store.read_meta()
        if meta.get("format") != "procbench-store":
            raise StoreError(f"{meta_path} is not a procbench store file")
        if meta.get("format_version", 0) > FORMAT_VERSION:
            raise StoreError(
                f"{root} has store format {meta['format_version']}; this procbench reads up to "
                f"{FORMAT_VERSION}: upgrade procbench"
            )
        partial = root / "images" / _PARTIAL
        if (root / ".txn").is_dir() or (partial.is_dir() and next(partial.iterdir(), None) is not None):
            with contextlib.suppress(StoreLocked, StoreReadOnly), store._write_lock():
                recover(root)
                _remove_partial_images(root)  # what a killed writer left half-written
        store._read_version = transactions(store.read_meta().get("provenance", []))
        return store

    def read_meta(self) -> dict[str, Any]:
        """The parsed ``store.json`` (format version and provenance log)."""
        try:
            return json.loads((self.root / _META).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot read {self.root / _META}: {exc}") from exc

    @property
    def version(self) -> int:
        """How many transactions have been committed (grows by one with each; a recorded run that changed no
        table, :meth:`record_run`, leaves it alone)."""
        return transactions(self.read_meta()["provenance"])

    def _note_read(self) -> None:
        if self._read_version is None and not self._in_transaction:
            self._read_version = self.version

    @property
    def provenance(self) -> list[dict[str, Any]]:
        """The append-only provenance log, oldest first."""
        return list(self.read_meta()["provenance"])

    # -- tables ------------------------------------------------------------------------------------------
    def table_path(self, name: str) -> Path:
        """Path of ``STORE/<name>.parquet`` (the one-file layout; see :meth:`table_files` for either layout)."""
        return self.root / f"{name}.parquet"

    def table_files(self, name: str) -> list[Path]:
        """The Parquet files holding table ``name`` in row order: one file, or its parts (none if never written).

        A reader that shards a table (``ray.data.read_parquet(files)``, ``pyarrow.dataset.dataset(files)``)
        should take these rather than list the directory, which may hold parts a writer is replacing.
        """
        self._note_read()
        return list(locate(self.root, name).files)

    def table_layout(self, name: str) -> Layout | None:
        """``"file"`` (``STORE/<name>.parquet``) or ``"parts"`` (``STORE/<name>/part-*.parquet``); None: unwritten."""
        self._note_read()
        return locate(self.root, name).layout

    @property
    def default_layout(self) -> Layout:
        """The layout a table gets when first written (``procbench layout`` sets it; ``"file"`` by default)."""
        return PARTS if self.read_meta().get("table_layout") == PARTS else FILE

    def has_table(self, name: str) -> bool:
        """Whether ``name`` has been written."""
        self._note_read()
        return locate(self.root, name).layout is not None

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """Read a table memory-mapped (only ``columns`` when given); an empty one if never written.

        Either layout reads the same: a part-layout table is its parts in order, each in row order.
        """
        self._note_read()
        table = read_table(self.root, name, columns)
        if table is None:
            schema = TABLES.get(name)
            if schema is None:
                raise StoreError(f"the store has no table {name!r}")
            empty = schema.empty_table()
            return empty.select(columns) if columns else empty
        return table

    def columns(self, name: str) -> list[str]:
        """Column names of a table, read from the files' footers only."""
        self._note_read()
        schema = read_schema(self.root, name)
        if schema is None:
            return list(TABLES[name].names)
        return list(schema.names)

    def num_rows(self, name: str) -> int:
        """Rows of a table from the files' footers alone (each part checked against its list); 0 if never written."""
        self._note_read()
        return count_rows(self.root, name)

    def tables_info(self) -> dict[str, dict[str, Any]]:
        """Per written table: its layout, number of files, rows and bytes on disk."""
        names = {p.stem for p in self.root.glob("*.parquet")} | {
            p.parent.name for p in self.root.glob(f"*/{PARTS_LIST}")
        }
        info: dict[str, dict[str, Any]] = {}
        for name in sorted(names):
            found = locate(self.root, name)
            if found.layout is None:
                continue
            info[name] = {
                "layout": found.layout,
                "files": len(found.files),
                "rows": self.num_rows(name),
                "bytes": sum(path.stat().st_size for path in found.files),
            }
        return info

    def contains(self, path: Path) -> bool:
        """Whether ``path`` (symlinks resolved) lies inside the store: links out of it are not followed."""
        return path.resolve().is_relative_to(self.root.resolve())

    # -- images ------------------------------------------------------------------------------------------
    def image_path(self, image_id: str) -> Path:
        """Where the bytes of a stored image live: ``images/ab/abcdef....jpg``.

        Raises:
            StoreDamaged: ``image_id`` is not a stored image's id (the sha256 hex of its bytes), so it could
                name a file outside ``images/`` (``../../x``).
        """
        if not is_image_id(image_id):
            raise StoreDamaged(f"{image_id[:80]!r} is not a stored image id (64 hex digits)")
        return self.root / "images" / image_id[:2] / f"{image_id}.jpg"

    def image_file(self, image_id: str) -> Path | None:
        """The file of a stored image when there is one: a valid id, a regular file, no link, in the store."""
        if not is_image_id(image_id):
            return None
        path = self.image_path(image_id)
        if path.is_symlink() or not path.is_file() or not self.contains(path):
            return None
        return path

    def read_image(self, image_id: str) -> bytes:
        """The bytes of a stored image, read only from a regular file in the store's ``images/`` (no symbolic link,
        nothing outside the store) and checked to decode as an image.

        Raises:
            BadImage: ``image_id`` names no such file (missing, a link, outside the store), or its bytes are too
                large or not an image.
        """
        path = self.image_file(image_id)
        if path is None:
            raise BadImage(f"image {str(image_id)[:16]} is not a regular file in the store (missing or a link)")
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise BadImage(f"image {image_id[:16]} cannot be read ({exc.strerror or exc})") from None
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_STORED_IMAGE_BYTES:
                raise BadImage(
                    f"image {image_id[:16]} is not a regular file of at most {MAX_STORED_IMAGE_BYTES:,} bytes"
                )
            data = fh.read(MAX_STORED_IMAGE_BYTES + 1)
        try:
            decode_image(data)
        except BadImage as exc:
            raise BadImage(f"image {image_id[:16]} in the store is unreadable: {exc}") from None
        return data

    def put_image(self, image: NormalisedImage) -> Path:
        """Write a normalised image (once: content-addressed files are never rewritten, unless short: one
        written in a :func:`~procbench.store.atomic.batched_sync` block that a power cut caught unflushed)."""
        path = self.image_path(image.id)
        if not path.exists() or (path.is_file() and path.stat().st_size != len(image.data)):
            atomic_write_bytes(path, image.data, scratch=self.root / "images" / _PARTIAL)
        return path

    # -- writing -----------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _write_lock(self) -> Iterator[None]:
        try:
            fd = os.open(self.root / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if isinstance(exc, PermissionError) or exc.errno == errno.EROFS:
                raise StoreReadOnly(f"{self.root} is read-only here: it can be read, not written") from exc
            raise StoreError(f"cannot lock {self.root} for writing: {exc.strerror or exc}") from exc
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise StoreLocked(
                    f"another procbench process is writing to {self.root}; wait for it to finish"
                ) from exc
            yield
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def transaction(
        self,
        command: str,
        *,
        args: dict[str, Any] | None = None,
        seed: int | None = None,
        packages: tuple[str, ...] = (),
    ) -> Iterator[Transaction]:
        """Stage changes to the store and apply them atomically when the block ends without error.

        Only one transaction may be open on a store at a time, across processes.

        Raises:
            StoreLocked: another process holds the write lock.
            StoreChanged: another process committed since this object read the store (nothing is written).
            StoreReadOnly: the store cannot be written here.
        """
        with self._write_lock():
            read, self._read_version = self._read_version, None
            meta = self.read_meta()
            if read is not None and read != transactions(meta["provenance"]):
                changed = [e for e in meta["provenance"] if e.get("kind") != RUN]
                last = changed[-1].get("command", "?") if changed else "?"
                raise StoreChanged(
                    f"{self.root} changed while {command} was working (another process ran {last}); "
                    f"nothing was written: run {command} again"
                )
            _remove_partial_images(self.root)
            self._in_transaction = True
            try:
                txn = Transaction(self, command, args=args or {}, seed=seed, packages=packages)
                try:
                    yield txn
                except BaseException:
                    txn.abort()
                    raise
                txn.commit()
            finally:
                self._in_transaction = False

    def record_run(
        self,
        command: str,
        *,
        args: dict[str, Any],
        seed: int | None,
        counts: dict[str, Any],
        outputs: Sequence[str | os.PathLike[str]] = (),
        packages: tuple[str, ...] = (),
        wait: float = 10.0,
    ) -> bool:
        """Append a provenance entry for a run that read the store and wrote files of its own (an audit, a
        training run, a report) rather than tables: ``kind: "run"``, with its ``outputs`` (store-relative
        when inside the store). It changes no table, so :attr:`version` stays and no writer that read the
        store before is refused for it.

        Waits up to ``wait`` seconds for another process's transaction to finish. Returns False (nothing
        recorded; the run's outputs stand) when the store stays locked or cannot be written here.
        """
        import time

        entry = provenance_entry(command, args=args, seed=seed, counts=counts, packages=packages)
        entry["kind"] = RUN
        entry["outputs"] = [self._relative(Path(p)) for p in outputs]
        deadline = time.monotonic() + wait
        while True:
            try:
                with self._write_lock():
                    meta = self.read_meta()
                    meta["provenance"].append(entry)
                    text = json.dumps(meta, indent=2) + "\n"
                    atomic_write_bytes(self.root / _META, text.encode("utf-8"))
                return True
            except StoreLocked:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.2)
            except (StoreError, OSError):  # read-only here, or the lock cannot be taken at all
                return False

    def _relative(self, path: Path) -> str:
        """``path`` relative to the store when it lies inside it, else absolute."""
        resolved = path.resolve()
        if resolved.is_relative_to(self.root.resolve()):
            return resolved.relative_to(self.root.resolve()).as_posix()
        return str(resolved)

    # -- summary -----------------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """What the store holds: counts by source and category, what later stages added, the provenance log."""
        procedures = _with_category_keys(self.table("procedures", ["id", "source", "category", "n_steps"]))
        images = self.table("images", ["procedure_id", "stored"])
        proc_cols = self.columns("procedures")
        out: dict[str, Any] = {
            "path": str(self.root),
            "format_version": self.read_meta().get("format_version"),
            "procedures": procedures.num_rows,
            "steps": self.num_rows("steps"),
            "images": images.num_rows,
            "images_stored": int(pc.sum(images["stored"]).as_py() or 0),
            "by_source": _counts_by("source", procedures, images),
            "by_category": _counts_by("category_root", procedures, images),
            "by_subcategory": _counts_by("category_path", procedures, images),
        }
        stages: dict[str, Any] = {}
        if "keep" in proc_cols:
            cleaned = self.table("procedures", ["keep", "drop_reason"])
            stages["clean"] = {
                "kept": int(pc.sum(cleaned["keep"]).as_py() or 0),
                "dropped": _value_counts(pc.drop_null(cleaned["drop_reason"])),
            }
        splits = self.table("procedures", ["split"])["split"]
        if splits.null_count < len(splits):
            stages["splits"] = _value_counts(pc.drop_null(splits))
        stages.update(self._artifacts())
        out["stages"] = stages
        out["tables"] = self.tables_info()
        out["provenance"] = self.provenance
        return out

    def _artifacts(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.has_table("actions"):
            found["actions"] = _actions_info(
                self.table("actions", ["procedure_id", "step", "sentence", "in_lexicon", "key"])
            )
        embeddings = sorted((self.root / "embeddings").glob("*.arrow"))
        if embeddings:
            found["embeddings"] = {p.stem: _arrow_file_info(p) for p in embeddings}
        indexes = sorted((self.root / "indexes").glob("*.faiss"))
        if indexes:
            found["indexes"] = [p.stem for p in indexes]
        qsets = sorted(p for p in (self.root / "questions").glob("*/*") if p.is_dir() and self.contains(p))
        if qsets:
            found["question_sets"] = {
                f"{p.parent.name}/{p.name}": {
                    f.stem: _parquet_rows(f)
                    for f in sorted(p.glob("*.parquet"))
                    if not f.is_symlink() and self.contains(f)
                }
                for p in qsets
            }
        return found


def _parquet_rows(path: Path) -> int:
    try:
        return pq.read_metadata(path).num_rows
    except (OSError, pa.ArrowException) as exc:
        raise StoreDamaged(f"{path} is not a readable Parquet file ({type(exc).__name__})") from None


def _remove_partial_images(root: Path) -> None:
    """Remove image files a killed writer left half-written (call with the write lock held)."""
    partial = root / "images" / _PARTIAL
    if partial.is_dir():
        for leftover in partial.iterdir():
            leftover.unlink(missing_ok=True)


def _value_counts(array: pa.Array | pa.ChunkedArray) -> dict[str, int]:
    counts = pc.value_counts(array)
    values, totals = counts.field("values").to_pylist(), counts.field("counts").to_pylist()
    pairs = [(str(v), int(c)) for v, c in zip(values, totals, strict=True)]
    return dict(sorted(pairs, key=lambda kv: (-kv[1], kv[0])))


def _counts_by(key: str, procedures: pa.Table, images: pa.Table) -> dict[str, dict[str, int]]:
    """Procedures, steps and images per value of the procedures column ``key``."""
    if procedures.num_rows == 0:
        return {}
    grouped = procedures.group_by(key).aggregate([("id", "count"), ("n_steps", "sum")])
    out = {
        row[key]: {"procedures": row["id_count"], "steps": row["n_steps_sum"], "images": 0}
        for row in grouped.to_pylist()
    }
    if images.num_rows:
        joined = images.join(procedures.select(["id", key]), "procedure_id", "id")
        for row in joined.group_by(key).aggregate([("procedure_id", "count")]).to_pylist():
            out[row[key]]["images"] = row["procedure_id_count"]
    return dict(sorted(out.items(), key=lambda kv: (-kv[1]["procedures"], kv[0])))


def _with_category_keys(procedures: pa.Table) -> pa.Table:
    """Add ``category_root`` and ``category_path`` (first two levels, ``A > B``); ``(none)`` when uncategorised."""
    categories = procedures["category"].to_pylist()
    roots = [c[0] if c else "(none)" for c in categories]
    paths = [" > ".join(c[:2]) if c else "(none)" for c in categories]
    return procedures.append_column("category_root", pa.array(roots, pa.string())).append_column(
        "category_path", pa.array(paths, pa.string())
    )


def _actions_info(table: pa.Table) -> dict[str, Any]:
    """What ``extract`` stored: tuples, key sentences and the lexicon's size (from the table and its metadata)."""
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    keys = (
        table.filter(table["key"])
        .select(["procedure_id", "step", "sentence"])
        .group_by(["procedure_id", "step", "sentence"])
    )
    lexicon = json.loads(meta.get("lexicon_summary", "{}"))
    return {
        "tuples": table.num_rows,
        "tuples_in_lexicon": int(pc.sum(table["in_lexicon"]).as_py() or 0),
        "key_sentences": keys.aggregate([]).num_rows,
        "lexicon_size": lexicon.get("size"),
        "model": json.loads(meta.get("model", "{}")).get("model"),
    }


def _arrow_file_info(path: Path) -> dict[str, Any]:
    with pa.memory_map(str(path)) as source:
        reader = pa.ipc.open_file(source)
        meta = {k.decode(): v.decode() for k, v in (reader.schema.metadata or {}).items()}
        rows = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
    return {"rows": rows, **meta}
