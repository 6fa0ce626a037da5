"""Tables stored as a directory of parquet part-files read, append and commit like one-file tables."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from procbench.cli import app
from procbench.errors import BadInput
from procbench.store import Store
from procbench.store.layout import set_layout
from procbench.store.tables import PARTS_LIST, read_table
from procbench.store.transaction import TXN_DIR

from helpers import make_record, write_jsonl

runner = CliRunner()


def _procedures(*ids: str, keep: bool | None = None) -> pa.Table:
    table = pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "source": pa.array(["t"] * len(ids), pa.string()),
            "title": pa.array([f"title {i}" for i in ids], pa.string()),
            "n_steps": pa.array([len(i) for i in ids], pa.int32()),
        }
    )
    return table if keep is None else table.append_column("keep", pa.array([keep] * len(ids), pa.bool_()))


def _store(root: Path, layout: str, *, part_rows: int | None = None) -> Store:
    store = Store.open(root, create=True)
    set_layout(store, layout, part_rows=part_rows)  # type: ignore[arg-type]
    return Store.open(root)


def _append(store: Store, name: str, rows: pa.Table) -> None:
    with store.transaction("append") as txn:
        txn.append_table(name, rows)


def test_a_part_table_reads_like_the_one_file_table(tmp_path: Path) -> None:
    one = Store.open(tmp_path / "one", create=True)
    rows = _procedures(*(f"p{i:02d}" for i in range(7)))
    with one.transaction("w") as txn:
        txn.write_table("procedures", rows)
    parts = Store.open(tmp_path / "parts", create=True)
    with parts.transaction("w") as txn:
        txn.write_table("procedures", rows)
    set_layout(parts, "parts", part_rows=3)
    assert parts.table_layout("procedures") == "parts" and one.table_layout("procedures") == "file"
    assert [p.name for p in parts.table_files("procedures")] == [
        "part-00000.parquet",
        "part-00001.parquet",
        "part-00002.parquet",
    ]
    assert [pq.read_metadata(p).num_rows for p in parts.table_files("procedures")] == [3, 3, 1]
    assert not (tmp_path / "parts" / "procedures.parquet").exists()
    assert parts.table("procedures").equals(one.table("procedures"), check_metadata=True)
    assert parts.table("procedures", ["n_steps", "id"]).equals(one.table("procedures", ["n_steps", "id"]))
    assert parts.columns("procedures") == one.columns("procedures")
    assert parts.num_rows("procedures") == one.num_rows("procedures") == 7
    assert parts.has_table("procedures") and not parts.has_table("steps")
    assert parts.table("steps").num_rows == 0  # never written: the declared empty table, as before
    info = parts.tables_info()["procedures"]
    assert (info["layout"], info["files"], info["rows"]) == ("parts", 3, 7)
    assert info["bytes"] == sum(p.stat().st_size for p in parts.table_files("procedures"))
    assert json.loads((tmp_path / "parts" / "store.json").read_text())["format_version"] == 2
    # the directory is a plain dataset: pyarrow skips the _parts.json list
    import pyarrow.dataset as ds

    assert ds.dataset(tmp_path / "parts" / "procedures", format="parquet").to_table().num_rows == 7


def test_an_append_adds_one_part_and_leaves_the_others_untouched(tmp_path: Path) -> None:
    store = _store(tmp_path / "s", "parts")
    _append(store, "procedures", _procedures("a", "b"))
    first = store.table_files("procedures")[0]
    before = (first.read_bytes(), first.stat().st_ino, first.stat().st_mtime_ns)
    _append(store, "procedures", _procedures("c"))
    _append(store, "procedures", _procedures("d", "e"))
    files = store.table_files("procedures")
    assert [p.name for p in files] == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    assert (files[0].read_bytes(), files[0].stat().st_ino, files[0].stat().st_mtime_ns) == before
    assert store.table("procedures")["id"].to_pylist() == ["a", "b", "c", "d", "e"]
    listed = json.loads((tmp_path / "s" / "procedures" / PARTS_LIST).read_text())["parts"]
    assert [e["rows"] for e in listed] == [2, 1, 2]
    assert not any((tmp_path / "s" / TXN_DIR).iterdir())


def test_appends_in_one_transaction_and_a_rewrite_replace_parts(tmp_path: Path) -> None:
    store = _store(tmp_path / "s", "parts", part_rows=2)
    _append(store, "procedures", _procedures("a", "b", "c"))
    with store.transaction("two appends") as txn:
        txn.append_table("procedures", _procedures("d"))
        txn.append_table("procedures", _procedures("e"))
    assert store.table("procedures")["id"].to_pylist() == ["a", "b", "c", "d", "e"]
    assert [pq.read_metadata(p).num_rows for p in store.table_files("procedures")] == [2, 1, 1, 1]
    with store.transaction("rewrite") as txn:  # what clean does: the whole table anew, cut every part_rows rows
        txn.write_table("procedures", _procedures("x", "y", "z"))
    assert store.table("procedures")["id"].to_pylist() == ["x", "y", "z"]
    names = sorted(p.name for p in (tmp_path / "s" / "procedures").iterdir())
    assert names == [PARTS_LIST, "part-00004.parquet", "part-00005.parquet"]  # the old parts are gone


def test_small_parts_at_the_end_are_merged_past_a_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long run of small appends (a scrape's batches) keeps few parts: the tail of small ones is merged."""
    import procbench.store.transaction as transaction

    monkeypatch.setattr(transaction, "MAX_TAIL_PARTS", 3)
    store = _store(tmp_path / "s", "parts", part_rows=4)
    _append(store, "procedures", _procedures(*(f"f{i}" for i in range(8))))  # two full parts of 4
    ids = [f"f{i}" for i in range(8)]
    counts = []
    for batch in range(9):
        new = [f"b{batch}-{i}" for i in range(batch % 3)]
        ids += new
        _append(store, "procedures", _procedures(*new))
        counts.append(len(store.table_files("procedures")))
        assert store.table("procedures")["id"].to_pylist() == ids
    rows = [pq.read_metadata(p).num_rows for p in store.table_files("procedures")]
    assert rows[:2] == [4, 4] and max(counts) <= 2 + 3 + 1 and sum(rows) == len(ids)
    assert counts != sorted(counts)  # merges happened
    on_disk = {p.name for p in (tmp_path / "s" / "procedures").glob("part-*.parquet")}
    assert on_disk == {p.name for p in store.table_files("procedures")}  # merged-away parts are removed


