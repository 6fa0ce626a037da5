"""The textual-cloze sweep at scale (issue 33): time and peak memory per setting, and adversarial / recipeqa-style.

Run by hand: ``python benchmarks/scale_textual.py [--sizes 1000,10000,100000] [--out FILE] [--rounds N]``.

Stores of 1k, 10k and 100k procedures are made from the real RecipeQA recipes
(``../shared/data/recipeqa-recipes``, ~1,000 procedures): copy ``c > 0`` of a recipe is the recipe with about
half of its step titles and texts perturbed (one word swapped for a word of another recipe's title), so titles
do not repeat verbatim across copies. Steps are embedded with the ``hashed`` text encoder (no model download,
linear in the corpus; the neighbourhoods are lexical, which is what the scale measurement needs). Each setting
of the sweep (``recipeqa``, ``default``, ``debias-auto``, ``adversarial``) is generated in a child process
(``procbench generate`` as a library call, the splits it writes), which reports its wall time and its own peak
RSS (VmHWM), wall and CPU seconds (the child is single-threaded, so CPU time is what a loaded machine distorts
least), and for ``adversarial`` the filter's own probes' accuracy on the set it kept (chance 0.25); the parent adds
the whole child process's wall and CPU seconds (``command_*``: interpreter start and imports included, as a
``procbench generate`` command is timed). The output is one JSON object per size, with ``adversarial / recipeqa``
and, across sizes, the CPU time growth from one size to the next (linear = the size ratio).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, peak_rss_mb

RECIPES = ROOT.parent / "shared" / "data" / "recipeqa-recipes" / "procedures.jsonl"
SETTINGS = ["recipeqa", "default", "debias-auto", "adversarial"]


def _perturb(text: str | None, words: list[str], rng: random.Random) -> str | None:
    """``text`` with one of its words swapped for ``rng``'s pick of ``words`` (None and empty stay)."""
    if not text:
        return text
    parts = text.split()
    parts[rng.randrange(len(parts))] = rng.choice(words)
    return " ".join(parts)


def write_corpus(path: Path, n_procedures: int, seed: int = 0) -> None:
    """``n_procedures`` procedures from the real recipes, repeated with perturbation, as import JSONL."""
    # split on newlines only: texts hold U+2028, which splitlines() breaks a JSON line at
    real = [json.loads(line) for line in RECIPES.read_text().split("\n") if line.strip()]
    words = sorted({w for r in real for w in (r.get("title") or "").split() if w.isalpha()})
    rng = random.Random(seed)
    with path.open("w") as out:
        for n in range(n_procedures):
            copy, record = divmod(n, len(real))
            record = json.loads(json.dumps(real[record]))
            record["id"] = f"{record['id']}~{copy}"
            record["title"] = f"{record['title']} {copy}" if copy else record["title"]
            if copy:
                for step in record["steps"]:
                    if rng.random() < 0.5:
                        step["title"] = _perturb(step.get("title"), words, rng)
                        step["text"] = _perturb(step.get("text"), words, rng)
            out.write(json.dumps(record) + "\n")


def build_store(root: Path, n_procedures: int) -> tuple[Path, dict[str, float]]:
    """Ingest and embed a store of ``n_procedures``; the seconds each phase took."""
    from procbench.embed import embed_store
    from procbench.ingest import ingest_file

    times: dict[str, float] = {}
    corpus = root / "corpus.jsonl"
    start = time.perf_counter()
    write_corpus(corpus, n_procedures)
    ingest_file(root / "store", corpus)
    times["ingest"] = round(time.perf_counter() - start, 1)
    start = time.perf_counter()
    embed_store(root / "store", text_encoder="hashed", image_encoder="colour-layout", fields="step_title,step_text")
    times["embed"] = round(time.perf_counter() - start, 1)
    return root / "store", times


def child(store: str, setting: str, rounds: int | None) -> None:
    """Generate one setting (in this process) and print its time and peak RSS as JSON."""
    from procbench.generate import Setting, generate
    from procbench.store import Store

    chosen = Setting("debias", budget="auto") if setting == "debias-auto" else Setting(setting)
    options: dict[str, Any] = {"rounds": rounds} if rounds is not None and setting == "adversarial" else {}
    start, cpu = time.perf_counter(), time.process_time()
    result = generate(Store.open(store), "textual-cloze", chosen, seed=0, overwrite=True, **options)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    timing = {"seconds": round(seconds, 2), "cpu_seconds": round(cpu_seconds, 2), "peak_mb": round(peak_rss_mb())}
    # the filter's own probes on the set it kept: a fast filter that leaves them far above chance is no win
    report = result.reports.get("adversarial")
    filtered = (report.adversarial if report is not None else None) or {}
    quality = {"filter_accuracy": filtered["final_accuracy"]} if filtered.get("final_accuracy") else {}
    print(json.dumps({**timing, **result.questions, **quality}))


def measure(n_procedures: int, rounds: int | None, settings: list[str]) -> dict[str, Any]:
    """``settings`` of the sweep at ``n_procedures``, each in a child process."""
    with tempfile.TemporaryDirectory(prefix="procbench-scale-") as tmp:
        store, phases = build_store(Path(tmp), n_procedures)
        entry: dict[str, Any] = {"procedures": n_procedures, "build_seconds": phases, "settings": {}}
        for setting in settings:
            args = [sys.executable, __file__, "--child", str(store), setting]
            if rounds is not None:
                args += ["--rounds", str(rounds)]
            start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
            done = subprocess.run(args, capture_output=True, text=True, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            entry["settings"][setting] = {
                **json.loads(done.stdout.strip().splitlines()[-1]),
                # the whole process, as `procbench generate` is run: interpreter start and imports included
                "command_seconds": round(time.perf_counter() - start, 2),
                "command_cpu_seconds": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
            }
            print(n_procedures, setting, entry["settings"][setting], flush=True)
    timing = entry["settings"]
    if "adversarial" in timing and "recipeqa" in timing:
        for clock in ("seconds", "cpu_seconds", "command_seconds", "command_cpu_seconds"):
            ratio = timing["adversarial"][clock] / max(timing["recipeqa"][clock], 1e-9)
            entry[f"adversarial_over_recipeqa_{clock}"] = round(ratio, 1)
    return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=None, help="adversarial rounds (default: the policy's)")
    parser.add_argument("--settings", default=",".join(SETTINGS), help="comma list of " + ", ".join(SETTINGS))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", nargs=2, metavar=("STORE", "SETTING"), default=None)
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.rounds)
        return
    settings = args.settings.split(",")
    results = [measure(int(size), args.rounds, settings) for size in args.sizes.split(",")]
    for before, after in zip(results, results[1:], strict=False):
        for setting in settings:
            growth = after["settings"][setting]["cpu_seconds"] / max(before["settings"][setting]["cpu_seconds"], 1e-9)
            after.setdefault("time_growth", {})[setting] = round(growth, 2)
    text = json.dumps(results, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
