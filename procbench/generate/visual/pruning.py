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
    cloze_arena,
    coherence_arena,
    image_clusters,
    order_arena,
    path_lengths,
    shorter_orders,
)
from procbench.generate.visual.columns import QuestionColumns
from procbench.generate.visual.sequences import VisualData
from procbench.progress import SILENT, Progress

__all__ = ["prune_cloze", "prune_coherence", "prune_ordering"]


def _pruned(
    cols: QuestionColumns, arena: Arena, ranks: np.ndarray, options: AdversarialPolicy, seed: int, progress: Progress
) -> dict[str, Any]:
    """Prune the set ``arena`` holds by rank stratum, keep its questions in ``cols``; the account."""
    kept, account = prune_drawn(arena, options, strata=ranks, seed=seed, progress=progress)
    cols.keep(kept)
    return account


def prune_cloze(
    cols: QuestionColumns, data: VisualData, *, seed: int, options: AdversarialPolicy, progress: Progress = SILENT
) -> dict[str, Any]:
    """Drop the K3=2 visual-cloze questions the probes still solve (answer ranks kept uniform); the account."""
    answers, items, negatives = cols.get("answer_row"), cols.get("items"), cols.get("neg_rows")
    shown = np.where(items >= data.n_rows, -1, items)
    relations = ImageRelations(data, np.concatenate([answers[:, None], shown, negatives], axis=1))
    arena = cloze_arena(data, cols.get("proc"), answers, shown, negatives, relations, seed=seed)
    ranks = (cols.get("neg_d_question") < cols.get("d_answer_question")[:, None]).sum(axis=1)
    return _pruned(cols, arena, ranks, options, seed, progress)


def prune_coherence(
    cols: QuestionColumns, data: VisualData, *, seed: int, options: AdversarialPolicy, progress: Progress = SILENT
) -> dict[str, Any]:
    """Drop the K3=2 visual-coherence questions the probes still solve (intruder ranks kept uniform); the account."""
    coherent, intruders = cols.get("coherent_rows"), cols.get("pick")
    relations = ImageRelations(data, np.concatenate([coherent, intruders[:, None]], axis=1))
    clusters = image_clusters(np.asarray(data.vectors, dtype=np.float32), seed)
    arena = coherence_arena(data, cols.get("proc"), coherent, intruders, relations, clusters)
    return _pruned(cols, arena, cols.get("answer_rank"), options, seed, progress)


def prune_ordering(
    cols: QuestionColumns, data: VisualData, *, seed: int, options: AdversarialPolicy, progress: Progress = SILENT
) -> dict[str, Any]:
    """Drop the K3=2 visual-ordering questions the probes still solve (path-length ranks kept uniform); the
    account."""
    rows = cols.get("rows")
    scores = path_lengths(data.gather(rows))
    arena = order_arena(data, cols.get("proc"), rows, cols.get("neg_order") + 1, scores)  # the authored order is 0
    ranks = shorter_orders(cols.get("neg_score"), cols.get("answer_score")).sum(axis=1)
    return _pruned(cols, arena, ranks, options, seed, progress)
