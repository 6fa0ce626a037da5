from __future__ import annotations

import numpy as np
import pytest

from procbench.shortcuts import (
    DISTANCE_MODEL,
    FEATURE_NAMES,
    MODELS,
    THREADED_FIT_QUESTIONS,
    ChoiceBatch,
    ChoiceDiscriminant,
    ShortcutEnsemble,
    answer_scores,
    choice_features,
    choice_view,
    distance_gaps,
    distance_view,
    fit_workers,
    group_folds,
    hits,
    stratified_group_folds,
)


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _batch(n: int, *, shortcut: str | None, seed: int = 0, dim: int = 16) -> ChoiceBatch:
    """Questions of 3 items and 4 choices; ``shortcut`` plants a context-free tell in the answer."""
    rng = np.random.default_rng(seed)
    topics = _unit(rng.normal(size=(n, dim)))
    items = _unit(topics[:, None, :] + 0.6 * rng.normal(size=(n, 3, dim)))
    choices = _unit(rng.normal(size=(n, 4, dim)))
    answers = rng.integers(0, 4, n)
    if shortcut == "near":  # the answer is on the question's topic, negatives are random
        choices[np.arange(n), answers] = _unit(topics + 0.4 * rng.normal(size=(n, dim)))
    elif shortcut == "look":  # the answer points along a fixed direction (choice-only bias)
        tell = np.zeros(dim, dtype=np.float32)
        tell[0] = 3.0
        choices[np.arange(n), answers] = _unit(rng.normal(size=(n, dim)) + tell)
    texts = [[f"choice {j} of {i}" for j in range(4)] for i in range(n)]
    shown = [[f"item {i}"] * 3 for i in range(n)]
    return ChoiceBatch(
        choice_vectors=choices,
        question_vectors=items,
        question_mask=np.ones((n, 3), dtype=bool),
        valid=np.ones((n, 4), dtype=bool),
        answers=answers,
        groups=np.arange(n) // 2,
        choice_texts=texts,
        question_texts=shown,
    )


def test_features_shape_and_ranks() -> None:
    batch = _batch(20, shortcut="near")
    feats = choice_features(batch)
    assert feats.shape == (20, 4, len(FEATURE_NAMES))
    rank = feats[:, :, FEATURE_NAMES.index("qmean_rank")]
    assert np.allclose(np.sort(rank, axis=1), [0, 1 / 3, 2 / 3, 1])
    centred = feats[:, :, FEATURE_NAMES.index("qmean_centred")]
    assert np.allclose(centred.sum(axis=1), 0, atol=1e-9)


def test_invalid_choices_do_not_count() -> None:
    batch = _batch(10, shortcut=None)
    batch.valid[:, 3] = False
    feats = choice_features(batch)
    rank = feats[:, :, FEATURE_NAMES.index("qmean_rank")]
    assert np.allclose(np.sort(rank[:, :3], axis=1), [0, 0.5, 1])
    assert np.all(rank[:, 3] == 0)


@pytest.mark.parametrize("shortcut", ["near", "look"])
def test_planted_shortcuts_are_found(shortcut: str) -> None:
    batch = _batch(400, shortcut=shortcut)
    probs = ShortcutEnsemble(n_folds=5, seed=0).fit(batch).predict(batch)
    model = "partial_input" if shortcut == "near" else "choice_only"
    assert hits(probs[model], batch.answers, batch.valid).mean() > 0.6
    assert hits(probs["ensemble"], batch.answers, batch.valid).mean() > 0.6
    assert np.allclose(probs["ensemble"].sum(axis=1), 1.0)


