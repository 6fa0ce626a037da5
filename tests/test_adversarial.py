"""Adversarial filtering (procbench.generate.adversarial) on synthetic arenas with a planted shortcut."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from procbench.generate.adversarial import (
    FILTER_MODELS,
    AdversarialPolicy,
    Arena,
    RepeatedEnsemble,
    filter_negatives,
    initial_negatives,
    lattice_targets,
    prune_predictable,
    usable_candidates,
)
from procbench.generate.policy import current
from procbench.shortcuts import DISTANCE_MODEL, ChoiceBatch, ShortcutEnsemble, hits

DIM = 16


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _arena(n_q: int = 160, *, seed: int = 0, on_topic: int = 24, off_topic: int = 24) -> Arena:
    """``n_q`` questions, each with 3 items and an answer near its own topic. Every question's candidates are
    ``on_topic`` items near its topic (as close to the question as the answer: the shortcut can be removed)
    then ``off_topic`` random items; the starting negatives are random items, so "pick the choice nearest
    the question" solves the start."""
    rng = np.random.default_rng(seed)
    topics = _unit(rng.normal(size=(n_q, DIM)))
    items = _unit(topics[:, None, :] + 0.3 * rng.normal(size=(n_q, 3, DIM)))
    answers = _unit(topics + 0.3 * rng.normal(size=(n_q, DIM)))
    near = _unit(topics[:, None, :] + 0.3 * rng.normal(size=(n_q, on_topic, DIM)))
    far = _unit(rng.normal(size=(n_q, off_topic + 3, DIM)))
    vectors = np.concatenate([items.reshape(-1, DIM), answers, near.reshape(-1, DIM), far.reshape(-1, DIM)])
    base_answer = 3 * n_q
    base_near = base_answer + n_q
    base_far = base_near + n_q * on_topic
    q = np.arange(n_q)[:, None]
    near_rows = base_near + q * on_topic + np.arange(on_topic)[None, :]
    far_rows = base_far + q * (off_topic + 3) + np.arange(off_topic + 3)[None, :]
    return Arena(
        vectors=vectors,
        identity=np.arange(len(vectors), dtype=np.int64),
        answers=base_answer + np.arange(n_q),
        question_items=3 * q + np.arange(3)[None, :],
        negatives=far_rows[:, :3].copy(),
        candidates=np.concatenate([near_rows, far_rows[:, 3:]], axis=1),
        groups=np.arange(n_q) // 2,
    )


def _accuracy(arena: Arena, negatives: np.ndarray, seed: int = 99) -> float:
    """A fresh cross-fitted partial-input probe (another seed than filtering used) on these negatives."""
    batch = Arena(**{**arena.__dict__, "negatives": negatives}).batch()
    probs = ShortcutEnsemble(n_folds=5, seed=seed, models=("partial_input",)).fit(batch).predict(batch)
    return float(hits(probs["partial_input"], batch.answers, batch.valid).mean())


#: Smaller probes for tests whose assertions do not depend on the filter's size (determinism, class rules, the
#: pruning floor): one 3-fold ensemble per round, judged alone, with 50 boosting iterations (the demo policy's).
SMALL = {"n_folds": 3, "probe_repeats": 1, "judge_rounds": 1, "tree_iterations": 50}


@pytest.fixture(scope="module")
def filtered() -> tuple[Arena, object]:
    arena = _arena()
    return arena, filter_negatives(arena, AdversarialPolicy(rounds=8, n_folds=3), seed=0)


@pytest.mark.slow  # with the `filtered` fixture: ~36 s of CPU (measured)
def test_filtering_brings_a_planted_distance_shortcut_to_chance(filtered: tuple) -> None:
    arena, result = filtered
    assert _accuracy(arena, arena.negatives) > 0.8  # the start: negatives off topic
    assert _accuracy(arena, result.negatives) < 0.45  # chance: 0.25
    assert result.replacements.sum() > 0 and result.rounds[0]["accuracy"]["partial_input"] > 0.8
    assert result.kept.all() and not result.pruning  # min_yield 1: no question dropped
    # the filter plays against the audit's question-distance probe too, and brings it to chance as well
    start, best = result.rounds[0]["accuracy"], result.rounds[result.best_round]["accuracy"]
    assert set(start) == {*FILTER_MODELS, "ensemble"} and DISTANCE_MODEL in FILTER_MODELS
    assert start[DISTANCE_MODEL] > 0.8 and best[DISTANCE_MODEL] < 0.4


