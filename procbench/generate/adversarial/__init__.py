"""Adversarial negatives (SWAG/HellaSwag-style adversarial filtering) for multiple-choice question sets.

A set is solvable without its context when its negatives differ from its answers in ways a model can see
in the choices alone. Adversarial filtering removes those differences with the context-free probes that
find them (:mod:`procbench.shortcuts`): each round fits the probe ensemble with procedure-grouped
cross-fitting, and for every question it solves, replaces the negative it rejects most easily with the
candidate from the question's pool that leaves it least sure, until the held-out accuracy of every probe
is within noise of chance or the round limit is reached. A fresh ensemble is fitted every round, so the
final accuracy is that of probes trained on the final set.

Constraints every replacement keeps: a candidate is never a paraphrase of the answer or of a question
item (cosine similarity below ``ceiling``), never repeats an item already in the question (by identity
code, e.g. the normalised title), and is used as a negative at most ``max_uses`` times in the whole set
(items reused across questions give themselves away). Candidates come from the task's own pool
(other procedures of the same split), so its split and overlap rules hold by construction.

Modules: :mod:`.policy` (every constant, a preset per task), :mod:`.arena` (questions, candidates, the start),
:mod:`.rounds` (the one round loop and the probes), :mod:`.filter` (the negatives' game), :mod:`.prune`
(AFLite-style pruning). docs/adversarial.md is the specification.

>>> arena = Arena(vectors, identity, answers, question_items, negatives, candidates, groups)  # doctest: +SKIP
>>> result = filter_negatives(arena, AdversarialPolicy(rounds=8), seed=0)                       # doctest: +SKIP
>>> result.negatives, result.rounds[-1]["accuracy"]                                            # doctest: +SKIP
"""

from __future__ import annotations

from procbench.generate.adversarial.arena import (
    CLUSTER_COUNT_COLUMNS,
    ITEM_COUNT_COLUMNS,
    Arena,
    initial_negatives,
    lattice_targets,
    no_items,
    usable_candidates,
)
from procbench.generate.adversarial.filter import filter_negatives
from procbench.generate.adversarial.policy import (
    COHERENCE_POLICY,
    IMAGE_POLICY,
    POLICY_SIZES,
    TEXTUAL_POLICY,
    AdversarialPolicy,
    demo_size,
    preset,
    sized,
)
from procbench.generate.adversarial.prune import prune_predictable
from procbench.generate.adversarial.rounds import (
    FILTER_MODELS,
    AdversarialResult,
    Game,
    RepeatedEnsemble,
    chance_gap,
    chance_margin,
    lagging_probes,
    probe,
    probe_costs,
    run_rounds,
    told_questions,
)

__all__ = [
    "CLUSTER_COUNT_COLUMNS",
    "COHERENCE_POLICY",
    "FILTER_MODELS",
    "IMAGE_POLICY",
    "ITEM_COUNT_COLUMNS",
    "POLICY_SIZES",
    "TEXTUAL_POLICY",
    "AdversarialPolicy",
    "AdversarialResult",
    "Arena",
    "Game",
    "RepeatedEnsemble",
    "chance_gap",
    "chance_margin",
    "filter_negatives",
    "initial_negatives",
    "lagging_probes",
    "lattice_targets",
    "no_items",
    "probe",
    "probe_costs",
    "prune_predictable",
    "run_rounds",
    "demo_size",
    "preset",
    "sized",
    "told_questions",
    "usable_candidates",
]