def test_the_choice_only_model_sees_each_choice_against_its_question() -> None:
    # every question has a strong topic of its own; the answer leans slightly along one direction past its negatives
    rng = np.random.default_rng(3)
    n, dim = 400, 64
    vectors = rng.normal(size=(n, 1, dim)) * 10.0 + rng.normal(size=(n, 4, dim)) * 0.3
    answers = rng.integers(0, 4, n)
    vectors[np.arange(n), answers, 0] += 0.3
    valid = np.ones((n, 4), dtype=bool)
    valid[:5, 3] = False
    view = choice_view(vectors, valid)
    assert view.shape == (n, 4, 2 * dim) and view.dtype == np.float32
    assert np.allclose(view[:, :, :dim], vectors, atol=1e-4)
    offsets = np.where(valid[..., None], view[:, :, dim:], 0.0)
    assert np.allclose(offsets.sum(axis=1), 0.0, atol=1e-3)  # offsets from the mean of the valid choices
    batch = ChoiceBatch(
        choice_vectors=vectors.astype(np.float32), question_vectors=np.zeros((n, 1, dim), np.float32),
        question_mask=np.zeros((n, 1), bool), valid=np.ones((n, 4), bool), answers=answers, groups=np.arange(n),
    )  # fmt: skip
    probs = ShortcutEnsemble(seed=0).fit(batch).predict(batch)
    assert set(probs) == {*MODELS, "ensemble"}
    assert hits(probs["choice_only"], answers, batch.valid).mean() > 0.48  # of the embeddings alone: 0.45
    assert hits(probs["choice_contrast"], answers, batch.valid).mean() > 0.45
    # the contrast model is the audit's discriminant: inverse shrunk covariance times the mean answer contrast
    basis = ChoiceDiscriminant.basis(batch.choice_vectors, batch.valid)
    fitted = basis.fit(batch.choice_vectors, batch.valid, answers)
    projected = basis.project(batch.choice_vectors)
    at_answer = projected[np.arange(n), answers]
    contrast = at_answer - (projected.sum(axis=1) - at_answer) / 3
    assert np.allclose(fitted.direction, basis.inverse @ contrast.mean(axis=0))
    scores = fitted.decision_function(batch.choice_vectors.reshape(-1, dim)).reshape(n, 4)
    assert np.allclose(scores, projected @ fitted.direction)


def test_distance_gaps_measure_how_near_the_next_choice_is() -> None:
    distances = np.array([[1.0, 1.1, 1.5, 2.0], [0.5, 0.5, 0.9, 3.0]])
    valid = np.array([[True, True, True, True], [True, False, True, True]])
    gaps = distance_gaps(distances, valid)
    assert np.allclose(gaps[0], [0.1, 0.1, 0.4, 0.5])
    assert np.allclose(gaps[1, [0, 2, 3]], [0.4, 0.4, 2.1])  # the invalid choice is nobody's neighbour
    assert (distance_gaps(np.array([[1.0, 2.0]]), np.array([[True, False]])) == 0).all()
    # the feature is there for the probes, also scaled and ranked within the question
    batch = _batch(30, shortcut=None, seed=1)
    feats = choice_features(batch)
    assert {"qmean_gap_value", "qmean_gap_rank"} <= set(FEATURE_NAMES)
    to_qmean = feats[:, :, FEATURE_NAMES.index("qmean_value")]
    assert np.allclose(feats[:, :, FEATURE_NAMES.index("qmean_gap_value")], distance_gaps(to_qmean, batch.valid))


def test_no_shortcut_stays_near_chance() -> None:
    batch = _batch(400, shortcut=None, seed=3)
    probs = ShortcutEnsemble(n_folds=5, seed=0).fit(batch).predict(batch)
    for name in (*MODELS, "ensemble"):
        assert 0.18 < hits(probs[name], batch.answers, batch.valid).mean() < 0.32


def _middle_batch(n: int, *, seed: int = 0, dim: int = 16) -> ChoiceBatch:
    """The answer's distance to the question mean is the mean of the choices' (the negatives' offsets from it sum
    to 0): no choice's vector tells it, its distance relative to the others' does."""
    batch = _batch(n, shortcut=None, seed=seed, dim=dim)
    rng = np.random.default_rng(seed + 1)
    qmean = _unit(batch.question_vectors.mean(axis=1))
    for q in range(n):
        a, b = rng.uniform(0.3, 1.0, size=2)
        offsets = np.array([0.0, a, b, -(a + b)]) * rng.choice([-1.0, 1.0])  # the answer first
        slots = rng.permutation(4)
        for slot, offset in zip(slots, offsets, strict=True):
            noise = rng.normal(size=dim)
            noise = _unit(noise - (noise @ qmean[q]) * qmean[q])  # orthogonal to the question mean
            cosine = 0.5 - 0.15 * offset
            batch.choice_vectors[q, slot] = cosine * qmean[q] + np.sqrt(1 - cosine**2) * noise
        batch.answers[q] = slots[0]
    return batch


