"""Hardening: paths read from the store's own files stay in the store (issue 34, item 4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from procbench.cli import app
from procbench.errors import StoreDamaged
from procbench.ingest import ingest_file
from procbench.report.data import copy_images
from procbench.store import Store, is_image_id
from procbench.store.layout import set_layout
from procbench.store.tables import PARTS_LIST

from helpers import make_record, write_jsonl

runner = CliRunner()


@pytest.fixture(scope="module")
def parts_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("parts-hardening")
    store = Store.open(root / "store", create=True)
    ingest_file(store, write_jsonl(root / "in.jsonl", [make_record(f"proc-{i}") for i in range(6)]))
    set_layout(Store.open(root / "store"), "parts", part_rows=2)
    return root / "store"


@pytest.fixture
def store(parts_template: Path, tmp_path: Path) -> Path:
    shutil.copytree(parts_template, tmp_path / "store", symlinks=True)
    return tmp_path / "store"


def _listing(store: Path, table: str = "procedures") -> dict:
    return json.loads((store / table / PARTS_LIST).read_text())


def _set_listing(store: Path, listing: dict, table: str = "procedures") -> None:
    (store / table / PARTS_LIST).write_text(json.dumps(listing))


def _planted(tmp_path: Path) -> Path:
    outside = tmp_path / "outside.parquet"
    pq.write_table(
        pa.table(
            {"id": ["evil:planted"], "source": ["evil"], "title": ["planted"], "n_steps": pa.array([1], pa.int32())}
        ),
        outside,
    )
    return outside


def _one_line_exit_2(args: list[str], *, expect: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "planted" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert expect in result.output, result.output


@pytest.mark.parametrize("how", ["relative", "absolute"])
def test_a_part_list_entry_outside_the_store_is_refused(store: Path, tmp_path: Path, how: str) -> None:
    outside = _planted(tmp_path)
    listing = _listing(store)
    listing["parts"][0]["file"] = "../../outside.parquet" if how == "relative" else str(outside)
    listing["parts"][0]["rows"] = 1
    _set_listing(store, listing)
    _one_line_exit_2(["info", "--store", str(store)], expect="not a part file")
    _one_line_exit_2(["layout", "parts", "--store", str(store)], expect="not a part file")
    with pytest.raises(StoreDamaged):
        Store.open(store).table("procedures")


def test_a_symlinked_part_or_table_folder_is_refused(store: Path, tmp_path: Path) -> None:
    outside = _planted(tmp_path)
    first = store / "procedures" / _listing(store)["parts"][0]["file"]
    first.unlink()
    first.symlink_to(outside)
    _one_line_exit_2(["info", "--store", str(store)], expect="symbolic link")
    first.unlink()
    elsewhere = tmp_path / "elsewhere"
    shutil.move(store / "steps", elsewhere)
    (store / "steps").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(StoreDamaged, match="symbolic link"):
        Store.open(store).table("steps")


def test_a_wrong_row_count_is_refused(store: Path) -> None:
    listing = _listing(store)
    listing["parts"][0]["rows"] = 1024
    _set_listing(store, listing)
    _one_line_exit_2(["info", "--store", str(store)], expect="1024 rows")


@pytest.mark.parametrize("damage", ["missing part", "not parquet", "not json", "no parts list"])
def test_a_damaged_table_is_one_line(store: Path, damage: str) -> None:
    first = store / "procedures" / _listing(store)["parts"][0]["file"]
    if damage == "missing part":
        first.unlink()
        expect = f"its part {first.name} is missing"
    elif damage == "not parquet":
        first.write_bytes(b"this is not parquet at all, just some text\n" * 10)
        expect = "not a Parquet file"
    elif damage == "not json":
        (store / "procedures" / PARTS_LIST).write_text("{not json")
        expect = "not readable JSON"
    else:
        (store / "procedures" / PARTS_LIST).write_text('{"parts": 3}')
        expect = "no list of parts"
    _one_line_exit_2(["info", "--store", str(store)], expect=expect)


def test_image_ids_never_name_a_file_outside_images(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "store", create=True)
    (tmp_path / "x-evil.jpg").write_bytes(b"secret")
    assert not is_image_id("../../x-evil") and is_image_id("a" * 64)
    with pytest.raises(StoreDamaged):
        store.image_path("../../x-evil")
    assert store.image_file("../../x-evil") is None
    out = tmp_path / "deep" / "er" / "out"
    valid = "ab" * 32
    (tmp_path / "store" / "images" / "ab").mkdir(parents=True)
    (tmp_path / "store" / "images" / "ab" / f"{valid}.jpg").symlink_to(tmp_path / "x-evil.jpg")
    assert copy_images(store, {"../../x-evil", "../../../../x-evil", valid}, out) == 0
    assert not (tmp_path / "deep" / "x-evil.jpg").exists()
    assert sorted(p.name for p in tmp_path.rglob("*.jpg")) == sorted(["x-evil.jpg", f"{valid}.jpg"])


def test_an_embedding_name_from_current_json_stays_in_embeddings(tmp_path: Path) -> None:
    from procbench.embed.storage import embedding_path

    store = Store.open(tmp_path / "store", create=True)
    for name in ("../../outside", "/etc/passwd", ".hidden", ""):
        with pytest.raises(StoreDamaged):
            embedding_path(store, name)
    (tmp_path / "store" / "embeddings").mkdir()
    (tmp_path / "store" / "embeddings" / "step_text.hashed.arrow").symlink_to(tmp_path / "elsewhere.arrow")
    with pytest.raises(StoreDamaged, match="symbolic link"):
        embedding_path(store, "step_text.hashed")
    assert embedding_path(store, "step_text.hashed-2").name == "step_text.hashed-2.arrow"
