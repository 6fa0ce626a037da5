"""Benchmark of `--engine ray` (issue 18). Run by hand: `python benchmarks/ray_scale.py [--texts N] [--queries Q]`.

(a) Ray's fixed start-up: `ray.init` of a local runtime (2 CPUs, no dashboard), then the first chunk of one
    text through a real encode actor (a Ray Data actor pool of one `EncodeActor`: a worker process, procbench,
    the `minilm-offline` encoder unpickled; for this plain mean-pooling model that is the transformers-only
    `MeanPooledTextEncoder`, which imports torch and transformers but not sentence-transformers): what a run
    pays before any throughput. Its parts: `ray.init`, from the dataset's start to the actor ready (spawn,
    worker start, encoder unpickled; the actor's clock) and the chunk itself. `--start-up-pairs N` also times
    it N times in fresh processes, alternating the actor's encoder between sentence-transformers (the path
    before `MeanPooledTextEncoder`) and the transformers-only one, each with the load average at its start.
(b) Embed throughput: `embed_store` of the step texts of the wikiHow (OpenPI) corpus with `minilm-offline`,
    locally and on Ray with 1 and 2 actors, each on a fresh copy of the store (nothing cached); the chunk is
    set to 256 texts so that the few thousand texts make enough chunks for two actors (at scale the chunk is
    4,096). For Ray, `encode_texts_per_s` is the whole encode phase (actor start-up included) and
    `steady_texts_per_s` the rate once an actor is ready: texts / (last chunk done - first actor ready), the
    actors' own clocks (a timing subclass of `EncodeActor`). The 2-over-1 ratio is given for both; the bytes of
    the three embedding files are compared.
(b0) The machine's ceiling for (b): the same chunks encoded by 1 and by 2 plain processes (one torch thread
    each, no Ray), steady state: what two of this machine's cores give at best.
(c) Search throughput: exact kNN (k=100) of Q queries in 50,000 x 384 normalised vectors,
    `stable_search` locally and `RaySearch` with 1 and 2 workers (the index in the object store; with one
    worker a search is one shard, which `RaySearch` runs in the driver rather than as a task).

The machine is shared: ratios are taken within one run; repeat to see the noise.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from procbench.embed.distributed import EncodeActor
from procbench.engine import Engine
from procbench.store import Store

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikihow-openpi" / "procedures.jsonl"
CHUNK = 256


class TimedEncodeActor(EncodeActor):
    """`EncodeActor` that appends its ready time and each call's end (wall clock) to ``LOG``'s file.

    Defined in the benchmark script, so Ray ships it by value and the actors run this subclass.
    """

    LOG = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._write("ready")

    def __call__(self, batch: Any) -> dict[str, np.ndarray]:
        out = super().__call__(batch)
        self._write(f"done {len(out['chunk'])}")
        return out

    def _write(self, what: str) -> None:
        with open(self.LOG, "a") as fh:
            fh.write(f"{os.getpid()} {time.time():.4f} {what}\n")


def actor_times(log: Path) -> dict[str, float]:
    """From a `TimedEncodeActor` log: first actor ready, last chunk done (epoch seconds), texts encoded."""
    ready, done, texts = [], [], 0
    for line in log.read_text().splitlines():
        _, at, what, *rest = line.split()
        (ready if what == "ready" else done).append(float(at))
        texts += int(rest[0]) if rest else 0
    return {"first_ready": min(ready), "last_done": max(done), "texts": texts}


def start_up(ray: Any, template: Path, *, actor_encoder: str = "default") -> dict[str, Any]:
    """(a) in this process; ``actor_encoder="sentence-transformers"`` ships the sentence-transformers encoder
    itself to the actor (the path before `MeanPooledTextEncoder`)."""
    import procbench.embed.distributed as distributed
    from procbench.embed import load_encoder
    from procbench.embed.distributed import encode_on_ray
    from procbench.embed.sbert import SentenceTransformerTextEncoder
    from procbench.engine.raycluster import init_kwargs

    load = os.getloadavg()[0]
    started = time.perf_counter()
    ray.init(**init_kwargs(None, num_cpus=2))
    init = time.perf_counter() - started

    store = Store.open(template)
    encoder = load_encoder("minilm-offline", "text")
    if actor_encoder == "sentence-transformers":
        SentenceTransformerTextEncoder.for_workers = lambda self: self  # type: ignore[method-assign]
    payload = store.table("steps").column("text")
    actor_class = distributed.EncodeActor
    distributed.EncodeActor = TimedEncodeActor  # type: ignore[misc]
    with tempfile.TemporaryDirectory() as tmp:
        TimedEncodeActor.LOG = str(Path(tmp) / "actors.log")
        first = time.perf_counter()
        since = time.time()
        for _ in encode_on_ray(
            store, encoder, payload, [np.array([0])], batch_size=32, engine=Engine("ray", workers=1)
        ):
            pass
        actor = time.perf_counter() - first
        ready = actor_times(Path(TimedEncodeActor.LOG))["first_ready"] - since
    distributed.EncodeActor = actor_class  # type: ignore[misc]
    return {
        "load_average": round(load, 2),
        "actor_encoder": type(encoder.for_workers()).__name__,
        "ray_init_s": round(init, 2),
        "to_actor_ready_s": round(ready, 2),
        "first_chunk_s": round(actor, 2),
        "total_s": round(init + actor, 2),
    }


def start_up_pairs(template: Path, pairs: int) -> dict[str, Any]:
    """(a) ``pairs`` times per actor encoder, each in a fresh process, the two alternating."""
    runs: dict[str, list[dict[str, Any]]] = {"sentence-transformers": [], "default": []}
    for _ in range(pairs):
        for which, found in runs.items():
            done = subprocess.run(
                [sys.executable, __file__, "--start-up-in", str(template), "--actor-encoder", which],
                capture_output=True,
                text=True,
                check=True,
            )
            found.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print("start-up", which, found[-1], flush=True)
    out: dict[str, Any] = {}
    for which, found in runs.items():
        out[which] = {
            key: float(np.median([run[key] for run in found]))
            for key in ("ray_init_s", "to_actor_ready_s", "first_chunk_s", "total_s")
        }
        out[which]["runs"] = found
    return out


def embed_runs(template: Path, texts: int) -> dict[str, Any]:
    import procbench.embed.distributed as distributed
    import procbench.embed.pipeline as pipeline
    from procbench.embed import embed_store

    pipeline.chunk_rows = lambda modality, batch_size: CHUNK  # type: ignore[assignment]
    distributed.EncodeActor = TimedEncodeActor  # type: ignore[misc]
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
            TimedEncodeActor.LOG = str(Path(tmp) / "actors.log")
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
            if engine.is_ray:
                times = actor_times(Path(TimedEncodeActor.LOG))
                steady = times["last_done"] - times["first_ready"]
                out[name]["steady_s"] = round(steady, 2)
                out[name]["steady_texts_per_s"] = round(times["texts"] / steady, 1)
            files[name] = next((store_dir / "embeddings").glob("step_text.*.arrow")).read_bytes()
            print(name, out[name], flush=True)
    for rate in ("encode_texts_per_s", "steady_texts_per_s"):
        out[f"ray_2_over_ray_1_{rate}"] = round(out["ray_2"][rate] / out["ray_1"][rate], 2)
    out["same_bytes"] = files["local"] == files["ray_1"] == files["ray_2"]
    return out


def _plain_worker(chunks: list[list[str]], results: Any) -> None:
    import torch

    from procbench.embed import load_encoder

    torch.set_num_threads(1)
    encoder = load_encoder("minilm-offline", "text")
    started = time.time()
    for chunk in chunks:
        encoder.encode(chunk, batch_size=32)
    results.put((started, time.time(), sum(len(c) for c in chunks)))


def plain_ceiling(template: Path) -> dict[str, Any]:
    """(b0): the same chunks through 1 and 2 plain processes, one torch thread each; steady-state texts/s."""
    texts = Store.open(template).table("steps").column("text").to_pylist()
    texts.sort(key=len, reverse=True)  # as embed_store orders them (longest first)
    chunks = [texts[i : i + CHUNK] for i in range(0, len(texts), CHUNK)]
    context = multiprocessing.get_context("spawn")
    out: dict[str, Any] = {}
    for workers in (1, 2):
        results = context.Queue()
        procs = [context.Process(target=_plain_worker, args=(chunks[i::workers], results)) for i in range(workers)]
        for proc in procs:
            proc.start()
        runs = [results.get() for _ in procs]
        for proc in procs:
            proc.join()
        span = max(r[1] for r in runs) - min(r[0] for r in runs)
        out[f"processes_{workers}"] = {"texts_per_s": round(sum(r[2] for r in runs) / span, 1)}
    out["2_over_1"] = round(out["processes_2"]["texts_per_s"] / out["processes_1"]["texts_per_s"], 2)
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
    parser.add_argument("--start-up-pairs", type=int, default=0, help="(a) again, N times per actor encoder")
    parser.add_argument("--start-up-only", action="store_true", help="only (a)")
    parser.add_argument("--start-up-in", type=Path, help=argparse.SUPPRESS)  # one run of (a) on this store
    parser.add_argument("--actor-encoder", default="default", help=argparse.SUPPRESS)
    args = parser.parse_args()

    import ray

    if args.start_up_in:
        print(json.dumps(start_up(ray, args.start_up_in, actor_encoder=args.actor_encoder)))
        ray.shutdown()
        return

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
        if args.start_up_pairs:  # before this process starts its runtime: one Ray runtime at a time
            results["start_up_pairs"] = start_up_pairs(template, args.start_up_pairs)
        results["start_up"] = start_up(ray, template)
        print("start-up", results["start_up"], flush=True)
        if args.start_up_only:
            ray.shutdown()
            print(json.dumps(results, indent=2))
            return
        results["embed"] = embed_runs(template, args.texts)
        results["plain_ceiling"] = plain_ceiling(template)
        print("plain ceiling", results["plain_ceiling"], flush=True)
        results["search"] = search_runs(ray, args.queries)
        print("search", results["search"], flush=True)
    ray.shutdown()
    results["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
