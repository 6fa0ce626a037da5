"""All-or-nothing updates of a store.

A transaction stages every file it will change under ``STORE/.txn/<id>/``. Commit writes a journal
(``COMMIT``) listing the renames, then the files to remove, then performs them: the renames (a part-layout
table's new parts before its part list, store.json last), then the removals (parts no longer listed, the
other layout's files of a converted table). A process killed before the journal exists leaves the store
untouched (the staging folder is discarded on next open); killed after, the next open finishes the renames
and removals. Either way a reader never sees half of an update.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from procbench.errors import BadInput
from procbench.store.atomic import fsync_dir
from procbench.store.provenance import provenance_entry
from procbench.store.schema import conform
from procbench.store.tables import (
    DEFAULT_PART_ROWS,
    FILE,
    FORMAT_FILES_ONLY,
    FORMAT_WITH_PARTS,
    LAYOUTS,
    PARTS,
    PARTS_LIST,
    Layout,
    locate,
    part_file_name,
    part_number,
    read_files,
    read_table,
    split_rows,
)

__all__ = ["TXN_DIR", "Transaction", "recover"]

TXN_DIR = ".txn"
_JOURNAL = "COMMIT"
#: Parts smaller than ``part_rows`` an append may leave at the end of a table before they are merged into one.
MAX_TAIL_PARTS = 32


@dataclass
class _TableChange:
    """What a transaction does to one table: its layout after commit and, for parts, the listed files."""

    layout: Layout
    #: The part list after commit: ``{"file", "rows"}`` entries (parts layout only).
    parts: list[dict[str, Any]] = field(default_factory=list)
    #: Where each listed part can be read now (the store's file, or the staged one).
    paths: list[Path] = field(default_factory=list)
    #: Store-relative paths of the part files this transaction staged.
    new: list[str] = field(default_factory=list)


class StoreFiles(Protocol):
    """What a transaction needs of its store (:class:`procbench.store.Store` is one): where it lives, its metadata."""

    root: Path

    def read_meta(self) -> dict[str, Any]: ...


class Transaction:
    """Stage table and file writes, then apply them all at once with :meth:`commit`.

    Use through :meth:`procbench.store.Store.transaction`. ``counts`` and ``args`` end up in the
    provenance entry written with the commit.
    """

    def __init__(
        self,
        store: StoreFiles,
        command: str,
        *,
        args: dict[str, Any],
        seed: int | None,
        packages: tuple[str, ...] = (),
    ) -> None:
        self.store = store
        self.command = command
        self.args = args
        self.seed = seed
        self.packages = packages
        self.counts: dict[str, Any] = {}
        self._dir = store.root / TXN_DIR / uuid.uuid4().hex
        self._dir.mkdir(parents=True)
        self._staged: dict[str, Path] = {}
        self._tables: dict[str, _TableChange] = {}
        #: Keys of store.json to set at commit (``table_layout``, ``part_rows``).
        self.settings: dict[str, Any] = {}

    def stage(self, relpath: str) -> Path:
        """A path to write the new content of ``STORE/relpath`` to; it replaces the old file at commit."""
        tmp = self._dir / "files" / relpath
        tmp.parent.mkdir(parents=True, exist_ok=True)
        self._staged[relpath] = tmp
        return tmp

    # -- tables ------------------------------------------------------------------------------------------
    def layout(self, name: str) -> Layout:
        """The layout ``name`` has in this transaction: as staged, as stored, else the store's default."""
        if name in self._tables:
            return self._tables[name].layout
        stored = locate(self.store.root, name).layout
        if stored is not None:
            return stored
        default = self.settings.get("table_layout", self.store.read_meta().get("table_layout", FILE))
        return PARTS if default == PARTS else FILE

    def _part_rows(self) -> int:
        return int(self.settings.get("part_rows", self.store.read_meta().get("part_rows", DEFAULT_PART_ROWS)))

    def write_table(self, name: str, table: pa.Table, *, layout: Layout | None = None) -> None:
        """Stage ``table`` as the whole new content of table ``name``.

        ``layout``: ``"file"`` (``STORE/<name>.parquet``) or ``"parts"`` (``STORE/<name>/part-*.parquet``, cut
        every ``part_rows`` rows); by default the table keeps its layout (a new table gets the store's).
        """
        if layout is not None and layout not in LAYOUTS:
            raise ValueError(f"unknown table layout {layout!r}")
        layout = layout or self.layout(name)
        self._forget(name)
        if layout == FILE:
            pq.write_table(table, self.stage(f"{name}.parquet"), compression="zstd")
            self._tables[name] = _TableChange(FILE)
            return
        change = _TableChange(PARTS)
        self._tables[name] = change
        for piece in split_rows(table, self._part_rows()):
            self._add_part(name, change, piece)

    def append_table(self, name: str, rows: pa.Table) -> None:
        """Stage ``rows`` added after the table's current rows (a new part, or several of ``part_rows``, in the
        part layout).

        The rows are conformed to the table's columns (missing ones null, extra ones kept, as
        :func:`~procbench.store.conform` does). In the file layout the file is rewritten with the old rows
        first; in the part layout only the new part is written (and, once more than :data:`MAX_TAIL_PARTS`
        small parts end the table, those are merged into one).
        """
        layout = self.layout(name)
        change = self._tables.get(name)
        if layout == FILE:
            old = (
                pq.read_table(self._staged[f"{name}.parquet"])
                if change is not None
                else read_table(self.store.root, name)
            )
            if old is not None and old.num_rows:
                rows = pa.concat_tables([old, conform(rows, old.schema)], promote_options="default")
            self.write_table(name, rows.combine_chunks(), layout=FILE)
            return
        if change is None:
            stored = locate(self.store.root, name)
            change = _TableChange(PARTS)
            if stored.layout == PARTS:  # (a stored file-layout table has layout() "file": not here)
                change.parts = [
                    {"file": p.name, "rows": n} for p, n in zip(stored.files, stored.rows or (), strict=True)
                ]
                change.paths = list(stored.files)
            self._tables[name] = change
        if not any(entry["rows"] for entry in change.parts):  # rows added to an empty table are its content
            self._forget(name)
            change = self._tables[name] = _TableChange(PARTS)
        if change.paths:  # every part is written conformed to the ones before: the last has all their columns
            rows = conform(rows, pq.read_schema(change.paths[-1]))
        for piece in split_rows(rows, self._part_rows()):
            self._add_part(name, change, piece)
        self._merge_tail(name, change)

    def _merge_tail(self, name: str, change: _TableChange) -> None:
        """Merge the parts after the last full one into one when there are more than :data:`MAX_TAIL_PARTS`.

        A long scrape commits thousands of small batches; merged this way a table keeps at most
        ``rows / part_rows + MAX_TAIL_PARTS`` parts, and an append rewrites ``part_rows / MAX_TAIL_PARTS``
        rows on average, whatever the size of the table.
        """
        part_rows = self._part_rows()
        tail = 0
        while tail < len(change.parts) and change.parts[-1 - tail]["rows"] < part_rows:
            tail += 1
        if tail <= MAX_TAIL_PARTS:
            return
        merged = read_files(change.paths[-tail:], None)
        dropped = {f"{name}/{entry['file']}" for entry in change.parts[-tail:]}
        for rel in dropped & set(change.new):  # staged by this transaction: never committed, just deleted
            self._staged.pop(rel).unlink(missing_ok=True)
        change.new = [rel for rel in change.new if rel not in dropped]
        del change.parts[-tail:], change.paths[-tail:]  # committed ones are removed after the commit
        for piece in split_rows(merged, part_rows):
            self._add_part(name, change, piece)

    def _add_part(self, name: str, change: _TableChange, rows: pa.Table) -> None:
        numbers = [part_number(entry["file"]) for entry in change.parts]
        directory = self.store.root / name
        if directory.is_dir():  # never reuse the name of a file still in the directory (an old, listed part)
            numbers += [part_number(p.name) for p in directory.iterdir()]
        number = max((n for n in numbers if n is not None), default=-1) + 1
        rel = f"{name}/{part_file_name(number)}"
        path = self.stage(rel)
        pq.write_table(rows, path, compression="zstd")
        change.parts.append({"file": part_file_name(number), "rows": rows.num_rows})
        change.paths.append(path)
        change.new.append(rel)

    def _forget(self, name: str) -> None:
        """Drop what this transaction staged for table ``name`` so far."""
        change = self._tables.pop(name, None)
        if change is None:
            return
        for rel in [*change.new, f"{name}.parquet"]:
            staged = self._staged.pop(rel, None)
            if staged is not None:
                staged.unlink(missing_ok=True)

    def _stage_tables(self) -> list[str]:
        """Stage each changed part list; returns the store-relative paths to remove after the renames."""
        removals: list[str] = []
        for name, change in self._tables.items():
            stored = locate(self.store.root, name)
            kept = {entry["file"] for entry in change.parts} if change.layout == PARTS else set()
            if change.layout == PARTS:
                listing = {"parts": change.parts}
                self.stage(f"{name}/{PARTS_LIST}").write_text(json.dumps(listing, indent=1) + "\n", encoding="utf-8")
                if stored.layout == FILE:
                    removals.append(f"{name}.parquet")
                removals += [f"{name}/{p.name}" for p in stored.files if stored.layout == PARTS and p.name not in kept]
            elif stored.layout == PARTS:  # converted to one file: the list goes first, then its parts
                removals += [f"{name}/{PARTS_LIST}", *(f"{name}/{p.name}" for p in stored.files), name]
        return removals

    def _format_version(self, meta: dict[str, Any]) -> int:
        """The store format after commit: 2 once any table (or the default for new ones) uses parts."""
        layouts = {p.name: PARTS for p in self.store.root.iterdir() if (p / PARTS_LIST).is_file()}
        layouts.update({name: change.layout for name, change in self._tables.items()})
        uses_parts = PARTS in layouts.values() or meta.get("table_layout") == PARTS
        return FORMAT_WITH_PARTS if uses_parts else min(int(meta.get("format_version", 1)), FORMAT_FILES_ONLY)

    def commit(self) -> dict[str, Any]:
        """Apply every staged write and append the provenance entry; returns that entry."""
        entry = provenance_entry(
            self.command, args=self.args, seed=self.seed, counts=self.counts, packages=self.packages
        )
        removals = self._stage_tables()
        root = self.store.root.resolve()
        for rel in [*self._staged, *removals]:  # a link in the store (``questions -> /elsewhere``) is not followed
            if not (self.store.root / rel).parent.resolve().is_relative_to(root):
                self.abort()
                raise BadInput(f"{self.store.root / rel} lies outside the store through a link; nothing was written")
        meta = self.store.read_meta()
        meta.update(self.settings)
        meta["format_version"] = self._format_version(meta)
        meta["provenance"].append(entry)
        store_json = self.stage("store.json")
        store_json.write_text(json.dumps(meta, indent=2, sort_keys=False) + "\n", encoding="utf-8")
        moves = [[str(tmp.relative_to(self._dir)), rel] for rel, tmp in self._staged.items() if rel != "store.json"]
        moves.append([str(store_json.relative_to(self._dir)), "store.json"])
        for _, tmp in self._staged.items():
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        pending = self._dir / (_JOURNAL + ".tmp")
        pending.write_text(json.dumps({"moves": moves, "removals": removals}), encoding="utf-8")
        with open(pending, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(pending, self._dir / _JOURNAL)  # the commit point
        fsync_dir(self._dir)
        _apply(self._dir, self.store.root)
        return entry

    def abort(self) -> None:
        """Discard everything staged."""
        shutil.rmtree(self._dir, ignore_errors=True)


def _plain_relpath(rel: object) -> bool:
    """Whether ``rel`` is a relative path with no ``..`` (it stays under the folder it is joined to)."""
    if not isinstance(rel, str) or not rel or rel.startswith(("/", "\\")):
        return False
    return ".." not in Path(rel).parts


def _apply(txn_dir: Path, root: Path) -> None:
    journal = json.loads((txn_dir / _JOURNAL).read_text(encoding="utf-8"))
    touched: set[Path] = set()
    for src_rel, dst_rel in journal["moves"]:
        if not (_plain_relpath(src_rel) and _plain_relpath(dst_rel)):
            continue  # a journal naming a place outside the store is not followed
        src, dst = txn_dir / src_rel, root / dst_rel
        if src.exists():  # already moved when a previous attempt was interrupted
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
            touched.add(dst.parent)
    for rel in journal.get("removals", []):  # in order; each is done at most once, so a repeat is harmless
        if not _plain_relpath(rel):
            continue
        path = root / rel
        if path.is_dir() and not path.is_symlink():
            try:
                path.rmdir()
            except OSError:
                continue  # not empty: something other than the table's parts is in it; leave it
        else:
            path.unlink(missing_ok=True)
        touched.add(path.parent)
    for directory in touched:
        if directory.is_dir():
            fsync_dir(directory)
    shutil.rmtree(txn_dir, ignore_errors=True)


def recover(root: Path) -> None:
    """Finish committed transactions and discard uncommitted ones (call with the write lock held)."""
    base = root / TXN_DIR
    if not base.is_dir():
        return
    for txn_dir in sorted(base.iterdir()):
        if (txn_dir / _JOURNAL).is_file():
            _apply(txn_dir, root)
        else:
            shutil.rmtree(txn_dir, ignore_errors=True)
