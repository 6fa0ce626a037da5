"""Textual cloze (paper 004 §3.2-3.3, DESIGN §6): choose the missing step title of a procedure.

docs/concepts/question-sets.md specifies the task and its settings (:data:`SWEEP`, one sampler class each,
:data:`SAMPLERS`): ``recipeqa``, ``default``, ``debias-bB``/``debias-auto`` (:mod:`procbench.generate.debias`),
``adversarial`` (windows picked among ``ADVERSARIAL_DRAFTS`` drafts, :func:`~.candidates.pick_windows`; negatives
filtered by :mod:`procbench.generate.adversarial`) and ``needs-context``. Negatives come only from procedures of
the question's own split when the runner passes ``splits``; ``recipeqa``, ``default`` and ``debias`` are paired
(a procedure's window and placeholder come from a generator seeded by (seed, procedure id)).

``meta`` of every question: ``setting``, ``n_steps``, ``window_start``, ``placeholder`` (position in
``question``), ``answer_key``, ``question_keys`` (step key per question item, None for the placeholder),
``choice_keys`` (step key per choice, in choice order), ``choice_distances`` (Euclidean distance of each
choice's title embedding to the correct one's, in choice order), ``knn_k`` (neighbours found), ``knn_mean``
(their mean distance, the "adaptive neighbourhood" cut), ``n_candidates`` (distinct usable titles beyond
it), and ``choice_clusters`` and ``answer_cluster`` (KMeans cluster ids; debias only, else None).

Modules: :mod:`.pool` (items, pool, drafts), :mod:`.samplers` (one class per setting),
:mod:`.candidates` (kNN lists and the adversarial candidate pool), :mod:`.arena` (the adversarial filter's
view of the pool) and :mod:`.build` (the driver, shared with next-action).
"""

from __future__ import annotations

from procbench.formats.recipeqa import PLACEHOLDER
from procbench.generate.textual.build import SWEEP, build
from procbench.generate.textual.pool import N_QUESTION, normalise_title
from procbench.generate.textual.samplers import SAMPLERS, Sampler

__all__ = [
    "N_QUESTION",
    "PLACEHOLDER",
    "SAMPLERS",
    "SWEEP",
    "Sampler",
    "build",
    "normalise_title",
]