def test_the_distance_probe_reads_an_answer_set_apart_by_its_distance_among_the_choices() -> None:
    batch = _middle_batch(400)
    feats = choice_features(batch)
    view = distance_view(feats, batch.valid)
    assert view.shape == (400, 4, 3 + 4)
    assert np.allclose(view[:, :, 3:].sum(axis=2), 1.0) and np.allclose(view[:, :, 3:].sum(axis=1), 1.0)
    assert np.allclose(view[:, :, 1], view[:, :, 0] ** 2)
    models = (*MODELS, DISTANCE_MODEL)
    probs = ShortcutEnsemble(n_folds=5, seed=0, models=models).fit(batch, feats).predict(batch, feats)
    assert set(probs) == {*models, "ensemble"}
    assert hits(probs[DISTANCE_MODEL], batch.answers, batch.valid).mean() > 0.8
    plain = ShortcutEnsemble(n_folds=5, seed=0).fit(batch, feats).predict(batch, feats)
    assert DISTANCE_MODEL not in plain  # the audit's shortcut probes stay as they were
    null = _batch(400, shortcut=None, seed=3)
    probs = ShortcutEnsemble(n_folds=5, seed=0, models=models).fit(null).predict(null)
    assert 0.18 < hits(probs[DISTANCE_MODEL], null.answers, null.valid).mean() < 0.32


def test_cross_fitting_is_deterministic_and_grouped() -> None:
    batch = _batch(300, shortcut="near")
    a = ShortcutEnsemble(seed=1).fit(batch)
    b = ShortcutEnsemble(seed=1).fit(batch)
    assert np.array_equal(a.predict(batch)["ensemble"], b.predict(batch)["ensemble"])
    assert a.fold_of == group_folds(batch.groups, 5, 1)
    scores = answer_scores(a.predict(batch), batch.answers)
    assert scores.shape == (300,) and np.all((scores > 0) & (scores < 1))


def test_folds_fitted_side_by_side_give_the_models_fitted_one_after_another() -> None:
    batch = _batch(300, shortcut="look")
    models = (*MODELS, DISTANCE_MODEL)
    alone = ShortcutEnsemble(seed=2, models=models, workers=1).fit(batch).predict(batch)
    threaded = ShortcutEnsemble(seed=2, models=models, workers=3).fit(batch).predict(batch)
    assert set(alone) == set(threaded) == {*models, "ensemble"}
    for name in alone:
        assert np.array_equal(alone[name], threaded[name]), name
    assert hits(threaded["choice_only"], batch.answers, batch.valid).mean() > 0.6  # the fits did learn


def test_folds_are_fitted_on_one_thread_for_small_batches_and_within_omp_num_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert fit_workers(THREADED_FIT_QUESTIONS - 1) == 1
    assert fit_workers(THREADED_FIT_QUESTIONS) == 8
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert fit_workers(10_000) == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert fit_workers(10_000) == 8


def test_frequent_items_are_a_feature() -> None:
    batch = _batch(400, shortcut=None, seed=5)
    ids = np.arange(400 * 4).reshape(400, 4)
    wrong = np.arange(4)[None, :] != batch.answers[:, None]
    ids[wrong] = np.random.default_rng(0).integers(0, 20, wrong.sum())  # negatives reuse 20 hub items
    batch.choice_ids = ids
    probs = ShortcutEnsemble(seed=0, models=("partial_input",)).fit(batch).predict(batch)
    assert hits(probs["partial_input"], batch.answers, batch.valid).mean() > 0.9