@pytest.mark.slow  # with the `filtered` fixture: ~36 s of CPU (measured)
def test_filtering_keeps_every_constraint(filtered: tuple) -> None:
    arena, result = filtered
    final = result.negatives
    assert (arena.negatives == _arena().negatives).all()  # the input is not modified
    rows = np.concatenate([arena.candidates, arena.negatives], axis=1)
    assert all(set(final[q]) <= set(rows[q]) for q in range(len(final)))  # from the question's own pool
    assert all(len(set(row)) == 3 for row in final.tolist())
    assert len(np.unique(final)) == final.size  # max_uses 1
    sims = np.einsum("qkd,qd->qk", arena.vectors[final], arena.vectors[arena.answers])
    replaced = ~np.isin(final, arena.negatives)
    assert (sims[replaced] < 0.8).all()  # the ceiling


def test_filtering_is_deterministic_by_seed() -> None:
    arena = _arena(80, seed=3)
    small = AdversarialPolicy(rounds=2, **SMALL)
    one = filter_negatives(arena, small, seed=5)
    two = filter_negatives(arena, small, seed=5)
    assert (one.negatives == two.negatives).all() and one.summary() == two.summary()


def test_a_candidate_only_replaces_a_negative_of_its_class() -> None:
    arena = _arena(120, seed=1)
    arena.candidate_class = np.where(np.arange(arena.candidates.shape[1]) % 2 == 0, 0, 1)[None, :].repeat(120, 0)
    offsets = np.where(arena.candidate_class == 1, -0.5, 0.5)  # class 1 below the answer, class 0 above
    targets = lattice_targets(np.ones(120, dtype=np.int64), 0.5, 3)  # one slot below, two above
    start, classes, unfilled = initial_negatives(arena, seed=0, offsets=offsets, targets=targets)
    assert not unfilled.any() and ((classes == 1).sum(axis=1) == 1).all()
    arena = Arena(**{**arena.__dict__, "negatives": start, "negative_class": classes})
    result = filter_negatives(arena, AdversarialPolicy(rounds=2, **SMALL), seed=0)
    classes_of = arena.candidate_class
    position = {(q, int(r)): c for q in range(120) for r, c in zip(arena.candidates[q], classes_of[q], strict=True)}
    for q, row in enumerate(result.negatives.tolist()):
        assert sorted(position[q, r] for r in row) == [0, 0, 1]


def test_initial_negatives_follow_the_targets_and_capacity() -> None:
    arena = _arena(40, seed=2, on_topic=6, off_topic=6)
    arena.candidate_class = np.zeros(arena.candidates.shape, dtype=np.int64)
    offsets = np.tile(np.arange(1, 13, dtype=np.float64), (40, 1))
    targets = lattice_targets(np.zeros(40, dtype=np.int64), 1.0, 3)  # 1, 2, 3: every slot above the answer
    start, _, unfilled = initial_negatives(arena, seed=0, offsets=offsets, targets=targets)
    usable = usable_candidates(arena, AdversarialPolicy())
    best = [arena.candidates[q][usable[q]][:3].tolist() for q in range(40)]
    assert not unfilled.any() and start.tolist() == best  # the three usable ones nearest the targets
    # one shared candidate list, each item a negative once: only 4 questions can be filled
    shared = Arena(**{**arena.__dict__, "candidates": np.tile(arena.candidates[0], (40, 1))})
    start, _, unfilled = initial_negatives(shared, seed=0, offsets=offsets, targets=targets)
    assert (~unfilled).sum() == 4 and (start[unfilled] == -1).all()


