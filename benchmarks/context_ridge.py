"""How well does ``context-ridge`` read the context of visual ``needs-context`` sets (issue 55's headroom for photos)?

Run by hand on a scratch copy of an embedded photo store (generation writes into it):

    cp -r STORE /tmp/s && python benchmarks/context_ridge.py --store /tmp/s [--seeds 0-9] [--folds 5]

Per seed, the visual cloze and coherence ``needs-context`` sets are generated and every question is scored
cross-validated: procedures are dealt into folds, and each fold's questions are answered by a map fitted on the
other folds' procedures (:meth:`procbench.models.context_ridge.ContextRidge.fit_procedures`), so no question is
scored by a map that saw its steps. A set's own split gives 5-10% of its procedures to test, a handful of questions
on a development corpus; the folds score all of them. Reported: accuracy, mean over seeds with the SE over seeds,
and, pooled over seeds, the accuracy by quartile of the set's *photo closeness* (mean pairwise cosine of the four
photos; the issue's proposed visual level rule).
"""

from __future__ import annotations

import argparse
import zlib

import numpy as np

from procbench.generate import Setting, generate
from procbench.models.context_ridge import ContextRidge
from procbench.models.featurisation import featurise
from procbench.qsets.files import read_question_set
from procbench.store import Store

TASKS = ("visual-cloze", "visual-coherence")


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def score_set(store: Store, task: str, seed: int, folds: int) -> tuple[np.ndarray, np.ndarray]:
    """``(correct (Q,), closeness (Q,))`` for the seed's ``needs-context`` set, cross-validated by procedure."""
    result = generate(store, task, Setting("needs-context"), seed=seed, overwrite=True)
    qset = read_question_set(result.paths["needs-context"])
    feats = featurise(qset)
    names = qset.table().column("procedure_id").to_pylist()
    fold = np.array([zlib.crc32(f"{seed}:{n}".encode()) % folds for n in names])
    correct = np.zeros(len(names), dtype=bool)
    for f in range(folds):
        rows = np.flatnonzero(fold == f)
        if not len(rows):
            continue
        ridge = ContextRidge.fit_procedures(store, {n for n, g in zip(names, fold, strict=True) if g != f})
        correct[rows] = np.array(ridge.predict(feats, rows)) == feats.answer[rows]
    photos = feats.items[feats.choices[:, :, 0]].astype(np.float64)  # (Q, 4, D)
    photos /= np.maximum(np.linalg.norm(photos, axis=2, keepdims=True), 1e-12)
    cos = np.einsum("qid,qjd->qij", photos, photos)
    off = ~np.eye(cos.shape[1], dtype=bool)
    return correct, cos[:, off].mean(axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True)
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    store = Store.open(args.store)
    print("| task | questions per set | context-ridge accuracy (SE over seeds) | by photo-closeness quartile |")
    print("|---|---|---|---|")
    for task in TASKS:
        per_seed, pooled, closeness = [], [], []
        for seed in _seeds(args.seeds):
            correct, close = score_set(store, task, seed, args.folds)
            per_seed.append(correct.mean())
            pooled.append(correct)
            closeness.append(close)
        hits, close = np.concatenate(pooled), np.concatenate(closeness)
        edges = np.quantile(close, [0.25, 0.5, 0.75])
        quart = np.digitize(close, edges)
        by_quartile = ", ".join(
            f"q{i + 1} {hits[quart == i].mean():.1%} (n {int((quart == i).sum())})" for i in range(4)
        )
        se = np.std(per_seed, ddof=1) / np.sqrt(len(per_seed)) if len(per_seed) > 1 else float("nan")
        print(f"| {task} | {len(hits) / len(per_seed):.1f} | {np.mean(per_seed):.1%} ({se:.1%}) | {by_quartile} |")


if __name__ == "__main__":
    main()