def test_new_columns_from_a_rewrite_are_null_in_later_parts_as_in_one_file(tmp_path: Path) -> None:
    """clean adds ``keep``; a batch scraped afterwards lacks it; a later column is null in earlier parts."""
    tables = {}
    for layout in ("file", "parts"):
        store = _store(tmp_path / layout, layout)
        _append(store, "procedures", _procedures("a", "b"))
        with store.transaction("clean") as txn:
            txn.write_table("procedures", _procedures("a", "b", keep=True))
        _append(store, "procedures", _procedures("c"))
        _append(store, "procedures", _procedures("d").append_column("extra", pa.array([1.5])))
        tables[layout] = store.table("procedures")
        assert store.columns("procedures") == ["id", "source", "title", "n_steps", "keep", "extra"]
    assert tables["parts"].equals(tables["file"], check_metadata=True)
    assert tables["parts"]["keep"].to_pylist() == [True, True, None, None]
    assert tables["parts"]["extra"].to_pylist() == [None, None, None, 1.5]


def test_a_table_converts_back_to_one_file(tmp_path: Path) -> None:
    store = _store(tmp_path / "s", "parts", part_rows=1)
    _append(store, "procedures", _procedures("a", "b", "c"))
    expected = store.table("procedures")
    set_layout(store, "file")
    assert store.table_layout("procedures") == "file"
    assert not (tmp_path / "s" / "procedures").exists()
    assert store.table("procedures").equals(expected)
    assert json.loads((tmp_path / "s" / "store.json").read_text())["format_version"] == 1
    _append(store, "procedures", _procedures("d"))  # the default for appends is one file again
    assert store.table_layout("procedures") == "file"


def test_layout_rejects_nonsense(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", create=True)
    with pytest.raises(BadInput):
        set_layout(store, "shards")  # type: ignore[arg-type]
    with pytest.raises(BadInput):
        set_layout(store, "parts", part_rows=0)
    assert store.provenance == []


_ids = st.lists(st.text("abcdef", min_size=1, max_size=4), min_size=0, max_size=6)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.tuples(_ids, st.booleans()), min_size=1, max_size=5), part_rows=st.integers(1, 4))
def test_k_appended_parts_read_equal_to_the_one_file_table(
    batches: list[tuple[list[str], bool]], part_rows: int
) -> None:
    """Any sequence of appends (some batches carrying an extra column), with the small parts at the end
    merged past 2 of them, then a compaction, reads the same."""
    import procbench.store.transaction as transaction

    limit, transaction.MAX_TAIL_PARTS = transaction.MAX_TAIL_PARTS, 2
    try:
        _check_k_appends(batches, part_rows)
    finally:
        transaction.MAX_TAIL_PARTS = limit


