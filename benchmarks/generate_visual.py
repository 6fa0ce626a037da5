"""Benchmark of `procbench generate --task visual-cloze --sweep` (issue 6; `--task` for the other visual tasks).

Run by hand: `python benchmarks/generate_visual.py [--sizes 10000,100000] [--dim 512] [--keep DIR]`.

For each size a synthetic store is written (in a child process) by `procbench.corpus.synthetic`:
N procedures of 5-8 steps (about 6.5 N images), 512-d random but clustered vectors (N/50 topic centres,
a centre per procedure, an image per step), written directly as the image embedding and indexed by the
embed package's writer (`build_index_for`: exact up to 250,000 images, IVF above, nprobe tuned to
recall@100 >= 0.95). Another child then runs the full cloze sweep (8 settings) through `generate()`:

- search: wall time the generator's main thread spends inside `NeighborIndex.search` (FAISS; the answer
  kNN and the question-mean kNN for K3),
- build: the rest of the task's `build` (loading, plans, bands, selection, question tables). The build is
  a pipeline: a second thread draws a chunk's questions while the next chunk is searched, so part of the
  drawing overlaps the search (and slows it a little: both compete for the same cores),
- write: `write_question_sets` (parquet per split, recipeqa.json, card.md; files written in parallel),
- cpu_s: CPU seconds of all threads, to see the work behind the wall times,
- peak RSS of the generating process (VmHWM) and per phase (sampled every 50 ms).

Targets (issue 6): build + write <= 0.5 x search; the 100,000-procedure run <= 12 x the 10,000 one. It
also prints a distance probe on the test splits: how often the correct choice is the choice closest to
the question mean (paper 001 Fig. 2), per setting.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, PhasePeaks, peak_rss_mb, rss_mb


def _cpu_s() -> float:
    """CPU seconds of every thread of this process (FAISS's OpenMP threads and the generator's pipeline)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child_setup(path: str, n: int, dim: int) -> None:
    from procbench.corpus.synthetic import write_synthetic_store
    from procbench.store import Store

    started = time.perf_counter()
    write_synthetic_store(path, n_procedures=n, dim=dim, seed=0)
    sidecar = json.loads((Path(path) / "indexes" / "image.synthetic.json").read_text())
    print(
        json.dumps(
            {
                "setup_s": round(time.perf_counter() - started, 1),
                "images": sidecar["rows"],
                "index": {k: sidecar[k] for k in ("kind", "params", "recall")},
                "steps": Store.open(path).table("steps", ["index"]).num_rows,
            }
        )
    )


def child_run(path: str, task: str) -> None:
    import pyarrow.parquet as pq

    import procbench.generate as gen
    from procbench.embed.index import NeighborIndex
    from procbench.store import Store

    sampler = PhasePeaks("start")
    baseline = rss_mb()
    timers = {"search": 0.0, "write": 0.0, "search_calls": 0}
    search = NeighborIndex.search

    def timed_search(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return search(self, *args, **kwargs)
        finally:
            timers["search"] += time.perf_counter() - started
            timers["search_calls"] += 1

    write = gen.write_question_sets

    def timed_write(*args: Any, **kwargs: Any) -> Any:
        sampler.phase = "write"
        started = time.perf_counter()
        try:
            return write(*args, **kwargs)
        finally:
            timers["write"] += time.perf_counter() - started

    NeighborIndex.search = timed_search  # type: ignore[method-assign]
    gen.write_question_sets = timed_write  # type: ignore[assignment]
    sampler.phase = "build"
    store = Store.open(path)
    started, cpu_started = time.perf_counter(), _cpu_s()
    result = gen.generate(store, task, sweep=True, seed=0)
    total, cpu = time.perf_counter() - started, _cpu_s() - cpu_started
    sampler.stop()
    build = total - timers["write"] - timers["search"]
    probe = {}
    for name, folder in result.paths.items():
        rows = pq.read_table(folder / "test.parquet", columns=["meta"]).to_pylist()
        closest = [r["meta"]["d_answer_question"] < min(n["d_question"] for n in r["meta"]["negatives"]) for r in rows]
        probe[name] = round(sum(closest) / max(1, len(closest)), 3)
    print(
        json.dumps(
            {
                "total_s": round(total, 1),
                "cpu_s": round(cpu, 1),
                "search_s": round(timers["search"], 1),
                "build_s": round(build, 1),
                "write_s": round(timers["write"], 1),
                "rest_over_search": round((total - timers["search"]) / timers["search"], 3),
                "build_over_search": round(build / timers["search"], 3),
                "search_calls": timers["search_calls"],
                "queries": result.counts["queries"],
                "questions": sum(result.questions.values()),
                "per_setting": result.questions,
                "fallbacks": {
                    k: {f: c for f, c in v.items() if ":" in f} for k, v in result.counts["per_setting"].items()
                },
                "rss_baseline_mb": round(baseline),
                "peak_rss_by_phase_mb": {k: round(v) for k, v in sampler.peaks.items()},
                "peak_rss_mb": round(peak_rss_mb()),
                "probe_answer_closest_test_split": probe,
            }
        )
    )


def _child(*args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False, cwd=str(ROOT)
    )
    if proc.returncode:
        raise RuntimeError(f"child {args} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="procedure counts, comma-separated")
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--task", default="visual-cloze", choices=["visual-cloze", "visual-coherence"])
    parser.add_argument("--keep", type=Path, default=None, help="keep (and reuse) the stores under this folder")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.child[0] == "setup":
            child_setup(args.child[1], int(args.child[2]), int(args.child[3]))
        else:
            child_run(args.child[1], args.child[2])
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, Any] = {"dim": args.dim}
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for n in sizes:
            path = base / f"store-{n}"
            setup = {"reused": True}
            if not (path / "indexes" / "image.synthetic.json").is_file():
                setup = _child("--child", "setup", str(path), str(n), str(args.dim))
            else:  # a kept store: drop earlier question sets so every run writes the same
                import shutil

                shutil.rmtree(path / "questions", ignore_errors=True)
            run = _child("--child", "run", str(path), args.task)
            results[str(n)] = {"setup": setup, "run": run}
            print(json.dumps({n: results[str(n)]}, indent=1), flush=True)
    if len(sizes) >= 2:
        small, large = results[str(sizes[0])]["run"], results[str(sizes[-1])]["run"]
        results["scaling_total"] = round(large["total_s"] / small["total_s"], 2)
        results["scaling_search"] = round(large["search_s"] / small["search_s"], 2)
        results["scaling_rest"] = round(
            (large["total_s"] - large["search_s"]) / (small["total_s"] - small["search_s"]), 2
        )
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
