"""Shared statistics for the probes: procedure-grouped folds, tie-aware multiple-choice scoring, a cluster
bootstrap over procedures, and the Jensen-Shannon divergence.

Every interval is a bootstrap over *procedures* (questions of one procedure are resampled together), so
questions that share a procedure never make an interval look tighter than it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "Bootstrap",
    "chance_level",
    "cv_rule_hits",
    "group_codes",
    "js_divergence",
    "mc_hits",
    "percentile_ci",
    "procedure_folds",
    "recentred_ci",
]

#: At most this many (replicate x procedure) weights are kept: the number of replicates shrinks for huge sets.
MAX_BOOTSTRAP_CELLS = 24_000_000
MIN_REPLICATES = 200


def group_codes(procedure_ids: Sequence[str]) -> tuple[np.ndarray, int]:
    """``(n,)`` int64 codes of the procedures (in sorted order of their ids) and how many there are."""
    uniques, codes = np.unique(np.asarray(procedure_ids, dtype=object).astype(str), return_inverse=True)
    return codes.astype(np.int64).reshape(-1), len(uniques)


def procedure_folds(codes: np.ndarray, n_groups: int, n_folds: int, seed: int) -> np.ndarray:
    """``(n,)`` fold of each question: procedures are shuffled (seeded) and dealt round-robin into ``n_folds``."""
    order = np.random.default_rng([seed, 0xF01D]).permutation(n_groups)
    fold_of_group = np.empty(n_groups, dtype=np.int64)
    fold_of_group[order] = np.arange(n_groups) % max(1, n_folds)
    return fold_of_group[codes]


def chance_level(valid: np.ndarray, rows: np.ndarray | None = None) -> float:
    """Expected accuracy of a uniform guess: the mean of ``1 / #choices`` over the (selected) questions."""
    counts = valid.sum(axis=1)
    if rows is not None:
        counts = counts[rows]
    counts = counts[counts > 0]
    return float(np.mean(1.0 / counts)) if len(counts) else float("nan")


