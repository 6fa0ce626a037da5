"""Which rule could give textual ``needs-context`` difficulty levels (issue 55)? Candidate rules measured against the
zero-shot context readers before any of them goes into the generator.

Run by hand on a store with ``step_title`` and ``step_text`` embeddings (e.g. the RecipeQA development slice):

    procbench ingest /work/shared/data/recipeqa-recipes/procedures.jsonl --store S
    procbench clean --store S
    procbench embed --store S -t minilm-offline --fields step_title,step_text,procedure_title
    python benchmarks/closeness_levels.py --store S [--seeds 0-9]

For every procedure the generator's own readable sets are enumerated
(:func:`procbench.generate.textual.needs_context.readable_sets`: four steps, no paraphrased titles, every text
within the slack of its own title). A level keeps a subset of them by a rule that looks at the set only, never at
which step is the answer, so the four stay exchangeable and a context-free reader still reads chance. Per seed,
one set per procedure is drawn uniformly among the level's sets and the answer uniformly among its four, as the
generator draws; the question is the blank, its context the answer's step text. Rules:

- ``alike-q``: the issue's proposal: sets whose mean pairwise title cosine is at or above the procedure's
  q-quantile of its readable sets (q = 0: every set, today's draw; ``alike-max``: the most alike set);
- ``margin-m``: sets in which every step's text fits its own title by at most m (cosine, the embedding) more
  than its best rival title in the set: four close calls, not one.

Each level reports its questions (yield against level 0) and the accuracy of the two zero-shot context readers
(:mod:`procbench.models.context_readers`: TF-IDF fitted on the store's titles and texts, and the store's
embedding), as mean over seeds with the SE over seeds. The embedding reader reads the same vectors the margin
rule does, so TF-IDF is the independent check.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import numpy as np

from procbench.features import ItemVectors, step_key
from procbench.generate.exchangeable import fit_margins
from procbench.generate.textual.needs_context import readable_sets
from procbench.models.context_readers import CONTEXT_READERS, context_scores
from procbench.store import Store
from procbench.store.views import kept_steps

#: Procedures with more kept steps than this are left out (their readable sets are too many to enumerate).
MAX_STEPS = 25


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)


def _procedures(store: Store) -> list[dict[str, object]]:
    """Per procedure with four or more titled steps: its readable sets and both readers' text-title similarities."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    steps = kept_steps(store, ["procedure_id", "index", "title_clean", "text_clean"]).to_pylist()
    by: dict[str, list[dict[str, object]]] = defaultdict(list)
    for s in steps:
        if s["title_clean"] and s["text_clean"]:
            by[str(s["procedure_id"])].append(s)
    titles, texts = ItemVectors(store, "step_title"), ItemVectors(store, "step_text")
    words = [str(s[f]) for ss in by.values() for s in ss for f in ("title_clean", "text_clean")]
    tfidf = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit(words)
    out = []
    for pid, ss in sorted(by.items()):
        if not 4 <= len(ss) <= MAX_STEPS:
            continue
        keys = [step_key(pid, int(s["index"])) for s in ss]  # type: ignore[call-overload]
        t, x = _unit(titles.get(keys)), _unit(texts.get(keys))
        normalised = [re.sub(r"\W+", " ", str(s["title_clean"]).lower()).strip() for s in ss]
        sets = readable_sets(t, x, np.unique(normalised, return_inverse=True)[1])
        if not len(sets):
            continue
        tt = tfidf.transform([str(s["title_clean"]) for s in ss])
        xt = tfidf.transform([str(s["text_clean"]) for s in ss])
        out.append({"sets": sets, "title_sim": t @ t.T, "embedding": x @ t.T, "tfidf": (xt @ tt.T).toarray()})
    return out


