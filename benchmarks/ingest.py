"""Ingest throughput: a generated JSONL of 100,000 procedures into an empty store.

Target (issue 2): >= 10,000 procedures/s and < 2 GB peak RSS on a 2-core machine.
Run: .venv/bin/python benchmarks/ingest.py [--procedures N]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from procbench.ingest import ingest_file

from _common import peak_rss_mb

WORDS = [
    "cut",
    "sand",
    "glue",
    "drill",
    "measure",
    "mark",
    "clamp",
    "paint",
    "stain",
    "oven",
    "bake",
    "whisk",
    "fold",
    "stir",
    "chop",
    "slice",
    "hang",
    "wrap",
    "board",
    "plank",
    "dowel",
    "screw",
    "flour",
    "sugar",
    "butter",
    "ribbon",
    "wreath",
    "garland",
    "frame",
    "shelf",
    "edge",
    "corner",
]


def generate(path: Path, n: int, seed: int = 0) -> None:
    """Write ``n`` procedures with 5-12 steps of 20-60 words and one image URL per step."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            steps = [
                {
                    "title": " ".join(rng.choices(WORDS, k=5)).capitalize() + ".",
                    "text": " ".join(rng.choices(WORDS, k=rng.randint(20, 60))) + ".",
                    "images": [f"https://example.org/img/{i}/{j}.jpg"],
                }
                for j in range(rng.randint(5, 12))
            ]
            record = {
                "source": "bench",
                "id": f"P-{i}",
                "title": f"How to do thing {i}",
                "category": ["Hobbies and Crafts", rng.choice(["Woodworking", "Decor", "Cooking"])],
                "url": f"https://example.org/P-{i}",
                "license": "CC0-1.0",
                "steps": steps,
            }
            fh.write(json.dumps(record) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--procedures", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "bench.jsonl"
        generate(source, args.procedures)
        size_mb = source.stat().st_size / 1e6
        rss_before = peak_rss_mb()
        start = time.perf_counter()
        report = ingest_file(Path(tmp) / "store", source)
        seconds = time.perf_counter() - start
        again = time.perf_counter()
        second = ingest_file(Path(tmp) / "store", source)
        seconds_again = time.perf_counter() - again
    peak = peak_rss_mb()
    print(f"input: {args.procedures} procedures, {size_mb:.0f} MB JSONL")
    print(f"first ingest: {report.added} added in {seconds:.2f} s = {report.added / seconds:,.0f} procedures/s")
    print(f"re-ingest (all already present): {second.already_present} in {seconds_again:.2f} s")
    print(f"peak RSS: {peak:,.0f} MB (before ingest: {rss_before:,.0f} MB)")


if __name__ == "__main__":
    main()
