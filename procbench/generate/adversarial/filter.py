"""The one replacement game: what the context-free probes tell is replaced until they are at chance.

:func:`filter_negatives` plays :func:`~.rounds.run_rounds` on an :class:`~.arena.Arena`, then, if the probes are
still above chance, :func:`~.prune.prune_predictable` (docs/adversarial.md, "The algorithm").
"""

from __future__ import annotations

import math

import numpy as np

from procbench.generate.adversarial.arena import Arena, _batch, usable_candidates
from procbench.generate.adversarial.policy import DEFAULT_POLICY, AdversarialPolicy
from procbench.generate.adversarial.prune import prune_predictable
from procbench.generate.adversarial.rounds import AdversarialResult, RepeatedEnsemble, probe, probe_costs, run_rounds
from procbench.progress import SILENT, Progress
from procbench.rng import stream
from procbench.shortcuts import FEATURE_NAMES, WITHIN_KINDS, ChoiceBatch, within_question

__all__ = ["ReplacementGame", "filter_negatives"]


#: Candidate variants scored per batch (about 100 MB of features and vectors at 384 dimensions): a round's memory
#: does not grow with the set (7,500 questions held 3.9 GB when every variant was scored at once).
VARIANT_BATCH = 16_384
#: The order questions are told in, and each round's probe folds.
_SWAPS = stream("adversarial.swaps")
_ROUNDS = stream("adversarial.rounds")
#: Columns of :func:`~procbench.shortcuts.choice_features` that count how often an item (its cluster) is a choice.
ITEM_COUNT_COLUMNS = [FEATURE_NAMES.index(f"item_count_{kind}") for kind in WITHIN_KINDS]
CLUSTER_COUNT_COLUMNS = [FEATURE_NAMES.index(f"cluster_count_{kind}") for kind in WITHIN_KINDS]


