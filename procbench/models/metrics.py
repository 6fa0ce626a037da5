"""Metrics: multiple-choice accuracy and the sequencing metrics of paper 000 (§5.1, §5.4), with bootstrap intervals.

Every metric is a mean over questions of a per-question value, so one bootstrap gives its interval;
evaluation resamples procedures (questions of one procedure are not independent), as the audit does.
Sequencing metrics compare a predicted order with each reference order and keep the best value over
references (highest, lowest for Dist), as paper 000 scores multi-reference instances.

Conventions (paper 000's tables use the same scale): Acc and PMR are fractions (tables show percent);
Dist is the sum over items of |predicted position - reference position| (≈ 8 for random 5-step orders,
0 when perfect); L_q and L_r are lengths in items; Kendall's tau is in [-1, 1].
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = [
    "METRICS",
    "SEQUENCING_METRICS",
    "MetricSpec",
    "bootstrap_ci",
    "chance_sequencing_scores",
    "kendall_tau",
    "longest_common_subsequence",
    "longest_common_substring",
    "position_distance",
    "sequence_scores",
    "sequencing_scores",
]


@dataclass(frozen=True)
class MetricSpec:
    """A metric's name, how tables label it, whether higher is better and whether tables show it in percent."""

    name: str
    label: str
    higher_is_better: bool = True
    percent: bool = False


METRICS: dict[str, MetricSpec] = {
    m.name: m
    for m in [
        MetricSpec("accuracy", "accuracy", percent=True),
        MetricSpec("acc", "Acc", percent=True),
        MetricSpec("pmr", "PMR", percent=True),
        MetricSpec("l_q", "L_q"),
        MetricSpec("l_r", "L_r"),
        MetricSpec("tau", "tau"),
        MetricSpec("dist", "Dist", higher_is_better=False),
    ]
}
#: The sequencing metrics, in paper 000's column order.
SEQUENCING_METRICS = ("acc", "pmr", "l_q", "l_r", "tau", "dist")


def longest_common_subsequence(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (L_q; items need not be adjacent)."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def longest_common_substring(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest run of items that ``a`` and ``b`` share consecutively (L_r)."""
    best = 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            run = previous[j] + 1 if x == y else 0
            current.append(run)
            best = max(best, run)
        previous = current
    return best


def kendall_tau(predicted: Sequence[Hashable], reference: Sequence[Hashable]) -> float:
    """``1 - 2 * inversions / pairs`` over the items of ``reference`` (1.0 for fewer than two items)."""
    position = {x: i for i, x in enumerate(predicted)}
    ranks = [position[x] for x in reference]
    n = len(ranks)
    if n < 2:
        return 1.0
    inversions = sum(1 for i in range(n) for j in range(i + 1, n) if ranks[i] > ranks[j])
    return 1.0 - 2.0 * inversions / (n * (n - 1) / 2)


def position_distance(predicted: Sequence[Hashable], reference: Sequence[Hashable]) -> int:
    """Sum over items of |position in ``predicted`` - position in ``reference``| (Dist; Spearman's footrule)."""
    position = {x: i for i, x in enumerate(predicted)}
    return sum(abs(position[x] - i) for i, x in enumerate(reference))


def sequence_scores(predicted: Sequence[Hashable], reference: Sequence[Hashable]) -> dict[str, float]:
    """Every sequencing metric of one predicted order against one reference order (same items)."""
    if sorted(map(repr, predicted)) != sorted(map(repr, reference)):
        raise ValueError(f"prediction {list(predicted)} is not an order of the reference's items {list(reference)}")
    n = len(reference)
    return {
        "acc": sum(p == r for p, r in zip(predicted, reference, strict=True)) / n if n else 1.0,
        "pmr": float(list(predicted) == list(reference)),
        "l_q": float(longest_common_subsequence(predicted, reference)),
        "l_r": float(longest_common_substring(predicted, reference)),
        "tau": kendall_tau(predicted, reference),
        "dist": float(position_distance(predicted, reference)),
    }


def sequencing_scores(predicted: Sequence[Hashable], references: Sequence[Sequence[Hashable]]) -> dict[str, float]:
    """The best value of each metric over ``references`` (max; min for Dist), as paper 000 §5.4."""
    if not references:
        raise ValueError("a sequencing question needs at least one reference order")
    per_reference = [sequence_scores(predicted, r) for r in references]
    return {
        name: (max if METRICS[name].higher_is_better else min)(s[name] for s in per_reference)
        for name in SEQUENCING_METRICS
    }


def _canonical(references: Sequence[Sequence[Hashable]]) -> tuple[tuple[int, ...], ...]:
    """References relabelled so the first one is 0..n-1 (chance scores depend only on this)."""
    label = {x: i for i, x in enumerate(references[0])}
    return tuple(tuple(label[x] for x in r) for r in references)


@lru_cache(maxsize=1024)
def _chance_canonical(references: tuple[tuple[int, ...], ...], samples: int) -> tuple[float, ...]:
    n = len(references[0])
    if n <= 7:
        orders: list[tuple[int, ...]] | np.ndarray = list(itertools.permutations(range(n)))
    else:  # 8! orders and more: a fixed-seed sample of random orders
        rng = np.random.default_rng(n)
        orders = [tuple(int(i) for i in rng.permutation(n)) for _ in range(samples)]
    totals = dict.fromkeys(SEQUENCING_METRICS, 0.0)
    for order in orders:
        for name, value in sequencing_scores(order, references).items():
            totals[name] += value
    return tuple(totals[name] / len(orders) for name in SEQUENCING_METRICS)


def chance_sequencing_scores(references: Sequence[Sequence[Hashable]], *, samples: int = 5000) -> dict[str, float]:
    """Expected metrics of a uniformly random order: exact (every order) up to 7 items, sampled beyond."""
    values = _chance_canonical(_canonical(references), samples)
    return dict(zip(SEQUENCING_METRICS, values, strict=True))


def bootstrap_ci(
    values: np.ndarray,
    groups: np.ndarray | None = None,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    rng: np.random.Generator,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of ``values`` (one per question).

    With ``groups`` (e.g. the procedure of each question) whole groups are resampled with replacement, so
    questions that share a procedure move together (the interval then reflects how many procedures, not
    questions, the set holds); without, questions are resampled. None when there are no values or
    ``resamples`` is 0.
    """
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0 or resamples <= 0:
        return None
    if groups is None:
        sums, counts = values, np.ones(len(values))
    else:
        _, labels = np.unique(np.asarray(groups), return_inverse=True)
        sums = np.bincount(labels, weights=values)
        counts = np.bincount(labels).astype(np.float64)
    n = len(sums)
    means = np.empty(resamples)
    block = max(1, 2_000_000 // n)
    for start in range(0, resamples, block):
        size = min(block, resamples - start)
        picks = rng.integers(0, n, size=(size, n))
        means[start : start + size] = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(lo), float(hi)
