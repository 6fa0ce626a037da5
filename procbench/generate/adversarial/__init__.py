"""Adversarial negatives (SWAG/HellaSwag-style adversarial filtering; docs/adversarial.md): :mod:`.policy` (a preset
per task), :mod:`.arena` (questions, candidates, the start), :mod:`.rounds` (the round loop), :mod:`.filter` (the
replacement game), :mod:`.prune`."""

from __future__ import annotations

from procbench.generate.adversarial.arena import Arena, initial_negatives, lattice_targets, no_items, usable_candidates
from procbench.generate.adversarial.filter import filter_negatives
from procbench.generate.adversarial.policy import (
    COHERENCE_POLICY,
    IMAGE_POLICY,
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
    RepeatedEnsemble,
    chance_gap,
    lagging_probes,
    probe_costs,
    run_rounds,
)

__all__ = [
    "COHERENCE_POLICY",
    "FILTER_MODELS",
    "IMAGE_POLICY",
    "TEXTUAL_POLICY",
    "AdversarialPolicy",
    "AdversarialResult",
    "Arena",
    "RepeatedEnsemble",
    "chance_gap",
    "demo_size",
    "filter_negatives",
    "initial_negatives",
    "lagging_probes",
    "lattice_targets",
    "no_items",
    "preset",
    "probe_costs",
    "prune_predictable",
    "run_rounds",
    "sized",
    "usable_candidates",
]
