"""The image probes shared by the audit and the visual adversarial filter (procbench.image_stats.IMAGE_PROBES), and
the filter's hook for a task's own probes (procbench.generate.adversarial.rounds.ExtraProbes)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from procbench.generate.adversarial.rounds import (
    FILTER_MODELS,
    AdversarialResult,
    chance_gap,
    probe,
    probe_costs,
    probe_names,
    run_rounds,
    told_questions,
)
from procbench.generate.visual.orders import order_features
from procbench.generate.visual.probes import (
    IMAGE_RELATIONS,
    PATH_COLUMN,
    image_probes,
    path_probe,
    relations_of,
    view_shuffled,
)
from procbench.image_stats import (
    IMAGE_PROBES,
    RELATIONS,
    choice_relations,
    near_duplicate_similarity,
    probe_features,
)
from procbench.shortcuts import FEATURE_NAMES, ChoiceBatch, choice_features, within_question


def _signatures(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 5))
    bits = rng.random((n, 64)) < 0.5
    thumbs = rng.normal(size=(n, 16))
    thumbs /= np.linalg.norm(thumbs, axis=1, keepdims=True)
    return z, bits, thumbs


def _loop(z: np.ndarray, bits: np.ndarray, thumbs: np.ndarray, choices: list[int], refs: list[int]) -> np.ndarray:
    """One choice at a time, as the audit computed it before the relations were shared."""
    out = []
    for c in choices:
        d = np.linalg.norm(z[refs] - z[c], axis=1)
        agree, corr = near_duplicate_similarity(bits[[c]], thumbs[[c]], bits[refs], thumbs[refs])
        out.append([np.linalg.norm(z[refs].mean(axis=0) - z[c]), d.min(), agree.max(), corr.max()])
    return np.array(out)


def test_choice_relations_match_the_per_choice_definition() -> None:
    z, bits, thumbs = _signatures(12, seed=0)
    choices = np.array([[3, 4, 5, 6], [7, 8, 9, -1]])
    refs = np.array([[0, 1, 2], [10, 11, -1]])
    rel = choice_relations(z, bits, thumbs, choices, refs)
    assert rel.shape == (2, 4, len(RELATIONS))
    np.testing.assert_allclose(rel[0], _loop(z, bits, thumbs, [3, 4, 5, 6], [0, 1, 2]), atol=1e-12)
    np.testing.assert_allclose(rel[1, :3], _loop(z, bits, thumbs, [7, 8, 9], [10, 11]), atol=1e-12)
    assert np.isnan(rel[1, 3]).all()  # no image: no relations
    # no question images: each choice against the other choices
    among = choice_relations(z, bits, thumbs, choices[:1], None)[0]
    for j, c in enumerate([3, 4, 5, 6]):
        np.testing.assert_allclose(among[j], _loop(z, bits, thumbs, [c], [o for o in (3, 4, 5, 6) if o != c])[0])


def test_two_choices_that_are_each_others_nearest_copy_tie_exactly() -> None:
    """Among choices, corr(a, b) is corr(b, a) to the bit, so the rank one-hot of the probes breaks the tie in
    choice order, never by a rounding error."""
    z, bits, thumbs = _signatures(4, seed=1)
    thumbs[1] = 0.9 * thumbs[0] + 0.1 * thumbs[1]
    thumbs /= np.linalg.norm(thumbs, axis=1, keepdims=True)
    rel = choice_relations(z, bits, thumbs, np.array([[0, 1, 2, 3]]), None)[0]
    corr = rel[:, RELATIONS.index("thumb_correlation")]
    assert corr[0] == corr[1] and corr[0] > max(corr[2], corr[3])


def _batch(n: int, seed: int) -> tuple[ChoiceBatch, np.ndarray]:
    """``n`` questions of 4 choices (answer first) whose features are :func:`choice_features`, then the image
    relations, as the visual filter's are; the answer sits nearest its question's photos in colour
    (colour_mean_distance) and nothing else tells it."""
    rng = np.random.default_rng(seed)
    rel = rng.normal(size=(n, 4, len(IMAGE_RELATIONS)))
    rel[:, 0, IMAGE_RELATIONS.index("colour_mean_distance")] -= 2.0
    valid = np.ones((n, 4), dtype=bool)
    vectors = rng.normal(size=(n, 4, 8)).astype(np.float32)
    batch = ChoiceBatch(
        choice_vectors=vectors / np.linalg.norm(vectors, axis=2, keepdims=True),
        question_vectors=np.zeros((n, 1, 8), np.float32),
        question_mask=np.zeros((n, 1), bool),
        valid=valid,
        answers=np.zeros(n, dtype=np.int64),
        groups=np.arange(n) // 4,
    )
    relations = [within_question(rel[:, :, i], valid) for i in range(rel.shape[2])]
    return batch, np.concatenate([choice_features(batch), *relations], axis=2)


def test_relations_are_read_back_from_the_filter_features() -> None:
    batch, features = _batch(8, seed=2)
    rel = relations_of(features)
    assert rel.shape == (8, 4, len(IMAGE_RELATIONS))
    np.testing.assert_array_equal(rel[:, :, 0], features[:, :, len(FEATURE_NAMES)])  # the first relation's value


def test_image_probes_find_the_colour_tell_held_out_and_not_a_missing_one() -> None:
    batch, features = _batch(200, seed=3)
    folds = (batch.groups % 5).astype(np.int64)
    probs = image_probes().fit(batch, features, folds, seed=0).predict(batch, features, folds)
    assert set(probs) == {"hubness", *IMAGE_PROBES}
    for p in probs.values():
        np.testing.assert_allclose(p.sum(axis=1), 1.0)
    colour = (probs["colour_layout"].argmax(axis=1) == 0).mean()
    near = (probs["near_duplicate"].argmax(axis=1) == 0).mean()
    assert colour > 0.8  # the answer is the choice nearest in colour
    assert near < 0.4  # the near-duplicate relations do not tell it (chance 0.25)
    assert (probs["hubness"].argmax(axis=1) == 0).mean() < 0.4  # nor does the choices' hubness


def test_the_filter_probes_take_a_tasks_own_probes_beside_theirs() -> None:
    from procbench.generate.adversarial import AdversarialPolicy

    batch, features = _batch(80, seed=4)
    policy = AdversarialPolicy(n_folds=3, probe_repeats=2, tree_iterations=10)
    ensemble, probs = probe(batch, features, policy, seed=0, extra=image_probes())
    assert list(probs) == [*FILTER_MODELS, "ensemble", "hubness", *IMAGE_PROBES]
    np.testing.assert_allclose(probs["ensemble"], np.mean([probs[m] for m in FILTER_MODELS], axis=0))
    assert probe_names(probs) == (*FILTER_MODELS, "hubness", *IMAGE_PROBES)
    judged = ensemble.predict(batch, features)  # the judge reads them too
    np.testing.assert_allclose(judged["colour_layout"], probs["colour_layout"])
    shared = features[:, :, : features.shape[2] - image_probes().reserved]  # what the filter's own probes see
    _, plain_probs = probe(batch, shared, policy, seed=0)
    assert list(plain_probs) == [*FILTER_MODELS, "ensemble"]  # no extra probes: as before
    for name in FILTER_MODELS:  # and the filter's own probes are the same models
        np.testing.assert_array_equal(plain_probs[name], probs[name])


def _blank_batch(n: int) -> ChoiceBatch:
    """``n`` questions of 4 choices, each its own procedure, with zero vectors (the rules read only the probes)."""
    return ChoiceBatch(
        np.zeros((n, 4, 2), np.float32), np.zeros((n, 1, 2), np.float32), np.zeros((n, 1), bool),
        np.ones((n, 4), dtype=bool), np.zeros(n, dtype=np.int64), np.arange(n),
    )  # fmt: skip


def test_the_rules_read_the_extra_probes() -> None:
    n = 40
    batch = _blank_batch(n)
    at_chance = np.full((n, 4), 0.25)
    at_chance[:, 1] += 0.01  # no probe solves a question
    solved = np.full((n, 4), 0.1)
    solved[:, 0] = 0.7
    probs = {**{m: at_chance for m in FILTER_MODELS}, "ensemble": at_chance, "colour_layout": solved}
    accuracy = {**{m: 0.0 for m in FILTER_MODELS}, "ensemble": 0.0, "colour_layout": 1.0}
    assert chance_gap(accuracy, 0.25) == 0.75
    costs = probe_costs(probs, 0.25)
    without = probe_costs({k: v for k, v in probs.items() if k != "colour_layout"}, 0.25)
    np.testing.assert_allclose(costs - without, 0.45)
    above, _ = told_questions(probs, {**accuracy, **dict.fromkeys(FILTER_MODELS, 0.25)}, batch, 0.25, 0.05)
    assert above.all()  # only colour_layout tells them


def test_the_rounds_do_not_stop_while_an_extra_probe_is_above_chance() -> None:
    from procbench.generate.adversarial import AdversarialPolicy
    from procbench.progress import SILENT

    n = 40
    batch = _blank_batch(n)
    at_chance = np.tile([0.26, 0.25, 0.25, 0.24], (n, 1))
    at_chance[n // 4 :] = [0.24, 0.26, 0.25, 0.25]  # the filter's probes solve a quarter: chance

    class Game:
        def __init__(self) -> None:
            self.replaced = 0

        def probe(self, round_number: int) -> tuple[Any, dict[str, np.ndarray], ChoiceBatch]:
            solved = at_chance.copy() if round_number < 3 else at_chance
            colour = solved if round_number >= 3 else np.tile([0.7, 0.1, 0.1, 0.1], (n, 1))
            probs = {**dict.fromkeys(FILTER_MODELS, at_chance), "ensemble": at_chance, "colour_layout": colour}
            return SimpleNamespace(members=[]), probs, batch

        def replace(self, above: np.ndarray, *_: Any) -> np.ndarray:
            self.replaced += 1
            return np.flatnonzero(above)

        def snapshot(self) -> tuple[np.ndarray, np.ndarray]:
            return np.zeros((n, 3), dtype=np.int64), np.zeros(n, dtype=np.int64)

    game = Game()
    result = run_rounds(
        game, AdversarialPolicy(rounds=10), AdversarialResult(np.zeros(0), np.zeros(0)), chance=0.25, n_q=n,
        progress=SILENT,
    )  # fmt: skip
    assert result.stopped == "chance" and result.best_round == 3 and game.replaced == 3
    assert result.rounds[0]["accuracy"]["colour_layout"] == 1.0


def test_probe_features_are_the_audits_distance_features() -> None:
    from procbench.audit.probes.distance import distance_features

    batch, features = _batch(6, seed=5)
    rel = relations_of(features)
    x = probe_features(rel, batch.valid, "near_duplicate")
    names = list(IMAGE_PROBES["near_duplicate"])
    expected = [distance_features(rel[:, :, RELATIONS.index(name)], batch.valid) for name in names]
    np.testing.assert_array_equal(x, np.concatenate(expected, axis=2))


def test_a_tie_does_not_rank_the_first_choice_first() -> None:
    """The filter's answer is always column 0: a view sees the choices in a seeded random order, so two tied
    choices are ranked in an order that does not tell the answer (the audit's sets place the answer at random)."""
    from procbench.audit.probes.distance import distance_features

    n = 400
    value = np.tile([0.5, 0.5, 0.9, 0.1], (n, 1))  # the answer ties choice 1
    valid = np.ones((n, 4), dtype=bool)
    plain = distance_features(value, valid)
    assert (plain[:, 0, 3 + 1] == 1).all()  # in choice order the answer always takes rank 1 of the tie

    def view(features: np.ndarray, valid: np.ndarray) -> np.ndarray:
        return distance_features(features[:, :, 0], valid)

    shown = view_shuffled(view, value[:, :, None], valid)
    answer_rank1 = shown[:, 0, 3 + 1].mean()
    assert 0.4 < answer_rank1 < 0.6  # each of the two tied choices takes rank 1 about half the time
    np.testing.assert_array_equal(shown[:, :, :3], plain[:, :, :3])  # values, spreads: unchanged
    np.testing.assert_array_equal(shown, view_shuffled(view, value[:, :, None], valid))  # seeded


def test_the_path_probe_reads_the_order_path_length() -> None:
    scores = np.arange(48, dtype=np.float64)  # question q, order p: path length 24 q + p
    ids = np.array([[0, 1, 2, 23], [24, 30, 26, 27]])
    batch = ChoiceBatch(
        np.eye(4, dtype=np.float32)[None].repeat(2, 0), np.zeros((2, 1, 4), np.float32), np.zeros((2, 1), bool),
        np.ones((2, 4), bool), np.zeros(2, np.int64), np.arange(2), choice_ids=ids,
    )  # fmt: skip
    features = order_features(batch, scores)
    np.testing.assert_array_equal(features[:, :, PATH_COLUMN], scores[ids])
    probes = path_probe()
    assert probes.names == ("path_length",)


def test_reserved_columns_are_the_extra_probes_alone() -> None:
    """With ``reserved`` columns, the filter's own probes are fitted on the other columns (as the audit's
    partial-input sees only its own features) and the task's probes still read the whole features."""
    from procbench.generate.adversarial import AdversarialPolicy

    batch, features = _batch(80, seed=6)
    policy = AdversarialPolicy(n_folds=3, probe_repeats=1, tree_iterations=10)
    reserved = image_probes()
    reserved.reserved = features.shape[2] - len(FEATURE_NAMES)  # the relations
    _, probs = probe(batch, features, policy, seed=0, extra=reserved)
    _, alone = probe(batch, features[:, :, : len(FEATURE_NAMES)], policy, seed=0)
    for name in FILTER_MODELS:
        np.testing.assert_array_equal(probs[name], alone[name])
    seeing = image_probes()
    seeing.reserved = 0  # the filter's own probes see the relations too (RELATIONS_SHARED)
    _, shared = probe(batch, features, policy, seed=0, extra=seeing)
    np.testing.assert_array_equal(probs["colour_layout"], shared["colour_layout"])
    assert not np.array_equal(probs["partial_input"], shared["partial_input"])
