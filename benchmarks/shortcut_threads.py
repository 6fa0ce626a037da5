"""The shortcut probes' folds fitted side by side: :class:`procbench.shortcuts.ShortcutEnsemble` with one thread
against ``--workers`` threads, at several set sizes (this sets ``THREADED_FIT_QUESTIONS``).

Run by hand: ``python benchmarks/shortcut_threads.py [--store STORE --set TASK/SETTING] [--sizes 48,100,...]``.

The batch is the first N questions of a visual set of ``--store`` (its image embeddings, as the audit reads them),
or without ``--store`` a synthetic batch of 4 choices and 3 question items in 1,280 dimensions (efficientnet-lite0's).
Each size is fitted ``--repeats`` times per thread count, alternating, with the filter's probes (every model, the
question-distance one included, at most 2,000 questions per fold); the best wall time of each is printed, their
ratio, and whether the two fits' held-out probabilities are identical (they must be).
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from procbench.shortcuts import DISTANCE_MODEL, MODELS, ChoiceBatch, ShortcutEnsemble, choice_features


def synthetic_batch(n: int, dim: int = 1280, seed: int = 0) -> ChoiceBatch:
    """``n`` questions of 3 items and 4 choices, the answer a little nearer the question's topic."""
    rng = np.random.default_rng(seed)

    def unit(x: np.ndarray) -> np.ndarray:
        return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)

    topics = unit(rng.normal(size=(n, dim)))
    items = unit(topics[:, None, :] + 0.8 * rng.normal(size=(n, 3, dim)) / np.sqrt(dim) * 10)
    choices = unit(rng.normal(size=(n, 4, dim)))
    answers = rng.integers(0, 4, n)
    choices[np.arange(n), answers] = unit(topics + rng.normal(size=(n, dim)) / np.sqrt(dim) * 12)
    return ChoiceBatch(
        choice_vectors=choices,
        question_vectors=items,
        question_mask=np.ones((n, 3), dtype=bool),
        valid=np.ones((n, 4), dtype=bool),
        answers=answers,
        groups=np.arange(n) // 3,
    )


def store_batch(store: str, name: str) -> ChoiceBatch:
    """The usable questions of set ``name`` of ``store`` as the audit's probes see them."""
    from procbench.audit.context import ProbeContext
    from procbench.audit.loaders import load_question_set
    from procbench.audit.probes.shortcut import choice_batch

    aset = load_question_set(name, store=store)
    return choice_batch(aset, ProbeContext.for_set(aset, seed=0, n_boot=10, n_folds=5))[0]


def head(batch: ChoiceBatch, n: int) -> ChoiceBatch:
    """The first ``n`` questions of ``batch``."""
    fields = {}
    for field in dataclasses.fields(batch):
        value = getattr(batch, field.name)
        fields[field.name] = value[:n] if isinstance(value, np.ndarray | list) and len(value) == len(batch) else value
    return ChoiceBatch(**fields)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=None)
    parser.add_argument("--set", default="visual-cloze/knobs-012")
    parser.add_argument("--sizes", default="48,100,200,400,800,1400")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    full = store_batch(args.store, args.set) if args.store else synthetic_batch(max(sizes))
    for n in sizes:
        batch = head(full, min(n, len(full)))
        features = choice_features(batch)
        best: dict[int, float] = {}
        probs: dict[int, dict[str, np.ndarray]] = {}
        for _ in range(args.repeats):
            for workers in (1, args.workers):
                ensemble = ShortcutEnsemble(
                    seed=3, models=(*MODELS, DISTANCE_MODEL), max_fit_questions=2000, workers=workers
                )
                started = time.perf_counter()
                ensemble.fit(batch, features)
                best[workers] = min(best.get(workers, np.inf), time.perf_counter() - started)
                probs[workers] = ensemble.predict(batch, features)
        same = all(np.array_equal(probs[1][k], probs[args.workers][k]) for k in probs[1])
        print(
            f"questions={len(batch)} one_thread_s={best[1]:.3f} threads_{args.workers}_s={best[args.workers]:.3f} "
            f"speedup={best[1] / best[args.workers]:.2f} identical={same}",
            flush=True,
        )


if __name__ == "__main__":
    main()
