"""Appending a scrape-sized batch to a big store: one-file tables vs part-file tables (issue 18, deliverable 2).

Run by hand: `python benchmarks/store_parts.py [--procedures 50000] [--batch 100] [--repeats 5]`.

The base store holds N procedures made from the real wikiHow (OpenPI) corpus: its 810 procedures, then
copies under new ids whose title and step texts are the original words in a shuffled order and whose image
URLs carry the copy number (so that, as in a real crawl, no two procedures share a text or an image and
Parquet's dictionary encoding cannot collapse the copies; the bytes per row stay those of real text). It is
ingested once in the one-file layout, then
copied and converted with `set_layout(store, "parts")`. Each of R batches of B procedures (again real
records under new ids) is then ingested into both stores in turn, the way a scrape batch is committed
(`add_procedures` inside one transaction). Per append: wall time, bytes handed to write() by this process
(`wchar` of /proc/self/io) and bytes of the files the commit created or replaced. Then the time to read the
whole steps table and the procedure ids (what every stage and every append reads) in each layout.

The machine is shared: the layouts alternate within one run and the medians are compared.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from procbench.ingest import ingest_file
from procbench.store import Store
from procbench.store.layout import set_layout

DATA = Path("/work/shared/data/wikihow-openpi/procedures.jsonl")


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _shuffled(text: str | None, rng: random.Random) -> str | None:
    if not text:
        return text
    words = text.split()
    rng.shuffle(words)
    return " ".join(words)


def _variant(record: dict[str, Any], i: int) -> dict[str, Any]:
    """Copy ``i`` of a real record: its own id, URLs and word order (copy 0 .. 809 are the records)."""
    if i < 810:
        return record
    rng = random.Random(i)
    return {
        **record,
        "id": f"{record['id']}~{i}",
        "url": f"{record.get('url')}?copy={i}",
        "title": _shuffled(record["title"], rng),
        "steps": [
            {
                **step,
                "title": _shuffled(step.get("title"), rng),
                "text": _shuffled(step["text"], rng),
                "images": [f"{url}?copy={i}" for url in step.get("images", [])],
            }
            for step in record["steps"]
        ],
    }


def _write(path: Path, records: list[dict[str, Any]], start: int, n: int) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(start, start + n):
            fh.write(json.dumps(_variant(records[i % len(records)], i)) + "\n")
    return path


def _wchar() -> int:
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("wchar:"))


def _files(root: Path) -> dict[Path, tuple[int, int, int]]:
    return {
        p: (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_size)
        for p in root.rglob("*")
        if p.is_file() and ".txn" not in p.parts
    }


def _append(root: Path, batch: Path) -> dict[str, float]:
    before = _files(root)
    written = _wchar()
    started = time.perf_counter()
    report = ingest_file(Store.open(root), batch)
    seconds = time.perf_counter() - started
    written = _wchar() - written
    after = _files(root)
    changed = sum(meta[2] for path, meta in after.items() if before.get(path) != meta)
    assert report.added > 0
    return {"seconds": seconds, "wchar_bytes": written, "file_bytes": changed}


def _read(root: Path) -> dict[str, float]:
    store = Store.open(root)
    times: dict[str, list[float]] = {"read_steps_s": [], "read_ids_s": []}
    for _ in range(3):
        started = time.perf_counter()
        steps = store.table("steps")
        times["read_steps_s"].append(time.perf_counter() - started)
        started = time.perf_counter()
        store.table("procedures", ["id"])
        times["read_ids_s"].append(time.perf_counter() - started)
    assert steps.num_rows > 0
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procedures", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    records = _records(DATA)
    with tempfile.TemporaryDirectory(prefix="procbench-parts-") as tmp:
        work = Path(tmp)
        roots = {"file": work / "file", "parts": work / "parts"}
        started = time.perf_counter()
        ingest_file(Store.open(roots["file"], create=True), _write(work / "base.jsonl", records, 0, args.procedures))
        shutil.copytree(roots["file"], roots["parts"])
        set_layout(Store.open(roots["parts"]), "parts")
        setup_s = time.perf_counter() - started
        runs: dict[str, list[dict[str, float]]] = {"file": [], "parts": []}
        for r in range(args.repeats):
            batch = _write(work / f"batch{r}.jsonl", records, args.procedures + r * args.batch, args.batch)
            for layout, root in roots.items():
                runs[layout].append(_append(root, batch))
        stores = {layout: Store.open(root) for layout, root in roots.items()}
        for name in ("procedures", "steps", "images"):
            assert stores["parts"].table(name).equals(stores["file"].table(name)), f"{name} differs"
        out: dict[str, Any] = {
            "procedures": stores["file"].num_rows("procedures"),
            "steps": stores["file"].num_rows("steps"),
            "batch": args.batch,
            "repeats": args.repeats,
            "setup_s": round(setup_s, 1),
            "tables_after": {k: s.tables_info() for k, s in stores.items()},
        }
        for layout in roots:
            medians = {k: statistics.median(run[k] for run in runs[layout]) for k in runs[layout][0]}
            out[layout] = {**{k: round(v, 4) for k, v in medians.items()}, **_read(roots[layout])}
        out["ratio_file_over_parts"] = {
            k: round(out["file"][k] / out["parts"][k], 1) for k in ("seconds", "wchar_bytes", "file_bytes")
        }
    print(json.dumps(out, indent=2))
    print(f"\nappend {args.batch} procedures to {out['procedures']} (median of {args.repeats}):")
    print(f"{'':12}{'one file':>14}{'parts':>14}{'ratio':>8}")
    for key, unit in (("seconds", "s"), ("wchar_bytes", "B"), ("file_bytes", "B")):
        a, b = out["file"][key], out["parts"][key]
        print(
            f"{key:12}{a:>13.3f}{unit}{b:>13.3f}{unit}{a / b:>8.1f}"
            if unit == "s"
            else f"{key:12}{a:>13,.0f}{unit}{b:>13,.0f}{unit}{a / b:>8.1f}"
        )
    for key in ("read_steps_s", "read_ids_s"):
        print(f"{key:12}{out['file'][key]:>13.3f}s{out['parts'][key]:>13.3f}s")


if __name__ == "__main__":
    main()