def test_lattice_targets_space_the_choices_evenly_around_the_answer() -> None:
    targets = lattice_targets(np.array([0, 1, 2, 3]), 0.5, 3)
    assert targets.tolist() == [[0.5, 1.0, 1.5], [-0.5, 0.5, 1.0], [-0.5, -1.0, 0.5], [-0.5, -1.0, -1.5]]
    for rank, row in enumerate(targets):
        spaced = np.sort(np.append(row, 0.0))
        assert (row < 0).sum() == rank and np.allclose(np.diff(spaced), 0.5)


def test_slot_targets_take_the_candidate_nearest_each_target_on_its_side() -> None:
    arena = _arena(30, seed=4, on_topic=8, off_topic=8)
    rng = np.random.default_rng(0)
    offsets = np.round(rng.uniform(-1, 1, size=arena.candidates.shape), 3)
    arena.candidate_class = (offsets < 0).astype(np.int64)
    targets = lattice_targets(rng.integers(0, 4, 30), 0.2, 3)
    start, classes, unfilled = initial_negatives(arena, seed=0, offsets=offsets, targets=targets)
    assert not unfilled.any()
    usable = usable_candidates(arena, AdversarialPolicy())
    for q in range(30):
        column = {int(r): m for m, r in enumerate(arena.candidates[q].tolist())}
        picked = [column[int(r)] for r in start[q]]
        assert sorted(classes[q].tolist()) == sorted(arena.candidate_class[q, picked].tolist())
        assert (offsets[q, picked] < 0).sum() == (targets[q] < 0).sum()  # the answer's rank is the targets'
        # the slot nearest 0 got the usable candidate nearest its target on its side
        first = int(np.argmin(np.abs(targets[q])))
        side = usable[q] & ((offsets[q] < 0) == (targets[q, first] < 0))
        best = np.flatnonzero(side)[np.argmin(np.abs(offsets[q, side] - targets[q, first]))]
        assert best in picked
    again = initial_negatives(arena, seed=0, offsets=offsets, targets=targets)[0]
    assert (again == start).all()
    with pytest.raises(ValueError, match="targets need arena.candidate_class"):
        initial_negatives(Arena(**{**arena.__dict__, "candidate_class": None}), offsets=offsets, targets=targets)


def test_a_repeated_ensemble_averages_its_members_fold_by_fold() -> None:
    arena = _arena(60, seed=5)
    batch = arena.batch()
    members = [ShortcutEnsemble(n_folds=3, seed=s).fit(batch) for s in (0, 1)]
    assert members[0].fold_of != members[1].fold_of  # two assignments of procedures to folds
    mean = RepeatedEnsemble(members).predict(batch)
    one, two = (m.predict(batch) for m in members)
    assert set(mean) == set(one)
    for name, probs in mean.items():
        assert np.allclose(probs, (one[name] + two[name]) / 2) and np.allclose(probs.sum(axis=1), 1.0)


def test_usable_candidates_exclude_paraphrases_and_shown_items() -> None:
    arena = _arena(10)
    arena.candidates[:, 0] = arena.answers  # the answer itself
    arena.candidates[:, 1] = arena.question_items[:, 0]  # a shown item
    usable = usable_candidates(arena, AdversarialPolicy(ceiling=0.99))
    assert not usable[:, :2].any() and usable[:, 2:].any()


@pytest.mark.slow  # ~51 s of CPU (measured)
def test_pruning_drops_the_questions_the_probes_still_solve() -> None:
    # the first half already has on-topic negatives (at chance), the second half off-topic ones (solved)
    arena = _arena(240, seed=4)
    half = np.arange(240) >= 120
    arena.negatives[~half] = arena.candidates[~half, :3]
    kept, log, best = prune_predictable(arena, AdversarialPolicy(n_folds=3), floor=200, seed=0)
    assert kept.sum() >= 200 and log[0]["questions"] == 240 and len(log) > 1
    assert half[~kept].mean() > 0.8  # the solved half goes first
    sub = arena.subset(kept, negatives=arena.negatives[kept])
    assert _accuracy(sub, sub.negatives) < _accuracy(arena, arena.negatives)


