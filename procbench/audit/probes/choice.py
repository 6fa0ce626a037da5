"""``choice_only``: paper 004's hasty student that sees only the choices.

Each choice is scored from its own embedding by a linear discriminant: ``w = S^-1 m``, where ``m`` is the
mean, over training questions, of (correct choice - mean of the wrong choices) and ``S`` the
shrinkage-regularised covariance of all choice features (label-free). The highest-scoring choice is the
answer. ``value`` is the procedure-grouped cross-validated multiple-choice accuracy; ``chance`` the mean
of 1/#choices. Items are projected on their first 64 principal components first; for ordering tasks a
choice is the concatenation of its items' projections in order (so the model can learn, e.g., which
kind of image tends to come first).

The interval is a procedure bootstrap of the *whole* cross-validation: every replicate refits the
discriminant on its resampled training folds. (Bootstrapping only the cross-validated hits would ignore
that a fitted model's noise is shared by the questions it scores, and is too narrow for small sets.)
The discriminant's closed form makes those refits cheap.
"""

from __future__ import annotations

import numpy as np

from procbench.audit.auditset import AuditSet
from procbench.audit.context import ProbeContext
from procbench.audit.probes.common import choices_with_vectors, require_multiple_choice
from procbench.audit.registry import register
from procbench.audit.report import ProbeResult
from procbench.audit.stats import chance_level, mc_hits, percentile_ci
from procbench.shortcuts import contrasts, fit_discriminant

__all__ = ["choice_features", "choice_only"]

DIMS = 64
_BLOCK = 64


def choice_features(aset: AuditSet, reduced: np.ndarray) -> np.ndarray:
    """``(n, k, d)`` features of each choice: its item's reduced vector, or its items' in order (orders)."""
    choice = aset.index().choice
    n, k, length = choice.shape
    padded = np.vstack([reduced, np.zeros((1, reduced.shape[1]), dtype=reduced.dtype)])  # id -1 -> a zero row
    if length == 1:
        return padded[choice[:, :, 0]].astype(np.float64)
    per = max(4, min(reduced.shape[1], DIMS // length))
    return padded[:, :per][choice].reshape(n, k, length * per).astype(np.float64)


@register("choice_only", kind="accuracy", summary="classifier that sees only the choices (hasty student)")
def choice_only(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Cross-validated accuracy of a linear discriminant on the choices' embeddings alone."""
    require_multiple_choice(aset)
    _, found = aset.item_vectors()
    reduced = ctx.reduced_items(aset, DIMS)
    rows = choices_with_vectors(aset, found)
    ctx.require_cv(rows)
    valid = aset.index().valid
    answers = aset.answers
    features = choice_features(aset, reduced)
    inverse = fit_discriminant(features, valid, rows)
    diff = np.where(rows[:, None], contrasts(features, valid, answers), 0.0)

    # point estimate: one discriminant per fold, fitted on the other folds
    folds = ctx.folds
    fold_ids = np.unique(folds[rows])
    scores = np.full(valid.shape, np.nan)
    for fold in fold_ids:
        train = rows & (folds != fold)
        test = rows & (folds == fold)
        direction = inverse @ diff[train].mean(axis=0)
        scores[test] = features[test] @ direction
    hits = mc_hits(scores, answers, valid)
    value = float(hits[rows].mean())

    # bootstrap of the whole procedure: refit every fold's discriminant on every replicate
    boot = ctx.bootstrap
    weights = boot.weights  # (B, P)
    sums = boot.group_sums(np.concatenate([diff, rows[:, None].astype(np.float64)], axis=1))  # (P, d + 1)
    group_fold = np.full(boot.n_groups, -1)
    group_fold[ctx.codes] = folds
    per_fold = {f: weights[:, group_fold == f].astype(np.float64) @ sums[group_fold == f] for f in fold_ids}
    total = sum(per_fold.values())
    numerator = np.zeros(boot.n_boot)
    denominator = np.zeros(boot.n_boot)
    for fold in fold_ids:
        train = total - per_fold[fold]  # (B, d + 1)
        directions = (train[:, :-1] / np.maximum(train[:, -1:], 1e-12)) @ inverse.T  # (B, d)
        test = np.flatnonzero(rows & (folds == fold))
        flat = features[test].reshape(-1, features.shape[2])
        for start in range(0, boot.n_boot, _BLOCK):
            block = slice(start, start + _BLOCK)
            block_scores = (flat @ directions[block].T).reshape(len(test), valid.shape[1], -1)
            block_hits = mc_hits(block_scores, answers[test], valid[test])  # (m, b)
            w = weights[block][:, ctx.codes[test]].astype(np.float64)  # (b, m)
            numerator[block] += np.einsum("bm,mb->b", w, block_hits)
            denominator[block] += w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = numerator / denominator
    return ProbeResult(
        value,
        chance_level(valid, rows),
        percentile_ci(replicates),
        details={
            "n_used": int(rows.sum()),
            "n_skipped": int(len(aset) - rows.sum()),
            "n_folds": len(fold_ids),
            "n_boot": boot.n_boot,
            "model": "linear discriminant per choice (shrinkage covariance), argmax over choices",
            "features": f"choice embedding, first {reduced.shape[1]} principal components",
            "interval": "procedure bootstrap with the discriminant refitted in every replicate",
            "encoder": aset.encoder,
        },
    )
