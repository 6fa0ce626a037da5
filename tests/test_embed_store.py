"""embed_store on a store with real images: files and their schema, memory-mapped reads, re-runs that embed
only what changed, resuming an interrupted run, clean's dropped procedures, determinism."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from procbench.embed import embed_store, embedding_name, field_table, list_embeddings, load_embeddings
from procbench.embed import pipeline as embed_pipeline
from procbench.embed.hashed import MODEL_PATH
from procbench.errors import BadInput
from procbench.store import Store

OFFLINE = {"text_encoder": "hashed", "image_encoder": "colour-layout"}


@pytest.fixture
def store(ingested_sample: Path, tmp_path: Path) -> Store:
    shutil.copytree(ingested_sample, tmp_path / "store")
    return Store.open(tmp_path / "store")


def _edit_steps(store: Store, key: str, *, text: str) -> None:
    procedure_id, index = key.rsplit("#", 1)
    steps = store.table("steps")
    hit = pc.and_(pc.equal(steps["procedure_id"], procedure_id), pc.equal(steps["index"], int(index)))
    texts = pc.if_else(hit, pa.scalar(text), steps["text"])
    with store.transaction("edit") as txn:
        txn.write_table("steps", steps.set_column(steps.schema.get_field_index("text"), "text", texts))


def test_embeds_every_field_into_memory_mapped_arrow_files(store: Store) -> None:
    report = embed_store(store, **OFFLINE)
    assert [f.field for f in report.fields] == ["step_title", "step_text", "procedure_title", "image"]
    steps = store.table("steps")
    n_steps, n_procs = steps.num_rows, store.table("procedures").num_rows
    expected = {
        "step_title": n_steps,
        "step_text": n_steps,
        "procedure_title": n_procs,
        "image": store.table("images").num_rows,
    }
    assert {f.field: f.rows for f in report.fields} == expected
    for field, rows in expected.items():
        name = embedding_name(store, field)
        path = store.root / "embeddings" / f"{name}.arrow"
        assert path.is_file() and (store.root / "indexes" / f"{name}.faiss").is_file()
        with pa.memory_map(str(path)) as source:
            reader = pa.ipc.open_file(source)
            schema = reader.schema
            assert reader.num_record_batches == 1
        assert schema.field("key").type == pa.string()
        assert schema.field("vector").type.value_type == pa.float32()
        meta = {k.decode(): v.decode() for k, v in schema.metadata.items()}
        assert meta["field"] == field and meta["encoder"] in ("hashed", "colour-layout")
        assert {"revision", "dim"} <= set(meta) and int(meta["dim"]) == schema.field("vector").type.list_size
        emb = load_embeddings(store, field)
        assert len(emb) == rows and emb.vectors.shape == (rows, int(meta["dim"]))
        assert emb.vectors.dtype == np.float32 and not emb.vectors.flags.owndata and not emb.vectors.flags.writeable
        assert np.allclose(np.linalg.norm(emb.vectors, axis=1), 1, atol=1e-5)
    titles = load_embeddings(store, "step_title")
    first = steps.sort_by([("procedure_id", "ascending"), ("index", "ascending")]).slice(0, 1).to_pylist()[0]
    assert titles.keys[0].as_py() == f"{first['procedure_id']}#{first['index']}"
    assert titles.procedure_ids[0].as_py() == first["procedure_id"]
    images = load_embeddings(store, "image")
    assert set(images.keys.to_pylist()) == set(store.table("images")["id"].to_pylist())
    assert (store.root / MODEL_PATH).is_file()
    assert json.loads((store.root / "embeddings" / "current.json").read_text()) == {
        "step_title": "step_title.hashed",
        "step_text": "step_text.hashed",
        "procedure_title": "procedure_title.hashed",
        "image": "image.colour-layout",
    }
    entry = store.provenance[-1]
    assert entry["command"] == "embed" and entry["counts"]["step_text"]["rows"] == n_steps
    assert "faiss-cpu" in entry["versions"] and "scikit-learn" in entry["versions"]
    assert store.summary()["stages"]["embeddings"]["step_title.hashed"]["encoder"] == "hashed"
    assert not (store.root / "cache" / "embed").exists()  # resume chunks are gone once committed


def test_rerun_embeds_nothing_and_changed_text_is_reembedded(store: Store) -> None:
    embed_store(store, **OFFLINE)
    before = {f: np.array(load_embeddings(store, f).vectors) for f in ("step_text", "step_title", "image")}
    again = embed_store(store, **OFFLINE)
    assert [f.embedded for f in again.fields] == [0, 0, 0, 0]
    assert all(f.unchanged and not f.index["rebuilt"] for f in again.fields)

    key = load_embeddings(store, "step_text").keys[5].as_py()
    _edit_steps(store, key, text="Stir the tomato soup with a wooden spoon and simmer it.")
    third = {f.field: f for f in embed_store(store, **OFFLINE).fields}
    assert third["step_text"].embedded == 1 and third["step_text"].reused == third["step_text"].rows - 1
    assert third["step_title"].embedded == 0 and third["step_title"].unchanged
    assert third["step_text"].index["rebuilt"] and not third["step_title"].index["rebuilt"]
    after = load_embeddings(store, "step_text")
    changed = after.rows([key])[0]
    assert not np.allclose(after.vectors[changed], before["step_text"][changed])
    others = np.arange(len(after)) != changed
    assert np.array_equal(after.vectors[others], before["step_text"][others])


def test_interrupted_run_resumes_from_its_chunks(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from procbench.embed.hashed import HashedTextEncoder

    monkeypatch.setattr(embed_pipeline, "chunk_rows", lambda modality, batch_size: 50)
    real_encode = HashedTextEncoder.encode
    calls = {"n": 0}

    def encode_then_die(self: HashedTextEncoder, inputs: list[str], *, batch_size: int) -> np.ndarray:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real_encode(self, inputs, batch_size=batch_size)

    monkeypatch.setattr(HashedTextEncoder, "encode", encode_then_die)
    with pytest.raises(KeyboardInterrupt):
        embed_store(store, fields="step_text", **OFFLINE)
    assert not (store.root / "embeddings").exists()  # nothing committed
    assert len(list((store.root / "cache" / "embed" / "step_text.hashed").glob("part-*.arrow"))) == 2

    monkeypatch.setattr(HashedTextEncoder, "encode", real_encode)
    resumed = embed_store(store, fields="step_text", **OFFLINE).fields[0]
    assert resumed.resumed == 100 and resumed.embedded == resumed.rows - 100
    assert not (store.root / "cache" / "embed" / "step_text.hashed").exists()
    fresh_root = store.root.parent / "fresh"
    shutil.copytree(store.root, fresh_root)
    shutil.rmtree(fresh_root / "embeddings")
    shutil.rmtree(fresh_root / "indexes")
    fresh = embed_store(fresh_root, fields="step_text", **OFFLINE).fields[0]
    assert fresh.embedded == fresh.rows
    assert np.array_equal(
        load_embeddings(store, "step_text").vectors, load_embeddings(fresh_root, "step_text").vectors
    )


def test_dropped_procedures_leave_the_embeddings(store: Store) -> None:
    embed_store(store, fields=["step_title", "image"], **OFFLINE)
    procedures = store.table("procedures")
    dropped = procedures["id"][0].as_py()
    keep = pc.not_equal(procedures["id"], dropped)
    with store.transaction("clean") as txn:
        txn.write_table(
            "procedures",
            procedures.append_column("keep", keep).append_column(
                "drop_reason", pc.if_else(keep, pa.scalar(None, pa.string()), pa.scalar("duplicate"))
            ),
        )
    report = {f.field: f for f in embed_store(store, fields=["step_title", "image"], **OFFLINE).fields}
    n_dropped = int(pc.sum(pc.equal(store.table("steps")["procedure_id"], dropped)).as_py())
    assert report["step_title"].removed == n_dropped and report["step_title"].embedded == 0
    assert report["image"].removed == n_dropped
    for field in ("step_title", "image"):
        assert dropped not in load_embeddings(store, field).procedure_ids.to_pylist()


def test_same_inputs_and_seed_give_identical_files(ingested_sample: Path, tmp_path: Path) -> None:
    digests = []
    for copy in ("a", "b"):
        shutil.copytree(ingested_sample, tmp_path / copy)
        embed_store(tmp_path / copy, seed=7, **OFFLINE)
        digests.append(
            {p.name: p.read_bytes() for p in sorted((tmp_path / copy / "embeddings").rglob("*.*"))}
            | {p.name: p.read_bytes() for p in sorted((tmp_path / copy / "indexes").glob("*"))}
        )
    assert digests[0] == digests[1]
    assert embed_store(tmp_path / "a", seed=7, refit=True, **OFFLINE).fields[0].embedded == 0  # same fit again
    assert embed_store(tmp_path / "a", seed=8, **OFFLINE).fields[0].embedded > 0  # another seed: another fit


def test_fields_and_errors(store: Store, tmp_path: Path) -> None:
    report = embed_store(store, text_encoder="hashed", image_encoder="no-such/clip", fields="procedure_title")
    assert [f.field for f in report.fields] == ["procedure_title"]  # the image encoder was never needed
    assert list(list_embeddings(store)) == ["procedure_title.hashed"]
    with pytest.raises(BadInput, match="unknown field"):
        embed_store(store, fields="steps", **OFFLINE)
    with pytest.raises(BadInput, match="no step_text embeddings"):
        embedding_name(store, "step_text")
    with pytest.raises(BadInput, match="no embedding"):
        load_embeddings(store, "step_text.hashed")
    empty = Store.open(tmp_path / "empty", create=True)
    with pytest.raises(BadInput, match="holds no procedures"):
        embed_store(empty, **OFFLINE)


def test_unreadable_image_is_reported_not_fatal(store: Store) -> None:
    image_id = store.table("images")["id"][0].as_py()
    store.image_path(image_id).write_bytes(b"not a jpeg")
    report = embed_store(store, fields="image", **OFFLINE).fields[0]
    assert [key for key, _ in report.failed] == [image_id]
    assert report.rows == store.table("images").num_rows - 1
    assert image_id not in load_embeddings(store, "image").keys.to_pylist()


def test_field_table_uses_clean_columns(store: Store) -> None:
    steps = store.table("steps")
    titles = pc.utf8_upper(pc.fill_null(steps["title"], ""))
    with store.transaction("clean") as txn:
        txn.write_table("steps", steps.append_column("title_clean", titles).append_column("text_clean", steps["text"]))
    payload = field_table(store, "step_title")["payload"].to_pylist()
    assert payload and all(p == p.upper() for p in payload)