def test_filtering_prunes_only_below_min_yield() -> None:
    arena = _arena(100, seed=7, on_topic=0)  # no candidate can fix a question
    policy = AdversarialPolicy(rounds=1, min_yield=0.9, prune_partitions=1, prune_repeats=1, **SMALL)
    result = filter_negatives(arena, policy, seed=0, drafted=110)
    summary = result.summary()
    assert [p["questions"] for p in summary["pruning"]] == [100, 99]  # down to ceil(0.9 * 110), not below
    assert result.kept.sum() >= 99 and summary["pruned"] == int((~result.kept).sum())
    assert summary["min_yield"] == 0.9


def test_pruning_reports_its_steps_to_the_progress_bar() -> None:
    arena = _arena(100, seed=7, on_topic=0)
    policy = AdversarialPolicy(min_yield=0.9, prune_partitions=1, prune_repeats=1, **SMALL)
    calls: list[tuple[str, int | None]] = []

    class Recorder:
        def start(self, description: str, total: int | None = None) -> None:
            calls.append((description, total))

        def advance(self, n: int = 1) -> None:
            calls.append(("advance", n))

    kept, log, _ = prune_predictable(arena, policy, floor=90, seed=0, progress=Recorder())
    (description, total), advances = calls[0], calls[1:]
    assert description == "pruning (AFLite)" and advances == [("advance", 1)] * len(log)
    assert total is not None and len(log) <= total and kept.sum() >= 90


@pytest.mark.slow  # ~30 s of CPU (measured)
def test_prune_never_goes_below_the_floor() -> None:
    arena = _arena(100, seed=6, on_topic=0)
    kept, log, best = prune_predictable(arena, AdversarialPolicy(), floor=90, seed=0)
    assert kept.sum() >= 90 and 0 <= best < len(log) and log[0]["questions"] == 100


