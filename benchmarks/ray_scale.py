"""Benchmark of `--engine ray` (issue 18). Run by hand: `python benchmarks/ray_scale.py [--texts N] [--queries Q]`.

(a) Ray's fixed start-up: `ray.init` of a local runtime (2 CPUs, no dashboard) and the first Ray Data actor
    pool that loads procbench and answers one row: what a run pays before any work.
(b) Embed throughput: `embed_store` of the step texts of the wikiHow (OpenPI) corpus with `minilm-offline`,
    locally and on Ray with 1 and 2 actors, each on a fresh copy of the store (nothing cached); the chunk is
    set to 256 texts so that the few thousand texts make enough chunks for two actors (at scale the chunk is
    4,096). Texts/s of the encode phase (actor start-up included) and of the whole run; the bytes of the
    three embedding files are compared.
(c) Search throughput: exact kNN (k=100) of Q queries in 50,000 x 384 normalised vectors,
    `stable_search` locally and `RaySearch` with 1 and 2 workers (the index in the object store; with one
    worker a search is one shard, which `RaySearch` runs in the driver rather than as a task).

The machine is shared: ratios are taken within one run; repeat to see the noise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from procbench.engine import Engine
from procbench.store import Store

DATA = Path("/work/shared/data/wikihow-openpi/procedures.jsonl")


def start_up(ray: Any) -> dict[str, float]:
    from procbench.engine.raycluster import init_kwargs

    started = time.perf_counter()
    ray.init(**init_kwargs(None, num_cpus=2))
    init = time.perf_counter() - started

    class Ping:
        def __init__(self) -> None:
            import procbench.embed.pipeline  # noqa: F401  (what an encode actor imports)

        def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            return batch

    first = time.perf_counter()
    ray.data.from_items([{"x": 1}]).map_batches(Ping, compute=ray.data.ActorPoolStrategy(size=1)).take_all()
    return {"ray_init_s": round(init, 2), "first_actor_s": round(time.perf_counter() - first, 2)}


def embed_runs(template: Path, texts: int) -> dict[str, Any]:
    import procbench.embed.pipeline as pipeline
    from procbench.embed import embed_store

    pipeline.chunk_rows = lambda modality, batch_size: 256  # type: ignore[assignment]
    out: dict[str, Any] = {}
    files = {}
    for name, engine in (
        ("local", Engine()),
        ("ray_1", Engine("ray", workers=1)),
        ("ray_2", Engine("ray", workers=2)),
    ):
        with tempfile.TemporaryDirectory() as tmp:
            store_dir = Path(tmp) / "store"
            shutil.copytree(template, store_dir)
            started = time.perf_counter()
            report = embed_store(
                Store.open(store_dir), text_encoder="minilm-offline", fields=["step_text"], engine=engine
            )
            total = time.perf_counter() - started
            rows = report.fields[0].embedded
            encode = report.fields[0].seconds["encode"]
            out[name] = {
                "texts": rows,
                "encode_s": encode,
                "encode_texts_per_s": round(rows / encode, 1),
                "total_s": round(total, 2),
            }
            files[name] = next((store_dir / "embeddings").glob("step_text.*.arrow")).read_bytes()
            print(name, out[name], flush=True)
    out["ray_2_over_ray_1"] = round(out["ray_2"]["encode_texts_per_s"] / out["ray_1"]["encode_texts_per_s"], 2)
    out["same_bytes"] = files["local"] == files["ray_1"] == files["ray_2"]
    return out


def search_runs(ray: Any, queries: int) -> dict[str, Any]:
    import faiss

    from procbench.embed.index import stable_search
    from procbench.engine.raysearch import RaySearch

    rng = np.random.default_rng(0)
    centres = rng.standard_normal((500, 384)).astype(np.float32)
    x = centres[rng.integers(0, 500, 50_000)] + 0.3 * rng.standard_normal((50_000, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[rng.integers(0, len(x), queries)]
    flat = faiss.IndexFlatL2(384)
    flat.add(x)

    class Index:  # what RaySearch reads of a NeighborIndex
        index = flat
        kind = "flat"
        info: dict[str, Any] = {}

    out: dict[str, Any] = {}
    started = time.perf_counter()
    local = stable_search(flat, q, 100)
    out["local"] = {"s": round(time.perf_counter() - started, 2)}
    for workers in (1, 2):
        search = RaySearch(ray, workers)
        raw = search.raw(Index())  # type: ignore[arg-type]
        raw(q[:256], 100)  # put the index in the object store and load it in the workers once
        started = time.perf_counter()
        found = raw(q, 100)
        out[f"ray_{workers}"] = {"s": round(time.perf_counter() - started, 2), "tasks": search.tasks}
        out[f"ray_{workers}"]["same_bytes"] = bool((found[0] == local[0]).all() and (found[1] == local[1]).all())
    for name in ("local", "ray_1", "ray_2"):
        out[name]["queries_per_s"] = round(queries / out[name]["s"], 1)
    out["ray_2_over_ray_1"] = round(out["ray_2"]["queries_per_s"] / out["ray_1"]["queries_per_s"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=3000, help="step texts to embed (the corpus's first N)")
    parser.add_argument("--queries", type=int, default=4000)
    args = parser.parse_args()

    import ray

    from procbench.ingest import ingest_file

    results: dict[str, Any] = {"load_average": os.getloadavg()[0], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        lines = DATA.read_text().splitlines()
        subset, steps = [], 0
        for line in lines:
            subset.append(line)
            steps += len(json.loads(line)["steps"])
            if steps >= args.texts:
                break
        (Path(tmp) / "corpus.jsonl").write_text("\n".join(subset) + "\n")
        template = Path(tmp) / "store"
        ingest_file(Store.open(template, create=True), Path(tmp) / "corpus.jsonl")
        results["start_up"] = start_up(ray)
        print("start-up", results["start_up"], flush=True)
        results["embed"] = embed_runs(template, args.texts)
        results["search"] = search_runs(ray, args.queries)
        print("search", results["search"], flush=True)
    ray.shutdown()
    results["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