def _levels(p: dict[str, object]) -> dict[str, np.ndarray]:
    """Level name -> the readable sets ``(k, 4)`` it keeps for one procedure (every rule symmetric in the four)."""
    sets = np.asarray(p["sets"])
    sim = np.asarray(p["title_sim"])
    upper = np.triu_indices(4, 1)
    alike = np.array([sim[np.ix_(s, s)][upper].mean() for s in sets])
    margins = fit_margins(np.asarray(p["embedding"]), sets)
    both = (margins + fit_margins(np.asarray(p["tfidf"]), sets)) / 2
    bmean = both.mean(axis=1)
    widest = margins.max(axis=1)  # the set's clearest step: every step is a close call when this is small
    mean = margins.mean(axis=1)  # the set's expected margin: the answer is uniform among the four
    return {
        "alike-0 (today)": sets,
        **{f"alike-{q}": sets[alike >= np.quantile(alike, q)] for q in (0.5, 0.9)},
        "alike-max": sets[[int(np.argmax(alike))]],
        **{f"margin-{m:.2f}": sets[widest <= m] for m in (0.15, 0.10, 0.05)},
        **{f"mean-{m:.2f}": sets[mean <= m] for m in (0.10, 0.07, 0.05)},
        **{f"hardest-q{q}": sets[mean <= np.quantile(mean, q)] for q in (0.25, 0.1)},
        "hardest-min": sets[[int(np.argmin(mean))]],
        "hardest-widest-min": sets[[int(np.argmin(widest))]],
        **{f"both-mean-{m:.2f}": sets[bmean <= m] for m in (0.08, 0.06, 0.05, 0.04, 0.03, 0.02)},
        "both-q0.25": sets[bmean <= np.quantile(bmean, 0.25)],
        "both-min": sets[[int(np.argmin(bmean))]],
    }


def run(store: Store, seeds: list[int]) -> dict[str, dict[str, list[float]]]:
    """Level -> {"questions": per seed, "tfidf": accuracy per seed, "embedding": accuracy per seed}."""
    procedures = _procedures(store)
    levels = [_levels(p) for p in procedures]
    results: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for seed in seeds:
        rng = np.random.default_rng(seed)
        hits: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for p, kept in zip(procedures, levels, strict=True):
            for name, sets in kept.items():
                if not len(sets):
                    continue
                chosen = sets[int(rng.integers(len(sets)))]
                answer = int(rng.integers(4))
                for reader in ("tfidf", "embedding"):
                    sim = np.asarray(p[reader])[chosen[answer], chosen]  # the context (answer's text) vs each title
                    hits[name][reader].append(int(np.argmax(context_scores(sim[:, None], None)) == answer))
        for name, by_reader in hits.items():
            results[name]["questions"].append(len(by_reader["tfidf"]))
            for reader, h in by_reader.items():
                results[name][reader].append(float(np.mean(h)))
    return results


def _level_sets(store_path: str, seeds: list[int]) -> Iterator[tuple[int, int, str]]:
    """``(seed, level, set folder)`` for every seed and level, each set generated by the shipped generator (written
    into the store, over the previous seed's)."""
    from procbench.generate import Setting, generate
    from procbench.generate.textual.closeness import levels

    store = Store.open(store_path)
    for seed in seeds:
        for level in range(levels() + 1):
            setting = Setting("needs-context", closeness=level)
            generate(store, "textual-cloze", setting, seed=seed, overwrite=True)
            yield seed, level, f"{store_path}/questions/textual-cloze/{setting.name}"


def end_to_end(store_path: str, seeds: list[int]) -> dict[int, dict[str, list[float]]]:
    """Level -> per seed: questions and both context readers' accuracy over every split, from the shipped
    generator (``generate --style needs-context --closeness L``) and ``evaluate`` (writes into the store)."""
    from procbench.models.evaluation import evaluate

    out: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for _, level, folder in _level_sets(store_path, seeds):
        report = evaluate(qsets=[folder], models=list(CONTEXT_READERS), splits=("train", "val", "test"), bootstrap=0)
        for model in CONTEXT_READERS:
            rows = [r for r in report.results if r.model == model]
            n = sum(r.n for r in rows)
            out[level][model].append(sum(r.value * r.n for r in rows) / n)
        out[level]["questions"].append(float(n))
    return out


