"""Benchmark of `procbench train` (issue 9). Run by hand: `python benchmarks/train.py [--quick] [--out FILE]`.

Seconds per epoch for each model on generated 20,000-question sets. A store of 20,000 procedures x 8 steps
(titles and texts recombined from the bundled sample corpus's sentences, all distinct; no images) is
embedded with the model-free `hashed` text encoder (256-d) and the real generators write three sets:
textual-cloze (default sampler: one question per procedure, 4 question titles, 4 choices, a context of 8
step texts), sequencing (one 5-step question per procedure) and pair-order (one pair per procedure).
Each model trains for `--epochs` epochs at its default size (hidden 256; htrn 4 layers / 8 heads, as
paper 001; order-pointer 2 layers; batch 32) and the logged epoch times (train pass + scoring the 2,000
validation questions) are reported, with the references' fit-and-score time. Sequencing and pair-order read
text features (the store has no images); visual tasks cost the same apart from the input projection.

torch runs on `--threads` threads (default 1: the machine has 2 cores shared with other work, and one thread
avoids OpenMP oversubscription for these small models).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from procbench.corpus import load_sample
from procbench.store import PROCEDURES, STEPS, Store, conform

MC_MODELS = ["hasty-choice-only", "hasty", "impatient-reader", "bidaf", "htrn"]


def _pools() -> tuple[list[str], list[str]]:
    titles, sentences = set(), set()
    for record in load_sample():
        for step in record["steps"]:
            titles.add(step["title"].strip())
            for sentence in re.split(r"(?<=[.!?])\s+", step["text"]):
                if len(sentence.split()) >= 3:
                    sentences.add(sentence.strip())
    return sorted(titles), sorted(sentences)


def make_store(path: Path, procedures: int, *, steps: int = 8, seed: int = 0) -> Store:
    """``procedures`` x ``steps`` distinct titles and texts, written in one store transaction (no images)."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    titles, sentences = _pools()
    n = procedures * steps
    ids = [f"bench:p{i:06d}" for i in range(procedures)]
    step_titles = [f"{titles[int(rng.integers(len(titles)))].rstrip('.')} ({i % 997})." for i in range(n)]
    step_texts = [
        " ".join(sentences[int(j)] for j in rng.integers(0, len(sentences), 3)) + f" Part {i}." for i in range(n)
    ]
    store = Store.open(path, create=True)
    procs = pa.table(
        {
            "id": ids,
            "source": ["bench"] * procedures,
            "title": [f"How to do project {i}" for i in range(procedures)],
            "n_steps": pa.array([steps] * procedures, pa.int32()),
        }
    )
    table = pa.table(
        {
            "procedure_id": pa.array(ids).take(pa.array(np.repeat(np.arange(procedures), steps))),
            "index": pa.array(np.tile(np.arange(steps), procedures).astype(np.int32)),
            "title": pa.array(step_titles),
            "text": pa.array(step_texts),
            "image_ids": pa.array([[]] * n, pa.list_(pa.string())),
        }
    )
    with store.transaction("bench-setup") as txn:
        txn.write_table("procedures", conform(procs, PROCEDURES))
        txn.write_table("steps", conform(table, STEPS))
    return store


def build_sets(root: Path, procedures: int) -> tuple[Store, dict[str, float]]:
    from procbench.embed import embed_store
    from procbench.generate import generate

    timings: dict[str, float] = {}
    started = time.perf_counter()
    store = make_store(root / "store", procedures)
    timings["store"] = time.perf_counter() - started
    started = time.perf_counter()
    embed_store(store, text_encoder="hashed", fields=["step_title", "step_text", "procedure_title"])
    timings["embed"] = time.perf_counter() - started
    for task, options in (("textual-cloze", {}), ("sequencing", {}), ("pair-order", {"pairs_per_procedure": 1})):
        started = time.perf_counter()
        generate(store, task, **options)
        timings[f"generate {task}"] = time.perf_counter() - started
    return store, timings


def bench_models(store: Store, *, epochs: int, threads: int, models: list[str]) -> list[dict[str, Any]]:
    from procbench.models import TrainConfig, evaluate, train

    plan = [(m, "textual-cloze/default") for m in MC_MODELS]
    plan += [("pair-order", "pair-order/default"), ("pairwise-sort", "sequencing/default")]
    plan += [("order-pointer", "sequencing/default")]
    plan = [(m, q) for m, q in plan if not models or m in models]
    rows = []
    with tempfile.TemporaryDirectory() as runs:
        for model, name in plan:
            qset = store.root / "questions" / name
            config = TrainConfig(model=model, features="text", epochs=epochs, patience=epochs)
            started = time.perf_counter()
            result = train(qset, config, Path(runs) / model, threads=threads)
            total = time.perf_counter() - started
            epoch_seconds = [e["seconds"] for e in result.history]
            rows.append(
                {
                    "model": model,
                    "qset": name,
                    "train_questions": int(result.metrics["train"]["n"]),
                    "parameters": result.parameters,
                    "seconds_per_epoch": round(float(np.mean(epoch_seconds)), 1),
                    "epochs": len(epoch_seconds),
                    "total_seconds": round(total, 1),
                    "val_score": round(result.best_score, 4),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
        for reference in ("chance", "distance-svm"):
            if models and reference not in models:
                continue
            started = time.perf_counter()
            report = evaluate(
                qsets=[store.root / "questions" / "textual-cloze/default"], models=[reference], bootstrap=0
            )
            rows.append(
                {
                    "model": reference,
                    "qset": "textual-cloze/default",
                    "fit_and_score_seconds": round(time.perf_counter() - started, 1),
                    "test_accuracy": round(report.results[0].value, 4),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2,000 procedures, to check that the script runs")
    parser.add_argument("--procedures", type=int, default=20_000, help="procedures = questions per set")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", default="", help="comma-separated subset (default: all)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here too")
    args = parser.parse_args()
    procedures = 2_000 if args.quick else args.procedures
    with tempfile.TemporaryDirectory() as tmp:
        store, timings = build_sets(Path(tmp), procedures)
        print(json.dumps({"setup_seconds": {k: round(v, 1) for k, v in timings.items()}}), flush=True)
        rows = bench_models(
            store, epochs=args.epochs, threads=args.threads, models=[m for m in args.models.split(",") if m]
        )
    result = {"procedures": procedures, "threads": args.threads, "setup_seconds": timings, "models": rows}
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"\n{'model':18s} {'set':24s} {'params':>9s} {'s/epoch':>8s}")
    for row in rows:
        seconds = row.get("seconds_per_epoch", row.get("fit_and_score_seconds"))
        print(f"{row['model']:18s} {row['qset']:24s} {row.get('parameters', 0):9,d} {seconds:8.1f}")


if __name__ == "__main__":
    main()
