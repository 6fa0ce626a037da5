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

>>> arena = Arena(vectors, identity, answers, question_items, negatives, candidates, groups)  # doctest: +SKIP
>>> result = filter_negatives(arena, AdversarialOptions(rounds=8), seed=0)                      # doctest: +SKIP
>>> result.negatives, result.rounds[-1]["accuracy"]                                            # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from procbench.progress import SILENT, Progress
from procbench.shortcuts import (
    DISTANCE_MODEL,
    FEATURE_NAMES,
    MODELS,
    WITHIN_KINDS,
    ChoiceBatch,
    ShortcutEnsemble,
    choice_features,
    hits,
    within_question,
    word_weights,
)

__all__ = [
    "AdversarialOptions",
    "AdversarialResult",
    "Arena",
    "FILTER_MODELS",
    "RepeatedEnsemble",
    "chance_gap",
    "chance_margin",
    "filter_negatives",
    "initial_negatives",
    "lagging_probes",
    "lattice_targets",
    "probe_costs",
    "prune_predictable",
    "told_questions",
    "usable_candidates",
]


#: The probes' cluster-frequency feature counts choices per KMeans cluster of the pool's items (as the audit's
#: ``partial_input`` does, which clusters a set's choice items into at most 16).
ADVERSARIAL_CLUSTERS = 16
#: Columns of :func:`choice_features` that count how often an item (its cluster) is a choice in the whole set.
ITEM_COUNT_COLUMNS = [FEATURE_NAMES.index(f"item_count_{kind}") for kind in WITHIN_KINDS]
CLUSTER_COUNT_COLUMNS = [FEATURE_NAMES.index(f"cluster_count_{kind}") for kind in WITHIN_KINDS]


@dataclass(frozen=True)
class AdversarialOptions:
    """How adversarial filtering runs.

    Attributes:
        rounds: at most this many fit-and-replace rounds.
        ceiling: a candidate's cosine similarity to the answer and to every question item must stay below it
            (no paraphrases of the answer; no near-copies of what the question shows).
        max_uses: how many questions may use one item as a negative.
        n_folds: procedure-grouped folds of the cross-fitting.
        z: the stop rule: every probe's (and their mean's) accuracy at most chance + ``z`` binomial standard errors.
        min_yield: when replacing negatives leaves the probes above that bound, the questions they still solve
            are dropped, most confidently solved first, while this share of the drafted questions stays
            (AFLite-style pruning); 1: never drop a question.
    """

    rounds: int = 15
    ceiling: float = 0.8
    max_uses: int = 1
    n_folds: int = 5
    z: float = 0.5
    min_yield: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "ceiling": self.ceiling,
            "max_uses": self.max_uses,
            "n_folds": self.n_folds,
            "z": self.z,
            "min_yield": self.min_yield,
        }


