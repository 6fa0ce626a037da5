"""AFLite-style pruning (Le Bras et al. 2020): drop the questions the probes still solve, down to the minimum yield."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from procbench.aflite import aflite_rounds
from procbench.generate.adversarial.arena import Arena
from procbench.generate.adversarial.policy import AdversarialPolicy
from procbench.generate.adversarial.rounds import (
    _accuracies,
    _lowest,
    chance_gap,
    chance_margin,
    lagging_probes,
    probe,
    probe_names,
)
from procbench.progress import SILENT, Progress
from procbench.rng import stream
from procbench.shortcuts import hits

__all__ = ["prune_predictable"]


#: The partitions of each pruning step.
_PRUNE = stream("adversarial.prune")


def prune_predictable(
    arena: Arena, options: AdversarialPolicy, floor: int, *, seed: int = 0, progress: Progress = SILENT
) -> tuple[np.ndarray, list[dict[str, Any]], int]:
    """Drop the most predictable questions step by step until every probe is within ``options.z`` SEs of chance or
    ``floor`` are left: ``(kept (Q,), log, best)``, ``best`` the step whose worst probe was nearest chance."""
    n_q, n_neg = arena.negatives.shape
    chance = 1.0 / (n_neg + 1)
    step = max(1, round(options.prune_step * n_q))
    log: list[dict[str, Any]] = []
    best: dict[str, Any] = {"kept": np.ones(n_q, dtype=bool), "step": 0, "gap": np.inf}
    carried = np.zeros((2, n_q))  # (solved, answer_prob) summed over the steps so far
    progress.start("pruning (AFLite)", total=math.ceil(max(n_q - floor, 0) / step) + 1)

    def rank(kept: np.ndarray) -> tuple[np.ndarray, bool]:
        rows = np.flatnonzero(kept)
        solved, answer_prob, accuracy, margin = _predictability(arena, kept, options, _PRUNE.seed(seed, len(log)))
        if options.prune_carry:
            carried[:, rows] += (solved, answer_prob)
            solved, answer_prob = carried[0, rows], carried[1, rows]
        gap = chance_gap(accuracy, chance)
        log.append({"questions": len(rows), "accuracy": accuracy, "bound": round(chance + margin, 4)})
        if gap < best["gap"]:
            best.update(kept=kept.copy(), step=len(log) - 1, gap=gap)
        order = rows[np.lexsort((-answer_prob, -solved))]  # most often solved, then most confidently
        progress.advance()
        return order, gap <= margin

    aflite_rounds(rank, n_q, step=step, floor=floor)
    return best["kept"], log, best["step"]


def _predictability(
    arena: Arena, kept: np.ndarray, options: AdversarialPolicy, seed: int
) -> tuple[np.ndarray, np.ndarray, dict[str, float], float]:
    """``(solved, answer_prob, accuracy, margin)`` of the ``kept`` questions over ``options.prune_partitions``
    cross-fittings: how often the telling probes solve each, how surely, their mean accuracies, the stop margin."""
    n_neg = arena.negatives.shape[1]
    chance = 1.0 / (n_neg + 1)
    current = arena.subset(kept, negatives=arena.negatives[kept])
    valid = current.choices() >= 0
    n = int(kept.sum())
    answers = np.zeros(n, dtype=np.int64)
    solved, answer_prob = np.zeros(n), np.zeros(n)
    accuracies: list[dict[str, float]] = []
    margin = chance_margin(options, chance, n)
    repeats = dataclasses.replace(options, probe_repeats=options.prune_repeats)
    for partition in range(options.prune_partitions):
        batch = current.batch()
        features, partition_seed = current.choice_features(batch), _PRUNE.seed(seed, partition)
        # with the task's own probes
        _, probs = probe(batch, features, repeats, partition_seed, current.probes, current.strata)
        accuracy = _accuracies(probs, valid)
        accuracies.append(accuracy)
        # the probes above chance tell a question by solving it; one below chance, by rating its answer lowest
        # (dropping what the ensemble solves would push that probe further below)
        telling = [name for name in probe_names(accuracy) if accuracy.get(name, chance) > chance + margin]
        lagging = lagging_probes(accuracy, chance, margin)
        for name in telling or ([] if lagging else ["ensemble"]):
            solved += hits(probs[name], answers, valid)
            answer_prob += probs[name][:, 0]
        for name in lagging:
            solved += _lowest(probs[name], valid)
            answer_prob += 1 - probs[name][:, 0]
    accuracy = {name: round(float(np.mean([a[name] for a in accuracies])), 4) for name in accuracies[0]}
    return solved, answer_prob, accuracy, margin
