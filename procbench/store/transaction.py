"""All-or-nothing updates of a store.

A transaction stages every file it will change under ``STORE/.txn/<id>/``. Commit writes a journal
(``COMMIT``) listing the renames, then performs them, store.json last. A process killed before the
journal exists leaves the store untouched (the staging folder is discarded on next open); killed after,
the next open finishes the renames. Either way a reader never sees half of an update.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from procbench.errors import BadInput
from procbench.store.atomic import fsync_dir
from procbench.store.provenance import provenance_entry

__all__ = ["TXN_DIR", "Transaction", "recover"]

TXN_DIR = ".txn"
_JOURNAL = "COMMIT"


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

    def stage(self, relpath: str) -> Path:
        """A path to write the new content of ``STORE/relpath`` to; it replaces the old file at commit."""
        tmp = self._dir / "files" / relpath
        tmp.parent.mkdir(parents=True, exist_ok=True)
        self._staged[relpath] = tmp
        return tmp

    def write_table(self, name: str, table: pa.Table) -> None:
        """Stage ``table`` as the new content of ``STORE/<name>.parquet``."""
        pq.write_table(table, self.stage(f"{name}.parquet"), compression="zstd")

    def commit(self) -> dict[str, Any]:
        """Apply every staged write and append the provenance entry; returns that entry."""
        entry = provenance_entry(
            self.command, args=self.args, seed=self.seed, counts=self.counts, packages=self.packages
        )
        root = self.store.root.resolve()
        for rel in self._staged:  # a link in the store (``questions -> /elsewhere``) is not written through
            if not (self.store.root / rel).parent.resolve().is_relative_to(root):
                self.abort()
                raise BadInput(f"{self.store.root / rel} lies outside the store through a link; nothing was written")
        meta = self.store.read_meta()
        meta["provenance"].append(entry)
        store_json = self.stage("store.json")
        store_json.write_text(json.dumps(meta, indent=2, sort_keys=False) + "\n", encoding="utf-8")
        moves = [[str(tmp.relative_to(self._dir)), rel] for rel, tmp in self._staged.items() if rel != "store.json"]
        moves.append([str(store_json.relative_to(self._dir)), "store.json"])
        for _, tmp in self._staged.items():
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        pending = self._dir / (_JOURNAL + ".tmp")
        pending.write_text(json.dumps({"moves": moves}), encoding="utf-8")
        with open(pending, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(pending, self._dir / _JOURNAL)  # the commit point
        fsync_dir(self._dir)
        _apply(self._dir, self.store.root)
        return entry

    def abort(self) -> None:
        """Discard everything staged."""
        shutil.rmtree(self._dir, ignore_errors=True)


def _apply(txn_dir: Path, root: Path) -> None:
    moves = json.loads((txn_dir / _JOURNAL).read_text(encoding="utf-8"))["moves"]
    touched: set[Path] = set()
    for src_rel, dst_rel in moves:
        src, dst = txn_dir / src_rel, root / dst_rel
        if src.exists():  # already moved when a previous attempt was interrupted
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
            touched.add(dst.parent)
    for directory in touched:
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
