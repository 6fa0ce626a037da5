"""FAISS indexes: exact vs approximate (recall measured and recorded), persisted and reloaded without
rebuilding, and the neighbours API with same-procedure exclusion, checked against NumPy brute force."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from procbench.embed import (
    IndexConfig,
    build_faiss_index,
    embed_store,
    exact_knn,
    load_embeddings,
    load_index,
    neighbors,
    neighbors_of,
)
from procbench.embed import index as embed_index
from procbench.errors import BadInput, StoreError
from procbench.store import Store

OFFLINE = {"text_encoder": "hashed", "image_encoder": "colour-layout"}


def clustered(n: int, dim: int, clusters: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    points = centres[rng.integers(0, clusters, n)] + 0.35 * rng.normal(size=(n, dim))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def brute_force(
    queries: np.ndarray, vectors: np.ndarray, k: int, banned: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    distances = np.sqrt(np.maximum(((queries[:, None, :] - vectors[None, :, :]) ** 2).sum(-1), 0))
    if banned is not None:
        distances = np.where(banned, np.inf, distances)
    order = np.argsort(distances, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(distances, order, axis=1), order


@pytest.fixture(scope="module")
def embedded_template(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("indexed")
    shutil.copytree(ingested_sample, root / "store")
    store = Store.open(root / "store")
    embed_store(store, index_config=IndexConfig(exact_max_rows=100, recall_k=20), **OFFLINE)
    return root / "store"


@pytest.fixture
def store(embedded_template: Path, tmp_path: Path) -> Store:
    shutil.copytree(embedded_template, tmp_path / "store")
    return Store.open(tmp_path / "store")


def test_exact_index_equals_brute_force() -> None:
    vectors = clustered(600, 16, 12)
    index, info = build_faiss_index(vectors, config=IndexConfig())
    assert info["kind"] == "flat" and info["recall"]["value"] == 1.0
    squared, rows = index.search(vectors[:20], 10)
    expected_d, _ = brute_force(vectors[:20], vectors, 10)
    assert np.allclose(np.sqrt(np.maximum(squared, 0)), expected_d, atol=1e-3)
    d2, i2 = exact_knn(vectors[:20], vectors, 10, chunk=97)  # chunked scan gives the same answer
    assert np.array_equal(i2, rows) and np.allclose(d2, squared, atol=1e-5)


def test_approximate_index_records_a_recall_that_holds() -> None:
    vectors = clustered(6000, 24, 40)
    config = IndexConfig(exact_max_rows=1000, recall_k=20, recall_target=0.9, recall_sample=300, seed=1)
    index, info = build_faiss_index(vectors, config=config)
    assert info["kind"] == "ivf" and info["params"]["nlist"] == min(int(2 * np.sqrt(6000)), 6000 // 39)
    recall = info["recall"]
    assert recall["k"] == 20 and recall["queries"] == 300 and not recall["exact"]
    assert recall["value"] >= 0.9 or info["params"]["nprobe"] == info["params"]["nlist"]
    assert str(info["params"]["nprobe"]) in recall["by_nprobe"]
    # recall on other queries, measured independently, is close to the recorded one
    queries = vectors[np.random.default_rng(5).choice(len(vectors), 200, replace=False)]
    _, truth = brute_force(queries, vectors, 20)
    _, found = index.search(queries, 20)
    measured = np.mean([len(set(f) & set(t)) / 20 for f, t in zip(found, truth, strict=True)])
    assert abs(measured - recall["value"]) < 0.08
    again, info_again = build_faiss_index(vectors, config=config)
    assert info_again == info  # deterministic under the seed


def test_large_embedding_gets_a_persisted_ivf_index_with_recall(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    sidecar = json.loads((store.root / "indexes" / "step_text.hashed.json").read_text())
    assert sidecar["kind"] == "ivf" and sidecar["rows"] > 100 and 0 < sidecar["recall"]["value"] <= 1
    assert sidecar["embedding_id"] == load_embeddings(store, "step_text").metadata["embedding_id"]
    procedure_titles = json.loads((store.root / "indexes" / "procedure_title.hashed.json").read_text())
    assert procedure_titles["kind"] == "flat"  # 45 rows: exact
    logged = store.provenance[-1]["counts"]["step_text"]
    assert logged["index"] == "ivf" and logged["recall"] == sidecar["recall"]["value"]

    def no_building(*args: object, **kwargs: object) -> None:
        raise AssertionError("index rebuilt")

    monkeypatch.setattr(embed_index, "build_faiss_index", no_building)
    loaded = load_index(store, "step_text")
    assert (
        loaded.kind == "ivf" and loaded.index.nprobe == sidecar["params"]["nprobe"] and len(loaded) == sidecar["rows"]
    )
    report = embed_store(store, index_config=IndexConfig(exact_max_rows=100, recall_k=20), **OFFLINE)
    assert not any(f.index["rebuilt"] for f in report.fields)


def test_stale_or_missing_index_is_an_error(store: Store) -> None:
    path = store.root / "indexes" / "step_title.hashed.json"
    data = json.loads(path.read_text())
    data["embedding_id"] = "something else"
    path.write_text(json.dumps(data))
    with pytest.raises(StoreError, match="run `procbench embed`"):
        load_index(store, "step_title")
    (store.root / "indexes" / "image.colour-layout.faiss").unlink()
    with pytest.raises(BadInput, match="no index"):
        load_index(store, "image")


@pytest.mark.parametrize("field", ["step_title", "image", "procedure_title"])
def test_neighbors_exclude_the_same_procedure_exactly(store: Store, field: str) -> None:
    rebuilt = {f.field: f.index["rebuilt"] for f in embed_store(store, **OFFLINE).fields}  # default: all exact
    assert rebuilt == {"step_title": True, "step_text": True, "procedure_title": False, "image": True}
    index = load_index(store, field)
    assert index.kind == "flat"
    emb = index.embeddings
    keys = emb.keys.to_pylist()[:40:3]
    result = neighbors_of(index, keys, 8)
    assert result.distances.shape == result.indices.shape == result.keys.shape == (len(keys), 8)
    procs = np.array(emb.procedure_ids.to_pylist())
    rows = emb.rows(keys)
    banned = procs[None, :] == procs[rows][:, None]
    banned[np.arange(len(rows)), rows] = True
    expected_d, expected_i = brute_force(np.asarray(emb.vectors[rows]), np.asarray(emb.vectors), 8, banned)
    assert np.allclose(result.distances, expected_d, atol=1e-3)
    for r, row in enumerate(rows):
        found = result.indices[r]
        assert (found >= 0).all() and not (procs[found] == procs[row]).any() and row not in found
        assert np.all(np.diff(result.distances[r]) >= -1e-6)
        exact_ties = np.isclose(expected_d[r], expected_d[r][-1], atol=1e-5)  # the last place may be a tie
        assert set(expected_i[r][~exact_ties]) <= set(found)
    assert result.keys[0][0] == emb.keys[int(result.indices[0][0])].as_py()


def test_neighbors_api_forms(store: Store) -> None:
    emb = load_embeddings(store, "step_title")
    queries = np.asarray(emb.vectors[:3])
    plain = neighbors(store, queries, 5, field="step_title")
    assert np.allclose(plain.distances[:, 0], 0, atol=1e-3)  # each query is itself the nearest row
    skip_self = neighbors(
        store, queries, 5, field="step_title.hashed", exclude_keys=[[k] for k in emb.keys[:3].to_pylist()]
    )
    assert all(r not in skip_self.indices[r] for r in range(3))
    index = load_index(store, "procedure_title")
    everything = neighbors(index, np.asarray(index.embeddings.vectors[:1]), 100, exclude=[None])
    n = len(index)
    assert (everything.indices[0, :n] >= 0).all() and (everything.indices[0, n:] == -1).all()
    assert np.isinf(everything.distances[0, n:]).all() and everything.keys[0, -1] is None
    with pytest.raises(BadInput, match="queries must be"):
        neighbors(index, np.zeros((2, 3), np.float32), 5)
    with pytest.raises(BadInput, match="needs field"):
        neighbors(store, queries, 5)


def test_a_damaged_faiss_file_is_one_line_bad_input(store: Store) -> None:
    """A truncated file, random bytes, or another index's file in its place: CorruptIndex (exit 2), no crash."""
    from procbench.errors import CorruptIndex

    path = store.root / "indexes" / "image.colour-layout.faiss"
    good = path.read_bytes()
    other = (store.root / "indexes" / "step_title.hashed.faiss").read_bytes()
    for damaged, message in (
        (good[: len(good) // 2], "is damaged"),
        (b"\x00not faiss at all" * 64, "is damaged"),
        (other, "vectors of"),
    ):
        path.write_bytes(damaged)
        with pytest.raises(CorruptIndex, match=message) as caught:
            load_index(store, "image")
        assert caught.value.exit_code == 2 and "procbench embed" in str(caught.value)
    path.write_bytes(good)
    assert len(load_index(store, "image")) > 0


def test_a_subset_index_searches_only_its_rows_exactly(store: Store) -> None:
    """``NeighborIndex.subset(rows)``: an exact index of some rows (one split's items); its neighbours are the
    whole index's nearest among those rows (same distances), as positions in ``rows``, procedures excluded."""
    embed_store(store, **OFFLINE)
    index = load_index(store, "step_title")
    emb = index.embeddings
    rows = np.arange(0, len(emb), 3)
    part = index.subset(rows)
    assert len(part) == len(rows) and part.kind == "flat"
    assert part.embeddings.keys.to_pylist() == [emb.keys[int(r)].as_py() for r in rows]
    queries = np.asarray(emb.vectors[:12])
    procs = emb.procedure_ids.to_pylist()
    found = part.search(queries, 5, exclude=procs[:12])
    banned = np.ones((12, len(emb)), dtype=bool)
    banned[:, rows] = False
    banned |= np.array(procs)[None, :] == np.array(procs[:12])[:, None]
    expected_d, _ = brute_force(queries, np.asarray(emb.vectors), 5, banned)
    assert np.allclose(found.distances, expected_d, atol=1e-3)
    hit = found.indices[found.indices >= 0]
    assert hit.max() < len(rows)
    assert all(procs[int(rows[i])] != procs[q] for q, line in enumerate(found.indices) for i in line if i >= 0)