def _check_k_appends(batches: list[tuple[list[str], bool]], part_rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stores = {layout: _store(Path(tmp) / layout, layout, part_rows=part_rows) for layout in ("file", "parts")}
        for ids, extra in batches:
            rows = _procedures(*ids)
            if extra:
                rows = rows.append_column("extra", pa.array([len(i) * 0.5 for i in ids], pa.float64()))
            for store in stores.values():
                _append(store, "procedures", rows)
        one, parts = stores["file"].table("procedures"), stores["parts"].table("procedures")
        assert parts.equals(one, check_metadata=True)
        rows = [pq.read_metadata(p).num_rows for p in stores["parts"].table_files("procedures")]
        assert sum(rows) == one.num_rows and max(rows) <= part_rows  # every write cuts at part_rows
        set_layout(stores["parts"], "parts")  # compaction keeps rows and order
        assert stores["parts"].table("procedures").equals(one)


_KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
import pyarrow as pa
from procbench.store import Store

point = sys.argv[2]
real_replace, real_unlink = os.replace, Path.unlink

def die():
    os.kill(os.getpid(), signal.SIGKILL)

def replace(src, dst):
    if point == "list" and Path(dst).name == "_parts.json":
        die()  # the new part is in the table's directory, its list not yet
    if point == "store.json" and Path(dst).name == "store.json":
        die()
    real_replace(src, dst)

def unlink(self, missing_ok=False):
    if point == "removal" and self.name.startswith("part-"):
        die()  # the rewrite is committed, the old parts not yet removed
    real_unlink(self, missing_ok=missing_ok)

os.replace, Path.unlink = replace, unlink
store = Store.open(sys.argv[1])
rows = pa.table({"id": ["new"], "source": ["t"], "title": ["new"], "n_steps": [1]})
with store.transaction("killed") as txn:
    if point == "staging":
        txn.append_table("procedures", rows)
        die()
    elif point == "removal":
        txn.write_table("procedures", rows)
    else:
        txn.append_table("procedures", rows)
"""


@pytest.mark.parametrize(
    ("point", "after_recovery"),
    [("staging", ["a", "b", "c"]), ("list", ["a", "b", "c", "new"]), ("store.json", ["a", "b", "c", "new"]),
     ("removal", ["new"])],
)  # fmt: skip
def test_kill_9_mid_commit_leaves_a_readable_store(tmp_path: Path, point: str, after_recovery: list[str]) -> None:
    root = tmp_path / "s"
    store = _store(root, "parts", part_rows=2)
    _append(store, "procedures", _procedures("a", "b", "c"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), *sys.path])}
    done = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(root), point], env=env, capture_output=True)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    # before anyone recovers, a reader sees a whole state: the previous one, or (past the list) the new one
    seen = read_table(root, "procedures")
    assert seen is not None and seen["id"].to_pylist() in (["a", "b", "c"], after_recovery)
    if point in ("staging", "list"):
        assert seen["id"].to_pylist() == ["a", "b", "c"]
    reopened = Store.open(root)  # recovers: rolls a committed transaction forward, drops an uncommitted one
    assert reopened.table("procedures")["id"].to_pylist() == after_recovery
    commands = [e["command"] for e in reopened.provenance]
    assert commands[-1] == ("killed" if point != "staging" else "append")
    assert not any((root / TXN_DIR).iterdir())
    listed = {e["file"] for e in json.loads((root / "procedures" / PARTS_LIST).read_text())["parts"]}
    assert {p.name for p in (root / "procedures").glob("part-*.parquet")} == listed  # no stray parts
    _append(reopened, "procedures", _procedures("z"))  # and it takes the next write
    assert Store.open(root).table("procedures")["id"].to_pylist() == [*after_recovery, "z"]


def test_cli_ingest_into_a_part_store_then_info_clean_generate(tmp_path: Path) -> None:
    """The same records through both layouts: same clean tables, same question bytes; info shows the parts."""
    records = [make_record(f"p{i}", 5) for i in range(12)]
    batches = [write_jsonl(tmp_path / f"in{i}.jsonl", records[4 * i : 4 * i + 4]) for i in range(3)]
    stores = {}
    for layout in ("file", "parts"):
        store = str(tmp_path / layout)
        done = runner.invoke(app, ["layout", layout, "--store", store, "--json"])
        assert done.exit_code == 0, done.output
        for path in batches:
            assert runner.invoke(app, ["ingest", str(path), "--store", store]).exit_code == 0
        stores[layout] = Path(store)
    info = json.loads(runner.invoke(app, ["info", "--store", str(stores["parts"]), "--json"]).stdout)
    assert info["procedures"] == 12 and info["steps"] == 60
    assert {k: (v["layout"], v["files"], v["rows"]) for k, v in info["tables"].items()} == {
        "images": ("parts", 1, 0),
        "procedures": ("parts", 3, 12),
        "steps": ("parts", 3, 60),
    }
    shown = runner.invoke(app, ["info", "--store", str(stores["parts"])], env={"COLUMNS": "120"}).stdout
    assert any(line.startswith("│ steps") and "3 parts" in line for line in shown.splitlines())
    for layout, store in stores.items():
        for args in (["clean"], ["embed", "-t", "hashed"], ["generate", "-t", "pair-order"]):
            done = runner.invoke(app, [*args, "--store", str(store)])
            assert done.exit_code == 0, f"{layout} {args}: {done.output}"
    one, parts = Store.open(stores["file"]), Store.open(stores["parts"])
    for name in ("procedures", "steps"):
        assert parts.table(name).equals(one.table(name))
    assert parts.table_layout("steps") == "parts"  # clean kept the table's layout
    questions = sorted((stores["file"] / "questions").rglob("*.parquet"))
    assert questions
    for path in questions:
        twin = stores["parts"] / path.relative_to(stores["file"])
        assert twin.read_bytes() == path.read_bytes(), path.name
    for path in sorted((stores["file"] / "embeddings").glob("*.arrow")):
        assert (stores["parts"] / "embeddings" / path.name).read_bytes() == path.read_bytes()
