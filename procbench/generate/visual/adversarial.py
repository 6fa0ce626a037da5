"""Adversarial negatives for a visual task whose questions show images and whose answer is one image.

The setting ``adversarial`` starts from the task's K3=2 draw (K1, K2 of the default: the answer's rank on the
recipe's tells dealt by :mod:`.dealer`) and runs adversarial filtering (:mod:`procbench.generate.adversarial`) on
it: the context-free probes are fitted with procedure-grouped cross-fitting, and what they tell from the answer is
replaced by images of other procedures from the recipe's candidate sources (:mod:`procbench.generate.recipes`:
the nearest neighbours of the answer, the question mean and the drawn negatives' mean; coherence: of the coherent
images' mean and of each coherent image). A replacement keeps its slot's class on the dealt tell (the side of the
answer's distance to the question mean; coherence: the intruder's odd-one-out rank), so the dealt rank stays. An
image is never a near-copy of the answer or of a question image (cosine ceiling) and is a choice in at most about
as many questions as its share of the pool allows.

Beside the filter's own probes, each task plays against the audit's probes that read what its choices show
(:class:`SvmProbes`): cloze and coherence against the image probes ``colour_layout`` and ``near_duplicate``
(:func:`image_probes`), ordering against ``path_length``, the audit's ``question_distance`` on an order's path
length (:func:`path_probe`). The rounds stop, and pruning ends, only when these are at chance too.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from procbench.generate import policy, recipes
from procbench.generate.adversarial import (
    AdversarialPolicy,
    AdversarialResult,
    Arena,
    filter_negatives,
    initial_negatives,
    lattice_targets,
    preset,
)
from procbench.generate.visual.dealer import tell_classes
from procbench.generate.visual.sequences import VisualData, distances_to
from procbench.image_stats import IMAGE_PROBES, RELATIONS, choice_relations, probe_features, probe_model
from procbench.progress import SILENT, Progress
from procbench.rng import stream
from procbench.shortcuts import (
    FEATURE_NAMES,
    WITHIN_KINDS,
    ChoiceBatch,
    choice_features,
    within_question,
)
from procbench.tells import TELLS

__all__ = [
    "PATH_COLUMN",
    "IMAGE_RELATIONS",
    "ORDERS",
    "FittedSvmProbes",
    "cloze_arena",
    "cloze_probe_features",
    "coherence_arena",
    "coherence_probe_features",
    "order_arena",
    "order_vectors",
    "ImageRelations",
    "SvmProbes",
    "filter_image_negatives",
    "filter_intruders",
    "image_probes",
    "path_probe",
    "relations_of",
    "view_shuffled",
    "filter_orders",
    "order_ceiling",
    "order_features",
    "path_lengths",
    "shorter_orders",
]

#: The image-statistics relations of a choice to its reference images (the question's, or for a question that
#: shows none the other choices) the filter's image probes read (:func:`image_probes`, the audit's ``colour_layout``
#: and ``near_duplicate``: :data:`procbench.image_stats.IMAGE_PROBES`). On the build guides the answer photo shares
#: its neighbours' desk and light (measurements: benchmarks/real_photos.md).
IMAGE_RELATIONS = RELATIONS


#: Coherence's filter: the order near-copy intruders are replaced in before the rounds.
_INTRUDERS = stream("visual.coherence.intruders")


class ImageRelations:
    """Image statistics (:mod:`procbench.image_stats`) of a filter's images, read from their files once, and each
    choice's :data:`IMAGE_RELATIONS` to its reference images as probe features.

    The colour and layout statistics are standardised over the images read (as the audit standardises over a
    set's). Images whose file cannot be read have no relations (their features are 0).
    """

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
        at, ok_c = self._read(choices)
        if refs is None:
            return choice_relations(self.z, self.bits, self.thumbs, np.where(ok_c, at, -1), None)
        ref_at, ok_r = self._read(refs)
        return choice_relations(self.z, self.bits, self.thumbs, np.where(ok_c, at, -1), np.where(ok_r, ref_at, -1))

    def _read(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions of image ``rows`` in the statistics (0 where unread) and whether each was read."""
        at = self.position[np.maximum(rows, 0)]
        ok = (rows >= 0) & (at >= 0)
        ok &= self.found[np.maximum(at, 0)]
        return np.maximum(at, 0), ok

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
    """Audit probes as the visual filter's own (:class:`~procbench.generate.adversarial.rounds.ExtraProbes`): each a
    view of the filter's probe features (what the audit's probe reads: :func:`image_probes`, :func:`path_probe`)
    and the audit's linear SVM (:func:`~procbench.image_stats.probe_model`). Cross-fitted on each round's procedure
    folds, they judge replacements and decide the stop and the pruning as the filter's probes do; a question's SVM
    decision values become within-question probabilities by a softmax.

    The audit's features rank a question's choices with ties in choice order. In a set the answer's place is
    random, so that order is noise; in the filter the answer is always the first choice, and ties (two photos that
    are each other's nearest copy, an order and its reverse) would rank it first every time, a tell no audited set
    has. So each view sees every question's choices in a seeded random order (:func:`view_shuffled`)."""

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


#: Whether the filter's own probes (its partial-input trees) also see the image relations the image probes read
#: (True), or only the audit's partial-input features (:func:`~procbench.shortcuts.choice_features`) as the audit's
#: ``partial_input`` does (False). False: on the build guides (3 generation seeds, True -> False) cloze's worst
#: audited probe read 0.34 -> 0.29 (question distance 0.34 -> 0.29, near-duplicate 0.33 -> 0.24) and coherence's
#: partial-input 0.32 -> 0.28 (its near-duplicate 0.29 -> 0.33); with 16 more columns on ~90 questions the filter's
#: trees missed what the audit's found (benchmarks/real_photos.md, session 13).
RELATIONS_SHARED = False


#: The columns of :func:`~procbench.shortcuts.choice_features` holding a choice's hubness (its centrality and
#: density, :func:`~procbench.shortcuts.hubness`), in every one of :data:`~procbench.shortcuts.WITHIN_KINDS`.
HUBNESS_COLUMNS = [FEATURE_NAMES.index(f"{b}_{kind}") for b in ("centrality", "density") for kind in WITHIN_KINDS]


def image_probes(relations: bool = True) -> SvmProbes:
    """The audit's probes of what a photo choice shows: ``hubness`` (the most or least central or dense choice: an
    SVM on the hubness columns of the probe features, :data:`HUBNESS_COLUMNS`), and with ``relations`` the image
    probes (:data:`~procbench.image_stats.IMAGE_PROBES`: ``colour_layout``, ``near_duplicate``;
    :func:`~procbench.image_stats.probe_features`) on the choices' relations, read from the last columns of the
    probe features (:func:`relations_of`; reserved to them unless :data:`RELATIONS_SHARED`)."""

    def view(name: str) -> ProbeView:
        return lambda features, valid: probe_features(relations_of(features), valid, name)

    views: dict[str, ProbeView] = {"hubness": lambda features, valid: features[:, :, HUBNESS_COLUMNS]}
    if not relations:
        return SvmProbes(views)
    reserved = 0 if RELATIONS_SHARED else len(WITHIN_KINDS) * len(IMAGE_RELATIONS)
    return SvmProbes({**views, **{name: view(name) for name in IMAGE_PROBES}}, reserved)


#: The column of :func:`order_features` holding an order's path length (the first of its own features' values).
PATH_COLUMN = len(FEATURE_NAMES) + WITHIN_KINDS.index("value")


def path_probe() -> SvmProbes:
    """The audit's ``question_distance`` on an ordering set (its distance is the order's path length: the
    features and SVM of :func:`procbench.audit.probes.distance.distance_features`) as the ordering filter's probe
    ``path_length``, reading the path length from :func:`order_features` (:data:`PATH_COLUMN`). The filter's own
    ``question_distance`` reads the order vectors' distance to their mean, not the path length."""

    def view(features: np.ndarray, valid: np.ndarray) -> np.ndarray:
        from procbench.audit.probes.distance import distance_features

        return distance_features(features[:, :, PATH_COLUMN], valid)

    return SvmProbes({"path_length": view})


#: Families of :data:`IMAGE_RELATIONS` (colour and layout; near-duplicate), each weighing one in
#: :meth:`ImageRelations.gaps`.
IMAGE_FAMILIES = ((0, 1), (2, 3))
#: K3=2's draw orders the candidates of a class by their distance gap plus this weight times each family's image
#: gap (:func:`image_gaps`), both in units of the question's spread (set to 1, not tuned: one try on the build
#: guides, benchmarks/real_photos.md).
IMAGE_WEIGHT = 1.0


def _rows_of_vectors(vectors: np.ndarray) -> dict[bytes, int]:
    """Each item vector's bytes -> its row (the engine's batches copy item vectors exactly)."""
    return {vectors[r].tobytes(): r for r in range(len(vectors))}


def cloze_probe_features(arena_vectors: np.ndarray, relations: ImageRelations) -> Any:
    """The cloze arena's probe features: :func:`choice_features`, then the choices' image-statistics relations to
    the question's images (:class:`ImageRelations`); a batch's question images are found by their vectors."""
    lookup = _rows_of_vectors(arena_vectors)

    def features(batch: ChoiceBatch) -> np.ndarray:
        base = choice_features(batch)
        if batch.choice_ids is None:  # pragma: no cover - the arena's batches carry the choices' rows
            return base
        q, length = batch.question_mask.shape
        refs = np.full((q, length), -1, dtype=np.int64)
        for i, j in zip(*np.nonzero(batch.question_mask), strict=True):
            refs[i, j] = lookup.get(batch.question_vectors[i, j].tobytes(), -1)
        return np.concatenate([base, relations.features(batch.choice_ids, refs, batch.valid)], axis=2)

    return features


def filter_image_negatives(
    data: VisualData,
    proc: np.ndarray,
    answers: np.ndarray,
    shown: np.ndarray,
    negatives: np.ndarray,
    *,
    options: AdversarialPolicy | None = None,
    seed: int = 0,
    progress: Progress = SILENT,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Adversarially filtered negatives for ``Q`` questions.

    Args:
        proc: ``(Q,)`` procedure code of each question.
        answers: ``(Q,)`` image row of each answer.
        shown: ``(Q, L)`` image rows the question shows (-1: the placeholder).
        negatives: ``(Q, K)`` the starting negatives (image rows).

    Returns:
        ``(negatives (Q, K), replacements (Q,), kept (Q,), summary)``; on too few procedures or questions nothing is
        filtered (:meth:`~procbench.generate.adversarial.AdversarialPolicy.not_filtered`). ``kept`` is False for
        the questions pruning dropped (``options.min_yield``).
    """
    options = options or preset("image")
    n_q = len(answers)
    n_rows = data.n_rows
    if why := options.not_filtered(len(np.unique(proc)), n_q):
        return negatives.copy(), np.zeros(n_q, dtype=np.int64), np.ones(n_q, bool), options.unfiltered(why)
    sources = dict(recipes.get("visual-cloze", "adversarial").sources)
    mask = shown >= 0
    points = (data.gather(shown) * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1)[:, None]
    drawn = data.gather(negatives).mean(axis=1)
    candidates = np.concatenate(
        [_knn(data, data.gather(answers), proc, sources.get("answer-knn", 0)),
         _knn(data, points, proc, sources.get("question-mean-knn", 0)),
         _knn(data, drawn, proc, sources.get("negatives-knn", 0))],
        axis=1,
    )  # fmt: skip
    # a replacement keeps its slot's side of the answer's distance to the question mean: the answer's rank stays
    radius = distances_to(data, answers[:, None], points)[:, 0]
    offsets = (distances_to(data, candidates, points) - radius[:, None]).astype(np.float64)  # (Q, M)
    closer = offsets < 0
    slot_closer = distances_to(data, negatives, points) < radius[:, None]
    # an image may be a choice about as often as the pool's share allows (K negatives per question), an answer
    # counting as one: answers shown once more than other images give themselves away by how often they are shown
    per_image = max(1, int(np.ceil(negatives.shape[1] * n_q / max(1, n_rows))))
    copies = np.full(n_rows, per_image + 1, dtype=np.int64)
    copies[answers] = per_image
    # the probes also see how each choice's photo relates to the question's photos (same desk, same light, re-crop)
    relations = ImageRelations(data, np.concatenate([answers[:, None], shown, negatives, candidates], axis=1))
    candidate_class, negative_class = closer.astype(np.int64), slot_closer.astype(np.int64)
    arena = cloze_arena(
        data, proc, answers, shown, negatives, relations, seed=seed, candidates=candidates, copies=copies,
        candidate_class=candidate_class, negative_class=negative_class,
    )  # fmt: skip
    # the start: on each side of the answer's distance to the question mean as many negatives as were drawn (the
    # rank stays), the usable candidates nearest an even spacing of the choices' distances around the answer's
    # (lattice_targets); a question without enough keeps its drawn ones
    n_closer = slot_closer.sum(axis=1)
    spacing = policy.current().LATTICE_SPACING * float(np.std(radius))
    targets = lattice_targets(n_closer, spacing, negatives.shape[1])
    start, classes, unfilled = initial_negatives(arena, options, seed=seed, offsets=offsets, targets=targets)
    start[unfilled], classes[unfilled] = negatives[unfilled], negative_class[unfilled]
    arena.negatives, arena.negative_class = start, classes
    arena.strata = classes.sum(axis=1)  # the answer's distance rank: its negatives nearer the question mean
    redrawn = (start != negatives).sum(axis=1)
    result = filter_negatives(arena, options, seed=seed, progress=progress)
    result.replacements = result.replacements + redrawn  # a redrawn start counts as replaced
    summary = {
        **result.summary(),
        "start": "evenly spaced distances to the question mean around the answer's",
    }
    return result.negatives, result.replacements, _kept(result, n_q), summary


def _knn(data: VisualData, points: np.ndarray, proc: np.ndarray, k: int) -> np.ndarray:
    """``(Q, k)`` the ``k`` nearest images of other procedures to each of ``points (Q, D)`` (-1: none)."""
    if k <= 0:
        return np.full((len(points), 0), -1, dtype=np.int64)
    return data.search(np.asarray(points, dtype=np.float32), proc, k, kind="adversarial")[1]


def _none(n_q: int) -> np.ndarray:
    """``(Q, 1)`` no item: an arena's empty question items or candidates."""
    return np.full((n_q, 1), -1, dtype=np.int64)


def cloze_arena(
    data: VisualData,
    proc: np.ndarray,
    answers: np.ndarray,
    shown: np.ndarray,
    negatives: np.ndarray,
    relations: ImageRelations,
    *,
    seed: int,
    candidates: np.ndarray | None = None,
    **extra: Any,
) -> Arena:
    """The probes' view of visual-cloze questions, as the filter plays on it and K3=2's pruning scores it:
    ``answers (Q,)``, ``shown (Q, L)`` (-1: the placeholder) and ``negatives (Q, K)`` image rows, the choices'
    image relations to the question's photos; ``candidates (Q, M)`` and ``extra`` (copies, classes: the filter's
    replacements) as :class:`~procbench.generate.adversarial.Arena` takes them."""
    vectors = np.asarray(data.vectors, dtype=np.float32)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    mask = shown >= 0
    return Arena(
        vectors=unit,
        identity=np.arange(data.n_rows, dtype=np.int64),
        answers=answers,
        question_items=shown,
        negatives=negatives,
        candidates=_none(len(answers)) if candidates is None else candidates,
        groups=proc,
        clusters=image_clusters(vectors, seed),
        placeholder=np.where(mask.all(axis=1), -1, np.argmin(mask, axis=1)),  # the only slot without an image
        features=cloze_probe_features(unit, relations) if relations.any else None,
        probes=image_probes(relations.any),
        **extra,
    )


def image_clusters(vectors: np.ndarray, seed: int) -> np.ndarray:
    """``(N,)`` KMeans cluster of every image row ``vectors (N, D)`` (the probes' cluster-frequency feature)."""
    from procbench.generate.debias import cluster_titles, row_hashes

    hashes = row_hashes(vectors)
    # at most as many clusters as distinct vectors: a store whose images repeat one vector has fewer
    n_clusters = int(min(policy.current().ADVERSARIAL_CLUSTERS, len(np.unique(hashes))))
    return cluster_titles(vectors, n_clusters=n_clusters, seed=seed, hashes=hashes).labels


def _kept(result: AdversarialResult, n_q: int) -> np.ndarray:
    """``(Q,)`` the questions filtering keeps (pruning drops the ones the probes still solve)."""
    return result.kept if len(result.kept) else np.ones(n_q, dtype=bool)


# -- visual coherence: the intruder is what the probes find, so the intruder is replaced ---------------------------


def _unit_vectors(data: VisualData, rows: np.ndarray) -> np.ndarray:
    vectors = data.gather(rows)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def _cosine_below(data: VisualData, candidates: np.ndarray, others: np.ndarray, ceiling: float) -> np.ndarray:
    """``(Q, M)`` True where candidate ``[q, m]``'s cosine similarity to every image ``others[q]`` (-1: none) is
    below ``ceiling`` (from FAISS's distances, so no ``(Q, M, D)`` copy is made)."""
    norms = np.linalg.norm(np.asarray(data.vectors, dtype=np.float32), axis=1)
    n_cand = norms[np.maximum(candidates, 0)]
    ok = np.ones(candidates.shape, dtype=bool)
    for column in range(others.shape[1]):
        other = others[:, column]
        present = other >= 0
        if not present.any():
            continue
        d = distances_to(data, candidates, data.gather(other))
        n_other = norms[np.maximum(other, 0)][:, None]
        cos = (n_cand**2 + n_other**2 - d**2) / np.maximum(2 * n_cand * n_other, 1e-12)
        ok &= ~present[:, None] | (cos < ceiling)
    return ok


def coherence_probe_features(relations: ImageRelations) -> Any:
    """A coherence arena's probe features: :func:`choice_features`, then each choice's image-statistics relations
    to the other choices."""

    def features(batch: ChoiceBatch) -> np.ndarray:
        base = choice_features(batch)
        if batch.choice_ids is None:  # pragma: no cover - the arena's batches carry the choices' rows
            return base
        return np.concatenate([base, relations.features(batch.choice_ids, None, batch.valid)], axis=2)

    return features


def coherence_arena(
    data: VisualData,
    proc: np.ndarray,
    coherent: np.ndarray,
    intruders: np.ndarray,
    relations: ImageRelations,
    clusters: np.ndarray,
) -> Arena:
    """The probes' view of visual-coherence questions, as the filter prunes and K3=2's pruning scores them: the
    intruder ``intruders (Q,)`` is the answer, the ``coherent (Q, 3)`` images its negatives, each choice's image
    relations to the other choices as features (``clusters``: :func:`image_clusters`)."""
    n_q = len(intruders)
    return Arena(
        vectors=_unit_vectors(data, np.arange(data.n_rows)),
        identity=np.arange(data.n_rows, dtype=np.int64),
        answers=intruders,
        question_items=_none(n_q),
        negatives=coherent,
        candidates=_none(n_q),
        groups=proc,
        clusters=clusters,
        features=coherence_probe_features(relations) if relations.any else None,
        probes=image_probes(relations.any),
    )


def _procedure_images(data: VisualData, proc: np.ndarray) -> np.ndarray:
    """``(Q, L)`` the image rows of each question's procedure sequence, -1 padded."""
    offsets = data.seqs.offsets
    lengths = offsets[proc + 1] - offsets[proc]
    width = int(lengths.max()) if len(lengths) else 0
    col = np.arange(width)[None, :]
    at = np.minimum(offsets[proc][:, None] + col, max(len(data.seqs.rows) - 1, 0))
    return np.where(col < lengths[:, None], data.seqs.rows[at], -1) if width else np.full((len(proc), 0), -1)


def filter_intruders(
    data: VisualData,
    proc: np.ndarray,
    coherent: np.ndarray,
    intruders: np.ndarray,
    ranks: np.ndarray,
    *,
    options: AdversarialPolicy | None = None,
    seed: int = 0,
    progress: Progress = SILENT,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Adversarially filtered incoherent images for ``Q`` visual-coherence questions.

    In coherence the probes look for the answer (the image that does not belong), so the answer is what is
    replaced: the one :class:`~procbench.generate.adversarial.ReplacementGame` on an arena whose ``replaced`` slot is
    the answer, under the ``coherence`` preset (one cross-fitted ensemble per round; a share of the told questions
    changed per round). Candidates come from the recipe's sources (the coherent images' mean's and each coherent
    image's nearest images of other procedures); a candidate is usable when its rank on the recipe's tell is the
    question's (``ranks``: the dealt rank stays) and its cosine similarity to every image of the question's procedure
    is below ``options.ceiling``; an image is the intruder of at most about as many questions as its share of the
    pool allows. A drawn intruder above the ceiling is replaced by a random usable candidate before the first round
    (``ceiling_replaced``; the ones without one stay, ``ceiling_unmet``).

    Args:
        proc: ``(Q,)`` procedure code of each question.
        coherent: ``(Q, 3)`` image rows of the coherent images.
        intruders: ``(Q,)`` image row of each starting incoherent image (the answer).
        ranks: ``(Q,)`` the intruder's rank (0: closest) among the choices by distance to the other three's mean.

    Returns:
        ``(intruders (Q,), replacements (Q,), kept (Q,), summary)``; on too few procedures or questions no round
        runs (:meth:`~procbench.generate.adversarial.AdversarialPolicy.not_filtered`), and only the near-copies are
        replaced.
        When the rounds leave the probes above chance, the questions they still solve are dropped, most
        confident first, while ``options.min_yield`` stay (``kept``).
    """
    options = options or preset("coherence")
    n_q = len(intruders)
    if not n_q:
        return intruders.copy(), np.zeros(0, dtype=np.int64), np.ones(0, bool), options.unfiltered("no questions")
    n_rows = data.n_rows
    vecs = data.gather(coherent)  # (Q, 3, D)
    mean = vecs.mean(axis=1)
    sources = dict(recipes.get("visual-coherence", "adversarial").sources)
    per_image = -(-sources.get("coherent-knn", 0) // 3)
    found = [_knn(data, mean, proc, sources.get("coherent-mean-knn", 0))]
    found += [_knn(data, vecs[:, i], proc, per_image) for i in range(3)]
    ordered = np.sort(np.concatenate(found, axis=1), axis=1)  # a candidate found by two searches is kept once
    repeat = np.zeros(ordered.shape, dtype=bool)
    repeat[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
    candidates = np.where(repeat | (ordered < 0), -1, ordered)
    tells = [TELLS[name] for name in recipes.get("visual-coherence", "adversarial").tells]
    classes, _ = tell_classes(tells, data.gather, candidates, fixed=coherent, question=_none(n_q), answer=None)
    own = _procedure_images(data, proc)
    allowed = (candidates >= 0) & (classes == ranks[:, None]) & _cosine_below(data, candidates, own, options.ceiling)
    capacity = max(1, int(np.ceil(n_q / max(1, n_rows))))
    current = intruders.copy()
    uses = np.bincount(current, minlength=n_rows)
    replacements = np.zeros(n_q, dtype=np.int64)
    rng = _INTRUDERS.rng(seed)
    # a drawn intruder that is a near-copy of an image of the procedure is replaced first, where a candidate allows
    close = np.flatnonzero(~_cosine_below(data, current[:, None], own, options.ceiling)[:, 0])
    for q in rng.permutation(close).tolist():
        usable = np.flatnonzero(allowed[q] & (uses[np.maximum(candidates[q], 0)] < capacity))
        if len(usable):
            row = int(candidates[q, rng.choice(usable)])
            uses[current[q]] -= 1
            uses[row] += 1
            current[q] = row
            replacements[q] += 1
    unmet = len(close) - int(replacements.sum())
    ceiling = {
        "ceiling_rule": "the intruder's cosine similarity to every image of the question's procedure stays below "
        "the ceiling",
        "replaced": "incoherent images (the answers)",
        "ceiling_replaced": int(len(close) - unmet),
        "ceiling_unmet": unmet,
    }
    if why := options.not_filtered(len(np.unique(proc)), n_q):  # the near-copies replaced all the same
        return current, replacements, np.ones(n_q, bool), {**options.unfiltered(why), **ceiling}
    coherence = preset("coherence")
    policy_ = dataclasses.replace(
        options, probe_repeats=coherence.probe_repeats, replace_share=coherence.replace_share
    )
    relations = ImageRelations(data, np.concatenate([coherent, current[:, None], candidates], axis=1))
    arena = coherence_arena(
        data, proc, coherent, current, relations, image_clusters(np.asarray(data.vectors, dtype=np.float32), seed)
    )
    arena.candidates, arena.allowed, arena.replaced = candidates, allowed, "answer"
    arena.candidate_class, arena.negative_class, arena.strata = classes, ranks[:, None], ranks
    arena.copies = np.full(n_rows, capacity, dtype=np.int64)  # an image is the intruder of at most this many
    result = filter_negatives(arena, policy_, seed=seed, progress=progress)
    summary = {**result.summary(), **ceiling}
    return result.negatives[:, 0], result.replacements + replacements, _kept(result, n_q), summary


# -- visual ordering: the wrong orders are permutations of the question's own images ---------------------------------
#: Every order of four items, the authored one first (the order of :data:`.ordering.PERMUTATIONS`).
ORDERS = np.array(list(itertools.permutations(range(4))), dtype=np.int64)


def _pair_counts() -> tuple[np.ndarray, np.ndarray]:
    """``(24, 24)`` Kendall distances between the orders, and how many consecutive pairs of one are consecutive
    (in the same direction) in the other."""
    pos = np.argsort(ORDERS, axis=1)  # position of each item in each order
    i, j = np.triu_indices(4, 1)
    sign = np.sign(pos[:, j] - pos[:, i])  # (24, 6)
    kendall = (sign[:, None, :] != sign[None, :, :]).sum(axis=2)
    first, second = ORDERS[:, :-1], ORDERS[:, 1:]  # (24, 3) consecutive pairs
    follows = pos[:, second] - pos[:, first]  # (24 other, 24 order, 3): +1 where the pair is consecutive there
    adjacent = (follows == 1).sum(axis=2).T
    return kendall.astype(np.float64), adjacent.astype(np.float64)


_KENDALL, _ADJACENT = _pair_counts()


#: Relative tolerance of path-length comparisons: an order and its reverse have the same path length, which float32
#: sums of the same distances in another order may put a rounding error apart.
PATH_TOLERANCE = 1e-5


def shorter_orders(scores: np.ndarray, authored: np.ndarray) -> np.ndarray:
    """``scores (B, ...) < authored (B,)`` beyond rounding: which orders are strictly shorter than the authored one
    (the reversed authored order ties it, and counts as not shorter)."""
    bound = authored * (1 - PATH_TOLERANCE)
    return scores < bound.reshape(bound.shape + (1,) * (scores.ndim - bound.ndim))


def path_lengths(vectors: np.ndarray) -> np.ndarray:
    """``(Q, 24)`` the path length of every order of :data:`ORDERS` (the authored one first) of the images
    ``vectors (Q, 4, D)``: the sum of its consecutive images' distances."""
    diff = vectors[:, :, None, :] - vectors[:, None, :, :]
    pair = np.sqrt(np.einsum("bijd,bijd->bij", diff, diff))
    return pair[:, ORDERS[:, :-1], ORDERS[:, 1:]].sum(axis=2)


def order_ceiling(vectors: np.ndarray, ceiling: float) -> np.ndarray:
    """``(B, 24)`` True where an order of the images ``vectors (B, 4, D)`` can be told from the authored one: some
    image it moves has cosine similarity below ``ceiling`` to the image it displaces (an order that only swaps
    near-copies would look like the authored order and make two choices right)."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=2, keepdims=True), 1e-12)
    cos = np.einsum("bid,bjd->bij", unit, unit)
    shown = cos[:, ORDERS, np.arange(4)[None, :]]  # (B, 24, 4): image shown at t vs the authored image at t
    moved = np.arange(4)[None, :] != ORDERS
    return (moved[None] & (shown < ceiling)).any(axis=2)


def order_features(batch: ChoiceBatch, scores: np.ndarray) -> np.ndarray:
    """``(Q, 4, F)`` context-free features of order choices whose ``choice_ids`` are ``question * 24 + order``:
    :func:`choice_features` of the order vectors (their distance to the other orders among them), then the
    order's path length (``scores``, flat ``(Q' * 24,)``: the sum of consecutive image distances) and its
    agreement with the other orders shown (mean Kendall distance, mean consecutive pairs shared, and how many
    share its first and its last image), each :func:`~procbench.shortcuts.within_question`."""
    if batch.choice_ids is None:  # pragma: no cover - a programming error
        raise ValueError("order features need the choices' ids")
    ids = np.maximum(batch.choice_ids, 0)
    order = ids % 24
    valid = batch.valid
    others = valid[:, :, None] & valid[:, None, :] & ~np.eye(valid.shape[1], dtype=bool)[None]
    n_others = np.maximum(others.sum(axis=2), 1)

    def mean_over_others(table: np.ndarray) -> np.ndarray:
        return np.where(others, table[order[:, :, None], order[:, None, :]], 0.0).sum(axis=2) / n_others

    first = ORDERS[order, 0]
    last = ORDERS[order, -1]
    ends = np.where(others, (first[:, :, None] == first[:, None, :]) + (last[:, :, None] == last[:, None, :]), 0)
    extra = [scores[ids], mean_over_others(_KENDALL), mean_over_others(_ADJACENT), ends.sum(axis=2) / n_others]
    # every order shows the same images: the hubness columns are constant (the audit's hubness does not apply)
    flat = (np.zeros(valid.shape), np.zeros(valid.shape))
    base = choice_features(ChoiceBatch(**{**batch.__dict__, "choice_ids": None, "hubness": flat}))
    return np.concatenate([base, *(within_question(x.astype(np.float64), valid) for x in extra)], axis=2)


def order_vectors(data: VisualData, rows: np.ndarray) -> np.ndarray:
    """``(Q * 24, 4 * d)`` L2-normalised vectors of every order of each question's images: the images' first
    ``d`` principal components (over the set's images), concatenated in the order shown."""
    images = np.unique(rows)
    vectors = _unit_vectors(data, images).astype(np.float64)
    centred = vectors - vectors.mean(axis=0)
    dims = int(min(policy.current().ORDER_DIMS, *centred.shape))
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    reduced = (centred @ vt[:dims].T)[np.searchsorted(images, rows)]  # (Q, 4, d)
    orders = reduced[:, ORDERS, :].reshape(len(rows) * 24, 4 * dims)
    return (orders / np.maximum(np.linalg.norm(orders, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def order_arena(
    data: VisualData,
    proc: np.ndarray,
    rows: np.ndarray,
    picked: np.ndarray,
    scores: np.ndarray,
    *,
    candidates: np.ndarray | None = None,
    **extra: Any,
) -> Arena:
    """The probes' view of visual-ordering questions, as the filter plays on it and K3=2's pruning scores it: the
    items are the orders of each question's images ``rows (Q, 4)`` (item ``question * 24 + order``, the authored
    one the answer), ``picked (Q, 3)`` the wrong orders shown (indices 1-23 into :data:`ORDERS`), ``scores (Q, 24)``
    their path lengths (:func:`path_lengths`); ``candidates (Q, M)`` item ids and ``extra`` (classes: the filter's
    replacements) as :class:`~procbench.generate.adversarial.Arena` takes them."""
    n_q = len(rows)
    base = np.arange(n_q, dtype=np.int64)[:, None] * 24
    flat_scores = scores.reshape(-1)
    return Arena(
        vectors=order_vectors(data, rows),
        identity=np.arange(n_q * 24, dtype=np.int64),
        answers=base[:, 0],
        question_items=_none(n_q),
        negatives=base + picked,
        candidates=_none(n_q) if candidates is None else candidates,
        groups=proc,
        features=lambda batch: order_features(batch, flat_scores),
        probes=path_probe(),
        **extra,
    )


def filter_orders(
    data: VisualData,
    proc: np.ndarray,
    rows: np.ndarray,
    picked: np.ndarray,
    *,
    options: AdversarialPolicy | None = None,
    seed: int = 0,
    progress: Progress = SILENT,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Adversarially filtered wrong orders for ``Q`` visual-ordering questions.

    The candidates of a question are the 23 wrong orders of its own four images, so what a context-free probe
    can exploit is which orders are offered: their path length (the authored order of real procedures is
    smoother), what images tend to come first or last (choice-only, on the orders' vectors) and how the
    orders shown agree with each other (the authored one must not be their consensus). The arena's items are
    the orders (:func:`order_vectors`, :func:`order_features`); a replacement keeps its side of the
    authored order's path length (shorter or not), so a rank-uniform start stays rank-uniform, and an order
    is a candidate only when it can be told from the authored one: some image it moves differs from the one it
    displaces (cosine below ``options.ceiling``, :func:`order_ceiling`).

    Args:
        rows: ``(Q, 4)`` image rows in authored order.
        picked: ``(Q, 3)`` the starting wrong orders, indices 1-23 into :data:`ORDERS`.

    Returns:
        ``(picked (Q, 3), replacements (Q,), kept (Q,), summary)``; on too few procedures or questions nothing is
        filtered (:meth:`~procbench.generate.adversarial.AdversarialPolicy.not_filtered`).
        ``kept`` is False for the questions pruning dropped (``options.min_yield``).
    """
    options = options or preset("image")
    n_q = len(rows)
    if why := options.not_filtered(len(np.unique(proc)), n_q):
        return picked.copy(), np.zeros(n_q, dtype=np.int64), np.ones(n_q, bool), options.unfiltered(why)
    vectors = data.gather(rows)
    scores = path_lengths(vectors)
    shorter = shorter_orders(scores[:, 1:], scores[:, 0])
    base = np.arange(n_q, dtype=np.int64)[:, None] * 24
    candidates = np.where(order_ceiling(vectors, options.ceiling)[:, 1:], base + np.arange(1, 24), -1)
    negative_class = np.take_along_axis(shorter, picked - 1, axis=1)
    arena = order_arena(
        data, proc, rows, picked, scores, candidates=candidates, candidate_class=shorter, negative_class=negative_class
    )
    arena.strata = negative_class.sum(axis=1)  # the authored order's path-length rank: its wrong orders shorter
    # the order vectors' own similarity is no paraphrase test: the ceiling is applied to the moved images above
    result = filter_negatives(arena, dataclasses.replace(options, ceiling=2.0), seed=seed, progress=progress)
    summary = {
        **result.summary(),
        "ceiling": options.ceiling,
        "replaced": "wrong orders",
        "ceiling_rule": "a wrong order moves some image to the place of one it has cosine similarity below the "
        "ceiling to (it never looks like the authored order)",
    }
    return result.negatives - base, result.replacements, _kept(result, n_q), summary
