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
highest-scoring choice is the answer, cross-validated over procedure-grouped folds. ``value`` is the
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
from procbench.audit.probes.distance import distance_features, distance_ranks
from procbench.audit.registry import register
from procbench.audit.report import ProbeResult
from procbench.audit.stats import mc_hits
from procbench.image_stats import ImageStats, near_duplicate_similarity

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
    """Each choice's relation to its reference images: ``{name: (n, k)}`` for ``colour_mean_distance``,
    ``colour_nearest_distance``, ``hash_agreement`` and ``thumb_correlation`` (NaN where undefined), and
    ``(n,)`` the questions where every valid choice and at least one reference image was read."""
    index = aset.index()
    valid = index.valid
    n, k = valid.shape
    choice = index.choice[:, :, 0]
    z = stats.standardised()
    found = stats.found
    out = {name: np.full((n, k), np.nan) for name in _RELATIONS}
    ok = np.zeros(n, dtype=bool)
    for i in range(n):
        q_items = [int(t) for t in index.question[i] if t >= 0 and found[t]]
        c_ids = choice[i]
        if not all(found[c] for c, v in zip(c_ids, valid[i], strict=True) if v):
            continue
        shows_items = bool((index.question[i] >= 0).any())
        if shows_items and not q_items:
            continue
        for j in range(k):
            if not valid[i, j]:
                continue
            ref = q_items if shows_items else [int(c_ids[m]) for m in range(k) if m != j and valid[i, m]]
            if not ref:
                continue
            c = int(c_ids[j])
            d = np.linalg.norm(z[ref] - z[c], axis=1)
            out["colour_mean_distance"][i, j] = float(np.linalg.norm(z[ref].mean(axis=0) - z[c]))
            out["colour_nearest_distance"][i, j] = float(d.min())
            agree, corr = near_duplicate_similarity(
                stats.bits[[c]], stats.thumbs[[c]], stats.bits[ref], stats.thumbs[ref]
            )
            out["hash_agreement"][i, j] = float(agree.max())
            out["thumb_correlation"][i, j] = float(corr.max())
        ok[i] = bool(np.isfinite(np.where(valid[i], out["colour_mean_distance"][i], 0.0)).all())
    return out, ok


_RELATIONS = ("colour_mean_distance", "colour_nearest_distance", "hash_agreement", "thumb_correlation")


def _model(seed: int) -> Any:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    return make_pipeline(StandardScaler(), LinearSVC(C=1.0, dual=False, random_state=seed))


def _probe(aset: AuditSet, ctx: ProbeContext, names: tuple[str, ...], rules: dict[str, int]) -> ProbeResult:
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
    features = np.concatenate([distance_features(relations[name], valid) for name in names], axis=2)
    first = relations[names[0]]
    ranks = distance_ranks(first, valid)
    answer_ranks = np.where(rows, ranks[np.arange(len(answers)), np.clip(answers, 0, k - 1)], -1)
    folds = ctx.stratified_folds(answer_ranks)
    scores = cv_choice_scores(features, valid, answers, folds, rows, lambda: _model(ctx.seed))
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
    return _probe(
        aset,
        ctx,
        ("colour_mean_distance", "colour_nearest_distance"),
        {"colour_mean_distance": -1, "colour_nearest_distance": -1},
    )


@register(
    "near_duplicate",
    kind="accuracy",
    summary="SVM on each image choice's perceptual-hash/thumbnail similarity to its neighbours (re-crops)",
)
def near_duplicate(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Cross-validated accuracy of a linear SVM on near-duplicate similarities."""
    return _probe(aset, ctx, ("hash_agreement", "thumb_correlation"), {"hash_agreement": 1, "thumb_correlation": 1})
