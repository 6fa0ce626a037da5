"""Are procbench's question sets solvable without their context? Every setting, every probe, on real data.

For each textual-cloze setting (``recipeqa``, ``default``, ``debias-auto``, ``adversarial``, and
``needs-context`` over step titles) of real corpora and each visual setting of a store with varied images
(synthetic clusters, and real neighbourhoods: each
step of the two real corpora with its step text's MiniLM vector as its image, :func:`text_as_image_store`),
this prints the question count and:

- ``choice_only``: logistic regression on each choice's embedding alone, procedure-grouped 5-fold CV (an
  independent re-implementation of the probe the issue used, not the generator's own ensemble);
- ``partial_input``: gradient-boosted trees on context-free per-choice features (distances to the question
  and the other choices with their ranks, length, word overlap, item frequency), cross-fitted with a seed
  the generator never used;
- ``rank_rule``: the best "pick the choice at distance rank r from the question mean" rule, chosen by CV
  (the rank shortcut of K3; 25% when ranks are uniform);
- ``distance_svm``: ``procbench evaluate --model distance-svm`` (RBF SVM on distances, fitted on train,
  scored on test; paper 001's probe);
- ``context_ref`` (textual): pick the choice most similar to a step text of the question's context;
- ``hunt_max`` (textual): the best of four shortcut hunters outside procbench's own probes (:func:`hunters`:
  learnt similarities of a choice to the question and to the blank's neighbours, a TF-IDF hasty student, the
  TF-IDF similarity to the question);
- ``audit_partial``, ``audit_distance``: what ``procbench audit`` itself reports for its ``partial_input``
  and ``question_distance`` probes (what a user of the set sees), with their verdict (``+`` above chance,
  ``-`` below: both are biases).

Ordering sets (choices are orders of the same four images) get their own independent probes
(:func:`ordering_probes`): the path-length rank rule, choice-only on the orders' images in the order shown,
and partial-input trees on the path length and the orders' agreement with each other.

Usage: python benchmarks/validity.py [--work DIR] [--recipeqa PATH] [--wikihow PATH] [--visual-procedures N]
[--visual-drift D] [--skip PARTS]; ``--skip ''`` adds the mixed corpus (:func:`mixed_corpus`: both sites with
step headlines, a held-out-like mix).
Stores are built once under --work (ingest, clean, embed with minilm-offline) and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from procbench.embed import load_embeddings
from procbench.generate import generate
from procbench.qsets import read_question_set
from procbench.shortcuts import ChoiceBatch, ShortcutEnsemble, hits
from procbench.store import Store

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TEXT_SETTINGS = ("recipeqa", "default", "debias-auto", "adversarial", "needs-context")


def build_text_store(source: Path, work: Path) -> Store:
    """Ingest, clean and embed (minilm-offline, text only) a JSONL corpus once; later runs embed what is missing."""
    from procbench.clean import clean_store
    from procbench.embed import embed_store
    from procbench.ingest import ingest_file

    path = work / source.parent.name
    fields = ("step_title", "step_text", "procedure_title")  # the distance-svm reference reads procedure titles
    if (path / "embeddings").exists():
        store = Store.open(path)
    else:
        store = Store.open(path, create=True)
        ingest_file(store, source)
        clean_store(store)
    embed_store(store, text_encoder="minilm-offline", fields=fields)  # embeds only what is missing
    return store


def mixed_corpus(recipeqa: Path, wikihow: Path, out: Path) -> Path:
    """Both sites in one corpus with step headlines: RecipeQA as it is, and each wikiHow step's one sentence as
    its headline and its text (a wikiHow step's bold headline is its first sentence), like a held-out mix of
    the two sites. Only context-free probes mean what they say on it: the wikiHow context shows the headline."""
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        lines = recipeqa.read_text(encoding="utf-8").splitlines()
        for line in wikihow.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            for step in record["steps"]:
                step["title"] = step.get("text")
            lines.append(json.dumps(record))
        out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def text_as_image_store(text_store: Store, out: Path) -> Store:
    """A visual store with real neighbourhoods: each step of ``text_store`` gets one "image" whose vector is its
    step text's MiniLM embedding. Real procedures' steps are near each other and near other procedures' steps
    the way real step photos are (topics, hubs such as "Enjoy!", near-duplicates), which synthetic Gaussian
    clusters are not; the visual generators and probes only ever see the vectors."""
    import hashlib

    import pyarrow as pa

    from procbench.corpus.synthetic import stage_image_embedding
    from procbench.embed.index import IndexConfig
    from procbench.store import IMAGES, PROCEDURES, STEPS, conform

    if (out / "embeddings").exists():
        return Store.open(out)
    text = load_embeddings(text_store, "step_text")
    row = {k: i for i, k in enumerate(text.keys.to_pylist())}
    procedures = text_store.table("procedures")
    steps = text_store.table("steps")
    pairs = zip(steps["procedure_id"].to_pylist(), steps["index"].to_pylist(), strict=True)
    step_keys = [f"{p}#{i}" for p, i in pairs]
    image_of = {k: hashlib.sha256(f"text-image:{k}".encode()).hexdigest() for k in step_keys if k in row}
    image_ids = pa.array([[image_of[k]] if k in image_of else [] for k in step_keys], pa.list_(pa.string()))
    steps = steps.set_column(steps.schema.get_field_index("image_ids"), "image_ids", image_ids)
    keys = sorted(image_of, key=image_of.__getitem__)
    ids = [image_of[k] for k in keys]
    vectors = np.asarray(text.vectors, dtype=np.float32)[[row[k] for k in keys]]
    owners = [k.rsplit("#", 1)[0] for k in keys]
    images = pa.table(
        {
            "id": ids,
            "procedure_id": owners,
            "step_index": pa.array([int(k.rsplit("#", 1)[1]) for k in keys], pa.int32()),
            "width": pa.array([64] * len(ids), pa.int32()),
            "height": pa.array([64] * len(ids), pa.int32()),
            "stored": [True] * len(ids),
        }
    )
    store = Store.open(out, create=True)
    with store.transaction("text-as-image", args={"source": str(text_store.root)}, seed=0) as txn:
        txn.write_table("procedures", conform(procedures, PROCEDURES))
        txn.write_table("steps", conform(steps, STEPS))
        txn.write_table("images", conform(images, IMAGES))
        stage_image_embedding(
            store, txn, "image.step-text", ids, owners, vectors, encoder="step-text-as-image", revision="minilm",
            model="the step text's MiniLM vector (benchmarks/validity.py)", index_config=IndexConfig(seed=0),
        )  # fmt: skip
    return store


class Items:
    """Vectors and texts of question items, by step key (text items) or image id (visual items)."""

    def __init__(self, store: Store, field: str) -> None:
        emb = load_embeddings(store, field)
        self.vectors = np.asarray(emb.vectors, dtype=np.float32)
        self.row = {k: i for i, k in enumerate(emb.keys.to_pylist())}

    def vec(self, key: str | None) -> np.ndarray | None:
        if key is None or key not in self.row:
            return None
        return self.vectors[self.row[key]]


def question_batch(rows: list[dict], items: Items, textual: bool) -> tuple[ChoiceBatch, list[str]]:
    """The probes' view of a set's questions (text items resolved through meta's step keys)."""
    n = len(rows)
    dim = items.vectors.shape[1]
    n_items = max(len(r["question"]) for r in rows)
    choices = np.zeros((n, 4, dim), np.float32)
    question = np.zeros((n, n_items, dim), np.float32)
    mask = np.zeros((n, n_items), bool)
    valid = np.zeros((n, 4), bool)
    for i, r in enumerate(rows):
        ckeys = r["meta"]["choice_keys"] if textual else r["choices"]
        qkeys = r["meta"]["question_keys"] if textual else [q if q != "@placeholder" else None for q in r["question"]]
        for j, key in enumerate(ckeys):
            v = items.vec(key)
            if v is not None:
                choices[i, j], valid[i, j] = v, True
        for j, key in enumerate(qkeys):
            v = items.vec(key)
            if v is not None:
                question[i, j], mask[i, j] = v, True
    procs = [r["procedure_id"] for r in rows]
    codes = {p: c for c, p in enumerate(sorted(set(procs)))}
    ids = {}
    choice_ids = np.array([[ids.setdefault(str(c), len(ids)) for c in r["choices"]] for r in rows], dtype=np.int64)
    batch = ChoiceBatch(
        choices,
        question,
        mask,
        valid,
        np.array([r["answer"] for r in rows]),
        np.array([codes[p] for p in procs]),
        choice_texts=[list(r["choices"]) for r in rows] if textual else None,
        question_texts=[[q for q in r["question"] if q != "@placeholder"] for r in rows] if textual else None,
        choice_ids=choice_ids,
        placeholder=np.array([_slot(r["question"]) for r in rows], dtype=np.int64),
    )
    return batch, procs


def _slot(question: list) -> int:
    return list(question).index("@placeholder") if "@placeholder" in question else -1


def choice_only_lr(batch: ChoiceBatch, seed: int = 11) -> float:
    """Independent probe: logistic regression on choice embeddings, procedure-grouped 5-fold CV."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    n, c, d = batch.choice_vectors.shape
    x = batch.choice_vectors.reshape(n * c, d)
    y = (np.arange(c)[None, :] == batch.answers[:, None]).reshape(-1)
    groups = np.repeat(batch.groups, c)
    scores = np.zeros(n * c)
    for train, test in GroupKFold(n_splits=5).split(x, y, groups):
        model = LogisticRegression(max_iter=1000, C=1.0).fit(x[train], y[train])
        scores[test] = model.decision_function(x[test])
    return float(hits(scores.reshape(n, c), batch.answers, batch.valid).mean())


def rank_rule(batch: ChoiceBatch) -> float:
    """Best fixed distance-rank rule to the question mean, chosen on 4 folds and scored on the 5th (procedure
    folds stratified by the answer's rank, as the audit's: on plain folds a set whose ranks are dealt exactly
    evenly reads below chance, each test fold lacking the rank its training folds hold most)."""
    from sklearn.model_selection import StratifiedGroupKFold

    mask = batch.question_mask.astype(np.float32)
    qmean = np.einsum("ql,qld->qd", mask, batch.question_vectors) / np.maximum(mask.sum(1), 1)[:, None]
    if not batch.question_mask.any():  # coherence: distance to the other choices
        total = batch.choice_vectors.sum(axis=1, keepdims=True)
        ref = (total - batch.choice_vectors) / 3
        dist = np.linalg.norm(batch.choice_vectors - ref, axis=2)
    else:
        dist = np.linalg.norm(batch.choice_vectors - qmean[:, None, :], axis=2)
    rank = np.argsort(np.argsort(dist, axis=1), axis=1)
    answer_rank = rank[np.arange(len(rank)), batch.answers]
    correct = 0
    folds = StratifiedGroupKFold(n_splits=5, shuffle=True, random_state=0)
    for train, test in folds.split(answer_rank, answer_rank, groups=batch.groups):
        best = np.bincount(answer_rank[train], minlength=4).argmax()
        correct += int((answer_rank[test] == best).sum())
    return correct / len(answer_rank)


def context_reference(rows: list[dict], items: Items, texts: Items) -> float:
    """Pick the choice whose item is most similar to some step text of the question's context."""
    right = 0
    for r in rows:
        ctx = [texts.vec(f"{r['procedure_id']}#{i}") for i in r["context"]]
        ctx_m = np.array([v for v in ctx if v is not None])
        keys = r["meta"]["choice_keys"]
        if not len(ctx_m):
            continue
        best = [max(ctx_m @ v) if (v := items.vec(k)) is not None else -9 for k in keys]
        right += int(np.argmax(best) == r["answer"])
    return right / len(rows)


def distance_svm(store: Store, task: str, setting: str) -> float | None:
    from procbench.models import evaluate

    try:
        report = evaluate(qsets=[str(store.root / "questions" / task / setting)], models=["distance-svm"])
    except Exception as exc:  # a set too small to fit on is reported, not fatal
        print(f"  distance-svm on {setting}: {exc}", file=sys.stderr)
        return None
    values = [r["value"] for r in report.to_dict()["results"] if r["split"] == "test"]
    return values[0] if values else None


def _within(values: np.ndarray) -> np.ndarray:
    """(Q, 4, 3): value, deviation from the question's mean, rank within the question (0..1, ties half)."""
    below = (values[:, None, :] < values[:, :, None]).sum(axis=2)
    equal = (values[:, None, :] == values[:, :, None]).sum(axis=2) - 1
    return np.stack([values, values - values.mean(axis=1, keepdims=True), (below + 0.5 * equal) / 3], axis=2)


def ordering_probes(rows: list[dict], items: Items) -> dict:
    """Ordering sets (choices are orders of the same 4 images): independent context-free probes.

    - rank_rule: the best fixed rank of a choice's path length (sum of consecutive image distances), by CV;
    - choice_only: logistic regression on an order's images' first 16 principal components, concatenated in
      the order shown (which images tend to come first or last), procedure-grouped 5-fold CV;
    - partial_input: gradient-boosted trees on the path length and the order's agreement with the other orders
      shown (mean Kendall distance, consecutive pairs shared, same first / last image), cross-fitted.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    n = len(rows)
    answers = np.array([r["answer"] for r in rows])
    procs = [r["procedure_id"] for r in rows]
    codes = {p: c for c, p in enumerate(sorted(set(procs)))}
    groups = np.array([codes[p] for p in procs])
    images = sorted({i for r in rows for c in r["choices"] for i in c})
    matrix = np.array([items.vec(i) for i in images], dtype=np.float64)
    matrix -= matrix.mean(axis=0)
    _, _, vt = np.linalg.svd(matrix, full_matrices=False)
    reduced = dict(zip(images, matrix @ vt[:16].T, strict=True))
    vec = {i: items.vec(i) for i in images}
    path = np.zeros((n, 4))
    kendall = np.zeros((n, 4))
    shared = np.zeros((n, 4))
    ends = np.zeros((n, 4))
    concat = np.zeros((n, 4, 64))
    for q, r in enumerate(rows):
        orders = r["choices"]
        position = [{img: t for t, img in enumerate(o)} for o in orders]
        for j, o in enumerate(orders):
            path[q, j] = sum(float(np.linalg.norm(vec[a] - vec[b])) for a, b in zip(o, o[1:], strict=False))
            concat[q, j] = np.concatenate([reduced[i] for i in o])
            pairs = set(zip(o, o[1:], strict=False))
            for k, other in enumerate(orders):
                if k == j:
                    continue
                kendall[q, j] += (
                    sum(
                        (position[j][a] < position[j][b]) != (position[k][a] < position[k][b])
                        for s, a in enumerate(o)
                        for b in o[s + 1 :]
                    )
                    / 3
                )
                shared[q, j] += len(pairs & set(zip(other, other[1:], strict=False))) / 3
                ends[q, j] += ((o[0] == other[0]) + (o[-1] == other[-1])) / 3
    rank = np.argsort(np.argsort(path, axis=1, kind="stable"), axis=1, kind="stable")
    answer_rank = rank[np.arange(n), answers]
    folds = list(GroupKFold(n_splits=5).split(answer_rank, groups=groups))
    correct = 0
    for train, test in folds:
        correct += int((answer_rank[test] == np.bincount(answer_rank[train], minlength=4).argmax()).sum())
    flat = concat.reshape(n * 4, -1)
    y = (np.arange(4)[None, :] == answers[:, None]).reshape(-1)
    scores = np.zeros(n * 4)
    for train, test in GroupKFold(n_splits=5).split(flat, y, np.repeat(groups, 4)):
        scores[test] = LogisticRegression(max_iter=1000).fit(flat[train], y[train]).decision_function(flat[test])
    valid = np.ones((n, 4), bool)
    features = np.concatenate([_within(x) for x in (path, kendall, shared, ends)], axis=2)
    unit = concat / np.maximum(np.linalg.norm(concat, axis=2, keepdims=True), 1e-12)
    batch = ChoiceBatch(
        unit.astype(np.float32), np.zeros((n, 1, 64), np.float32), np.zeros((n, 1), bool), valid, answers, groups
    )
    probs = ShortcutEnsemble(n_folds=5, seed=12345, models=("partial_input",)).fit(batch, features)
    predicted = probs.predict(batch, features)["partial_input"]
    return {
        "questions": n,
        "choice_only": round(float(hits(scores.reshape(n, 4), answers, valid).mean()), 3),
        "partial_input": round(float(hits(predicted, answers, valid).mean()), 3),
        "rank_rule": round(correct / n, 3),
    }


def hunters(rows: list[dict], batch: ChoiceBatch) -> dict:
    """Shortcut hunters outside procbench's own probe set, for text choices: logistic regression on each choice's
    embedding times the question mean's, and times the blank's neighbours' (a learnt similarity), on the
    choices' TF-IDF words (a lexical hasty student), and the TF-IDF similarity of each choice to the question
    (all tokens, IDF of the set). Returns each accuracy and ``hunt_max``, the best of them."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    n, c, _ = batch.choice_vectors.shape
    mask = batch.question_mask.astype(np.float32)
    qmean = np.einsum("ql,qld->qd", mask, batch.question_vectors) / np.maximum(mask.sum(1), 1)[:, None]
    beside = np.zeros_like(qmean)
    slots = batch.placeholder if batch.placeholder is not None else np.full(n, -1)
    for q, slot in enumerate(slots.tolist()):
        near = [p for p in (slot - 1, slot + 1) if slot >= 0 and 0 <= p < mask.shape[1] and batch.question_mask[q, p]]
        if near:
            beside[q] = batch.question_vectors[q, near].mean(axis=0)
    y = (np.arange(c)[None, :] == batch.answers[:, None]).reshape(-1)
    groups = np.repeat(batch.groups, c)

    def cross_fitted(x: Any) -> float:
        scores = np.zeros(n * c)
        for train, test in GroupKFold(n_splits=5).split(np.zeros(n * c), y, groups):
            model = LogisticRegression(max_iter=2000).fit(x[train], y[train])
            scores[test] = model.decision_function(x[test])
        return round(float(hits(scores.reshape(n, c), batch.answers, batch.valid).mean()), 3)

    texts = [str(choice) for r in rows for choice in r["choices"]]
    questions = [" ".join(t for t in r["question"] if t != "@placeholder") for r in rows]
    tfidf = TfidfVectorizer().fit(texts + questions)
    words = tfidf.transform(texts)
    similarity = np.asarray(words.multiply(tfidf.transform(questions)[np.repeat(np.arange(n), c)]).sum(axis=1))
    out = {
        "hunt_choice_x_question": cross_fitted((batch.choice_vectors * qmean[:, None]).reshape(n * c, -1)),
        "hunt_choice_x_neighbours": cross_fitted((batch.choice_vectors * beside[:, None]).reshape(n * c, -1)),
        "hunt_tfidf_choice_only": cross_fitted(words),
        "hunt_tfidf_similarity": round(float(hits(similarity.reshape(n, c), batch.answers, batch.valid).mean()), 3),
    }
    out["hunt_max"] = max(out.values())
    return out


def audit_probes(store: Store, task: str, setting: str) -> dict:
    """The audit's own ``partial_input`` and ``question_distance`` values and verdicts."""
    from procbench.audit import audit_sets

    report = audit_sets([f"{task}/{setting}"], store=store, probes=["partial_input", "question_distance"])
    out = {}
    for name, column in (("partial_input", "audit_partial"), ("question_distance", "audit_distance")):
        result = next(iter(report.sets.values())).probes[name]
        if result.value is None or result.ci is None:
            continue
        sign = "+" if result.ci[0] > (result.chance or 0) else "-" if result.ci[1] < (result.chance or 0) else ""
        out[column] = f"{result.value:.3f}{sign}"
    return out


def probe_set(store: Store, task: str, setting: str, items: Items, texts: Items | None) -> dict:
    qset = read_question_set(store.root / "questions" / task / setting)
    rows = qset.table().to_pylist()
    if task == "visual-ordering":
        return {**ordering_probes(rows, items), "distance_svm": distance_svm(store, task, setting)}
    textual = texts is not None
    batch, _ = question_batch(rows, items, textual)
    probs = ShortcutEnsemble(n_folds=5, seed=12345, models=("partial_input",)).fit(batch).predict(batch)
    out = {
        "questions": len(rows),
        "choice_only": round(choice_only_lr(batch), 3),
        "partial_input": round(float(hits(probs["partial_input"], batch.answers, batch.valid).mean()), 3),
        "rank_rule": round(rank_rule(batch), 3),
        "distance_svm": distance_svm(store, task, setting),
    }
    if texts is not None:
        out["context_ref"] = round(context_reference(rows, items, texts), 3)
        out.update(hunters(rows, batch))
    out.update(audit_probes(store, task, setting))
    return out


def text_table(store: Store, items: str) -> dict:
    field = "step_title" if items == "title" else "step_text"
    item_vectors, texts = Items(store, field), Items(store, "step_text")
    t0 = time.perf_counter()
    made = generate(store, "textual-cloze", sweep=True, seed=0, items=items, overwrite=True).paths
    took = time.perf_counter() - t0
    table = {s: probe_set(store, "textual-cloze", s, item_vectors, texts) for s in TEXT_SETTINGS if s in made}
    table["_generate_seconds"] = round(took, 1)
    return table


def visual_table(work: Path, n_procedures: int, drift: float = 0.0, store: Store | None = None) -> dict:
    """Every visual setting of a synthetic store of ``n_procedures`` (or of ``store``), probed."""
    from procbench.corpus.synthetic import write_synthetic_store

    if store is None:
        path = work / (f"visual-{n_procedures}" + (f"-drift{drift}" if drift else ""))
        if not path.exists():
            write_synthetic_store(path, n_procedures=n_procedures, seed=0, step_drift=drift)
        store = Store.open(path)
    items = Items(store, "image")
    out = {}
    for task in ("visual-cloze", "visual-coherence", "visual-ordering"):
        result = generate(store, task, sweep=True, seed=0, overwrite=True)
        for setting in sorted(result.paths):
            out[f"{task}/{setting}"] = probe_set(store, task, setting, items, None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/procbench-validity"))
    parser.add_argument("--recipeqa", type=Path, default=SHARED / "recipeqa-recipes" / "procedures.jsonl")
    parser.add_argument("--wikihow", type=Path, default=SHARED / "wikihow-openpi" / "procedures.jsonl")
    parser.add_argument("--visual-procedures", type=int, default=600)
    parser.add_argument(
        "--visual-drift",
        type=float,
        default=0.0,
        help="synthetic step drift (0: step images exchangeable; 0.5: the authored order is smoother, as in real "
        "procedures)",
    )
    parser.add_argument(
        "--skip",
        default="mixed",
        help="comma list of parts to skip: recipeqa,wikihow,mixed,visual,text-images [mixed]",
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    skip = set(args.skip.split(","))
    report: dict = {}
    if "recipeqa" not in skip:
        report["recipeqa-recipes (titles)"] = text_table(build_text_store(args.recipeqa, args.work), "title")
    if "wikihow" not in skip:
        report["wikihow-openpi (--items text)"] = text_table(build_text_store(args.wikihow, args.work), "text")
    if "mixed" not in skip:
        mixed = mixed_corpus(args.recipeqa, args.wikihow, args.work / "corpora" / "mixed" / "procedures.jsonl")
        report["recipeqa + wikihow with headlines (titles)"] = text_table(build_text_store(mixed, args.work), "title")
    if "visual" not in skip:
        drift = f", step drift {args.visual_drift}" if args.visual_drift else ""
        report[f"synthetic visual ({args.visual_procedures} procedures{drift})"] = visual_table(
            args.work, args.visual_procedures, args.visual_drift
        )
    if "text-images" not in skip:
        for source in (args.recipeqa, args.wikihow):
            text_store = build_text_store(source, args.work)
            images = text_as_image_store(text_store, args.work / f"{source.parent.name}-as-images")
            report[f"{source.parent.name}, step texts as images"] = visual_table(args.work, 0, store=images)
    for corpus, table in report.items():
        print(f"\n## {corpus}")
        cols = ["questions", "choice_only", "partial_input", "rank_rule", "distance_svm", "context_ref"]
        cols += ["hunt_max", "audit_partial", "audit_distance"]
        print("| setting | " + " | ".join(cols) + " |")
        print("|---" * (len(cols) + 1) + "|")
        for setting, row in table.items():
            if setting.startswith("_"):
                continue
            cells = [row.get(c) for c in cols]
            print(
                f"| {setting} | "
                + " | ".join("" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v) for v in cells)
                + " |"
            )
    (args.work / "validity.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