def mc_hits(scores: np.ndarray, answers: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Credit of picking the highest-scoring valid choice: ``1/t`` when the answer is among ``t`` tied best
    choices, else 0 (so a constant score earns exactly chance). NaN scores never win.

    ``scores`` is ``(n, k)`` or ``(n, k, b)`` (``b`` scorings at once); the result is ``(n,)`` or ``(n, b)``.
    """
    extra = scores.ndim - 2
    v = valid.reshape(valid.shape + (1,) * extra)
    masked = np.where(v & ~np.isnan(scores), scores, -np.inf)
    best = masked.max(axis=1, keepdims=True)
    scale = np.maximum(1.0, np.abs(np.where(np.isfinite(best), best, 0.0)))
    top = v & (masked >= best - 1e-9 * scale)
    n_top = top.sum(axis=1)
    k = top.shape[1]
    ok = (answers >= 0) & (answers < k)
    hit = top[np.arange(len(answers)), np.clip(answers, 0, k - 1)]
    hit &= ok.reshape(ok.shape + (1,) * extra)
    return np.where(hit, 1.0 / np.maximum(n_top, 1), 0.0)


def cv_rule_hits(
    rules: dict[str, np.ndarray],
    answers: np.ndarray,
    valid: np.ndarray,
    folds: np.ndarray,
    rows: np.ndarray,
    bootstrap: Bootstrap | None = None,
) -> tuple[np.ndarray, dict[str, float], list[str], np.ndarray | None]:
    """Cross-validated accuracy of the best of several fixed scoring rules.

    On each fold the rule with the highest accuracy on the other folds is chosen and scored on this fold,
    so picking the best of several rules does not inflate the estimate. With a ``bootstrap`` the whole
    procedure (the choice per fold included) is repeated on every replicate.

    Returns:
        ``(n,)`` hits (zero outside ``rows``), each rule's accuracy on all ``rows``, the rule chosen per
        fold, and the ``(n_boot,)`` bootstrap replicates of the cross-validated accuracy (or None).
    """
    names = list(rules)
    per_rule = np.stack([mc_hits(rules[name], answers, valid) for name in names], axis=1)  # (n, R)
    per_rule[~rows] = 0.0
    hits = np.zeros(len(answers))
    chosen: list[str] = []
    fold_ids = np.unique(folds[rows])
    for fold in fold_ids:
        test = rows & (folds == fold)
        train = rows & (folds != fold)
        best = int(np.argmax(per_rule[train].mean(axis=0))) if train.any() else 0
        chosen.append(names[best])
        hits[test] = per_rule[test, best]
    overall = {name: float(per_rule[rows, r].mean()) for r, name in enumerate(names)}
    if bootstrap is None:
        return hits, overall, chosen, None
    weights = bootstrap.weights
    sums = bootstrap.group_sums(np.concatenate([per_rule, rows[:, None].astype(np.float64)], axis=1))
    group_fold = np.full(bootstrap.n_groups, -1)
    group_fold[bootstrap.codes] = folds
    per_fold = {f: weights[:, group_fold == f].astype(np.float64) @ sums[group_fold == f] for f in fold_ids}
    total = sum(per_fold.values())
    numerator = np.zeros(bootstrap.n_boot)
    denominator = np.zeros(bootstrap.n_boot)
    replicate = np.arange(bootstrap.n_boot)
    for fold in fold_ids:
        train = total - per_fold[fold]
        best_rules = np.argmax(train[:, :-1] / np.maximum(train[:, -1:], 1e-12), axis=1)
        numerator += per_fold[fold][replicate, best_rules]
        denominator += per_fold[fold][:, -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return hits, overall, chosen, numerator / denominator


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence (base 2, in [0, 1]) between count vectors along the last axis."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    p = p / np.maximum(p.sum(axis=-1, keepdims=True), 1e-300)
    q = q / np.maximum(q.sum(axis=-1, keepdims=True), 1e-300)
    m = 0.5 * (p + q)

    def kl(a: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(a > 0, a * np.log2(np.where(a > 0, a, 1.0) / np.where(m > 0, m, 1.0)), 0.0)
        return terms.sum(axis=-1)

    return np.clip(0.5 * kl(p) + 0.5 * kl(q), 0.0, 1.0)


class Bootstrap:
    """Seeded bootstrap replicates over procedures, shared by every probe of a set.

    Each replicate draws ``n_groups`` procedures with replacement; a statistic is recomputed from
    per-procedure sums weighted by how often each procedure was drawn. The weights are drawn once, so all
    probes of a set see the same replicates. The number of replicates is capped so that at most
    :data:`MAX_BOOTSTRAP_CELLS` weights are kept (never fewer than :data:`MIN_REPLICATES`).
    """

    def __init__(self, codes: np.ndarray, n_groups: int, *, n_boot: int, seed: int) -> None:
        self.codes = codes
        self.n_groups = max(1, n_groups)
        cap = max(MIN_REPLICATES, MAX_BOOTSTRAP_CELLS // self.n_groups)
        self.n_boot = int(max(1, min(n_boot, cap)))
        self.seed = seed
        self._weights: np.ndarray | None = None

    @property
    def weights(self) -> np.ndarray:
        """``(n_boot, n_groups)`` uint16 draw counts."""
        if self._weights is None:
            rng = np.random.default_rng([self.seed, 0xB007])
            out = np.empty((self.n_boot, self.n_groups), dtype=np.uint16)
            block = max(1, 2_000_000 // self.n_groups)
            for start in range(0, self.n_boot, block):
                b = min(block, self.n_boot - start)
                draws = rng.integers(0, self.n_groups, size=(b, self.n_groups))
                draws += (np.arange(b) * self.n_groups)[:, None]
                counts = np.bincount(draws.reshape(-1), minlength=b * self.n_groups)
                out[start : start + b] = np.minimum(counts, 65535).reshape(b, self.n_groups)
            self._weights = out
        return self._weights

    def group_sums(self, values: np.ndarray) -> np.ndarray:
        """Per-procedure sums of per-question ``values`` (``(n,)`` or ``(n, m)``) -> ``(n_groups, m)``."""
        values = np.asarray(values, dtype=np.float64)
        if values.ndim == 1:
            values = values[:, None]
        out = np.zeros((self.n_groups, values.shape[1]))
        np.add.at(out, self.codes, values)
        return out

    def replicate(self, values: np.ndarray) -> np.ndarray:
        """Bootstrap sums of per-question ``values`` (``(n,)`` or ``(n, m)``) -> ``(n_boot, m)``."""
        sums = self.group_sums(values)
        weights = self.weights
        out = np.empty((self.n_boot, sums.shape[1]))
        block = max(1, 4_000_000 // self.n_groups)
        for start in range(0, self.n_boot, block):
            out[start : start + block] = weights[start : start + block].astype(np.float64) @ sums
        return out

    def ratio(self, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
        """``(n_boot,)`` replicates of ``sum(numerator) / sum(denominator)``."""
        sums = self.replicate(np.stack([numerator, denominator], axis=1).astype(np.float64))
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums[:, 0] / sums[:, 1]

    def statistic(self, values: np.ndarray, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """``(n_boot,)`` replicates of ``fn`` applied to the bootstrap sums of ``values`` (``(n_boot, m)`` in)."""
        return np.asarray(fn(self.replicate(values)), dtype=np.float64)


def percentile_ci(replicates: np.ndarray, *, alpha: float = 0.05) -> tuple[float, float]:
    """The percentile interval of the finite replicates."""
    finite = replicates[np.isfinite(replicates)]
    if not len(finite):
        return float("nan"), float("nan")
    lo, hi = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def recentred_ci(estimate: float, replicates: np.ndarray, *, alpha: float = 0.05) -> tuple[float, float]:
    """The percentile interval moved so that the replicates' median sits on ``estimate``.

    For statistics that resampling itself biases (a divergence between two count vectors grows with
    resampling noise), the plain percentile interval sits above the estimate; re-centring keeps the
    interval's width from the bootstrap and its location from the data.
    """
    finite = replicates[np.isfinite(replicates)]
    if not len(finite):
        return float("nan"), float("nan")
    lo, mid, hi = np.quantile(finite, [alpha / 2, 0.5, 1 - alpha / 2])
    return float(max(0.0, estimate - (mid - lo))), float(estimate + (hi - mid))