class ReplacementGame:
    """The one replacement game (:class:`~.rounds.Game`): an arena's :meth:`~.arena.Arena.slots` (its negatives, or
    its answers: coherence's intruders) replaced in place, each by a usable candidate of its slot's class."""

    def __init__(self, arena: Arena, policy: AdversarialPolicy, seed: int) -> None:
        self.rng = _SWAPS.rng(seed)
        self.work = arena.with_slots(arena.slots().copy())
        self.policy, self.seed = policy, seed
        self.allowed = usable_candidates(arena, policy)
        self.capacity = arena.capacity(policy.max_uses)
        slots = self.work.slots()
        self.uses = np.bincount(arena.identity[slots[slots >= 0]], minlength=len(self.capacity))
        self.replacements = np.zeros(len(slots), dtype=np.int64)
        self.chance = 1.0 / (arena.negatives.shape[1] + 1)

    def probe(self, round_number: int) -> tuple[RepeatedEnsemble, dict[str, np.ndarray], ChoiceBatch]:
        batch = self.work.batch()
        features, seed = self.work.choice_features(batch), _ROUNDS.seed(self.seed, round_number)
        # with the task's own probes
        ensemble, probs = probe(batch, features, self.policy, seed, self.work.probes, self.work.strata)
        return ensemble, probs, batch

    def replace(
        self,
        above: np.ndarray,
        below: np.ndarray,
        probs: dict[str, np.ndarray],
        judge: RepeatedEnsemble,
        lagging: tuple[str, ...],
    ) -> np.ndarray:
        """Swap one slot of each told question (``above``: its weakest negative, ``below``: its strongest, or the
        answer) for the candidate that brings the probes nearest chance (:func:`probe_costs`); those changed."""
        if self.policy.replace_share < 1:  # a share of the told questions, drawn at random, per round
            told = np.flatnonzero(above | below)
            told = np.sort(self.rng.permutation(told)[: math.ceil(self.policy.replace_share * len(told))])
            above, below = np.isin(np.arange(len(above)), told) & above, np.isin(np.arange(len(below)), told) & below
        targets = np.flatnonzero(above | below)
        if not len(targets):
            return targets
        work = self.work
        slots, uses, capacity, rng = work.slots(), self.uses, self.capacity, self.rng
        n_cand = work.candidates.shape[1]
        on_answer = work.replaced == "answer"
        if on_answer:
            slot = np.zeros(len(targets), dtype=np.int64)
        else:
            neg_probs = probs["ensemble"][targets, 1:]
            slot = np.where(above[targets], np.argmin(neg_probs, axis=1), np.argmax(neg_probs, axis=1))
        column = slot if on_answer else 1 + slot  # the slot's column among the choices
        shown = np.concatenate([work.choices()[targets], work.question_items[targets]], axis=1)
        shown_ids = np.where(shown >= 0, work.identity[np.maximum(shown, 0)], -2)
        cand = work.candidates[targets]
        cand_ids = work.identity[np.maximum(cand, 0)]
        usable = self.allowed[targets] & ~(cand_ids[:, :, None] == shown_ids[:, None, :]).any(axis=2)
        usable &= uses[cand_ids] < capacity[cand_ids]
        if work.candidate_class is not None and work.negative_class is not None:
            usable &= work.candidate_class[targets] == work.negative_class[targets, slot][:, None]
        judge_variants = self.policy.judge_variants
        if judge_variants is not None and usable.sum() > judge_variants:
            usable &= _drawn(usable, max(1, judge_variants // len(targets)), rng)
        # every (question, candidate) variant: the chosen slot replaced by the candidate
        base = np.repeat(work.choices()[targets][:, None, :], n_cand, axis=1)  # (T, M, 1 + K)
        old = base[np.arange(len(targets)), 0, column]  # (T,) the row each variant drops
        base[np.arange(len(targets)), :, column] = cand
        flat_rows = base.reshape(-1, base.shape[2])
        live_rows = np.flatnonzero(usable.reshape(-1))
        gap: np.ndarray = np.full(len(flat_rows), np.inf)  # (T * M,), then (T, M)
        set_counts = _set_counts(work) if len(live_rows) else (np.zeros(0), None)
        for start in range(0, len(live_rows), VARIANT_BATCH):  # variants are scored alone: batches bound the memory
            part = live_rows[start : start + VARIANT_BATCH]
            question = targets[part // n_cand]
            placeholder = None if work.placeholder is None else work.placeholder[question]
            variant = _batch(work, flat_rows[part], work.question_items[question], work.groups[question], placeholder)
            features = _variant_features(work, variant, old[part // n_cand], cand.reshape(-1)[part], set_counts)
            gap[part] = probe_costs(judge.predict(variant, features), self.chance, lagging)
        gap = gap.reshape(len(targets), n_cand)
        current = probe_costs({name: p[targets] for name, p in probs.items()}, self.chance, lagging)
        changed = []
        for t in rng.permutation(len(targets)).tolist():
            order = np.argsort(gap[t] + rng.random(n_cand) * 1e-9, kind="stable")
            for m in order.tolist():
                if not np.isfinite(gap[t, m]) or gap[t, m] >= current[t]:
                    break
                code = int(cand_ids[t, m])
                if uses[code] >= capacity[code]:
                    continue
                q = int(targets[t])
                old_row = int(slots[q, slot[t]])
                if old_row >= 0:
                    uses[work.identity[old_row]] -= 1
                uses[code] += 1
                slots[q, slot[t]] = int(cand[t, m])
                if on_answer:
                    work.answers[q] = int(cand[t, m])
                changed.append(q)
                break
        done = np.array(sorted(changed), dtype=np.int64)
        self.replacements[done] += 1
        return done

    def snapshot(self) -> tuple[np.ndarray, np.ndarray]:
        return self.work.slots().copy(), self.replacements.copy()


def filter_negatives(
    arena: Arena,
    options: AdversarialPolicy = DEFAULT_POLICY,
    *,
    seed: int = 0,
    drafted: int | None = None,
    progress: Progress = SILENT,
) -> AdversarialResult:
    """Replace what the probes tell until they are at chance, then prune down to ``min_yield`` of ``drafted``
    (default: the arena's) questions; ``result.kept`` says which stay (``arena.negatives`` is not modified)."""
    game = ReplacementGame(arena, options, seed)
    n_q = len(arena.answers)
    result = AdversarialResult(*game.snapshot(), options=options, kept=np.ones(n_q, dtype=bool))
    run_rounds(game, options, result, chance=game.chance, n_q=n_q, progress=progress)
    if result.stopped != "chance" and options.min_yield < 1:
        floor = math.ceil(options.min_yield * (n_q if drafted is None else drafted))
        best_arena = arena.with_slots(result.negatives)
        result.kept, result.pruning, result.best_step = prune_predictable(
            best_arena, options, floor, seed=seed, progress=progress
        )
    return result


def _set_counts(arena: Arena) -> tuple[np.ndarray, np.ndarray | None]:
    """How often each identity (and each cluster) is a choice in the whole set: the frequency features' counts."""
    rows = arena.choices()
    rows = rows[rows >= 0]

    def counts(codes: np.ndarray) -> np.ndarray:
        shown = np.asarray(codes)[rows]
        return np.bincount(shown[shown >= 0], minlength=int(np.max(codes)) + 1 if len(codes) else 0)

    return counts(arena.identity), None if arena.clusters is None else counts(arena.clusters)


def _variant_features(
    work: Arena,
    variant: ChoiceBatch,
    old: np.ndarray,
    new: np.ndarray,
    set_counts: tuple[np.ndarray, np.ndarray | None],
) -> np.ndarray:
    """The probes' features of variant questions (one slot swapped for a candidate), item and cluster counts taken
    over the whole set after the swap (``set_counts``), not within the variant batch."""
    features = work.choice_features(variant)
    if work.features is not None:  # the task's own features (they do not count items)
        return features
    counted = [
        (work.identity, variant.choice_ids, set_counts[0], ITEM_COUNT_COLUMNS),
        (work.clusters, variant.clusters, set_counts[1], CLUSTER_COUNT_COLUMNS),
    ]
    for table, codes, totals, columns in counted:
        if table is None or codes is None or totals is None:
            continue
        of_row = np.asarray(table)
        # (V, C) log counts in the whole set once each variant's old code (-2: none) left it and its new one joined
        old_codes = np.where(old >= 0, of_row[np.maximum(old, 0)], -2)
        swapped = totals[np.maximum(codes, 0)] - (codes == old_codes[:, None]) + (codes == of_row[new][:, None])
        logs = np.where(codes >= 0, np.log1p(np.maximum(swapped, 0)), 0.0)
        features[:, :, columns] = within_question(logs, variant.valid & (codes >= 0))
    return features


def _drawn(usable: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``(T, M)``: ``n`` of each row's True cells of ``usable (T, M)`` drawn at random (all of a row with fewer)."""
    if usable.shape[1] <= n:
        return usable
    keys = np.where(usable, rng.random(usable.shape), np.inf)
    picked = np.zeros_like(usable)
    np.put_along_axis(picked, np.argpartition(keys, n - 1, axis=1)[:, :n], True, axis=1)
    return picked & usable