def test_the_items_next_to_the_placeholder_are_a_feature_of_their_own() -> None:
    """A cloze answer resembles the steps beside its blank: only the placeholder's neighbours say which."""
    rng = np.random.default_rng(5)
    n, dim = 400, 16
    items = _unit(rng.normal(size=(n, 4, dim)))
    slot = rng.integers(0, 4, n)
    items[np.arange(n), slot] = 0.0  # the placeholder's row
    mask = np.ones((n, 4), dtype=bool)
    mask[np.arange(n), slot] = False
    before = np.where(slot > 0, slot - 1, slot + 1)  # a neighbour of the blank
    far = np.array([next(j for j in range(4) if j != s and abs(j - s) > 1) for s in slot])
    choices = _unit(rng.normal(size=(n, 4, dim)))
    answers = rng.integers(0, 4, n)
    choices[np.arange(n), answers] = _unit(items[np.arange(n), before] + 0.3 * rng.normal(size=(n, dim)))
    for j in range(4):  # every negative is as near some other (non-adjacent) question item
        wrong = answers != j
        choices[wrong, j] = _unit(items[wrong, far[wrong]] + 0.3 * rng.normal(size=(int(wrong.sum()), dim)))
    batch = ChoiceBatch(choices, items, mask, np.ones((n, 4), dtype=bool), answers, np.arange(n) // 2)
    adjacent = FEATURE_NAMES.index("adjacent_item_value")
    assert np.all(choice_features(batch)[:, :, adjacent] == 0)  # no placeholder given: the feature is off
    placed = ChoiceBatch(**{**batch.__dict__, "placeholder": slot})
    feats = choice_features(placed)
    nearest_item = feats[:, :, FEATURE_NAMES.index("nearest_item_value")]
    assert (nearest_item.argmin(axis=1) == answers).mean() < 0.5  # the nearest item alone does not tell
    assert (feats[:, :, adjacent].argmin(axis=1) == answers).mean() > 0.9
    expected = np.linalg.norm(choices[np.arange(n), answers] - items[np.arange(n), before], axis=1)
    got = feats[np.arange(n), answers, adjacent]
    assert np.all(got <= expected + 1e-5)  # the nearer of the two neighbours
    probs = ShortcutEnsemble(n_folds=5, seed=0, models=("partial_input",)).fit(placed).predict(placed)
    assert hits(probs["partial_input"], answers, placed.valid).mean() > 0.8
    # questions that show no items (coherence) have no neighbours of a blank
    bare = ChoiceBatch(
        choices, np.zeros((n, 0, dim), np.float32), np.zeros((n, 0), bool), placed.valid, answers, placed.groups
    )
    bare.placeholder = np.full(n, -1)
    assert np.all(choice_features(bare)[:, :, adjacent] == 0)


def test_tfidf_overlap_weighs_every_token_by_its_rarity() -> None:
    """Function words count too (phrasing repeats within a procedure), rare tokens more than common ones."""
    from procbench.shortcuts import word_weights

    question = [["put it in the oven", "let it bake"]]
    choices = [["take it out of the oven", "the oven", "sand the board", "x"]]
    batch = ChoiceBatch(
        choice_vectors=_unit(np.ones((1, 4, 4))),
        question_vectors=_unit(np.ones((1, 2, 4))),
        question_mask=np.ones((1, 2), dtype=bool),
        valid=np.ones((1, 4), dtype=bool),
        answers=np.zeros(1, dtype=np.int64),
        groups=np.zeros(1, dtype=np.int64),
        choice_texts=choices,
        question_texts=question,
    )
    tfidf = choice_features(batch)[0, :, FEATURE_NAMES.index("tfidf_overlap_value")]
    content = choice_features(batch)[0, :, FEATURE_NAMES.index("word_overlap_value")]
    assert tfidf[3] == 0 and tfidf[2] > 0 and tfidf[0] > tfidf[2]  # 'the' alone overlaps a little
    assert content[2] == 0 and content[3] == 0  # the content-word overlap does not see function words
    weights = word_weights(["the oven", "the board", "the saw"])
    assert weights["the"] < weights["oven"]
    # given weights (a pool's) are used as they are: a batch of variants is weighted like its set
    heavy = ChoiceBatch(**{**batch.__dict__, "word_weights": {"the": 50.0}})
    again = choice_features(heavy)[0, :, FEATURE_NAMES.index("tfidf_overlap_value")]
    assert again[2] > tfidf[2]


def test_the_trees_take_their_iterations_and_a_batch_seen_again_reuses_its_basis() -> None:
    from procbench import shortcuts

    batch = _batch(60, shortcut="look")
    few = ShortcutEnsemble(n_folds=3, seed=0, tree_iterations=7).fit(batch)
    assert all(f.partial_input.n_iter_ == 7 for f in few._fitted)
    first = ShortcutEnsemble(n_folds=3, seed=1).fit(batch)
    assert all(f.partial_input.n_iter_ == 150 for f in first._fitted)
    shortcuts._BASES.clear()
    fresh = ShortcutEnsemble(n_folds=3, seed=1).fit(batch)
    again = ShortcutEnsemble(n_folds=3, seed=1).fit(batch)  # the basis from the cache: the same probabilities
    assert len(shortcuts._BASES) == 1
    for name, probs in fresh.predict(batch).items():
        assert np.array_equal(probs, again.predict(batch)[name]) and np.array_equal(probs, first.predict(batch)[name])
    other = _batch(60, shortcut="look", seed=5)
    ShortcutEnsemble(n_folds=3, seed=1).fit(other)
    assert len(shortcuts._BASES) == 2  # another batch: its own basis


def test_subsampled_cross_fitting_fits_on_at_most_the_cap_and_still_scores_every_question() -> None:
    """``max_fit_questions``: each fold's models see at most that many questions (a seeded draw of the other folds,
    none of their own fold), every question is scored by its own fold's models, and the probes still learn."""
    batch = _batch(400, shortcut="near")
    capped = ShortcutEnsemble(n_folds=4, seed=3, max_fit_questions=90, tree_bins=63)
    capped.fit(batch)
    folds = capped.folds(batch.groups)
    rows = capped._fit_rows(folds, 4)
    assert [int(r.sum()) for r in rows] == [90] * 4
    assert all(not (r & (folds == fold)).any() for fold, r in enumerate(rows))
    assert all(f.partial_input.n_features_in_ == len(FEATURE_NAMES) for f in capped._fitted)
    probs = capped.predict(batch)
    assert np.allclose(probs["ensemble"].sum(axis=1), 1.0)
    assert hits(probs["partial_input"], batch.answers, batch.valid).mean() > 0.45  # the planted tell (chance 0.25)
    again = ShortcutEnsemble(n_folds=4, seed=3, max_fit_questions=90, tree_bins=63).fit(batch).predict(batch)
    assert all(np.array_equal(probs[name], again[name]) for name in probs)
    whole = ShortcutEnsemble(n_folds=4, seed=3)
    assert [int(r.sum()) for r in whole._fit_rows(folds, 4)] == [int((folds != f).sum()) for f in range(4)]


def test_the_choice_only_scores_and_the_contrast_projection_equal_the_plain_computation() -> None:
    """The ensemble scores the choice-only model without building the ``(Q, C, 2D)`` view and projects in float32:
    the same scores as the model on the view and the float64 projection, to float32 precision."""
    from sklearn.linear_model import LogisticRegression

    from procbench.shortcuts import _choice_view_scores

    rng = np.random.default_rng(0)
    vectors = _unit(rng.normal(size=(300, 4, 24)))
    valid = rng.random((300, 4)) > 0.1
    labels = rng.random((300, 4)) > 0.75
    view = choice_view(vectors, valid)
    model = LogisticRegression(max_iter=300).fit(view[valid].astype(np.float64), labels[valid])
    plain = model.decision_function(view[valid].astype(np.float64))
    np.testing.assert_allclose(_choice_view_scores(model, vectors, valid)[valid], plain, atol=1e-4)
    basis = ChoiceDiscriminant.basis(vectors, valid, dims=8)
    exact = (vectors.astype(np.float64) - basis.mean) @ basis.components
    np.testing.assert_allclose(basis.project(vectors), exact, atol=1e-5)


def test_batches_sharing_a_text_pair_cache_get_the_features_of_batches_without_it() -> None:
    from procbench.shortcuts import word_weights

    batch = _batch(40, shortcut=None)
    weights = word_weights(t for texts in (*batch.choice_texts, *batch.question_texts) for t in texts)
    alone = choice_features(ChoiceBatch(**{**batch.__dict__, "word_weights": weights}))
    cache: dict = {}
    first = choice_features(ChoiceBatch(**{**batch.__dict__, "word_weights": weights, "text_pairs": cache}))
    again = choice_features(ChoiceBatch(**{**batch.__dict__, "word_weights": weights, "text_pairs": cache}))
    assert len(cache) == 40 * 4
    np.testing.assert_array_equal(first, alone)
    np.testing.assert_array_equal(again, alone)


def test_the_shared_basis_is_drawn_from_at_most_max_fit_questions() -> None:
    """Subsampled cross-fitting bounds the contrast discriminant's label-free basis too: past
    ``max_fit_questions`` it is computed from a seeded draw of that many questions."""
    capped = ShortcutEnsemble(max_fit_questions=50, seed=3)
    rows = capped._basis_rows(200)
    assert len(rows) == 50 and len(np.unique(rows)) == 50 and (np.diff(rows) > 0).all() and rows.max() < 200
    assert (rows == ShortcutEnsemble(max_fit_questions=50, seed=3)._basis_rows(200)).all()
    assert (capped._basis_rows(40) == np.arange(40)).all()
    assert (ShortcutEnsemble()._basis_rows(200) == np.arange(200)).all()


def test_stratified_group_folds_keep_each_label_in_proportion_and_a_procedure_whole() -> None:
    """Labels dealt exactly evenly (as K3=2 deals the answer's rank) stay about even in every fold, which plain
    procedure folds do not keep; a procedure is in one fold; the same seed gives the same folds."""
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 150, 600)
    strata = rng.permutation(np.resize(np.arange(4), 600))

    def worst_share_gap(fold_of: dict[int, int]) -> float:
        folds = np.array([fold_of[g] for g in groups.tolist()])
        shares = [np.bincount(strata[folds == f], minlength=4) / (folds == f).sum() for f in range(5)]
        return float(np.abs(np.array(shares) - 0.25).max())

    stratified = stratified_group_folds(groups, strata, 5, seed=3)
    assert set(stratified) == set(np.unique(groups).tolist()) and set(stratified.values()) == set(range(5))
    assert stratified == stratified_group_folds(groups, strata, 5, seed=3)
    assert worst_share_gap(stratified) < 0.03 < worst_share_gap(group_folds(groups, 5, 3))
    batch = _batch(300, shortcut=None, seed=2)
    dealt = np.resize(np.arange(4), 300)
    fitted = ShortcutEnsemble(seed=1, models=("choice_only",)).fit(batch, strata=dealt)
    assert fitted.fold_of == stratified_group_folds(batch.groups, dealt, 5, 1)


