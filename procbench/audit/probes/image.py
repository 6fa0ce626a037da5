"""Probes that read the image files the way a shortcut does: ``colour_layout`` and ``near_duplicate``.

Both apply to multiple-choice sets whose items are images (visual cloze, visual coherence), found as store
image ids (the set folder's store) or as image file paths. Each choice is related to its *reference*
images: the question's images, or (a question that shows none, visual coherence) the other choices.

* ``colour_layout``: the choice's distance, in standardised colour and layout statistics
  (:func:`procbench.image_stats.colour_layout_stats`), to the reference images' mean and to the nearest
  reference image. An answer photo taken under the same light or on the same desk as its neighbours sits
  closer than photos from other procedures.
* ``near_duplicate``: the choice's highest dHash agreement and highest thumbnail correlation with any
  reference image (:func:`procbench.image_stats.near_duplicate_similarity`). An answer that is a re-crop or
  near copy of a neighbour stands out.

Either way a linear SVM scores each choice from these relations, each centred, squared, standardised
within the question and ranked (one-hot), as ``question_distance`` does with embedding distances; the
highest-scoring choice is the answer, cross-validated over procedure-grouped folds stratified by the answer's
embedding distance rank, as ``question_distance``'s (the rank K3 = 2 deals evenly; plain procedure folds when the
set has no embeddings). Stratified by the probe's own rank, which no generator deals evenly, the folds read a set's
chance imbalance between those ranks as a shortcut: on the build guides' visual ``adversarial`` sets with their
answers moved to random choices (ranks still dealt evenly), both probes read 0.27-0.29 on average instead of
0.24-0.26 (``benchmarks/real_photos.py --null``). Relations, features and
model are :mod:`procbench.image_stats`'s (:data:`~procbench.image_stats.IMAGE_PROBES`), the ones the visual
adversarial filter plays against. ``value`` is the
accuracy with a procedure-bootstrap 95% interval, ``chance`` the mean of 1/#choices.

Ordering sets are not applicable: their choices are permutations of the same images, so every choice has
the same image statistics; the order's own smoothness is what ``question_distance``'s path length reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.context import ProbeContext, cv_choice_scores
from procbench.audit.probes.common import require_multiple_choice
from procbench.audit.probes.distance import answer_distance_ranks
from procbench.audit.registry import register
from procbench.audit.report import ProbeResult
from procbench.audit.stats import mc_hits
from procbench.image_stats import (
    IMAGE_PROBES,
    RELATIONS,
    ImageStats,
    choice_relations,
    probe_features,
    probe_model,
)

__all__ = ["colour_layout", "image_relations", "image_stats_of", "near_duplicate"]

#: dHash agreement at or above which two photos count as near duplicates in the probe's details
#: (8 or fewer of 64 bits differ; unrelated photos agree on ~0.5).
NEAR_DUPLICATE_AGREEMENT = 0.875


def _locator(aset: AuditSet) -> Any:
    from procbench.audit.loaders import set_store
    from procbench.store import is_image_id

    store = set_store(aset.source) if aset.source is not None else None

    def locate(key: str) -> Path | None:
        if store is not None:  # a store's items are image ids; anything else is not one of its files
            if not is_image_id(key):
                return None
            path = store.image_path(key)
            return path if path.is_file() else None
        path = Path(key)
        return path if path.suffix and path.is_file() else None

    return locate


def image_stats_of(aset: AuditSet, ctx: ProbeContext | None = None) -> ImageStats:
    """The :class:`ImageStats` of the set's items (cached in ``ctx``).

    Raises:
        NotApplicable: the set is not multiple choice over single images, or none of its images can be read.
    """
    require_multiple_choice(aset)
    if aset.kind.ordering:
        raise NotApplicable(
            "ordering choices are permutations of the same images, so every choice has the same image "
            "statistics; question_distance's path length reads the order's smoothness"
        )
    if ctx is not None and "image_stats" in ctx.cache:
        return ctx.cache["image_stats"]
    keys = aset.index().keys
    stats = ImageStats.read_cached(keys, _locator(aset))
    if not stats.found.any():
        raise NotApplicable(
            "no image file found for the set's items (they are neither image ids of the set's store nor image "
            "file paths)"
        )
    if ctx is not None:
        ctx.cache["image_stats"] = stats
    return stats


def image_relations(aset: AuditSet, stats: ImageStats) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each choice's relation to its reference images: ``{name: (n, k)}`` for each of
    :data:`~procbench.image_stats.RELATIONS` (NaN where undefined; :func:`~procbench.image_stats.choice_relations`,
    the filter's too), and ``(n,)`` the questions where every valid choice and at least one reference image was
    read."""
    index = aset.index()
    valid = index.valid
    found = stats.found
    question = np.asarray(index.question)
    choice = np.asarray(index.choice[:, :, 0])
    choices = np.where(valid & (choice >= 0) & found[np.maximum(choice, 0)], choice, -1)
    refs = np.where((question >= 0) & found[np.maximum(question, 0)], question, -1)
    shows_items: np.ndarray = np.asarray((question >= 0).any(axis=1))
    z = stats.standardised()
    with_refs = choice_relations(z, stats.bits, stats.thumbs, choices, refs)
    among_choices = choice_relations(z, stats.bits, stats.thumbs, choices, None)
    rel = np.where(shows_items[:, None, None], with_refs, among_choices)
    rel = np.where(valid[:, :, None], rel, np.nan)
    ok: np.ndarray = np.asarray(np.isfinite(np.where(valid, rel[:, :, 0], 0.0)).all(axis=1))
    return {name: rel[:, :, i] for i, name in enumerate(RELATIONS)}, ok