@dataclass
class Arena:
    """Q questions over a pool of N items (rows of ``vectors``), with K negatives and M candidates each.

    Attributes:
        vectors: ``(N, D)`` float32 L2-normalised item vectors.
        identity: ``(N,)`` int64 item identity (rows with the same code show the same item; -1: unusable).
        answers: ``(Q,)`` row of each correct choice.
        question_items: ``(Q, L)`` rows of the items the question shows (-1: placeholder or none).
        negatives: ``(Q, K)`` rows of the current negatives (the starting point; replaced in place).
        candidates: ``(Q, M)`` rows a negative may be replaced by (-1: padding), best first.
        groups: ``(Q,)`` procedure of each question (cross-fitting never splits one).
        texts: ``(N,)`` item texts (text items: length and word-overlap features), or None.
        clusters: ``(N,)`` cluster of each item (cluster-frequency feature), or None.
        copies: ``(n_identities,)`` how many pool rows show each identity; an identity may be a negative
            ``max_uses`` times per copy (so a title that many procedures share is drawn about as often as a
            negative as it is correct). None: one copy each.
        candidate_class, negative_class: ``(Q, M)`` and ``(Q, K)``: a candidate may only replace a negative of
            its own class (e.g. closer to the question than the answer or not, so the answer's distance rank
            stays what it was). None: any candidate may replace any negative.
        placeholder: ``(Q,)`` slot of the placeholder among ``question_items`` (-1: none), or None.
        features: ``features(batch) -> (Q, C, F)`` the probes' per-choice features of a :class:`ChoiceBatch` of
            this arena (its ``choice_ids`` are the rows' identities), for items :func:`choice_features` does not
            describe (e.g. orders of images). None: :func:`choice_features`.
    """

    vectors: np.ndarray
    identity: np.ndarray
    answers: np.ndarray
    question_items: np.ndarray
    negatives: np.ndarray
    candidates: np.ndarray
    groups: np.ndarray
    texts: Sequence[str | None] | None = None
    clusters: np.ndarray | None = None
    copies: np.ndarray | None = None
    candidate_class: np.ndarray | None = None
    negative_class: np.ndarray | None = None
    placeholder: np.ndarray | None = None
    features: Callable[[ChoiceBatch], np.ndarray] | None = None
    _word_weights: dict[str, float] | None = field(default=None, repr=False)

    def word_weights(self) -> dict[str, float] | None:
        """The TF-IDF overlap feature's token weights, from every item text of the pool (None: no texts)."""
        if self.texts is None:
            return None
        if self._word_weights is None:
            self._word_weights = word_weights(t for t in self.texts if t)
        return self._word_weights

    def capacity(self, max_uses: int) -> np.ndarray:
        """``(n_identities,)`` how many questions may use each identity as a negative."""
        n = int(self.identity.max()) + 1 if len(self.identity) else 0
        copies = np.ones(n, dtype=np.int64) if self.copies is None else np.asarray(self.copies, dtype=np.int64)
        return copies * max_uses

    def choices(self) -> np.ndarray:
        """``(Q, 1 + K)`` rows: the answer first, then the negatives."""
        return np.concatenate([self.answers[:, None], self.negatives], axis=1)

    def subset(self, keep: np.ndarray, *, negatives: np.ndarray) -> Arena:
        """The questions where ``keep`` (``(Q,)`` bool) is True, with these ``negatives``."""
        return Arena(
            vectors=self.vectors,
            identity=self.identity,
            answers=self.answers[keep],
            question_items=self.question_items[keep],
            negatives=negatives,
            candidates=self.candidates[keep],
            groups=self.groups[keep],
            texts=self.texts,
            clusters=self.clusters,
            copies=self.copies,
            candidate_class=None if self.candidate_class is None else self.candidate_class[keep],
            negative_class=None if self.negative_class is None else self.negative_class[keep],
            placeholder=None if self.placeholder is None else self.placeholder[keep],
            features=self.features,
            _word_weights=self._word_weights,
        )

    def batch(self) -> ChoiceBatch:
        """The probes' view of the current choices (the answer is column 0)."""
        return _batch(self, self.choices(), self.question_items, self.groups, self.placeholder)

    def choice_features(self, batch: ChoiceBatch) -> np.ndarray:
        """``(Q, C, F)`` the probes' features of ``batch`` (:attr:`features`, else :func:`choice_features`)."""
        return (self.features or choice_features)(batch)


def _batch(
    arena: Arena, rows: np.ndarray, q_rows: np.ndarray, groups: np.ndarray, placeholder: np.ndarray | None = None
) -> ChoiceBatch:
    dim = arena.vectors.shape[1]
    padded = np.vstack([arena.vectors, np.zeros((1, dim), dtype=arena.vectors.dtype)])
    valid = rows >= 0
    q_mask = q_rows >= 0
    texts = arena.texts
    choice_texts = question_texts = None
    if texts is not None:
        choice_texts = [[str(texts[r] or "") if r >= 0 else "" for r in row] for row in rows.tolist()]
        question_texts = [[str(texts[r] or "") for r in row if r >= 0] for row in q_rows.tolist()]
    return ChoiceBatch(
        choice_vectors=padded[rows],
        question_vectors=padded[q_rows],
        question_mask=q_mask,
        valid=valid,
        answers=np.zeros(len(rows), dtype=np.int64),
        groups=groups,
        choice_texts=choice_texts,
        question_texts=question_texts,
        choice_ids=np.where(valid, arena.identity[np.maximum(rows, 0)], -1),
        clusters=None if arena.clusters is None else np.where(valid, arena.clusters[np.maximum(rows, 0)], -1),
        placeholder=placeholder,
        word_weights=arena.word_weights(),
    )


@dataclass
class AdversarialResult:
    """What filtering did: final negatives, replacements per question, which questions stay, and one log
    entry per round (``pruning``: one per pruning step)."""

    negatives: np.ndarray
    replacements: np.ndarray
    rounds: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = "rounds"
    best_round: int = 0
    options: AdversarialOptions = field(default_factory=AdversarialOptions)
    kept: np.ndarray = field(default_factory=lambda: np.ones(0, dtype=bool))
    pruning: list[dict[str, Any]] = field(default_factory=list)
    best_step: int = 0

    def summary(self) -> dict[str, Any]:
        """A JSON-ready account for the set's counts and card."""
        final = self.rounds[self.best_round] if self.rounds else {}
        if self.pruning:
            final = self.pruning[self.best_step]
        kept = self.kept if len(self.kept) else np.ones(len(self.replacements), dtype=bool)
        return {
            **self.options.to_dict(),
            "rounds_run": max(0, len(self.rounds) - 1),
            "stopped": self.stopped,
            "kept_round": self.best_round,
            "questions_changed": int((self.replacements[kept] > 0).sum()),
            "replacements": int(self.replacements[kept].sum()),
            "pruned": int((~kept).sum()),
            "final_accuracy": final.get("accuracy"),
            "chance_bound": final.get("bound"),
            "history": [{k: v for k, v in r.items() if k != "bound"} for r in self.rounds],
            "pruning": [{k: v for k, v in p.items() if k != "bound"} for p in self.pruning],
        }


