"""AFLite's loop (Le Bras et al. 2020, "Adversarial Filters of Dataset Biases"), the one both users share.

Score the questions left with models that never saw them (cross-fitted over random procedure partitions),
drop the ``step`` most predictable, repeat until the scorer says stop or ``floor`` questions are left.
Adversarial filtering's pruning (:func:`procbench.generate.adversarial.prune.prune_predictable`: the
context-free probes, stop at chance) and ``procbench filter --aflite`` (:func:`procbench.audit.aflite.aflite_filter`:
linear or tree models over precomputed features, a predictability threshold) differ only in their scorer. It
lives below both packages, so the audit imports nothing from ``generate``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["Ranker", "aflite_rounds"]

#: ``rank(active) -> (rows, done)``: the active questions that may be dropped, most predictable first, and whether
#: to stop here (the scorer's own rule: at chance, nothing predictable enough, the target reached).
Ranker = Callable[[np.ndarray], tuple[np.ndarray, bool]]


def aflite_rounds(
    rank: Ranker, n: int, *, step: int, floor: int, dropped: Callable[[np.ndarray], None] | None = None
) -> np.ndarray:
    """``(n,)`` the questions left: each round drops the first ``step`` rows of ``rank``'s order, never going below
    ``floor`` questions; ``dropped(rows)`` is told each round's drop."""
    active = np.ones(n, dtype=bool)
    while True:
        order, done = rank(active)
        drop = min(step, int(active.sum()) - floor, len(order))
        if done or drop <= 0:
            return active
        active[order[:drop]] = False
        if dropped is not None:
            dropped(order[:drop])
