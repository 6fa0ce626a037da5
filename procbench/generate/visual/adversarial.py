"""Adversarial negatives for a visual task whose questions show images and whose answer is one image.

The setting ``adversarial`` starts from the task's rank-uniform knob setting (K1, K2 of the default, K3=2:
the same questions and first negatives as that knob setting) and runs adversarial filtering
(:mod:`procbench.generate.adversarial`) on its negatives: the context-free probes are fitted with
procedure-grouped cross-fitting, and the negatives they tell from the answer are replaced by images of other
procedures among the answer's and the question mean's nearest neighbours. A replacement lies on the same
side of the answer's distance to the question mean as the negative it replaces, so the answer's distance rank
stays the uniform one of K3=2. An image is never a near-copy of the answer or of a question image (cosine
similarity ceiling) and is a negative in at most about as many questions as its share of the pool allows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from procbench.generate.adversarial import AdversarialOptions, Arena, filter_negatives
from procbench.generate.visual.sequences import VisualData, distances_to
from procbench.progress import SILENT, Progress

__all__ = ["IMAGE_OPTIONS", "CANDIDATES", "filter_image_negatives"]

#: Image embeddings of different photos of one dish can be very close; only near-copies are excluded.
IMAGE_OPTIONS = AdversarialOptions(ceiling=0.95)
#: Candidates per question: half nearest the answer, half nearest the question mean.
CANDIDATES = 48


def filter_image_negatives(
    data: VisualData,
    proc: np.ndarray,
    answers: np.ndarray,
    shown: np.ndarray,
    negatives: np.ndarray,
    *,
    options: AdversarialOptions = IMAGE_OPTIONS,
    seed: int = 0,
    progress: Progress = SILENT,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Adversarially filtered negatives for ``Q`` questions.

    Args:
        proc: ``(Q,)`` procedure code of each question.
        answers: ``(Q,)`` image row of each answer.
        shown: ``(Q, L)`` image rows the question shows (-1: the placeholder).
        negatives: ``(Q, K)`` the starting negatives (image rows).

    Returns:
        ``(negatives (Q, K), replacements (Q,), summary)``; with a single procedure nothing is filtered.
    """
    n_q = len(answers)
    n_rows = data.n_rows
    if len(np.unique(proc)) < 2:
        return negatives.copy(), np.zeros(n_q, dtype=np.int64), {**options.to_dict(), "rounds_run": 0}
    half = CANDIDATES // 2
    mask = shown >= 0
    points = (data.gather(shown) * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1)[:, None]
    _, near_answer = data.search(data.gather(answers), proc, half, kind="adversarial")
    _, near_question = data.search(points.astype(np.float32), proc, half, kind="adversarial")
    candidates = np.concatenate([near_answer, near_question], axis=1)
    # a replacement keeps its slot's side of the answer's distance to the question mean: the answer's rank stays
    radius = distances_to(data, answers[:, None], points)[:, 0]
    closer = distances_to(data, candidates, points) < radius[:, None]
    slot_closer = distances_to(data, negatives, points) < radius[:, None]
    vectors = np.asarray(data.vectors, dtype=np.float32)
    # an image may be a negative about as often as the pool's share allows (K negatives per question)
    per_image = max(1, int(np.ceil(negatives.shape[1] * n_q / max(1, n_rows))))
    arena = Arena(
        vectors=vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12),
        identity=np.arange(n_rows, dtype=np.int64),
        answers=answers,
        question_items=shown,
        negatives=negatives,
        candidates=candidates,
        groups=proc,
        copies=np.full(n_rows, per_image, dtype=np.int64),
        candidate_class=closer,
        negative_class=slot_closer,
    )
    result = filter_negatives(arena, options, seed=seed, progress=progress)
    return result.negatives, result.replacements, result.summary()
