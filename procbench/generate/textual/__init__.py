"""Textual cloze (paper 004 §3.2-3.3, DESIGN §6): choose the missing step title of a procedure.

A question shows 4 consecutive step titles of one procedure (all 3 when it has 3 steps) with one replaced
by ``@placeholder``; ``context`` lists every step index of the procedure (models read the step texts);
``choices`` are the missing title and 3 titles of other procedures. Titles carry no step-number indicators:
a cleaned store's ``title_clean`` is used, otherwise :func:`procbench.clean.titles.strip_step_indicator` is
applied here (``counts["title_source"]`` says which). Procedures with fewer than 3 or more than 25 steps
are left out (fewer than 6 for ``debias-bB``, as in paper 004; ``debias-auto`` keeps them). Choices never
repeat a title: titles are compared normalised (:func:`normalise_title`), so a title of another procedure
that reads the same as the answer (it would also be correct) or as a title shown in the question is never
a negative.

Settings (:data:`SWEEP`, all written by ``--sweep``; one sampler class each, :data:`SAMPLERS`):

- ``recipeqa``: the biased original. Negatives uniformly at random from other procedures' title rows
  (so frequent titles are drawn often) beyond a fixed distance from the correct one (``min_distance``;
  default: the median distance between random titles of different procedures, so the rule means the same
  whatever the encoder's scale). Keeping negatives far from the answer is what makes the original biased:
  generic titles (openers, closers) are close to many answers, so they are drawn as negatives far less
  often than they are correct, and a model that sees only the choices learns to pick them; several
  questions of a procedure (``questions_per_procedure``) are drawn freely, so they
  may repeat an answer.
- ``default`` (paper 004): the k=100 nearest distinct titles of other procedures to the correct title
  (a title shared by many procedures counts once, as in Algorithm 1's set of title embeddings); those not
  farther than the mean of the k distances are dropped (they could also be correct); 3 at random.
- ``debias-bB`` (Algorithm 1, :mod:`procbench.generate.debias`): KMeans over all distinct titles, budget B
  per cluster, the same far candidates but only from clusters with budget left, each negative spending
  one. Questions are visited in a seeded random order; one whose negatives cannot be completed is skipped
  and counted (``budget_exhausted``) and spends nothing.

When the runner passes ``splits`` (``procbench generate`` does), negatives come only from procedures of
the question's own split, so a title of one split is never a choice in another.

The questions of ``recipeqa``, ``default`` and ``debias`` are paired: a procedure's window and placeholder are
drawn from a generator seeded by (seed, procedure id), so those settings differ only in their negatives.
``adversarial`` chooses each procedure's question among its first ``ADVERSARIAL_DRAFTS`` (policy) drafts: one whose
answer title no other step shares (a generic title's count in the set gives it away), and of those the one
whose answer has the most titles of other procedures nearer the question (:func:`~.candidates.pick_windows`), since an
answer nearer its question than anything else gives itself away whatever the negatives; its negatives are
then filtered against the context-free probes (:mod:`procbench.generate.adversarial`) from candidates near
the answer, the question mean, each question item, and sharing the question's words. With title items and
step-text embeddings, no candidate nearer the answer's own step text (which the context shows) than the
answer is offered (:func:`~.candidates.fits_worse`): a reader of the context can tell the answer.

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
