"""``partial_input``: gradient-boosted trees over per-choice features that need no context.

The features are :func:`procbench.shortcuts.choice_features`: each choice's distance to the question mean
(a question that shows no items, as coherence's: to the mean of the other choices), to the nearest question
item, to the items next to the placeholder and to the other choices (odd one out), each as a value, centred
and standardised within the question and as its rank among the choices; for text choices their length and
word overlap with the question items; how often the item, and its KMeans cluster,
is a choice in the set. A
``HistGradientBoostingClassifier`` (correct vs wrong choice) is cross-fitted over procedure-grouped folds
(:class:`procbench.shortcuts.ShortcutEnsemble`, the same ensemble generation filters against): every
question is scored by a model that never saw its procedure, and the highest-probability choice is the
answer. ``value`` is that accuracy, ``chance`` the mean of 1/#choices, the interval a procedure bootstrap
of the cross-fitted hits (refitting the trees per replicate would cost a thousand fits).

This module also turns an :class:`~procbench.audit.auditset.AuditSet` into a
:class:`~procbench.shortcuts.ChoiceBatch` (:func:`choice_batch`) and computes, once per set, the
cross-fitted probabilities the per-question shortcut scores are made of (:func:`shortcut_probabilities`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.context import ProbeContext
from procbench.audit.probes.common import choices_with_vectors, require_multiple_choice
from procbench.audit.registry import register
from procbench.audit.report import ProbeResult
from procbench.audit.stats import mc_hits
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.shortcuts import FEATURE_NAMES, MODELS, ChoiceBatch

__all__ = ["ShortcutProbabilities", "choice_batch", "partial_input", "shortcut_probabilities"]

#: Choice items are clustered (KMeans) into at most this many clusters for the cluster-frequency feature.
N_CLUSTERS = 16


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.where(norms > 0, matrix / np.maximum(norms, 1e-12), 0.0).astype(np.float32)


def _clusters(aset: AuditSet, ctx: ProbeContext, items: np.ndarray) -> np.ndarray | None:
    """``(u,)`` KMeans cluster of every choice item in ``items`` (-1 elsewhere), None when too few items."""
    from procbench.audit.probes.cluster import DIMS, cluster_items  # here: the cluster probe registers later

    n_clusters = int(min(N_CLUSTERS, max(2, len(items) // 20)))
    if len(items) < 2 * n_clusters:
        return None
    return cluster_items(ctx.reduced_items(aset, DIMS), items, n_clusters, ctx.seed)


def choice_batch(aset: AuditSet, ctx: ProbeContext) -> tuple[ChoiceBatch, np.ndarray]:
    """The usable questions of ``aset`` as a :class:`ChoiceBatch`, and the ``(n,)`` mask of those questions.

    Usable: multiple choice over single items (not orders), every choice with a vector, enough questions
    and procedures to cross-fit. Vectors are L2-normalised; ``groups`` are the procedures; text sets bring
    their texts (length and word-overlap features); ``choice_ids`` are item ids and ``clusters`` the
    choice items' KMeans clusters (frequency features).

    Raises:
        NotApplicable: the set does not allow per-choice context-free features.
    """
    require_multiple_choice(aset)
    if aset.kind.ordering:
        raise NotApplicable(f"{aset.task} choices are orders of items: per-choice features do not apply")
    matrix, found = aset.item_vectors()
    rows = choices_with_vectors(aset, found)
    ctx.require_cv(rows)
    index = aset.index()
    sel = np.flatnonzero(rows)
    padded = np.vstack([_unit(matrix), np.zeros((1, matrix.shape[1]), dtype=np.float32)])  # id -1 -> zeros
    valid = index.valid[sel]
    choice = np.where(valid, index.choice[sel, :, 0], -1)
    question = index.question[sel]
    shown = (question >= 0) & found[np.maximum(question, 0)]
    items = np.unique(choice[choice >= 0])
    labels = _clusters(aset, ctx, items)
    clusters = None if labels is None else np.where(choice >= 0, labels[np.maximum(choice, 0)], -1)
    texts = aset.kind.items == "text"
    batch = ChoiceBatch(
        choice_vectors=padded[choice],
        question_vectors=padded[np.where(shown, question, -1)],
        question_mask=shown,
        valid=valid,
        answers=aset.answers[sel],
        groups=ctx.codes[sel],
        choice_texts=[[str(c) for c in aset.choices[i]] for i in sel] if texts else None,
        question_texts=[[str(x) for x in aset.questions[i] if x != PLACEHOLDER] for i in sel] if texts else None,
        choice_ids=choice,
        clusters=clusters,
        placeholder=np.array([_slot(aset.questions[i]) for i in sel], dtype=np.int64),
    )
    return batch, rows


def _slot(items: Sequence[object]) -> int:
    """Where the placeholder stands among a question's items (-1: none)."""
    return next((j for j, item in enumerate(items) if item == PLACEHOLDER), -1)


