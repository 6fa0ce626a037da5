"""Adversarial negatives (SWAG/HellaSwag-style adversarial filtering) for multiple-choice question sets.

Each round fits the context-free probes (:mod:`procbench.shortcuts`) with procedure-grouped cross-fitting and
replaces what they tell until every probe is at chance; docs/adversarial.md is the specification. Modules:
:mod:`.policy` (a preset per task), :mod:`.arena` (questions, candidates, the start), :mod:`.rounds` (the round loop
and the probes), :mod:`.filter` (the replacement game), :mod:`.prune` (AFLite-style pruning).

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