#: The context-free probes held to their nulls at every level (the textual ones that read something here).
PROBES = ("choice_only", "question_distance", "hubness", "partial_input", "answer_position", "length")


def probes_against_nulls(store_path: str, seeds: list[int], nulls: int) -> dict[int, dict[str, Any]]:
    """Level -> per probe: the value per seed and, per null copy j, its value per seed. A null copy is the same
    set with every answer relabelled uniformly at random among its question's choices (issue 54's null)."""
    import dataclasses

    from procbench.audit import audit_set
    from procbench.audit.loaders import load_question_set

    out: dict[int, dict[str, Any]] = defaultdict(lambda: defaultdict(lambda: {"set": [], "nulls": defaultdict(list)}))
    for seed, level, folder in _level_sets(store_path, seeds):
        aset = load_question_set(folder)
        copies: list[tuple[int | None, Any]] = [(None, aset)]
        choices = aset.index().valid.sum(axis=1)
        for copy_number in range(nulls):
            relabelled = np.random.default_rng([copy_number, seed, 0x55]).integers(0, choices)
            copies.append((copy_number, dataclasses.replace(aset, answers=relabelled)))
        for j, copy in copies:
            audit = audit_set(copy, seed=0, n_boot=0, probes=",".join(PROBES))
            for name in PROBES:
                value = audit.probes[name].value
                if j is None:
                    out[level][name]["set"].append(value)
                else:
                    out[level][name]["nulls"][j].append(value)
    return out


def _seeds(text: str) -> list[int]:
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True)
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument(
        "--end-to-end", action="store_true", help="run the shipped levels through generate and evaluate instead"
    )
    parser.add_argument("--nulls", type=int, default=0, help="hold the context-free probes to this many null copies")
    args = parser.parse_args()
    seeds = _seeds(args.seeds)
    if args.nulls:
        print(f"{len(seeds)} seeds, {args.nulls} null copies; mean over seeds (SE); null: seed-averaged copies")
        print("| closeness | probe | mean | SE | null mean | null p5 | null p95 | verdict |")
        print("|---|---|---|---|---|---|---|---|")
        for level, by_probe in sorted(probes_against_nulls(args.store, seeds, args.nulls).items()):
            for name, r in by_probe.items():
                v = np.asarray(r["set"], dtype=float)
                null = np.array([np.mean(x) for x in r["nulls"].values()])
                lo, hi = np.quantile(null, [0.05, 0.95])
                verdict = "ok" if v.mean() <= hi else "ABOVE"
                se = v.std(ddof=1) / np.sqrt(len(v))
                cells = [v.mean(), se, null.mean(), lo, hi]
                print(f"| {level} | {name} | " + " | ".join(f"{c:.3f}" for c in cells) + f" | {verdict} |")
        return
    if args.end_to_end:
        by_level = end_to_end(args.store, seeds)
        base = np.mean(by_level[0]["questions"])
        print(f"{len(seeds)} seeds, every split; mean over seeds (SE over seeds)")
        print("| closeness | questions | yield | " + " | ".join(CONTEXT_READERS) + " |")
        print("|---|---|---|" + "---|" * len(CONTEXT_READERS))
        for level, r in sorted(by_level.items()):
            n = np.mean(r["questions"])
            cells = [f"{np.mean(r[m]):.3f} ({np.std(r[m], ddof=1) / np.sqrt(len(r[m])):.3f})" for m in CONTEXT_READERS]
            print(f"| {level} | {n:.0f} | {n / base:.0%} | " + " | ".join(cells) + " |")
        return
    results = run(Store.open(args.store), seeds)
    base = np.mean(results["alike-0 (today)"]["questions"])
    print(f"{len(seeds)} seeds; mean over seeds (SE over seeds)")
    print("| level | questions | yield | context-tfidf | context-embedding |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        n = np.mean(r["questions"])
        cells = []
        for reader in ("tfidf", "embedding"):
            v = np.asarray(r[reader])
            cells.append(f"{v.mean():.3f} ({v.std(ddof=1) / np.sqrt(len(v)):.3f})")
        print(f"| {name} | {n:.0f} | {n / base:.0%} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