@dataclass
class ShortcutProbabilities:
    """Cross-fitted within-question probabilities of the context-free probes for the usable questions.

    Attributes:
        rows: ``(n,)`` the questions scored.
        probs: model name -> ``(n, k)`` probabilities (NaN outside ``rows``); ``ensemble`` is the mean of
            the models fitted.
        n_folds: procedure-grouped folds of the cross-fitting.
    """

    rows: np.ndarray
    probs: dict[str, np.ndarray]
    n_folds: int


def shortcut_probabilities(
    aset: AuditSet, ctx: ProbeContext, models: tuple[str, ...] = ("partial_input",)
) -> ShortcutProbabilities:
    """Fit the :class:`~procbench.shortcuts.ShortcutEnsemble` (``models`` of it) on the set with cross-fitting
    and score every usable question; cached on ``ctx``, so a later call for fewer models reuses the fit.

    Raises:
        NotApplicable: see :func:`choice_batch`.
    """
    cached = ctx.cache.get("shortcuts")
    if isinstance(cached, ShortcutProbabilities) and set(models) <= set(cached.probs):
        return cached
    from procbench.shortcuts import ShortcutEnsemble, choice_features

    batch, rows = choice_batch(aset, ctx)
    wanted = tuple(m for m in MODELS if m in models)
    default = ShortcutEnsemble()
    ensemble = ShortcutEnsemble(
        n_folds=ctx.n_folds,
        seed=ctx.seed,
        models=wanted,
        tree_iterations=ctx.trees.get("tree_iterations", default.tree_iterations),
        tree_bins=ctx.trees.get("tree_bins", default.tree_bins),
    )
    features = choice_features(batch)
    predicted = ensemble.fit(batch, features).predict(batch, features)
    shape = aset.index().valid.shape
    probs = {}
    for name, values in predicted.items():
        full = np.full(shape, np.nan)
        full[rows] = values
        probs[name] = full
    result = ShortcutProbabilities(rows, probs, len(set(ensemble.fold_of.values())))
    ctx.cache["shortcuts"] = result
    return result


def tree_size(trees: Mapping[str, int]) -> str:
    """The partial-input trees' size in words, as a report states it (``trees``: :attr:`ProbeContext.trees`)."""
    from procbench.shortcuts import ShortcutEnsemble

    default = ShortcutEnsemble()
    iterations = trees.get("tree_iterations", default.tree_iterations)
    bins = trees.get("tree_bins", default.tree_bins)
    return f"{iterations} boosting iterations over {bins} bins per feature"


@register("partial_input", kind="accuracy", summary="gradient-boosted trees on context-free per-choice features")
def partial_input(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Cross-fitted accuracy of gradient-boosted trees on each choice's context-free features."""
    scored = shortcut_probabilities(aset, ctx)
    valid = aset.index().valid
    hits = mc_hits(scored.probs["partial_input"], aset.answers, valid)
    return ctx.accuracy(
        hits,
        scored.rows,
        valid,
        details={
            "model": "HistGradientBoostingClassifier per choice (correct vs wrong), argmax over choices",
            "features": list(FEATURE_NAMES),
            "cross_fitting": f"{scored.n_folds} procedure-grouped folds (procbench.shortcuts.ShortcutEnsemble)",
            "trees": tree_size(ctx.trees),
            "interval": "procedure bootstrap of the cross-fitted hits",
            "encoder": aset.encoder,
            "n_skipped": int(len(aset) - scored.rows.sum()),
        },
    )
