"""K3=2 cloze's exchangeable last draw (:func:`procbench.generate.visual.ranks.exchange_draw`, issue 35).

The answer's mean distance to the other choices (the audit's ``other_choices`` feature) is recomputed here from
the vectors with plain numpy, and the knob constraints the draw must keep (each pick in its question's pool, as
many of each class as the K3 rank wants) are checked apart from the generator's code.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from math import comb
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from procbench.corpus.synthetic import write_synthetic_store
from procbench.generate import Setting, generate
from procbench.generate.visual.ranks import (
    CLOZE_WANTS,
    EXCHANGE_SHORTLIST,
    Exchange,
    exchange_combos,
    exchange_draw,
    spread_ranks,
)


def _spread_rank(vectors: np.ndarray, tol: float = 0.0) -> int:
    """The rank of choice 0's mean distance to the other choices among the four choices' (brute force): how many
    others are smaller by more than ``tol``."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    mean = [np.mean([np.linalg.norm(unit[i] - unit[j]) for j in range(len(unit)) if j != i]) for i in range(4)]
    return sum(mean[j] < mean[0] - tol for j in range(1, 4))


def _spread_ranks_within(vectors: np.ndarray, tol: float = 1e-5) -> range:
    """The ranks choice 0 can take when values within ``tol`` (float32 rounding: the draw computes in float32) may
    fall either way."""
    return range(_spread_rank(vectors, tol), _spread_rank(vectors, -tol) + 1)


def test_combos_take_as_many_of_each_class_as_the_rank_wants() -> None:
    m = EXCHANGE_SHORTLIST
    for r, idx in enumerate(exchange_combos(CLOZE_WANTS, m)):
        assert len(idx) == comb(m, 3 - r) * comb(m, r)
        assert len({tuple(row) for row in idx.tolist()}) == len(idx)
        assert ((idx < m).sum(axis=1) == 3 - r).all() and ((idx >= m).sum(axis=1) == r).all()
        assert ((idx >= 0) & (idx < 2 * m)).all()


