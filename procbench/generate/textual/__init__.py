"""Textual cloze (paper 004 §3.2-3.3, DESIGN §6): choose the missing step title of a procedure.

Settings (docs/concepts/question-sets.md): one sampler class each (:data:`SAMPLERS`). ``meta``: ``setting``,
``n_steps``, ``window_start``, ``placeholder``, ``answer_key``, ``question_keys``, ``choice_keys``,
``choice_distances`` (to the answer's embedding, in choice order), ``knn_k``, ``knn_mean``, ``n_candidates``,
``choice_clusters`` and ``answer_cluster`` (debias only).
"""

from __future__ import annotations

from procbench.formats.recipeqa import PLACEHOLDER
from procbench.generate.textual.build import SWEEP, build
from procbench.generate.textual.pool import N_QUESTION, normalise_title
from procbench.generate.textual.samplers import SAMPLERS, Sampler

__all__ = ["N_QUESTION", "PLACEHOLDER", "SAMPLERS", "SWEEP", "Sampler", "build", "normalise_title"]
