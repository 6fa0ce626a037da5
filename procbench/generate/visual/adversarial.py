"""The ``adversarial`` setting of visual cloze and coherence: adversarial filtering of the K3=2 draw.

docs/adversarial.md specifies it ("The algorithm", "Per task", "Image statistics"): candidates from the recipe's
sources, a replacement keeps its slot's class on the dealt tell, the audit's image probes play too
(:class:`.probes.SvmProbes`); ordering's filter is :mod:`.orders`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from procbench.generate import policy, recipes
from procbench.generate.adversarial import (
    AdversarialPolicy,
    Arena,
    filter_negatives,
    initial_negatives,
    lattice_targets,
    no_items,
    preset,
)
from procbench.generate.visual.dealer import tell_classes
from procbench.generate.visual.probes import (
    ImageRelations,
    image_clusters,
    image_probes,
    probe_features_of,
    unit_vectors,
)
from procbench.generate.visual.sequences import VisualData, distances_to, repeated
from procbench.progress import SILENT, Progress
from procbench.rng import stream
from procbench.tells import TELLS

__all__ = ["filter_image_negatives", "filter_intruders"]

#: Coherence's filter: the order near-copy intruders are replaced in before the rounds.
_INTRUDERS = stream("visual.coherence.intruders")


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
    """Filtered negatives of ``Q`` cloze questions (``proc``, ``answers (Q,)``, ``shown (Q, L)`` -1: placeholder,
    ``negatives (Q, K)``): ``(negatives (Q, K), replacements (Q,), kept (Q,), summary)``."""
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
    slot_closer = distances_to(data, negatives, points) < radius[:, None]
    # an image may be a choice about as often as the pool's share allows (K negatives per question), an answer
    # counting as one: answers shown once more than other images give themselves away by how often they are shown
    per_image = max(1, int(np.ceil(negatives.shape[1] * n_q / max(1, n_rows))))
    copies = np.full(n_rows, per_image + 1, dtype=np.int64)
    copies[answers] = per_image
    # the probes also see how each choice's photo relates to the question's photos (same desk, same light, re-crop)
    relations = ImageRelations(data, np.concatenate([answers[:, None], shown, negatives, candidates], axis=1))
    candidate_class, negative_class = (offsets < 0).astype(np.int64), slot_closer.astype(np.int64)
    unit = unit_vectors(data, np.arange(n_rows))
    arena = Arena(
        unit, np.arange(n_rows, dtype=np.int64), answers, shown, negatives, candidates, proc,
        clusters=image_clusters(np.asarray(data.vectors, dtype=np.float32), seed),
        placeholder=np.where(mask.all(axis=1), -1, np.argmin(mask, axis=1)),  # the only slot without an image
        features=probe_features_of(relations, unit) if relations.any else None,
        probes=image_probes(relations.any), copies=copies, candidate_class=candidate_class,
        negative_class=negative_class,
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
    summary = {**result.summary(), "start": "evenly spaced distances to the question mean around the answer's"}
    return result.negatives, result.replacements, result.kept_questions(), summary


def _knn(data: VisualData, points: np.ndarray, proc: np.ndarray, k: int) -> np.ndarray:
    """``(Q, k)`` the ``k`` nearest images of other procedures to each of ``points (Q, D)`` (-1: none)."""
    if k <= 0:
        return np.full((len(points), 0), -1, dtype=np.int64)
    return data.search(np.asarray(points, dtype=np.float32), proc, k, kind="adversarial")[1]


# -- visual coherence: the intruder is what the probes find, so the intruder is replaced ---------------------------


def _cosine_below(data: VisualData, candidates: np.ndarray, others: np.ndarray, ceiling: float) -> np.ndarray:
    """``(Q, M)`` True where candidate ``[q, m]``'s cosine to every image ``others[q]`` (-1: none) is < ``ceiling``."""
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
    """Filtered intruders (the answers, ``(Q,)``) of coherence questions with ``coherent (Q, 3)`` images, each
    keeping its dealt ``ranks (Q,)``; near-copy intruders are replaced first (docs/adversarial.md, "Per task").
    Returns ``(intruders (Q,), replacements (Q,), kept (Q,), summary)``."""
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
    candidates = np.where(repeated(ordered) | (ordered < 0), -1, ordered)
    tells = [TELLS[name] for name in recipes.get("visual-coherence", "adversarial").tells]
    classes, _ = tell_classes(tells, data.gather, candidates, fixed=coherent, question=no_items(n_q), answer=None)
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
    # the intruders are the answers, the coherent images the negatives; the probes read each choice's relations to
    # the other choices; an image is the intruder of at most ``capacity`` questions
    clusters = image_clusters(np.asarray(data.vectors, dtype=np.float32), seed)
    arena = Arena(
        unit_vectors(data, np.arange(n_rows)), np.arange(n_rows, dtype=np.int64), current, no_items(n_q), coherent,
        candidates, proc, clusters=clusters, probes=image_probes(relations.any),
        features=probe_features_of(relations) if relations.any else None, allowed=allowed, replaced="answer",
        candidate_class=classes, negative_class=ranks[:, None], strata=ranks,
        copies=np.full(n_rows, capacity, dtype=np.int64),
    )  # fmt: skip
    result = filter_negatives(arena, policy_, seed=seed, progress=progress)
    summary = {**result.summary(), **ceiling}
    return result.negatives[:, 0], result.replacements + replacements, result.kept_questions(), summary