def test_spread_rank_tells_a_hub_from_an_odd_one_out() -> None:
    # the answer at the centre of three negatives far apart: the smallest mean distance (rank 0); the answer far
    # from three negatives close together: the largest (rank 3)
    hub = np.array([[0.0, 0.0], [1.0, 0.0], [-0.5, 0.87], [-0.5, -0.87]])
    odd = np.array([[5.0, 0.0], [0.0, 0.0], [0.1, 0.0], [0.0, 0.1]])
    for points, expected in ((hub, 0), (odd, 3)):
        dist = np.linalg.norm(points[:, None] - points[None], axis=2)
        assert int(spread_ranks(dist)) == expected


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(7, 24), st.integers(0, 2**16), st.booleans())
def test_the_draw_keeps_pool_and_classes_and_meets_the_dealt_spread_rank(
    n_q: int, k: int, seed: int, even_spread: bool
) -> None:
    """Every pick is a distinct pool column of the class the K3 rank wants; the spread targets are dealt evenly
    within each K3 rank; where the draw says it met its target, the brute-force spread rank is the target; where
    it did not, no combination of the shortlists meets it (with or without ``even_spread``)."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n_q * (k + 1), 8))
    answers = np.arange(n_q) * (k + 1)
    pool_rows = answers[:, None] + 1 + np.arange(k)[None, :]
    classes = rng.integers(0, 2, size=(n_q, k))
    classes[:, :3], classes[:, 3:6] = 0, 1  # at least 3 of each class: every rank is drawable
    pool = rng.random((n_q, k)) < 0.8
    pool[:, :6] = True
    preference = rng.random((n_q, k))
    rank = rng.integers(-1, 4, size=n_q)
    exchange = Exchange(answers, lambda rows: vectors[rows].astype(np.float32))
    picked, target, reached = exchange_draw(
        pool, classes, preference, rank, CLOZE_WANTS, pool_rows, exchange, np.random.default_rng(seed),
        even_spread=even_spread,
    )  # fmt: skip
    for r in range(4):
        at = rank == r
        assert (target[at] >= 0).all()
        counts = np.bincount(target[at], minlength=4)
        assert counts.max() - counts.min() <= 1
    assert (target[rank < 0] == -1).all() and (picked[rank < 0] == -1).all()
    for b in np.flatnonzero(rank >= 0).tolist():
        cols = picked[b]
        assert (cols >= 0).all() and len(set(cols.tolist())) == 3
        assert pool[b, cols].all()
        assert Counter(classes[b, cols].tolist()) == Counter({0: 3 - rank[b], 1: int(rank[b])}) - Counter()
        got = _spread_ranks_within(vectors[[answers[b], *pool_rows[b, cols].tolist()]])
        if reached[b]:
            assert target[b] in got
        else:  # no combination of the classes' shortlists (most preferred first) meets the target
            shortlist = [
                sorted(np.flatnonzero(pool[b] & (classes[b] == c)).tolist(), key=lambda j: preference[b, j])[
                    :EXCHANGE_SHORTLIST
                ]
                for c in (0, 1)
            ]
            for low in combinations(shortlist[0], 3 - int(rank[b])):
                for high in combinations(shortlist[1], int(rank[b])):
                    chosen = pool_rows[b, [*low, *high]].tolist()
                    assert _spread_ranks_within(vectors[[answers[b], *chosen]]) != range(target[b], target[b] + 1)


def test_even_spread_draws_foursomes_whose_choices_are_alike_central_at_the_same_ranks() -> None:
    """``even_spread`` (K2 = 1) meets the same spread targets and takes, among the combinations that meet them,
    foursomes whose four mean distances to the others are more alike: the answer's no longer tells by its size."""
    rng = np.random.default_rng(7)
    n_q, k = 300, 16
    vectors = rng.normal(size=(n_q * (k + 1), 8))
    answers = np.arange(n_q) * (k + 1)
    pool_rows = answers[:, None] + 1 + np.arange(k)[None, :]
    classes = np.tile(np.arange(k) % 2, (n_q, 1))
    pool = np.ones((n_q, k), dtype=bool)
    preference = rng.random((n_q, k))
    rank = np.arange(n_q) % 4
    exchange = Exchange(answers, lambda rows: vectors[rows].astype(np.float32))

    def evenness(even_spread: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        picked, target, reached = exchange_draw(
            pool, classes, preference, rank, CLOZE_WANTS, pool_rows, exchange, np.random.default_rng(1),
            even_spread=even_spread,
        )  # fmt: skip
        out = []
        for b in range(n_q):
            four = vectors[[answers[b], *pool_rows[b, picked[b]].tolist()]]
            spread = np.linalg.norm(four[:, None] - four[None], axis=2).sum(axis=1) / 3
            out.append(spread.std() / spread.mean())
        return np.array(out), target, reached

    plain, target, reached = evenness(False)
    even, even_target, even_reached = evenness(True)
    assert np.array_equal(target, even_target) and np.array_equal(reached, even_reached)
    assert even.mean() < 0.92 * plain.mean()  # measured: 0.084 against 0.097


def test_cloze_k3_rank_uniform_spreads_the_answers_odd_one_out_rank(tmp_path: Path) -> None:
    """On a synthetic store the K3=2 knob set keeps its K3 rank balance, and the answer's mean distance to the
    other choices (recomputed from the stored embedding) takes no rank much more often than a quarter of the
    questions, beyond those whose note says the dealt rank was out of reach."""
    from procbench.embed import load_embeddings

    store = write_synthetic_store(tmp_path / "s", n_procedures=120, seed=3)
    embedding = load_embeddings(store, "image")
    vec = dict(zip(embedding.keys.to_pylist(), np.asarray(embedding.vectors), strict=True))
    result = generate(store, "visual-cloze", setting=Setting("knobs", (0, 1, 2)), seed=0, rank_yield=1.0)  # the draw
    rows = [r for f in sorted(result.paths["knobs-012"].glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    assert len(rows) > 100
    k3 = np.bincount([r["meta"]["answer_rank"] for r in rows], minlength=4)
    assert k3.max() - k3.min() <= 2
    spread = np.bincount(
        [_spread_rank(np.array([vec[r["choices"][r["answer"]]], *(vec[c] for j, c in enumerate(r["choices"])
                                                                    if j != r["answer"])]))
         for r in rows],
        minlength=4,
    )  # fmt: skip
    missed = sum(any(f.startswith("spread:") for f in r["meta"]["fallbacks"]) for r in rows)
    assert spread.max() / len(rows) <= 0.25 + missed / len(rows) + 0.05, (spread, missed)


# -- ordering: the authored order's position fit ---------------------------------------------------------------------
def test_position_fits_are_the_photos_against_the_other_procedures_mean_photo_per_position() -> None:
    from procbench.generate.visual.ordering import PERMUTATIONS, position_fits

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(7, 4, 5))
    proc = np.array([0, 0, 1, 2, 2, 2, 3])
    fits = position_fits(vectors, proc)
    unit = vectors / np.linalg.norm(vectors, axis=2, keepdims=True)
    for b in range(len(vectors)):
        others = unit[proc != proc[b]].mean(axis=0)  # (4, D): the mean photo at each position
        others = others - others.mean(axis=0)
        for j, perm in enumerate(PERMUTATIONS.tolist()):
            expected = sum(unit[b, perm[p]] @ others[p] for p in range(4))
            assert abs(fits[b, j] - expected) < 1e-9


@settings(max_examples=25, deadline=None)
@given(st.integers(8, 60), st.integers(0, 1), st.integers(0, 2**16))
def test_ordering_fit_draws_keep_the_path_length_rank_and_deal_the_fit_rank_evenly(
    n_q: int, k2: int, seed: int
) -> None:
    """The wrong orders are of the path-length sides the dealt rank wants; where the fit target was met (no note),
    the authored order's fit rank is its target, and the targets are dealt evenly: no fit rank holds more met
    questions than a quarter of the dealt ones (rounded up)."""
    from procbench.generate.visual.ordering import _rank_balanced, _Window, order_scores, position_fits

    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n_q, 4, 6)).astype(np.float32)
    proc = rng.integers(0, max(2, n_q // 3), size=n_q)
    authored, wrong = order_scores(vectors)
    w = _Window(proc=proc, columns={}, ragged={}, authored=authored, wrong=wrong)
    fits = position_fits(vectors, proc)
    usable = np.ones(wrong.shape, dtype=bool)
    picked, rank, _, missed = _rank_balanced(w, usable, k2, np.random.default_rng(seed), layout=True, fits=fits)
    dealt = np.flatnonzero(rank >= 0)
    assert not missed[rank < 0].any()
    fit_rank = np.full(n_q, -1)
    for b in dealt.tolist():
        orders = picked[b]
        assert (orders >= 0).all() and len(set(orders.tolist())) == 3
        assert int((wrong[b, orders] < authored[b] * (1 - 1e-5)).sum()) == rank[b]  # the path-length rank kept
        fit_rank[b] = int((fits[b, 1:][orders] > fits[b, 0]).sum())
    met = dealt[~missed[dealt]]
    assert np.bincount(fit_rank[met], minlength=4).max() <= -(-len(dealt) // 4)


def test_a_density_rank_is_dealt_without_moving_the_spread_targets() -> None:
    """Negatives that are hubs (denser than the answer, as an answer's neighbours are) leave the answer the sparsest
    choice; with ``Exchange.density`` the answer's density rank is dealt from shortlists that hold sparser images
    near the top of the preference: the ranks come nearer even (as far as each question's sparser candidates allow:
    a sparse answer has few), and every question still meets its spread target wherever it did without."""
    rng = np.random.default_rng(3)
    n_q, k = 400, 16
    # each question's answer and candidates orthonormal: every combination ties on the spread, so the density decides
    vectors = np.tile(np.eye(k + 1), (n_q, 1))
    answers = np.arange(n_q) * (k + 1)
    pool_rows = answers[:, None] + 1 + np.arange(k)[None, :]
    # half of the candidates are hubs, denser than every answer; the others are as dense as the answers
    density = np.where(rng.random(len(vectors)) < 0.5, 1.0 + rng.random(len(vectors)), rng.random(len(vectors)))
    density[answers] = rng.random(n_q)
    classes = np.tile(np.arange(k) % 2, (n_q, 1))
    pool = np.ones((n_q, k), dtype=bool)
    preference = rng.random((n_q, k))
    rank = np.arange(n_q) % 4

    def draw(with_density: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        exchange = Exchange(answers, lambda rows: vectors[rows].astype(np.float32))
        if with_density:
            exchange.density = lambda rows: density[rows]
        picked, _, reached = exchange_draw(
            pool, classes, preference, rank, CLOZE_WANTS, pool_rows, exchange, np.random.default_rng(1)
        )
        negatives = np.take_along_axis(pool_rows, picked, axis=1)
        sparser = (density[negatives] < density[answers][:, None]).sum(axis=1)
        return np.bincount(sparser, minlength=4) / n_q, reached, np.take_along_axis(preference, picked, axis=1)

    plain, reached_plain, pref_plain = draw(False)
    dealt, reached_dealt, pref_dealt = draw(True)
    assert plain[0] > 0.4 and plain[3] < 0.05, plain  # the answer the sparsest choice in over 2 questions of 5
    assert np.abs(dealt - 0.25).max() < np.abs(plain - 0.25).max() - 0.08 and dealt[3] > 0.08, (plain, dealt)
    assert reached_dealt.sum() == reached_plain.sum()  # the spread's target comes first
    assert pref_dealt.mean() < 2 * pref_plain.mean()  # not far down the preference