def test_a_variant_is_scored_with_the_whole_sets_item_and_cluster_counts() -> None:
    """A candidate variant's features are those the question would have in the whole set after the swap (the
    variant batch repeats each question once per candidate: counting items within it was wrong)."""
    from procbench.generate.adversarial.arena import _batch
    from procbench.generate.adversarial.filter import _set_counts, _variant_features
    from procbench.shortcuts import choice_features

    rng = np.random.default_rng(4)
    arena = _arena(30, seed=4, on_topic=5, off_topic=5)
    n = len(arena.vectors)
    arena.identity = np.arange(n, dtype=np.int64) % (n // 3)  # items shown by several rows
    arena.clusters = rng.integers(0, 6, n)
    arena.negatives = arena.candidates[:, [0, 5, 6]].copy()  # some identities are negatives of several questions
    questions = rng.integers(0, 30, 40)
    slots = rng.integers(0, 3, 40)
    picks = arena.candidates[questions, rng.integers(1, 10, 40)]
    rows = arena.choices()[questions]
    old = rows[np.arange(40), 1 + slots].copy()
    rows[np.arange(40), 1 + slots] = picks
    variant = _batch(arena, rows, arena.question_items[questions], arena.groups[questions])
    features = _variant_features(arena, variant, old, picks, _set_counts(arena))
    for i, (q, slot, pick) in enumerate(zip(questions.tolist(), slots.tolist(), picks.tolist(), strict=True)):
        swapped = arena.negatives.copy()
        swapped[q, slot] = pick
        whole = choice_features(Arena(**{**arena.__dict__, "negatives": swapped}).batch())
        assert np.allclose(features[i], whole[q]), i
    within = choice_features(variant)  # what the variant batch alone would say: not the set's counts
    assert not np.allclose(within, features)


def test_replacements_are_judged_by_every_probe() -> None:
    from procbench.generate.adversarial import lagging_probes, probe_costs

    probs = {
        "choice_only": np.array([[0.05, 0.3, 0.3, 0.35], [0.25, 0.25, 0.25, 0.25], [0.4, 0.2, 0.2, 0.2]]),
        "partial_input": np.array([[0.45, 0.2, 0.2, 0.15], [0.25, 0.25, 0.25, 0.25], [0.5, 0.2, 0.2, 0.1]]),
    }
    probs["ensemble"] = (probs["choice_only"] + probs["partial_input"]) / 2
    # the ensemble's mean is at chance on the first question, but each probe is 0.2 away from it
    assert np.allclose(probs["ensemble"][0, 0], 0.25) and np.allclose(probe_costs(probs, 0.25), [0.4, 0.0, 0.4])
    # a probe below chance over the set: only answer probabilities below chance count for it
    assert np.allclose(probe_costs(probs, 0.25, lagging=("choice_only",)), [0.4, 0.0, 0.25])
    accuracy = {"choice_only": 0.1, "partial_input": 0.6, "ensemble": 0.5}
    assert lagging_probes(accuracy, 0.25, 0.05) == ("choice_only",)


def test_pruning_pulls_a_probe_below_chance_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe below chance (it rates answers lowest) is pulled back by dropping the questions where it rates the
    answer lowest, not by dropping what the ensemble solves (which pushed it further below)."""
    import procbench.generate.adversarial as adv
    import procbench.generate.adversarial.prune as adv_prune

    arena = _arena(120, seed=5)
    rng = np.random.default_rng(0)
    kind = rng.choice(3, 120, p=[0.7, 0.2, 0.1])  # choice-only rates the answer lowest, second, highest
    lowest = kind == 0
    choice_only = np.array([[0.1, 0.3, 0.3, 0.3], [0.25, 0.3, 0.25, 0.2], [0.4, 0.2, 0.2, 0.2]])[kind]
    partial = np.tile([0.25, 0.25, 0.25, 0.25], (120, 1)) + rng.normal(0, 0.01, (120, 4))
    by_answer = {int(a): i for i, a in enumerate(arena.answers)}

    def probe(
        batch: ChoiceBatch,
        features: np.ndarray,
        policy: AdversarialPolicy,
        seed: int,
        extra: object = None,
        strata: object = None,
    ) -> tuple[None, dict[str, np.ndarray]]:
        assert batch.choice_ids is not None  # the arena's identities are its rows
        rows = [by_answer[int(a)] for a in batch.choice_ids[:, 0]]
        probs = {
            "choice_only": choice_only[rows],
            "partial_input": partial[rows] / partial[rows].sum(1, keepdims=True),
        }
        return None, {**probs, "ensemble": (probs["choice_only"] + probs["partial_input"]) / 2}

    monkeypatch.setattr(adv_prune, "probe", probe)
    kept, log, best = adv.prune_predictable(arena, AdversarialPolicy(), floor=60)
    assert log[0]["accuracy"]["choice_only"] < 0.35 and best > 0
    dropped = ~kept
    assert dropped.any() and lowest[dropped].all()  # only questions whose answer choice-only rated lowest


def test_candidates_are_judged_by_the_probes_of_the_last_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A round scores swaps with its own ensemble and those of the rounds before it, at most JUDGE_ROUNDS of them."""
    import procbench.generate.adversarial.filter as adv_filter

    judged: list[list[int]] = []
    original_replace = adv_filter.ReplacementGame.replace

    def replace(game: Any, above: np.ndarray, below: np.ndarray, probs: dict, judge: RepeatedEnsemble, *rest):
        judged.append([id(member) for member in judge.members])
        return original_replace(game, above, below, probs, judge, *rest)

    monkeypatch.setattr(adv_filter.ReplacementGame, "replace", replace)
    result = filter_negatives(_arena(80, seed=2), AdversarialPolicy(rounds=5, n_folds=3, z=0.0), seed=0)
    assert len(judged) == 5 and result.replacements.sum() > 0
    sizes = [len(members) for members in judged]
    p = current()
    assert sizes == [p.PROBE_REPEATS * min(r + 1, p.JUDGE_ROUNDS) for r in range(5)]
    assert len(set(judged[-1])) == len(judged[-1])  # distinct members: three rounds' ensembles, not one repeated


def test_the_card_cites_adversarial_filtering_and_aflite_when_used() -> None:
    from procbench.card.citations import citations_for, methods_of

    assert methods_of(["recipeqa", "default"]) == []
    assert methods_of(["adversarial", "default-aflite-n80"]) == ["adversarial", "aflite"]
    own, other = citations_for(["textual-cloze"], methods_of(["adversarial"]))
    cited = "\n".join(own)
    assert "zellers2018swag" in cited and "zellers2019hellaswag" in cited and "lebras2020aflite" in cited
    own, other = citations_for(["textual-cloze"], methods_of(["recipeqa-aflite"]))
    assert "lebras2020aflite" in "\n".join(own) and "zellers2018swag" in "\n".join(other)
    own, _ = citations_for(["textual-cloze"])
    assert "lebras2020aflite" not in "\n".join(own)


def test_every_task_preset_is_a_frozen_policy_that_states_the_users_options() -> None:
    import dataclasses

    from procbench.generate.adversarial import COHERENCE_POLICY, IMAGE_POLICY, TEXTUAL_POLICY

    with pytest.raises(dataclasses.FrozenInstanceError):
        TEXTUAL_POLICY.rounds = 3  # type: ignore[misc]
    assert TEXTUAL_POLICY.min_yield == IMAGE_POLICY.min_yield == COHERENCE_POLICY.min_yield == 0.85
    assert IMAGE_POLICY.ceiling == 0.95
    assert COHERENCE_POLICY.probe_repeats == 1 and COHERENCE_POLICY.replace_share == 0.5
    # the loop's own constants are the preset's: a set's counts state the options a user can change
    assert set(COHERENCE_POLICY.to_dict()) == {"rounds", "ceiling", "max_uses", "n_folds", "z", "min_yield"}


def test_the_demo_policy_states_what_it_shrinks_and_the_standard_one_states_none_of_it() -> None:
    from procbench.generate.adversarial import TEXTUAL_POLICY, demo_size, sized

    demo = sized(TEXTUAL_POLICY, "demo")
    stated = demo.to_dict()
    assert stated["policy"] == "demo" and {k: stated[k] for k in demo_size()} == demo_size()
    p = current()
    assert demo.prune_partitions < p.PRUNE_PARTITIONS and demo.prune_step > p.PRUNE_STEP
    assert demo.tree_iterations < p.TREE_ITERATIONS
    standard = sized(TEXTUAL_POLICY, "standard")
    assert (standard.prune_partitions, standard.prune_step, standard.tree_iterations) == (1, 0.03, 60)
    assert standard.prune_carry and not AdversarialPolicy().prune_carry
    assert not {"policy", "prune_partitions", "prune_step", "tree_iterations"} & set(standard.to_dict())


def test_the_rounds_stop_when_the_kept_round_is_patience_rounds_old() -> None:
    """A game whose probes never come nearer chance than round 1 stops ``patience`` rounds later, keeping round 1."""
    from procbench.generate.adversarial import FILTER_MODELS, AdversarialPolicy, AdversarialResult, run_rounds
    from procbench.progress import SILENT

    answers = np.zeros(40, dtype=np.int64)
    valid = np.ones((40, 4), dtype=bool)

    class Stuck:
        def __init__(self) -> None:
            self.probed = 0

        def probe(self, round_number: int) -> tuple[Any, dict[str, np.ndarray], Any]:
            self.probed += 1
            solved = 30 if round_number == 1 else 36  # round 1 is the nearest chance; no round after improves
            probs = np.full((40, 4), 0.1)
            probs[:solved, 0] = 0.7
            probs[solved:, 1] = 0.7
            batch = ChoiceBatch(
                np.zeros((40, 4, 2), np.float32), np.zeros((40, 1, 2), np.float32), np.zeros((40, 1), bool), valid,
                answers, np.arange(40),
            )  # fmt: skip
            return SimpleNamespace(members=[]), {name: probs for name in (*FILTER_MODELS, "ensemble")}, batch

        def replace(self, above: np.ndarray, *_: Any) -> np.ndarray:
            return np.flatnonzero(above)

        def snapshot(self) -> tuple[np.ndarray, np.ndarray]:
            return np.zeros((40, 3), dtype=np.int64), np.zeros(40, dtype=np.int64)

    game = Stuck()
    policy = AdversarialPolicy(rounds=15, patience=3)
    result = run_rounds(
        game, policy, AdversarialResult(np.zeros(0), np.zeros(0)), chance=0.25, n_q=40, progress=SILENT
    )
    assert result.stopped == "patience" and result.best_round == 1
    assert game.probed == 1 + 1 + 3  # rounds 0 and 1, then three rounds without a new best
    unlimited = Stuck()
    run_rounds(unlimited, AdversarialPolicy(rounds=6), AdversarialResult(np.zeros(0), np.zeros(0)), chance=0.25,
               n_q=40, progress=SILENT)  # fmt: skip
    assert unlimited.probed == 7


def test_candidate_variants_scored_in_batches_give_the_same_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    """A round scores its candidate variants in batches of ``VARIANT_BATCH`` (bounded memory): every variant is
    scored alone, so any batch size gives the same negatives, bit for bit."""
    import procbench.generate.adversarial.filter as adv_filter
    from procbench.generate.adversarial import AdversarialPolicy, filter_negatives

    policy = AdversarialPolicy(rounds=3, n_folds=3, probe_repeats=1, judge_rounds=2, tree_iterations=20)
    whole = filter_negatives(_arena(60, seed=8), policy, seed=2)
    monkeypatch.setattr(adv_filter, "VARIANT_BATCH", 37)
    batched = filter_negatives(_arena(60, seed=8), policy, seed=2)
    assert sum(entry.get("replaced", 0) for entry in whole.rounds) > 0  # variants were scored and swapped
    assert np.array_equal(whole.negatives, batched.negatives)
    assert np.array_equal(whole.replacements, batched.replacements)
    assert whole.rounds == batched.rounds


def test_carried_pruning_ranks_by_the_scores_of_every_step_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``prune_carry`` a question solved at every step goes before one a single fresh partition solved more
    often; without it, each step ranks by its own partition alone."""
    from procbench.generate.adversarial import prune

    arena = _arena(40, seed=1)
    steps: list[np.ndarray] = []

    def scripted(arena: Arena, kept: np.ndarray, options: AdversarialPolicy, seed: int) -> Any:
        rows = np.flatnonzero(kept)
        solved = np.zeros(len(rows))
        if not steps:  # step 0: questions 0-9 solved twice, the rest never
            solved[rows < 10] = 2.0
        else:  # later steps: questions 10-19 solved more often than 0-9
            solved[(rows >= 10) & (rows < 20)] = 2.5
            solved[rows < 10] = 1.0
        steps.append(rows)
        accuracy = 0.6 - 0.05 * len(steps)  # each step nearer chance (0.25): the last one is kept
        return solved, np.zeros(len(rows)), {"partial_input": accuracy, "ensemble": accuracy}, 0.01

    monkeypatch.setattr(prune, "_predictability", scripted)
    dropped = {}
    for carry in (True, False):
        steps.clear()
        policy = AdversarialPolicy(prune_step=0.125, prune_carry=carry)  # 5 questions a step
        kept, _, _ = prune.prune_predictable(arena, policy, floor=30, seed=0)
        dropped[carry] = set(np.flatnonzero(~kept).tolist())
    assert dropped[True] == set(range(10))  # at step 1, 2 + 1 ahead of 0 + 2.5
    assert dropped[False] == set(range(5)) | set(range(10, 15))


@settings(max_examples=60, deadline=None)
@given(
    usable=hnp.arrays(bool, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=12)),
    n=st.integers(1, 14),
    seed=st.integers(0, 2**16),
)
def test_judge_draws_at_most_n_usable_candidates_per_question(usable: np.ndarray, n: int, seed: int) -> None:
    from procbench.generate.adversarial.filter import _drawn

    drawn = _drawn(usable, n, np.random.default_rng(seed))
    assert not (drawn & ~usable).any()
    assert (drawn.sum(axis=1) == np.minimum(usable.sum(axis=1), n)).all()
    assert (drawn == _drawn(usable, n, np.random.default_rng(seed))).all()
