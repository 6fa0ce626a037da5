from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest

from procbench.errors import StoreError, StoreLocked, StoreNotFound
from procbench.store import PROCEDURES, Store
from procbench.store.transaction import TXN_DIR, recover


def _procedures(*ids: str) -> pa.Table:
    return pa.table({"id": list(ids), "source": ["t"] * len(ids), "title": list(ids), "n_steps": [1] * len(ids)})


def test_open_missing_store_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFound) as info:
        Store.open(tmp_path / "nope")
    assert info.value.exit_code == 2


def test_create_writes_format_and_empty_tables(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", create=True)
    meta = json.loads((tmp_path / "s" / "store.json").read_text())
    assert meta["format"] == "procbench-store" and meta["format_version"] == 1 and meta["provenance"] == []
    assert store.table("procedures").schema.names == PROCEDURES.names
    assert store.table("steps").num_rows == 0


def test_refuses_non_empty_foreign_directory(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(StoreError):
        Store.open(tmp_path, create=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_refuses_newer_format(tmp_path: Path) -> None:
    Store.open(tmp_path / "s", create=True)
    meta_path = tmp_path / "s" / "store.json"
    meta = json.loads(meta_path.read_text())
    meta["format_version"] = 99
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(StoreError, match="upgrade procbench"):
        Store.open(tmp_path / "s")


def test_transaction_commits_tables_and_appends_provenance(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", create=True)
    with store.transaction("first", args={"x": 1}, seed=7) as txn:
        txn.write_table("procedures", _procedures("a", "b"))
        txn.counts["added"] = 2
    with store.transaction("second") as txn:
        txn.write_table("procedures", _procedures("a", "b", "c"))
    assert store.table("procedures")["id"].to_pylist() == ["a", "b", "c"]
    log = store.provenance
    assert [e["command"] for e in log] == ["first", "second"]
    assert log[0]["args"] == {"x": 1} and log[0]["seed"] == 7 and log[0]["counts"] == {"added": 2}
    assert log[0]["versions"]["procbench"] and log[0]["time"].endswith("+00:00")
    assert not any((tmp_path / "s" / TXN_DIR).iterdir())


def test_failed_transaction_changes_nothing(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", create=True)
    with store.transaction("ok") as txn:
        txn.write_table("procedures", _procedures("a"))
    before = (tmp_path / "s" / "procedures.parquet").read_bytes()
    with pytest.raises(RuntimeError), store.transaction("boom") as txn:
        txn.write_table("procedures", _procedures("a", "b"))
        raise RuntimeError("crash mid-write")
    assert (tmp_path / "s" / "procedures.parquet").read_bytes() == before
    assert [e["command"] for e in store.provenance] == ["ok"]


def test_second_writer_is_refused(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", create=True)
    other = Store.open(tmp_path / "s")
    with store.transaction("one"), pytest.raises(StoreLocked), other.transaction("two"):
        pass


def test_commit_interrupted_after_journal_is_finished_on_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process killed between the commit point and the last rename: the next open rolls forward."""
    store = Store.open(tmp_path / "s", create=True)
    real_replace = os.replace
    calls = {"n": 0}

    def dying_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst).name == "store.json" and TXN_DIR in str(src):
            raise KeyboardInterrupt("killed")  # dies before the last rename
        calls["n"] += 1
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", dying_replace)
    with pytest.raises(KeyboardInterrupt), store.transaction("half") as txn:
        txn.write_table("procedures", _procedures("a"))
        txn.write_table(
            "steps", pa.table({"procedure_id": ["a"], "index": [0], "title": [None], "text": ["t"], "image_ids": [[]]})
        )
    monkeypatch.setattr(os, "replace", real_replace)
    reopened = Store.open(tmp_path / "s")
    assert [e["command"] for e in reopened.provenance] == ["half"]
    assert reopened.table("procedures")["id"].to_pylist() == ["a"]
    assert not any((tmp_path / "s" / TXN_DIR).iterdir())


def test_uncommitted_staging_is_discarded(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", create=True)
    stale = tmp_path / "s" / TXN_DIR / "dead"
    (stale / "files").mkdir(parents=True)
    (stale / "files" / "procedures.parquet").write_bytes(b"partial")
    recover(store.root)
    assert not stale.exists()
    assert not store.has_table("procedures")


def test_atomic_writes_get_the_umask_mode_not_0600(tmp_path: Path) -> None:
    """Results (audit.json, images, weights) are written through temp files; they must be readable by others."""
    from procbench.store.atomic import _UMASK, atomic_write_bytes

    atomic_write_bytes(tmp_path / "audit.json", b"{}")
    assert (tmp_path / "audit.json").stat().st_mode & 0o777 == 0o666 & ~_UMASK
    assert _UMASK & 0o044 or (tmp_path / "audit.json").stat().st_mode & 0o044 == 0o044