def test_hubness_features_count_each_item_once_and_can_be_given() -> None:
    """The hubness columns measure each choice against the batch's distinct items (an item that is a choice of many
    questions counts once), or read ``ChoiceBatch.hubness`` when given (a filter's variants read the set's)."""
    import dataclasses

    batch = _batch(30, shortcut=None, seed=5)
    ids = np.arange(120).reshape(30, 4)
    once = choice_features(dataclasses.replace(batch, choice_ids=ids))
    repeated = dataclasses.replace(
        batch,
        choice_vectors=np.concatenate([batch.choice_vectors, batch.choice_vectors]),
        question_vectors=np.concatenate([batch.question_vectors, batch.question_vectors]),
        question_mask=np.concatenate([batch.question_mask, batch.question_mask]),
        valid=np.concatenate([batch.valid, batch.valid]),
        answers=np.concatenate([batch.answers, batch.answers]),
        groups=np.concatenate([batch.groups, batch.groups + 100]),
        choice_ids=np.concatenate([ids, ids]),
        choice_texts=None,
        question_texts=None,
    )
    twice = choice_features(repeated)
    columns = [FEATURE_NAMES.index(f"{base}_value") for base in ("centrality", "density")]
    np.testing.assert_allclose(twice[:30, :, columns], once[:, :, columns], rtol=1e-5)
    given = np.arange(120, dtype=np.float64).reshape(30, 4)
    read = choice_features(dataclasses.replace(batch, hubness=(given, -given)))
    np.testing.assert_array_equal(read[:, :, columns[0]], given)
    np.testing.assert_array_equal(read[:, :, columns[1]], -given)
