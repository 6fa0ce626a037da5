"""The audit's probes as the visual filters' own, and the probe features of photo choices.

Cloze and coherence play against ``hubness``, ``colour_layout`` and ``near_duplicate`` (:func:`image_probes`),
ordering against ``path_length`` (:func:`path_probe`), each the audit's linear SVM on the audit's features.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from procbench.generate import policy
from procbench.image_stats import IMAGE_PROBES, RELATIONS, choice_relations, probe_features, probe_model
from procbench.rng import stream
from procbench.shortcuts import FEATURE_NAMES, WITHIN_KINDS, ChoiceBatch, choice_features, within_question

if TYPE_CHECKING:
    from procbench.generate.visual.sequences import VisualData

__all__ = [
    "HUBNESS_COLUMNS",
    "IMAGE_RELATIONS",
    "PATH_COLUMN",
    "FittedSvmProbes",
    "ImageRelations",
    "SvmProbes",
    "image_clusters",
    "image_probes",
    "path_probe",
    "probe_features_of",
    "relations_of",
    "unit_vectors",
    "view_shuffled",
]

#: The image-statistics relations of a choice to its reference images (the question's, or for a question that
#: shows none the other choices) the filter's image probes read (:func:`image_probes`, the audit's ``colour_layout``
#: and ``near_duplicate``: :data:`procbench.image_stats.IMAGE_PROBES`). On the build guides the answer photo shares
#: its neighbours' desk and light (measurements: benchmarks/real_photos.md).
IMAGE_RELATIONS = RELATIONS


class ImageRelations:
    """Image statistics of a filter's images (read once, standardised over them) and each choice's
    :data:`IMAGE_RELATIONS` to its reference images as probe features (0: file not read)."""

    def __init__(self, data: VisualData, rows: np.ndarray) -> None:
        stats, self.position = data.image_stats(rows)
        self.found = stats.found
        self.z = stats.standardised()
        self.bits = stats.bits.astype(np.float64)
        self.thumbs = stats.thumbs

    @property
    def any(self) -> bool:
        """Whether any image file was read (else the relations add nothing)."""
        return bool(self.found.any())

    def relations(self, choices: np.ndarray, refs: np.ndarray | None) -> np.ndarray:
        """``(Q, C, len(IMAGE_RELATIONS))`` relations of image rows ``choices (Q, C)`` to ``refs (Q, L)`` (-1: none),
        or (``refs`` None) to the other choices; NaN where a choice or every reference image is unread
        (:func:`~procbench.image_stats.choice_relations`, the audit's)."""
        at_refs = None if refs is None else self._at(refs)
        return choice_relations(self.z, self.bits, self.thumbs, self._at(choices), at_refs)

    def _at(self, rows: np.ndarray) -> np.ndarray:
        """Positions of image ``rows`` in the statistics (-1: none, or not read)."""
        at = self.position[np.maximum(rows, 0)]
        return np.where((rows >= 0) & (at >= 0) & self.found[np.maximum(at, 0)], at, -1)

    def features(self, choices: np.ndarray, refs: np.ndarray | None, valid: np.ndarray) -> np.ndarray:
        """``(Q, C, 4 * len(IMAGE_RELATIONS))``: each relation :func:`~procbench.shortcuts.within_question` over
        the choices it is defined for (0 elsewhere)."""
        rel = self.relations(choices, refs)
        parts = []
        for i in range(rel.shape[2]):
            value = rel[:, :, i]
            defined = valid & np.isfinite(value)
            parts.append(within_question(np.where(defined, value, 0.0), defined))
        return np.concatenate(parts, axis=2)


def relations_of(features: np.ndarray) -> np.ndarray:
    """``(Q, C, len(IMAGE_RELATIONS))`` the choices' relations from probe features whose last columns are
    :meth:`ImageRelations.features` (0 where a relation is undefined: an image file not read)."""
    width = len(WITHIN_KINDS)
    block = features[:, :, features.shape[2] - width * len(IMAGE_RELATIONS) :]
    return block.reshape(*features.shape[:2], len(IMAGE_RELATIONS), width)[:, :, :, WITHIN_KINDS.index("value")]


#: A probe's per-choice inputs ``(Q, C, F)`` from the filter's probe features ``(Q, C, F')`` and ``valid (Q, C)``.
ProbeView = Callable[[np.ndarray, np.ndarray], np.ndarray]


#: The order in which an :class:`SvmProbes` view sees each question's choices.
_TIES = stream("visual.probe-ties")


def view_shuffled(view: ProbeView, features: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``view(features, valid)`` computed on each question's choices in a random order (seeded by the batch's shape:
    the same batch always gets the same order) and returned in the choices' own order."""
    q, c = valid.shape
    order = np.argsort(_TIES.rng(q, c).random((q, c)), axis=1)
    back = np.argsort(order, axis=1)
    shown = view(np.take_along_axis(features, order[:, :, None], axis=1), np.take_along_axis(valid, order, axis=1))
    return np.take_along_axis(shown, back[:, :, None], axis=1)


class SvmProbes:
    """Audit probes as the filter's own (:class:`~procbench.generate.adversarial.rounds.ExtraProbes`): a view of the
    probe features and the audit's linear SVM per probe, cross-fitted on each round's folds. Each view sees the
    choices in a seeded random order (:func:`view_shuffled`; docs/adversarial.md says why)."""

    def __init__(self, views: dict[str, ProbeView], reserved: int = 0) -> None:
        self.views = views
        self.names = tuple(views)
        self.reserved = reserved

    def fit(self, batch: ChoiceBatch, features: np.ndarray, folds: np.ndarray, seed: int) -> FittedSvmProbes:
        """One model per probe and fold, fitted on the other folds' questions (the answer is column 0)."""
        valid = batch.valid
        correct = np.arange(valid.shape[1])[None, :] == batch.answers[:, None]
        models: dict[str, list[Any]] = {}
        for name, view in self.views.items():
            x = view_shuffled(view, features, valid)
            models[name] = []
            for fold in range(int(folds.max()) + 1 if len(folds) else 0):
                train = (folds != fold)[:, None] & valid
                y = correct[train]
                model = None
                if y.any() and not y.all():
                    model = probe_model(seed)
                    model.fit(x[train], y)  # type: ignore[attr-defined]
                models[name].append(model)
        return FittedSvmProbes(self.views, models)


@dataclass
class FittedSvmProbes:
    """:class:`SvmProbes` fitted: ``models[name][fold]`` (None: that fold's complement had one class only)."""

    views: dict[str, ProbeView]
    models: dict[str, list[Any]]

    def predict(self, batch: ChoiceBatch, features: np.ndarray, folds: np.ndarray) -> dict[str, np.ndarray]:
        """``{name: (Q, C)}`` within-question probabilities (uniform where a question's fold has no model)."""
        valid = batch.valid
        out = {}
        for name, per_fold in self.models.items():
            x = view_shuffled(self.views[name], features, valid)
            scores = np.zeros(valid.shape)
            for fold, model in enumerate(per_fold):
                cells = (folds == fold)[:, None] & valid
                if model is not None and cells.any():
                    scores[cells] = model.decision_function(x[cells])
            masked = np.where(valid, scores, -np.inf)
            weights = np.where(valid, np.exp(masked - masked.max(axis=1, keepdims=True)), 0.0)
            out[name] = weights / np.maximum(weights.sum(axis=1, keepdims=True), 1e-300)
        return out


#: The columns of :func:`~procbench.shortcuts.choice_features` holding a choice's hubness (its centrality and
#: density, :func:`~procbench.shortcuts.hubness`), in every one of :data:`~procbench.shortcuts.WITHIN_KINDS`.
HUBNESS_COLUMNS = [FEATURE_NAMES.index(f"{b}_{kind}") for b in ("centrality", "density") for kind in WITHIN_KINDS]


def image_probes(relations: bool = True) -> SvmProbes:
    """``hubness`` (on :data:`HUBNESS_COLUMNS`) and, with ``relations``, the audit's image probes on the relations
    in the features' last columns (:func:`relations_of`)."""

    def view(name: str) -> ProbeView:
        return lambda features, valid: probe_features(relations_of(features), valid, name)

    views: dict[str, ProbeView] = {"hubness": lambda features, valid: features[:, :, HUBNESS_COLUMNS]}
    if not relations:
        return SvmProbes(views)
    reserved = len(WITHIN_KINDS) * len(IMAGE_RELATIONS)  # the filter's trees read the audit's features alone
    return SvmProbes({**views, **{name: view(name) for name in IMAGE_PROBES}}, reserved)


#: The column of :func:`order_features` holding an order's path length (the first of its own features' values).
PATH_COLUMN = len(FEATURE_NAMES) + WITHIN_KINDS.index("value")


def path_probe() -> SvmProbes:
    """The audit's ``question_distance`` on an ordering set (the path length, :data:`PATH_COLUMN`) as the probe
    ``path_length``."""

    def view(features: np.ndarray, valid: np.ndarray) -> np.ndarray:
        from procbench.audit.probes.distance import distance_features

        return distance_features(features[:, :, PATH_COLUMN], valid)

    return SvmProbes({"path_length": view})


def probe_features_of(relations: ImageRelations, arena_vectors: np.ndarray | None = None) -> Any:
    """An arena's probe features: :func:`choice_features`, then each choice's image-statistics relations
    (:class:`ImageRelations`) to the question's images, found by their vectors among ``arena_vectors`` (the
    arena's item vectors), or (None: coherence) to the other choices."""
    lookup = {} if arena_vectors is None else {vector.tobytes(): r for r, vector in enumerate(arena_vectors)}

    def features(batch: ChoiceBatch) -> np.ndarray:
        base = choice_features(batch)
        if batch.choice_ids is None:  # pragma: no cover - the arena's batches carry the choices' rows
            return base
        refs = None
        if arena_vectors is not None:
            refs = np.full(batch.question_mask.shape, -1, dtype=np.int64)
            for i, j in zip(*np.nonzero(batch.question_mask), strict=True):
                refs[i, j] = lookup.get(batch.question_vectors[i, j].tobytes(), -1)
        return np.concatenate([base, relations.features(batch.choice_ids, refs, batch.valid)], axis=2)

    return features


def image_clusters(vectors: np.ndarray, seed: int) -> np.ndarray:
    """``(N,)`` KMeans cluster of every image row ``vectors (N, D)`` (the probes' cluster-frequency feature)."""
    from procbench.generate.debias import cluster_titles, row_hashes

    hashes = row_hashes(vectors)
    # at most as many clusters as distinct vectors: a store whose images repeat one vector has fewer
    n_clusters = int(min(policy.current().ADVERSARIAL_CLUSTERS, len(np.unique(hashes))))
    return cluster_titles(vectors, n_clusters=n_clusters, seed=seed, hashes=hashes).labels


def unit_vectors(data: VisualData, rows: np.ndarray) -> np.ndarray:
    vectors = data.gather(rows)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)
