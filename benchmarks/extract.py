"""Throughput of `procbench extract` (sentences/s) on the shared real corpora, and what it extracts.

Run: .venv/bin/python benchmarks/extract.py [--corpus DIR ...] [--model PKG]
     .venv/bin/python benchmarks/extract.py --recall      # imperative recall on real headlines

``--recall`` measures issue 37's recall on imperative headlines: of the steps whose headline starts with a
common imperative verb (:data:`COMMON_IMPERATIVES`: "Open", "Tap", "Place", ...), the share whose extracted
verbs (every tuple's lemma, as ``extract`` stores them) include that verb. Headlines: the wikiHow/OpenPI
step sentences (one per step: a step's headline), the same numbered as wikiHow's headline lists show them
(``2. Find a photo.``), the build guides' and RecipeQA's step titles. Steps whose headline has no tuple
at all are counted too, with examples of misses.

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
import re
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


#: Common imperative verbs of how-to headlines (the first words of wikiHow, Instructables and build-guide
#: steps that are verbs), for the recall measurement only.
COMMON_IMPERATIVES = frozenset(
    " ".join(
        [
            "add adjust aim allow apply arrange ask assemble attach avoid bake beat begin bend blend boil break",
            "bring brush build buy call catch check chill choose chop clean clear click clip close collect",
            "combine complete connect continue cook copy cover create cut decorate delete determine dice dig dip",
            "discard dissolve divide download drain draw dress drill drink drizzle drop dry eat email enjoy ensure",
            "enter equip exhale extend fasten feed fill find finish fix flip focus fold follow form freeze fry",
            "garnish gather give glue grab grate grill grind grow hang harvest heat hire hold identify inhale",
            "insert install jump join keep knead label launch lay leave lift light line listen locate log loosen",
            "lower maintain make marinate mark mash measure melt mix mount move navigate note obtain open pack",
            "paint paste peel pick place plan plant play plug pop position pour practice preheat prepare press",
            "print protect prune pull purchase push put raise reduce remove repeat replace restart rinse roast",
            "roll rub run sand save schedule scoop scroll scrub seal search season secure select sell send",
            "separate serve set sew shake shape share sign simmer sit slice slide slip soak solder spray spread",
            "sprinkle squeeze stand start stay step stick stir stitch store strain stretch swipe take tap tape",
            "test throw tie tighten top toss train transfer trim try turn type unplug unscrew update upload use",
            "visit wait wash watch water wear whisk wipe work wrap write",
        ]
    ).split()
)
_FIRST_WORD = re.compile(r"[A-Za-z]+")


def _headlines(corpus: Path, field: str, numbered: bool = False) -> list[tuple[str, int, str]]:
    """(procedure id, step index, headline) of every step with a ``field`` (``text`` or ``title``)."""
    out = []
    for line in (corpus / "procedures.jsonl").open(encoding="utf-8"):
        record = json.loads(line)
        for index, step in enumerate(record["steps"]):
            value = (step.get(field) or "").strip()
            if value:
                out.append((record["id"], index, f"{index + 1}. {value}" if numbered else value))
    return out


def imperative_recall(
    nlp: object, headlines: list[tuple[str, int, str]], misses: int = 12, imperatives: bool = True
) -> dict[str, object]:
    """Issue 37's recall: of the headlines starting with a common imperative verb, the share whose
    extracted verbs include it; also the steps with no tuple at all. ``imperatives=False``: without the
    numbering skip and the re-parse of mis-tagged imperatives (the dependency rules alone)."""
    from procbench.clean import strip_step_numbering
    from procbench.extract.pipeline import extract_texts

    targets = []
    for pid, index, text in headlines:
        word = _FIRST_WORD.search(strip_step_numbering(text))
        if word is not None and word.start() < 3 and word.group().lower() in COMMON_IMPERATIVES:
            targets.append((pid, index, text, word.group().lower()))
    start = time.perf_counter()
    sentences = extract_texts(
        nlp,  # type: ignore[arg-type]
        [(pid, index, text) for pid, index, text, _ in targets],
        imperatives=imperatives,
    )
    seconds = time.perf_counter() - start
    verbs: dict[tuple[str, int], set[str]] = {}
    for s in sentences:
        verbs.setdefault((s.procedure_id, s.step), set()).update(t.lemma for t in s.tuples)
    found = [verb in verbs.get((pid, index), set()) for pid, index, _, verb in targets]
    empty = sum(1 for pid, index, _, _ in targets if not verbs.get((pid, index)))
    missed = [
        {"headline": text[:100], "verb": verb, "extracted": sorted(verbs.get((pid, index), set()))}
        for (pid, index, text, verb), ok in zip(targets, found, strict=True)
        if not ok
    ]
    return {
        "headlines": len(headlines),
        "imperative_headlines": len(targets),
        "verb_found": sum(found),
        "recall": round(sum(found) / len(targets), 4) if targets else None,
        "no_tuple_at_all": empty,
        "seconds": round(seconds, 2),
        "missed_examples": random.Random(0).sample(missed, min(misses, len(missed))),
    }


def recall_report(nlp: object) -> dict[str, object]:
    """:func:`imperative_recall` on every headline set of the shared corpora."""
    sets = {
        "wikihow-openpi step sentences": _headlines(SHARED / "wikihow-openpi", "text"),
        "wikihow-openpi numbered (2. Find a photo.)": _headlines(SHARED / "wikihow-openpi", "text", numbered=True),
        "build-guides step titles": _headlines(SHARED / "build-guides", "title"),
        "recipeqa-recipes step titles": _headlines(SHARED / "recipeqa-recipes", "title"),
    }
    return {
        name: {
            "rules_alone": imperative_recall(nlp, headlines, misses=0, imperatives=False),
            "with_imperative_repair": imperative_recall(nlp, headlines),
        }
        for name, headlines in sets.items()
    }


def gold_scores(nlp: object) -> dict[str, object]:
    """evaluate-extraction's scores on the hand-labelled headline gold (tests/fixtures/headlines): 100 steps
    written in the style of wikiHow headlines, with and without the imperative repair."""
    from procbench.clean import clean_store
    from procbench.extract import evaluate_extraction

    folder = ROOT / "tests" / "fixtures" / "headlines"
    out: dict[str, object] = {}
    for name, imperatives in (("rules_alone", False), ("with_imperative_repair", True)):
        with tempfile.TemporaryDirectory() as tmp:
            store = Store.open(Path(tmp) / "store", create=True)
            ingest_file(store, folder / "procedures.jsonl")
            clean_store(store, workers=1)
            extract_store(store, nlp=nlp, min_verb_count=1, imperatives=imperatives)  # type: ignore[arg-type]
            scores = {}
            for setting, every in (("w/ heur. (in-lexicon tuples)", False), ("w/o heur. (every tuple)", True)):
                report = evaluate_extraction(folder / "gold.jsonl", store=store, all_verbs=every)
                oracle = report["stage2"]["oracle"]  # type: ignore[index]
                scores[setting] = {
                    "stage1": {k: round(report["stage1"][k], 3) for k in ("precision", "recall", "f1")},  # type: ignore[index]
                    **{
                        part: {
                            mode: {
                                k: round(v, 3)
                                for k, v in oracle[part][mode].items()
                                if k in ("precision", "recall", "f1")
                            }
                            for mode in ("exact", "fuzzy")
                        }
                        for part in ("verbs", "arguments")
                    },
                }
            out[name] = scores
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", type=Path, help="folder with procedures.jsonl (repeatable)")
    parser.add_argument("--model", default=None, help="spaCy pipeline package")
    parser.add_argument("--recall", action="store_true", help="imperative recall on real headlines (issue 37)")
    args = parser.parse_args()
    start = time.perf_counter()
    nlp = load_pipeline(args.model)
    loaded = time.perf_counter() - start
    if args.recall:
        report = {"model": model_info(nlp), "recall": recall_report(nlp), "gold": gold_scores(nlp)}
        print(json.dumps(report, indent=2))
        return
    corpora = args.corpus or [SHARED / "wikihow-openpi", SHARED / "recipeqa-recipes"]
    report = {"model": model_info(nlp), "load_seconds": round(loaded, 2), "corpora": [run(c, nlp) for c in corpora]}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