def usable_candidates(arena: Arena, options: AdversarialOptions) -> np.ndarray:
    """``(Q, M)`` candidates that are usable at all: not a paraphrase of the answer or of a question item."""
    cand = arena.candidates
    ok = cand >= 0
    safe = np.maximum(cand, 0)
    vec = arena.vectors
    to_answer = np.einsum("qmd,qd->qm", vec[safe], vec[arena.answers])
    ok &= to_answer < options.ceiling
    ok &= arena.identity[safe] >= 0
    ok &= arena.capacity(options.max_uses)[np.maximum(arena.identity[safe], 0)] > 0
    ok &= arena.identity[safe] != arena.identity[arena.answers][:, None]
    for column in range(arena.question_items.shape[1]):
        item = arena.question_items[:, column]
        present = item >= 0
        sim = np.einsum("qmd,qd->qm", vec[safe], vec[np.maximum(item, 0)])
        ok &= ~present[:, None] | ((sim < options.ceiling) & (arena.identity[safe] != arena.identity[item][:, None]))
    return ok


def initial_negatives(
    arena: Arena,
    options: AdversarialOptions = AdversarialOptions(),
    *,
    seed: int = 0,
    wants: np.ndarray | None = None,
    preference: np.ndarray | None = None,
    offsets: np.ndarray | None = None,
    targets: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A starting point: K usable candidates per question, uniformly at random, within ``max_uses``.

    ``wants`` ``(Q, C)``: how many negatives of each class of ``arena.candidate_class`` a question takes
    (they sum to K; e.g. how many closer to the question than the answer, which fixes the answer's rank).
    Questions are visited in a seeded random order. Returns ``(negatives (Q, K), classes (Q, K), unfilled
    (Q,))``: rows of the questions that could not get their K distinct usable candidates are -1 there and
    ``unfilled`` True; ``classes`` is each negative's class (0 without ``wants``). ``preference`` ``(Q, M)``:
    candidates with lower values are taken first (None: in random order). ``offsets`` ``(Q, M)`` and ``targets``
    ``(Q, K)`` (together, e.g. from :func:`lattice_targets`): slot k takes, among the candidates of its class, the
    one whose offset is nearest ``targets[:, k]`` on the same side of 0 (slots nearest 0 first); the classes must
    follow the sign of the offsets, and ``wants`` and ``preference`` are not used.
    """
    if targets is not None:
        if offsets is None or arena.candidate_class is None:
            raise ValueError("targets need offsets and arena.candidate_class")
        return _slot_negatives(arena, options, rng_seed=seed, offsets=offsets, targets=targets)
    rng = np.random.default_rng([seed, 0x1A1])
    n_q, n_neg = arena.negatives.shape
    allowed = usable_candidates(arena, options)
    capacity = arena.capacity(options.max_uses)
    uses = np.zeros(len(capacity), dtype=np.int64)
    negatives = np.full((n_q, n_neg), -1, dtype=np.int64)
    classes = np.full((n_q, n_neg), -1, dtype=np.int64)
    unfilled = np.zeros(n_q, dtype=bool)
    klass = None if wants is None else arena.candidate_class
    if wants is not None and klass is None:
        raise ValueError("wants needs arena.candidate_class")
    # the questions with the least slack choose first, so few are left without candidates
    kinds = np.zeros_like(allowed, dtype=np.int64) if klass is None else klass
    want = np.full((n_q, 1), n_neg) if wants is None else np.asarray(wants, dtype=np.int64)
    have = np.stack([(allowed & (kinds == c)).sum(axis=1) for c in range(want.shape[1])], axis=1)
    slack = np.where(want > 0, have - want, np.iinfo(np.int64).max).min(axis=1)
    for q in np.lexsort((rng.random(n_q), slack)).tolist():
        seen = {int(arena.identity[arena.answers[q]])}
        seen.update(int(arena.identity[r]) for r in arena.question_items[q].tolist() if r >= 0)
        left = np.array([n_neg]) if wants is None else np.asarray(wants[q], dtype=np.int64).copy()
        picked: list[tuple[int, int]] = []
        order = rng.permutation(arena.candidates.shape[1])
        if preference is not None:
            order = order[np.argsort(preference[q, order], kind="stable")]
        for m in order.tolist():
            row = int(arena.candidates[q, m])
            code = int(arena.identity[row])
            kind = 0 if klass is None else int(klass[q, m])
            if not allowed[q, m] or uses[code] >= capacity[code] or code in seen or kind < 0 or not left[kind]:
                continue
            seen.add(code)
            left[kind] -= 1
            picked.append((row, kind))
            if len(picked) == n_neg:
                break
        if len(picked) < n_neg:
            unfilled[q] = True
            continue
        rows = [row for row, _ in picked]
        np.add.at(uses, arena.identity[rows], 1)
        negatives[q] = rows
        classes[q] = [kind for _, kind in picked]
    return negatives, classes, unfilled


#: The start's spacing of the choices' distances to the question mean (:func:`lattice_targets`), in standard
#: deviations of the answers' distances. Textual cloze ``adversarial``, audit partial-input / question-distance, mean
#: of 3 seeds: RecipeQA 0.286 / 0.260, wikiHow 0.267 / 0.296 at 0.3; 0.313 / 0.271 on RecipeQA at 0.2; up to
#: 0.36 / 0.35 at 0.5 (the outer negatives lie farther than answers do). Negatives drawn at distances of other
#: questions' answers (exchangeable in distance) read 0.303 / 0.263 and 0.280 / 0.291.
LATTICE_SPACING = 0.3


def lattice_targets(closer: np.ndarray, spacing: float, n_negatives: int) -> np.ndarray:
    """``(Q, K)`` target offsets (a negative's distance to the question minus the answer's) that space the choices
    evenly, ``spacing`` apart, with the answer at its rank: ``closer (Q,)`` of them at ``-s, -2s, ...``, the others
    at ``+s, +2s, ...``.

    Negatives drawn nearest the answer's distance, on both sides, leave an answer of a middle rank with a near
    neighbour on each side while the outer negatives have one: the answer is then the choice nearest another in
    distance (and near the middle) more often than by chance. On an even spacing every choice looks alike.
    """
    slot = np.arange(n_negatives)[None, :]
    below = np.asarray(closer, dtype=np.int64)[:, None]
    return np.where(slot < below, -(slot + 1), slot - below + 1).astype(np.float64) * spacing


def _slot_negatives(
    arena: Arena, options: AdversarialOptions, *, rng_seed: int, offsets: np.ndarray, targets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`initial_negatives` with a target offset per slot."""
    rng = np.random.default_rng([rng_seed, 0x1A2])
    n_q, n_neg = targets.shape
    allowed = usable_candidates(arena, options) & np.isfinite(offsets)
    capacity = arena.capacity(options.max_uses)
    uses = np.zeros(len(capacity), dtype=np.int64)
    negatives = np.full((n_q, n_neg), -1, dtype=np.int64)
    classes = np.full((n_q, n_neg), -1, dtype=np.int64)
    unfilled = np.zeros(n_q, dtype=bool)
    klass = np.asarray(arena.candidate_class)
    below = offsets < 0
    # the questions with the fewest candidates on their scarcer side choose first
    need_below = (targets < 0).sum(axis=1)
    have_below = (allowed & below).sum(axis=1)
    have_above = (allowed & ~below).sum(axis=1)
    need_above = n_neg - need_below
    slack = np.minimum(
        np.where(need_below > 0, have_below - need_below, n_q), np.where(need_above > 0, have_above - need_above, n_q)
    )
    for q in np.lexsort((rng.random(n_q), slack)).tolist():
        seen = {int(arena.identity[arena.answers[q]])}
        seen.update(int(arena.identity[r]) for r in arena.question_items[q].tolist() if r >= 0)
        codes = arena.identity[np.maximum(arena.candidates[q], 0)]
        picked: list[int] = []
        for k in np.argsort(np.abs(targets[q]), kind="stable").tolist():
            side = below[q] if targets[q, k] < 0 else ~below[q]
            ok = allowed[q] & side & (klass[q] >= 0)
            ok &= uses[codes] < capacity[codes]
            ok &= ~np.isin(codes, list(seen))
            if not ok.any():
                break
            m = int(np.flatnonzero(ok)[np.argmin(np.abs(offsets[q, ok] - targets[q, k]))])
            seen.add(int(codes[m]))
            picked.append(m)
            classes[q, len(picked) - 1] = klass[q, m]
        if len(picked) < n_neg:
            unfilled[q] = True
            classes[q] = -1
            continue
        rows = arena.candidates[q, picked]
        np.add.at(uses, arena.identity[rows], 1)
        negatives[q] = rows
    return negatives, classes, unfilled


def _accuracies(probs: dict[str, np.ndarray], valid: np.ndarray) -> dict[str, float]:
    answers = np.zeros(len(valid), dtype=np.int64)
    return {name: round(float(hits(p, answers, valid).mean()), 4) for name, p in probs.items()}


#: The context-free probes filtering plays against: the audit's shortcut probes (:data:`MODELS`) and its
#: question-distance probe (:data:`DISTANCE_MODEL`), which reads a distance pattern the trees leave. Audit
#: question-distance / partial-input without -> with it, mean of 3 audit seeds: textual cloze on wikiHow step texts
#: (generation seeds 0, 1) 0.333 / 0.263, 0.320 / 0.283 -> 0.269 / 0.312, 0.236 / 0.289; RecipeQA (seeds 0-2, mean)
#: 0.268 / 0.268 -> 0.265 / 0.281; synthetic visual cloze 0.312 / 0.293 -> 0.252 / 0.295 and coherence 0.343 / 0.279
#: -> 0.255 / 0.302.
FILTER_MODELS = (*MODELS, DISTANCE_MODEL)

#: A round judges replacement candidates by the mean of the ensembles of this many rounds, its own and those before
#: it (as fictitious play answers the mix of the adversary's past strategies): a swap must fool the probes of earlier
#: rounds too, so a round does not plant what the one before removed. Textual cloze ``adversarial`` on the mixed
#: corpus, audit partial-input, seeds 0-2: 0.321 with 1 (10 rounds), 0.289 with 3 (15 rounds); the filter's own
#: partial-input over rounds 4-10 stayed at 0.40-0.48 with 1 and fell to 0.32-0.36 with 3. On one site alone it costs
#: a little or nothing: RecipeQA 0.264 -> 0.289, wikiHow (step texts) 0.276 -> 0.274.
JUDGE_ROUNDS = 3

#: A round's probes are the mean of this many cross-fitted ensembles, each on its own procedure folds. With one,
#: which questions a round targets depends on how the procedures fell into folds; textual cloze ``adversarial``,
#: audit partial-input, seeds 0-2: RecipeQA 0.304 -> 0.268, wikiHow 0.317 -> 0.280 with two.
PROBE_REPEATS = 2


@dataclass
class RepeatedEnsemble:
    """The mean of :class:`ShortcutEnsemble` s fitted with different seeds (procedure folds)."""

    members: list[ShortcutEnsemble]

    def predict(self, batch: ChoiceBatch, features: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Each probe's within-question probabilities ``(Q, C)``, averaged over the members."""
        predicted = [member.predict(batch, features) for member in self.members]
        return {name: np.mean([p[name] for p in predicted], axis=0) for name in predicted[0]}


def _probe(arena: Arena, options: AdversarialOptions, seed: int) -> tuple[RepeatedEnsemble, dict[str, np.ndarray]]:
    """Fresh cross-fitted ensembles on the arena's current choices and their mean held-out probabilities."""
    batch = arena.batch()
    features = arena.choice_features(batch)
    ensemble = RepeatedEnsemble(
        [
            ShortcutEnsemble(n_folds=options.n_folds, seed=seed + 7919 * repeat, models=FILTER_MODELS).fit(
                batch, features
            )
            for repeat in range(PROBE_REPEATS)
        ]
    )
    return ensemble, ensemble.predict(batch, features)


def chance_gap(accuracy: dict[str, float], chance: float) -> float:
    """How far the probe (or their mean) farthest from chance is from it."""
    return max(abs(accuracy[name] - chance) for name in (*FILTER_MODELS, "ensemble") if name in accuracy)


def chance_margin(options: AdversarialOptions, chance: float, n_q: int) -> float:
    """The stop rule's tolerance: ``z`` binomial standard errors of an accuracy at chance over ``n_q`` questions."""
    return options.z * math.sqrt(chance * (1 - chance) / max(n_q, 1))


def lagging_probes(accuracy: dict[str, float], chance: float, margin: float) -> tuple[str, ...]:
    """The probes (:data:`FILTER_MODELS`) whose accuracy is below chance by more than ``margin``."""
    return tuple(name for name in FILTER_MODELS if name in accuracy and accuracy[name] < chance - margin)


def told_questions(
    probs: dict[str, np.ndarray], accuracy: dict[str, float], batch: ChoiceBatch, chance: float, margin: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(above (Q,), below (Q,))``: the questions a probe above chance (or the probes' mean) solves, and the others
    where a probe below chance rates the answer (column 0) strictly lowest."""
    above = np.zeros(len(batch), dtype=bool)
    below = np.zeros(len(batch), dtype=bool)
    for name in (*FILTER_MODELS, "ensemble"):
        if accuracy[name] > chance + margin:
            above |= hits(probs[name], batch.answers, batch.valid)
        elif accuracy[name] < chance - margin and name != "ensemble":
            below |= _lowest(probs[name], batch.valid)
    return above, below & ~above


def filter_negatives(
    arena: Arena,
    options: AdversarialOptions = AdversarialOptions(),
    *,
    seed: int = 0,
    drafted: int | None = None,
    progress: Progress = SILENT,
) -> AdversarialResult:
    """Replace the negatives the context-free probes tell from the answer until the probes are at chance.

    Each round fits fresh cross-fitted ensembles (:data:`PROBE_REPEATS`, averaged). For a probe above chance, the
    questions it solves get their weakest negative replaced; for a probe *below* chance (it has learnt what answers
    are not), the questions where it rates the answer lowest get their strongest negative replaced. Either way the
    replacement is the usable candidate that brings every probe's probability of the answer nearest
    ``1 / #choices`` (:func:`probe_costs`: not the most answer-like one, which would plant the opposite tell,
    and never one probe pushed past chance to offset another); the probes of the last :data:`JUDGE_ROUNDS` rounds
    score a candidate, with the item and cluster counts of the whole set after the swap. The negatives of the
    round whose worst probe was nearest chance are returned. ``arena.negatives`` is not modified;
    every question keeps its answer and question items. If the probes are still above chance and
    ``options.min_yield`` < 1, :func:`prune_predictable` then drops the questions they solve, keeping at least
    ``min_yield`` of ``drafted`` questions (default: the arena's); ``result.kept`` says which stay.
    Deterministic for a given ``seed``.
    """
    rng = np.random.default_rng([seed, 0xADF])
    negatives = arena.negatives.copy()
    work = Arena(**{**arena.__dict__, "negatives": negatives})
    n_q, n_neg = negatives.shape
    allowed = usable_candidates(arena, options)
    capacity = arena.capacity(options.max_uses)
    uses = np.bincount(arena.identity[negatives[negatives >= 0]], minlength=len(capacity))
    replacements = np.zeros(n_q, dtype=np.int64)
    chance = 1.0 / (n_neg + 1)
    margin = chance_margin(options, chance, n_q)
    result = AdversarialResult(negatives.copy(), replacements.copy(), options=options, kept=np.ones(n_q, dtype=bool))
    best = np.inf
    recent: list[RepeatedEnsemble] = []  # this round's ensemble first
    progress.start("adversarial filtering", total=options.rounds)
    for round_number in range(options.rounds + 1):
        batch = work.batch()
        ensemble, probs = _probe(work, options, seed + round_number)
        recent = [ensemble, *recent][:JUDGE_ROUNDS]
        accuracy = _accuracies(probs, batch.valid)
        entry: dict[str, Any] = {"round": round_number, "accuracy": accuracy, "bound": round(chance + margin, 4)}
        result.rounds.append(entry)
        worst = chance_gap(accuracy, chance)
        if worst < best:
            best = worst
            result.negatives, result.replacements = negatives.copy(), replacements.copy()
            result.best_round = round_number
        if worst <= margin:
            result.stopped = "chance"
            break
        if round_number == options.rounds:
            break
        above, below = told_questions(probs, accuracy, batch, chance, margin)
        lagging = lagging_probes(accuracy, chance, margin)
        judge = RepeatedEnsemble([member for past in recent for member in past.members])
        changed = _replace(work, above, below, probs, judge, allowed, uses, capacity, chance, rng, lagging)
        replacements[changed] += 1
        entry["replaced"] = int(len(changed))
        progress.advance()
        if not len(changed):
            result.stopped = "no_candidates"
            break
    if result.stopped != "chance" and options.min_yield < 1:
        floor = math.ceil(options.min_yield * (n_q if drafted is None else drafted))
        best_arena = Arena(**{**arena.__dict__, "negatives": result.negatives})
        result.kept, result.pruning, result.best_step = prune_predictable(best_arena, options, floor, seed=seed)
    return result


#: Each pruning step drops this share of the questions.
PRUNE_STEP = 0.03
#: Pruning scores each question with this many cross-fittings (fresh procedure folds each), as AFLite averages
#: over random partitions: a question one fold assignment happens to solve is not dropped for that alone.
PRUNE_PARTITIONS = 3


def prune_predictable(
    arena: Arena, options: AdversarialOptions, floor: int, *, seed: int = 0
) -> tuple[np.ndarray, list[dict[str, Any]], int]:
    """Drop the questions context-free probes still solve, most predictable first (AFLite-style).

    Each step fits :data:`PRUNE_PARTITIONS` fresh cross-fitted ensembles on the questions left; a question's
    predictability is how often their probes above chance solve it, and their probes below chance rate its
    answer lowest (ties: the probabilities of its answer; the ensemble's when no probe is off chance). The
    ``PRUNE_STEP`` share of most predictable questions is dropped, until every probe's mean accuracy is
    within ``options.z`` standard errors of chance or ``floor`` questions are left. Returns ``(kept (Q,),
    log, best)``: the questions of step ``best``, the one whose worst probe was nearest chance, and one log
    entry per step.
    """
    n_q, n_neg = arena.negatives.shape
    chance = 1.0 / (n_neg + 1)
    kept = np.ones(n_q, dtype=bool)
    best, best_step, best_gap = kept.copy(), 0, np.inf
    log: list[dict[str, Any]] = []
    step = max(1, round(PRUNE_STEP * n_q))
    while True:
        rows = np.flatnonzero(kept)
        current = arena.subset(kept, negatives=arena.negatives[kept])
        valid = current.choices() >= 0
        answers = np.zeros(len(rows), dtype=np.int64)
        solved = np.zeros(len(rows))
        answer_prob = np.zeros(len(rows))
        accuracies: list[dict[str, float]] = []
        margin = chance_margin(options, chance, len(rows))
        for partition in range(PRUNE_PARTITIONS):
            _, probs = _probe(current, options, seed + 0x9E + PRUNE_PARTITIONS * len(log) + partition)
            accuracy = _accuracies(probs, valid)
            accuracies.append(accuracy)
            # the probes above chance tell a question by solving it; one below chance, by rating its answer lowest
            # (dropping what the ensemble solves would push that probe further below)
            telling = [name for name in FILTER_MODELS if accuracy.get(name, chance) > chance + margin]
            lagging = lagging_probes(accuracy, chance, margin)
            for name in telling or ([] if lagging else ["ensemble"]):
                solved += hits(probs[name], answers, valid)
                answer_prob += probs[name][:, 0]
            for name in lagging:
                solved += _lowest(probs[name], valid)
                answer_prob += 1 - probs[name][:, 0]
        accuracy = {name: round(float(np.mean([a[name] for a in accuracies])), 4) for name in accuracies[0]}
        gap = chance_gap(accuracy, chance)
        log.append({"questions": len(rows), "accuracy": accuracy, "bound": round(chance + margin, 4)})
        if gap < best_gap:
            best, best_step, best_gap = kept.copy(), len(log) - 1, gap
        drop = min(step, len(rows) - floor)
        if gap <= margin or drop <= 0:
            break
        order = np.lexsort((-answer_prob, -solved))[:drop]  # most often solved, then most confidently
        kept[rows[order]] = False
    return best, log, best_step


def _lowest(probs: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``(Q,)`` True where the answer (column 0) is the strictly least likely valid choice."""
    masked = np.where(valid, probs, np.inf)
    return masked[:, 0] < masked[:, 1:].min(axis=1)


def _set_counts(arena: Arena) -> tuple[np.ndarray, np.ndarray | None]:
    """How often each identity (and each cluster) is a choice in the whole set: the frequency features' counts."""
    rows = arena.choices()
    rows = rows[rows >= 0]
    ids = arena.identity[rows]
    id_counts = np.bincount(ids[ids >= 0], minlength=int(arena.identity.max()) + 1 if len(arena.identity) else 0)
    if arena.clusters is None:
        return id_counts, None
    clusters = np.asarray(arena.clusters)[rows]
    size = int(np.max(arena.clusters)) + 1 if len(arena.clusters) else 0
    return id_counts, np.bincount(clusters[clusters >= 0], minlength=max(size, 0))


def _swapped_counts(codes: np.ndarray, totals: np.ndarray, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``(V, C)`` log counts of ``codes`` (-1: none) in the whole set once each variant's ``old`` code (-2: none)
    has left it and its ``new`` code has joined it (``totals``: the counts before)."""
    safe = np.maximum(codes, 0)
    counts = totals[safe] - (codes == old[:, None]) + (codes == new[:, None])
    return np.where(codes >= 0, np.log1p(np.maximum(counts, 0)), 0.0)


def _variant_features(work: Arena, variant: ChoiceBatch, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The probes' features of variant questions (one negative of a question of the set swapped for a candidate):
    with :func:`choice_features`, the item and cluster counts are those of the whole set after the swap (a
    variant batch repeats each question once per candidate, so counting within it would be wrong)."""
    features = work.choice_features(variant)
    if work.features is not None:  # the task's own features (they do not count items)
        return features
    id_counts, cluster_counts = _set_counts(work)
    if variant.choice_ids is not None:
        old_ids = np.where(old >= 0, work.identity[np.maximum(old, 0)], -2)
        new_ids = work.identity[new]
        counts = _swapped_counts(variant.choice_ids, id_counts, old_ids, new_ids)
        features[:, :, ITEM_COUNT_COLUMNS] = within_question(counts, variant.valid & (variant.choice_ids >= 0))
    if cluster_counts is not None and variant.clusters is not None and work.clusters is not None:
        clusters = np.asarray(work.clusters)
        old_cl = np.where(old >= 0, clusters[np.maximum(old, 0)], -2)
        counts = _swapped_counts(variant.clusters, cluster_counts, old_cl, clusters[new])
        features[:, :, CLUSTER_COUNT_COLUMNS] = within_question(counts, variant.valid & (variant.clusters >= 0))
    return features


def probe_costs(probs: dict[str, np.ndarray], chance: float, lagging: Sequence[str] = ()) -> np.ndarray:
    """``(Q,)`` how far the probes' (:data:`FILTER_MODELS`) probabilities of the answer (column 0) are from ``chance``,
    summed over the probes; for a probe ``lagging`` (below chance over the set: it has learnt what answers are
    not) only an answer probability *below* chance counts. Every probe judges a replacement, so one probe is
    not brought to chance by pushing another past it, and a probe below chance is pulled back: that is how a
    set would end with a probe far below chance, which a shortcut hunter inverts."""
    costs = []
    for name in FILTER_MODELS:
        if name in probs:
            deviation = probs[name][:, 0] - chance
            costs.append(np.maximum(-deviation, 0.0) if name in lagging else np.abs(deviation))
    return np.sum(costs, axis=0)


def _replace(
    work: Arena,
    above: np.ndarray,
    below: np.ndarray,
    probs: dict[str, np.ndarray],
    ensemble: RepeatedEnsemble,
    allowed: np.ndarray,
    uses: np.ndarray,
    capacity: np.ndarray,
    chance: float,
    rng: np.random.Generator,
    lagging: Sequence[str] = (),
) -> np.ndarray:
    """Swap one negative of each target question for its best usable candidate; the questions changed.

    ``above`` questions lose their weakest negative, ``below`` questions their strongest (by the ensemble); the
    candidate chosen brings the probes' probabilities of the answer nearest ``chance`` (:func:`probe_costs`;
    ``lagging``: the probes below chance over the set) and must bring them nearer than they were.
    """
    targets = np.flatnonzero(above | below)
    if not len(targets):
        return targets
    negatives = work.negatives
    n_neg = negatives.shape[1]
    n_cand = work.candidates.shape[1]
    neg_probs = probs["ensemble"][targets, 1:]
    slot = np.where(above[targets], np.argmin(neg_probs, axis=1), np.argmax(neg_probs, axis=1))
    shown = np.concatenate([work.choices()[targets], work.question_items[targets]], axis=1)
    shown_ids = np.where(shown >= 0, work.identity[np.maximum(shown, 0)], -2)
    cand = work.candidates[targets]
    cand_ids = work.identity[np.maximum(cand, 0)]
    usable = allowed[targets] & ~(cand_ids[:, :, None] == shown_ids[:, None, :]).any(axis=2)
    usable &= uses[cand_ids] < capacity[cand_ids]
    if work.candidate_class is not None and work.negative_class is not None:
        usable &= work.candidate_class[targets] == work.negative_class[targets, slot][:, None]
    # every (question, candidate) variant: the chosen negative replaced by the candidate
    base = np.repeat(work.choices()[targets][:, None, :], n_cand, axis=1)  # (T, M, 1 + K)
    old = base[np.arange(len(targets)), 0, 1 + slot]  # (T,) the negative each variant drops
    base[np.arange(len(targets)), :, 1 + slot] = cand
    flat_rows = base.reshape(-1, 1 + n_neg)
    live = usable.reshape(-1)
    gap: np.ndarray = np.full(len(flat_rows), np.inf)  # (T * M,), then (T, M)
    if live.any():
        q_rows = np.repeat(work.question_items[targets], n_cand, axis=0)[live]
        groups = np.repeat(work.groups[targets], n_cand)[live]
        slots = None if work.placeholder is None else np.repeat(work.placeholder[targets], n_cand)[live]
        variant = _batch(work, flat_rows[live], q_rows, groups, slots)
        features = _variant_features(work, variant, np.repeat(old, n_cand)[live], cand.reshape(-1)[live])
        gap[live] = probe_costs(ensemble.predict(variant, features), chance, lagging)
    gap = gap.reshape(len(targets), n_cand)
    current = probe_costs({name: p[targets] for name, p in probs.items()}, chance, lagging)
    changed = []
    for t in rng.permutation(len(targets)).tolist():
        order = np.argsort(gap[t] + rng.random(n_cand) * 1e-9, kind="stable")
        for m in order.tolist():
            if not np.isfinite(gap[t, m]) or gap[t, m] >= current[t]:
                break
            row = int(cand[t, m])
            code = int(cand_ids[t, m])
            if uses[code] >= capacity[code]:
                continue
            q = int(targets[t])
            old_row = int(negatives[q, slot[t]])
            if old_row >= 0:
                uses[work.identity[old_row]] -= 1
            uses[code] += 1
            negatives[q, slot[t]] = row
            changed.append(q)
            break
    return np.array(sorted(changed), dtype=np.int64)