def _dealt_rank_folds(aset: AuditSet, ctx: ProbeContext, rows: np.ndarray) -> np.ndarray:
    """``(n,)`` the folds of ``rows``: stratified by the answer's embedding distance rank, else procedure folds."""
    if "answer_distance_ranks" not in ctx.cache:
        try:
            ctx.cache["answer_distance_ranks"] = answer_distance_ranks(aset)
        except NotApplicable:  # image files without embeddings
            ctx.cache["answer_distance_ranks"] = None
    dealt = ctx.cache["answer_distance_ranks"]
    return ctx.folds if dealt is None else ctx.stratified_folds(np.where(rows, dealt, -1))


def _probe(aset: AuditSet, ctx: ProbeContext, probe: str) -> ProbeResult:
    stats = image_stats_of(aset, ctx)
    if "image_relations" not in ctx.cache:
        ctx.cache["image_relations"] = image_relations(aset, stats)
    relations, ok = ctx.cache["image_relations"]
    valid = aset.index().valid
    k = valid.shape[1]
    answers = aset.answers
    in_range = (answers >= 0) & (answers < k)
    rows = ok & in_range & valid[np.arange(len(answers)), np.clip(answers, 0, k - 1)] & (valid.sum(axis=1) >= 2)
    ctx.require_cv(rows)
    rules = IMAGE_PROBES[probe]
    names = tuple(rules)
    features = probe_features(np.stack([relations[name] for name in RELATIONS], axis=2), valid, probe)
    folds = _dealt_rank_folds(aset, ctx, rows)
    scores = cv_choice_scores(features, valid, answers, folds, rows, lambda: probe_model(ctx.seed))
    rows = rows & np.isfinite(np.where(valid, scores, 0.0)).all(axis=1)
    hits = mc_hits(scores, answers, valid)
    details: dict[str, Any] = {
        "model": "linear SVM per choice on within-question image-statistics relations, argmax over choices",
        "relations": list(names),
        "reference": "question images, or the other choices when the question shows none",
        "n_images_read": int(stats.found.sum()),
        "n_images_missing": int((~stats.found).sum()),
        "n_skipped": int(len(aset) - rows.sum()),
    }
    correct = np.arange(k)[None, :] == answers[:, None]
    for name, sign in rules.items():
        value = relations[name]
        rule = mc_hits(sign * np.nan_to_num(value, nan=-sign * np.inf), answers, valid)
        details[f"rule_{'max' if sign > 0 else 'min'}_{name}"] = float(rule[rows].mean())
        mask_c = correct[rows] & valid[rows]
        mask_w = ~correct[rows] & valid[rows]
        details[f"mean_{name}_answer"] = float(value[rows][mask_c].mean())
        details[f"mean_{name}_wrong"] = float(value[rows][mask_w].mean())
    if "hash_agreement" in names:
        near = relations["hash_agreement"] >= NEAR_DUPLICATE_AGREEMENT
        details["near_duplicate_share_answer"] = float(near[rows][correct[rows] & valid[rows]].mean())
        details["near_duplicate_share_wrong"] = float(near[rows][~correct[rows] & valid[rows]].mean())
    return ctx.accuracy(hits, rows, valid, details=details)


@register(
    "colour_layout",
    kind="accuracy",
    summary="SVM on each image choice's colour/layout-statistics distance to its neighbours (same light, same desk)",
)
def colour_layout(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Cross-validated accuracy of a linear SVM on colour and layout statistics distances."""
    return _probe(aset, ctx, "colour_layout")


@register(
    "near_duplicate",
    kind="accuracy",
    summary="SVM on each image choice's perceptual-hash/thumbnail similarity to its neighbours (re-crops)",
)
def near_duplicate(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Cross-validated accuracy of a linear SVM on near-duplicate similarities."""
    return _probe(aset, ctx, "near_duplicate")
