"""Exchangeable choices: questions whose answer only the context gives (the ``needs-context`` settings).

A question's choices are ``size`` items of one procedure, drawn uniformly among the sets a rule keeps, and the
answer is drawn uniformly among them. When the rule is symmetric in the items (it looks at the set, never at
which item is the answer), the choices are exchangeable given anything a reader without the context sees: each
is the answer with probability ``1 / size``, so no context-free reader, person, probe or language model, beats
chance in expectation (the reason SWAG draws negatives from the answer's own distribution, Zellers et al. 2018).
The rule's job is the other half: with the context, a reader must be able to tell the items apart.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

__all__ = ["SIZE", "draw", "fit_margins", "symmetric_sets"]

#: Items per question (the answer and three negatives).
SIZE = 4


def symmetric_sets(
    n: int,
    *,
    apart: list[tuple[np.ndarray, float]],
    fit: np.ndarray | None = None,
    slack: float = 0.0,
    size: int = SIZE,
) -> np.ndarray:
    """``(K, size)`` every set of ``size`` of ``n`` items the rule keeps, as sorted item positions.

    Args:
        apart: ``(similarity (n, n), bound)`` pairs: every two items of a set are below each bound (a pair that
            must never meet can be given ``inf``).
        fit: ``(n, n)``: ``fit[i, j]`` how well item ``j`` answers item ``i``'s context; every item of a set fits
            its own context within ``slack`` of the best other item of the set.
    """
    if n < size:
        return np.zeros((0, size), dtype=np.int64)
    sets = np.array(list(combinations(range(n), size)), dtype=np.int64)
    off = ~np.eye(size, dtype=bool)
    keep = np.ones(len(sets), dtype=bool)
    for similarity, bound in apart:
        pairs = np.asarray(similarity, dtype=np.float64)[sets[:, :, None], sets[:, None, :]][:, off]
        keep &= (pairs < bound).all(axis=1)
    if fit is not None:
        keep &= (-fit_margins(fit, sets) <= slack).all(axis=1)
    return sets[keep]


def fit_margins(fit: np.ndarray, sets: np.ndarray) -> np.ndarray:
    """``(K, size)`` how much better each item of a set fits its own context than the best other item of the set.

    Args:
        fit: ``(n, n)``: ``fit[i, j]`` how well item ``j`` answers item ``i``'s context.
        sets: ``(K, size)`` item positions.
    """
    size = sets.shape[1]
    within = np.asarray(fit, dtype=np.float64)[sets[:, :, None], sets[:, None, :]]
    own = within[:, np.arange(size), np.arange(size)]
    return own - np.where(~np.eye(size, dtype=bool), within, -np.inf).max(axis=2)


def draw(sets: np.ndarray, stream: np.random.Generator) -> tuple[list[int], int] | None:
    """One set uniformly among ``sets`` and the answer uniformly among its items: ``(items, answer position)``."""
    if not len(sets):
        return None
    chosen = sets[int(stream.integers(len(sets)))].tolist()
    return chosen, int(stream.integers(len(chosen)))
