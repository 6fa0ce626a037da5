"""K3=2 knob settings pruned AFLite-style: the drawn questions the context-free probes still solve are dropped.

K3=2 (rank-uniform) draws each question's negatives by the paper's K1 and K2 rules at a dealt closeness rank, and
replaces none: on real photos a few questions of every such set stay solvable without the context (the answer
photo shares its neighbours' desk and light, the authored order's first and last photos are typical of their
places). AFLite (Le Bras et al. 2020) drops them: the probes the ``adversarial`` filter plays against (the audit's
context-free probes and the task's image or path-length probes, :mod:`.adversarial`), cross-fitted on procedure
folds, score every question; the most predictable are dropped a step at a time, equally many at every answer rank
(the ranks stay uniform), until every probe is within noise of chance or ``min_yield`` of the drawn questions are
left (:data:`~procbench.generate.adversarial.RANK_UNIFORM_YIELD` unless ``--rank-yield`` says otherwise). Every
kept question is the one drawn: its knobs hold as drawn. docs/adversarial.md is the specification.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from procbench.generate.adversarial import AdversarialPolicy, Arena, prune_drawn
from procbench.generate.visual.adversarial import (
    ImageRelations,
    cloze_probe_features,
    coherence_probe_features,
    image_clusters,
    image_probes,
    order_features,
    order_vectors,
    path_lengths,
    path_probe,
    shorter_orders,
)
from procbench.generate.visual.columns import QuestionColumns
from procbench.generate.visual.sequences import VisualData

__all__ = ["prune_cloze", "prune_coherence", "prune_ordering"]


def _unit(data: VisualData) -> np.ndarray:
    vectors = np.asarray(data.vectors, dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _no_candidates(n_q: int) -> np.ndarray:
    return np.full((n_q, 1), -1, dtype=np.int64)


def _pruned(
    cols: QuestionColumns, arena: Arena, ranks: np.ndarray, options: AdversarialPolicy, seed: int
) -> dict[str, Any]:
    """Prune the set ``arena`` holds by rank stratum, keep its questions in ``cols``; the account."""
    kept, account = prune_drawn(arena, options, strata=ranks, seed=seed)
    cols.keep(kept)
    return account


def prune_cloze(cols: QuestionColumns, data: VisualData, *, seed: int, options: AdversarialPolicy) -> dict[str, Any]:
    """Drop the K3=2 visual-cloze questions the probes still solve (answer ranks kept uniform); the account."""
    answers, items, negatives = cols.get("answer_row"), cols.get("items"), cols.get("neg_rows")
    shown = np.where(items >= data.n_rows, -1, items)
    mask = shown >= 0
    unit = _unit(data)
    relations = ImageRelations(data, np.concatenate([answers[:, None], shown, negatives], axis=1))
    arena = Arena(
        vectors=unit,
        identity=np.arange(data.n_rows, dtype=np.int64),
        answers=answers,
        question_items=shown,
        negatives=negatives,
        candidates=_no_candidates(len(answers)),
        groups=cols.get("proc"),
        clusters=image_clusters(np.asarray(data.vectors, dtype=np.float32), seed),
        placeholder=np.where(mask.all(axis=1), -1, np.argmin(mask, axis=1)),
        features=cloze_probe_features(unit, relations) if relations.any else None,
        probes=image_probes() if relations.any else None,
    )
    ranks = (cols.get("neg_d_question") < cols.get("d_answer_question")[:, None]).sum(axis=1)
    return _pruned(cols, arena, ranks, options, seed)


def prune_coherence(
    cols: QuestionColumns, data: VisualData, *, seed: int, options: AdversarialPolicy
) -> dict[str, Any]:
    """Drop the K3=2 visual-coherence questions the probes still solve (intruder ranks kept uniform); the account."""
    coherent, intruders = cols.get("coherent_rows"), cols.get("pick")
    relations = ImageRelations(data, np.concatenate([coherent, intruders[:, None]], axis=1))
    arena = Arena(
        vectors=_unit(data),
        identity=np.arange(data.n_rows, dtype=np.int64),
        answers=intruders,
        question_items=_no_candidates(len(intruders)),
        negatives=coherent,
        candidates=_no_candidates(len(intruders)),
        groups=cols.get("proc"),
        clusters=image_clusters(np.asarray(data.vectors, dtype=np.float32), seed),
        features=coherence_probe_features(relations) if relations.any else None,
        probes=image_probes() if relations.any else None,
    )
    return _pruned(cols, arena, cols.get("answer_rank"), options, seed)


def prune_ordering(
    cols: QuestionColumns, data: VisualData, *, seed: int, options: AdversarialPolicy
) -> dict[str, Any]:
    """Drop the K3=2 visual-ordering questions the probes still solve (path-length ranks kept uniform); the
    account."""
    rows, picked = cols.get("rows"), cols.get("neg_order") + 1  # indices into the orders, the authored one 0
    n_q = len(rows)
    scores = path_lengths(data.gather(rows)).reshape(-1)
    base = np.arange(n_q, dtype=np.int64)[:, None] * 24
    arena = Arena(
        vectors=order_vectors(data, rows),
        identity=np.arange(n_q * 24, dtype=np.int64),
        answers=base[:, 0],
        question_items=_no_candidates(n_q),
        negatives=base + picked,
        candidates=_no_candidates(n_q),
        groups=cols.get("proc"),
        features=lambda batch: order_features(batch, scores),
        probes=path_probe(),
    )
    ranks = shorter_orders(cols.get("neg_score"), cols.get("answer_score")).sum(axis=1)
    return _pruned(cols, arena, ranks, options, seed)
