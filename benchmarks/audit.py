"""Benchmark of `procbench audit` (issue 8). Run by hand: `python benchmarks/audit.py [--questions N] [--cpus K]`.

Builds a store of 5,000 procedures x 8 steps whose step titles are distinct short texts from the bundled
sample corpus, embeds the titles with the model-free `hashed` encoder (256-d), and writes a textual-cloze
set of 20,000 questions (4 per procedure: 4 consecutive titles with one blanked, 3 titles of other
procedures as negatives, keys in `meta`, answer positions balanced) with two planted shortcuts: the
correct title is padded to be the longest in 30% of questions, and the answer sits at position 0 in 10%
more questions than the others. Setup is not timed.

Timed (best of `--rounds`): `run_audit` end to end (read parquet + store embeddings, every probe,
1,000 bootstrap replicates, write audit.json), then each phase on its own: loading, and each probe with
a warm cache. The process is pinned to `--cpus` cores (default 2) when the machine has more.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from procbench.corpus import load_sample
from procbench.store import PROCEDURES, STEPS, Store, conform

STEPS_PER_PROCEDURE = 8
QUESTIONS_PER_PROCEDURE = 4


def distinct_titles(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct title-like texts: 3-7 words from a sample-corpus sentence plus 1-3 from another."""
    words = sorted({w for r in load_sample() for s in r["steps"] for w in re.findall(r"[A-Za-z]+", s["text"])})
    rng = np.random.default_rng(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        text = " ".join(words[i] for i in rng.integers(0, len(words), int(rng.integers(3, 8)))).capitalize()
        if text not in seen:
            seen.add(text)
            out.append(text + ".")
    return out


def make_store(path: Path, n_procedures: int) -> Store:
    """A store with ``n_procedures`` procedures of 8 titled steps (no images), title embeddings included."""
    import pyarrow as pa

    from procbench.embed import embed_store

    store = Store.open(path, create=True)
    n_steps = n_procedures * STEPS_PER_PROCEDURE
    titles = distinct_titles(n_steps)
    ids = [f"bench:p{i:06d}" for i in range(n_procedures)]
    procedures = pa.table(
        {
            "id": ids,
            "source": ["bench"] * n_procedures,
            "title": [f"How to do task {i}" for i in range(n_procedures)],
            "n_steps": pa.array([STEPS_PER_PROCEDURE] * n_procedures, pa.int32()),
        }
    )
    steps = pa.table(
        {
            "procedure_id": pa.array(np.repeat(ids, STEPS_PER_PROCEDURE)),
            "index": pa.array(np.tile(np.arange(STEPS_PER_PROCEDURE), n_procedures).astype(np.int32)),
            "title": pa.array(titles),
            "text": pa.array([f"Step text: {t.lower()} and more words." for t in titles]),
            "image_ids": pa.array([[]] * n_steps, pa.list_(pa.string())),
        }
    )
    with store.transaction("bench-setup") as txn:
        txn.write_table("procedures", conform(procedures, PROCEDURES))
        txn.write_table("steps", conform(steps, STEPS))
    embed_store(store, text_encoder="hashed", fields="step_title")
    return store


def write_set(store: Store, n_questions: int, *, seed: int = 0) -> Path:
    """The 20,000-question textual-cloze set with the planted shortcuts described above."""
    from procbench.qsets import Question, write_question_sets
    from procbench.store.views import kept_steps

    rng = np.random.default_rng(seed)
    steps = kept_steps(store).select(["procedure_id", "index", "title"]).to_pylist()
    by_procedure: dict[str, list[dict[str, Any]]] = {}
    for row in steps:
        by_procedure.setdefault(row["procedure_id"], []).append(row)
    keys = [f"{r['procedure_id']}#{r['index']}" for r in steps]
    titles = [r["title"] for r in steps]
    questions = []
    for pid, rows in sorted(by_procedure.items()):
        for q in range(QUESTIONS_PER_PROCEDURE):
            if len(questions) == n_questions:
                break
            start = q * (STEPS_PER_PROCEDURE - 4) // max(1, QUESTIONS_PER_PROCEDURE - 1)
            window = rows[start : start + 4]
            blank = int(rng.integers(4))
            wkeys = [f"{pid}#{r['index']}" for r in window]
            negatives = []
            while len(negatives) < 3:
                i = int(rng.integers(len(keys)))
                if not keys[i].startswith(pid + "#") and keys[i] not in {k for k, _ in negatives}:
                    negatives.append((keys[i], titles[i]))
            answer_title = window[blank]["title"]
            if rng.random() < 0.3:
                answer_title += " now" * (2 + max(len(t) for _, t in negatives) // 4)
            choices = [(wkeys[blank], answer_title), *negatives]
            position = 0 if rng.random() < 0.1 else int(rng.integers(4))
            choices.insert(position, choices.pop(0))
            question = [r["title"] for r in window]
            question[blank] = "@placeholder"
            questions.append(
                Question(
                    pid,
                    list(range(len(rows))),
                    question,
                    [t for _, t in choices],
                    position,
                    {
                        "setting": "bench",
                        "question_keys": [None if i == blank else k for i, k in enumerate(wkeys)],
                        "choice_keys": [k for k, _ in choices],
                    },
                )
            )
    splits = {pid: "train" for pid in by_procedure}
    paths = write_question_sets(store, "textual-cloze", {"bench": questions}, splits=splits, seed=seed, args={})
    return paths["bench"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    available = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if available and len(available) > args.cpus:
        os.sched_setaffinity(0, set(available[: args.cpus]))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()

    from procbench.audit import PROBES, load_question_set, run_audit
    from procbench.audit.context import ProbeContext

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        n_procedures = (args.questions + QUESTIONS_PER_PROCEDURE - 1) // QUESTIONS_PER_PROCEDURE
        store = make_store(Path(tmp) / "store", n_procedures)
        folder = write_set(store, args.questions)
        setup = time.perf_counter() - started

        totals = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            run = run_audit([folder], seed=0)
            totals.append(time.perf_counter() - t0)

        from threadpoolctl import threadpool_limits

        t0 = time.perf_counter()
        aset = load_question_set(folder)
        aset.index()
        aset.item_vectors()
        phases: dict[str, float] = {"load (parquet, keys, embeddings)": time.perf_counter() - t0}
        with threadpool_limits(limits=1):
            ctx = ProbeContext.for_set(aset, seed=0, n_boot=1000, n_folds=5)
            ctx.reduced_items(aset, 64)
            _ = ctx.bootstrap.weights
            for name, spec in PROBES.items():
                t0 = time.perf_counter()
                spec.fn(aset, ctx)
                phases[name] = time.perf_counter() - t0

        report = run.report.to_dict()["sets"]["textual-cloze/bench"]
        summary = {
            "questions": report["n_questions"],
            "cpus": cpus,
            "setup_seconds": round(setup, 1),
            "audit_seconds_best": round(min(totals), 2),
            "audit_seconds_rounds": [round(t, 2) for t in totals],
            "phase_seconds": {k: round(v, 2) for k, v in phases.items()},
            "results": {
                name: {k: probe[k] for k in ("value", "chance", "ci")} for name, probe in report["probes"].items()
            },
            "n_boot": report["probes"]["choice_only"]["details"]["n_boot"],
        }
        print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
