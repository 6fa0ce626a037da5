"""Throughput of `procbench extract` (sentences/s) on the shared real corpora, and what it extracts.

Run: .venv/bin/python benchmarks/extract.py [--corpus DIR ...] [--model PKG]

For each corpus (default: ../shared/data/wikihow-openpi and ../shared/data/recipeqa-recipes) the procedures
are ingested into a temporary store; the timed part is `extract_store` with an already loaded spaCy
pipeline (parsing, tuple rules, lexicon, the actions.parquet transaction). Reported: sentences/s of wall
time and of this process's CPU time (on a shared machine the CPU figure is the stable one), steps/s,
tuples, key sentences, the lexicon size (and whether WordNet filtered it) and example tuples.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from procbench.extract import extract_store
from procbench.extract.parser import load_pipeline, model_info
from procbench.ingest import ingest_file
from procbench.store import Store

ROOT = Path(__file__).resolve().parents[1]

# the project's shared folder sits beside the repository (or beside the folder of its worktrees)
SHARED = next((p / "shared" / "data" for p in ROOT.parents if (p / "shared" / "data").is_dir()), ROOT / "data")


def run(corpus: Path, nlp: object) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "store", create=True)
        ingest_file(store, corpus / "procedures.jsonl")
        start, cpu_start = time.perf_counter(), time.process_time()
        result = extract_store(store, nlp=nlp)  # type: ignore[arg-type]
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        rows = store.table("actions").to_pylist()
    in_lexicon = [r for r in rows if r["in_lexicon"]]
    examples = [
        {"sentence": r["sentence_text"], "tuple": [r["verb"], *r["arguments"]], "key": r["key"]}
        for r in random.Random(0).sample(in_lexicon, min(8, len(in_lexicon)))
    ]
    counts = result.counts
    return {
        "corpus": corpus.name,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "sentences_per_s": round(counts["sentences"] / seconds, 1),
        "sentences_per_cpu_s": round(counts["sentences"] / cpu, 1),
        "steps_per_s": round(counts["steps"] / seconds, 1),
        **counts,
        "lexicon": result.lexicon.summary(),
        "examples": examples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", type=Path, help="folder with procedures.jsonl (repeatable)")
    parser.add_argument("--model", default=None, help="spaCy pipeline package")
    args = parser.parse_args()
    start = time.perf_counter()
    nlp = load_pipeline(args.model)
    loaded = time.perf_counter() - start
    corpora = args.corpus or [SHARED / "wikihow-openpi", SHARED / "recipeqa-recipes"]
    report = {"model": model_info(nlp), "load_seconds": round(loaded, 2), "corpora": [run(c, nlp) for c in corpora]}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
