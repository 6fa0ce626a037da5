"""What every probe of one set shares: folds, bootstrap replicates, reduced item features, and the
helpers that turn per-question hits into a result."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.report import ProbeResult
from procbench.audit.stats import Bootstrap, chance_level, group_codes, percentile_ci, procedure_folds
from procbench.shortcuts import MIN_CV_QUESTIONS, stratified_group_folds

__all__ = ["ProbeContext", "cv_choice_scores"]

#: Items used to fit the PCA and KMeans models (a seeded sample when a set has more).
FIT_SAMPLE = 20_000


@dataclass
class ProbeContext:
    """Shared state for the probes of one set.

    Attributes:
        seed: the audit seed (the same for every set, so a set's result does not depend on its neighbours).
        n_folds: folds of the procedure-grouped cross-validation actually used.
        codes: ``(n,)`` procedure code of each question; ``n_groups`` procedures.
        folds: ``(n,)`` fold of each question (a procedure's questions share a fold).
        bootstrap: replicates over procedures.
        trees: the partial-input probe's tree size, ``tree_iterations`` and ``tree_bins`` of
            :class:`procbench.shortcuts.ShortcutEnsemble` (empty: the ensemble's, 150 iterations over 255 bins).
    """

    seed: int
    n_folds: int
    codes: np.ndarray
    n_groups: int
    folds: np.ndarray
    bootstrap: Bootstrap
    cache: dict[str, Any] = field(default_factory=dict)
    trees: dict[str, int] = field(default_factory=dict)

    @classmethod
    def for_set(
        cls, aset: AuditSet, *, seed: int, n_boot: int, n_folds: int, trees: Mapping[str, int] | None = None
    ) -> ProbeContext:
        """Folds and bootstrap replicates for ``aset`` (``trees``: see :attr:`trees`)."""
        codes, n_groups = group_codes(aset.procedure_ids)
        folds_used = int(min(n_folds, n_groups))
        folds = procedure_folds(codes, n_groups, folds_used, seed)
        bootstrap = Bootstrap(codes, n_groups, n_boot=n_boot, seed=seed)
        return cls(seed, folds_used, codes, n_groups, folds, bootstrap, trees=dict(trees or {}))

    def stratified_folds(self, labels: np.ndarray) -> np.ndarray:
        """``(n,)`` folds like :attr:`folds` (a procedure's questions share one) in which each of ``labels (n,)``
        is about as common as in the whole set (scikit-learn's ``StratifiedGroupKFold``, seeded).

        A probe that can learn how common each label is (a rank-aware probe: the answer's distance rank) reads a
        set whose answers are spread exactly evenly over the labels *below* chance on unstratified folds: each
        training fold then holds most of what its test fold lacks (measured on signal-free sets balanced
        exactly over 4 ranks: 0.23 on average, 0.21 at worst, against 0.25 stratified). Stratify only by a label the
        set's generator deals evenly (the answer's embedding distance rank,
        :func:`~procbench.audit.probes.distance.answer_distance_ranks`): on any other label the folds carry the
        set's chance imbalance into every training fold and read it as a shortcut (the image probes stratified by
        their own ranks read 0.27-0.30 on sets whose answers carry nothing).
        """
        if self.n_folds < 2:
            return self.folds
        fold_of = stratified_group_folds(self.codes, labels, self.n_folds, self.seed)
        return np.array([fold_of[c] for c in self.codes.tolist()], dtype=np.int64)

    # -- results -----------------------------------------------------------------------------------------
    def accuracy(
        self,
        hits: np.ndarray,
        rows: np.ndarray,
        valid: np.ndarray,
        *,
        replicates: np.ndarray | None = None,
        details: dict[str, Any] | None = None,
        reference: bool = False,
    ) -> ProbeResult:
        """Mean of ``hits`` over ``rows`` with chance ``mean(1/#choices)`` and a procedure-bootstrap interval
        (of the hits, unless the probe brings its own ``replicates``); ``reference``: a context-using probe,
        never flagged."""
        rows = rows.astype(bool)
        value = float(hits[rows].mean())
        if replicates is None:
            replicates = self.bootstrap.ratio(np.where(rows, hits, 0.0), rows.astype(np.float64))
        info = {"n_used": int(rows.sum()), "n_folds": self.n_folds, "n_boot": self.bootstrap.n_boot}
        info.update(details or {})
        return ProbeResult(
            value, chance_level(valid, rows), percentile_ci(replicates), details=info, reference=reference
        )

    def require_cv(self, rows: np.ndarray) -> None:
        """Raise :class:`NotApplicable` when cross-validation cannot run on ``rows``."""
        if rows.sum() < MIN_CV_QUESTIONS:
            raise NotApplicable(
                f"too few usable questions ({int(rows.sum())}; at least {MIN_CV_QUESTIONS} are needed)"
            )
        if len(np.unique(self.folds[rows])) < 2:
            raise NotApplicable("too few procedures for procedure-grouped cross-validation (at least 2 are needed)")

    # -- shared features ---------------------------------------------------------------------------------
    def reduced_items(self, aset: AuditSet, dims: int = 64) -> np.ndarray:
        """``(u, r)`` item vectors projected on their first ``r <= dims`` principal components (zero rows for
        items without a vector). The PCA (an eigendecomposition of the covariance, signs fixed) is fitted on
        a seeded sample of items.

        Raises:
            NotApplicable: the set has no item vectors.
        """
        key = f"reduced:{dims}"
        if key in self.cache:
            return self.cache[key]
        matrix, found = aset.item_vectors()
        rows = np.flatnonzero(found)
        r = int(min(dims, matrix.shape[1], max(1, len(rows) - 1)))
        out = np.zeros((len(matrix), r), dtype=np.float32)
        if r < matrix.shape[1] and len(rows) > r:
            rng = np.random.default_rng([self.seed, 0xFCA])
            sample = rows if len(rows) <= FIT_SAMPLE else np.sort(rng.choice(rows, FIT_SAMPLE, replace=False))
            fit = matrix[sample].astype(np.float64)
            mean = fit.mean(axis=0)
            eigenvalues, eigenvectors = np.linalg.eigh(np.cov(fit, rowvar=False))
            basis = eigenvectors[:, np.argsort(-eigenvalues)[:r]]
            basis *= np.where(basis[np.abs(basis).argmax(axis=0), np.arange(r)] < 0, -1.0, 1.0)  # fixed signs
            out[rows] = ((matrix[rows] - mean) @ basis).astype(np.float32)
        else:
            out[rows] = matrix[rows, :r]
        self.cache[key] = out
        return out


def cv_choice_scores(
    features: np.ndarray,
    valid: np.ndarray,
    answers: np.ndarray,
    folds: np.ndarray,
    rows: np.ndarray,
    make_model: Callable[[], Any],
) -> np.ndarray:
    """Cross-validated per-choice scores: a binary model (correct vs wrong choice) is trained on the choices
    of the other folds and scores every choice of this fold; ``(n, k)``, NaN outside ``rows``.

    ``features`` is ``(n, k, d)``; the model needs ``fit`` and ``decision_function``.
    """
    n, k, d = features.shape
    scores = np.full((n, k), np.nan)
    correct = np.arange(k)[None, :] == answers[:, None]
    for fold in np.unique(folds[rows]):
        test = rows & (folds == fold)
        train = rows & (folds != fold)
        train_mask = valid & train[:, None]
        y = correct[train_mask]
        if not train.any() or y.all() or not y.any():
            continue
        model = make_model()
        model.fit(features[train_mask], y)
        test_mask = valid & test[:, None]
        scores[test_mask] = model.decision_function(features[test_mask])
    return scores
