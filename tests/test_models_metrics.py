"""Metrics of procbench.models against examples worked out by hand (paper 000 §5.1, §5.4)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procbench.errors import BadInput
from procbench.models.metrics import (
    bootstrap_ci,
    chance_sequencing_scores,
    kendall_tau,
    longest_common_subsequence,
    longest_common_substring,
    position_distance,
    sequence_scores,
    sequencing_scores,
)
from procbench.models.registry import get_model


def test_one_reference_worked_by_hand() -> None:
    # reference A B C D E, prediction B A C E D (two adjacent swaps):
    #   Acc  = only C (position 2) is in place                      -> 1/5 = 0.2
    #   PMR  = not identical                                          -> 0
    #   Dist = |1-0| (A) + |0-1| (B) + 0 (C) + |4-3| (D) + |3-4| (E)  -> 4
    #   L_q  = longest common subsequence, e.g. A C E or B C D        -> 3 (A C D E fails: E precedes D)
    #   L_r  = longest common run: BA, AC, CE, ED are not runs of ABCDE -> 1
    #   tau  = 2 inversions (A,B) and (D,E) of 10 pairs: 1 - 2*2/10   -> 0.6
    scores = sequence_scores(list("BACED"), list("ABCDE"))
    assert scores == {"acc": 0.2, "pmr": 0.0, "dist": 4.0, "l_q": 3.0, "l_r": 1.0, "tau": pytest.approx(0.6)}


def test_reversal_worked_by_hand() -> None:
    # E D C B A against A B C D E: C stays in the middle (Acc 1/5); Dist 4+2+0+2+4 = 12; every pair is
    # inverted (tau -1); no two items keep their relative order (L_q 1), so no run longer than 1 (L_r 1).
    scores = sequence_scores(list("EDCBA"), list("ABCDE"))
    assert scores == {"acc": 0.2, "pmr": 0.0, "dist": 12.0, "l_q": 1.0, "l_r": 1.0, "tau": -1.0}


def test_multiple_references_keep_the_best_value_of_each_metric() -> None:
    # Against the alternative reference B A C D E (A and B interchangeable), the same prediction B A C E D has
    # B, A, C in place (Acc 3/5), only D/E swapped (Dist 2), L_q 4 (B A C D), L_r 3 (the run B A C), and
    # one inversion (tau 1 - 2/10 = 0.8). Each metric keeps its best over both references.
    references = [list("ABCDE"), list("BACDE")]
    scores = sequencing_scores(list("BACED"), references)
    assert scores == {"acc": 0.6, "pmr": 0.0, "dist": 2.0, "l_q": 4.0, "l_r": 3.0, "tau": pytest.approx(0.8)}
    # an alternative that matches exactly makes it a perfect match
    exact = sequencing_scores(list("BACED"), [list("ABCDE"), list("BACED")])
    assert exact == {"acc": 1.0, "pmr": 1.0, "dist": 0.0, "l_q": 5.0, "l_r": 5.0, "tau": 1.0}


def test_chance_for_three_steps_worked_by_hand() -> None:
    # The six orders of A B C against A B C:
    #   order  Acc  PMR  Dist  L_q  L_r  tau
    #   ABC    1    1    0     3    3    1
    #   ACB    1/3  0    2     2    1    1/3
    #   BAC    1/3  0    2     2    1    1/3
    #   BCA    0    0    4     2    2   -1/3
    #   CAB    0    0    4     2    2   -1/3
    #   CBA    1/3  0    4     1    1   -1
    # Means: Acc 1/3, PMR 1/6, Dist 16/6, L_q 2, L_r 10/6, tau 0.
    chance = chance_sequencing_scores([list("ABC")])
    expected = {"acc": 1 / 3, "pmr": 1 / 6, "dist": 16 / 6, "l_q": 2.0, "l_r": 10 / 6, "tau": 0.0}
    assert chance == pytest.approx(expected)
    # Dist of a random 5-step order is 8 on average: the scale of paper 000's tables.
    assert chance_sequencing_scores([list("ABCDE")])["dist"] == pytest.approx(8.0)


def test_chance_with_two_references_is_the_mean_of_the_best() -> None:
    # A B and B A both accepted: every order of two items is a perfect match.
    assert chance_sequencing_scores([list("AB"), list("BA")])["pmr"] == 1.0
    references = [list("ABCD"), list("BACD")]
    brute = np.mean([sequencing_scores(p, references)["acc"] for p in itertools.permutations("ABCD")])
    assert chance_sequencing_scores([list("ABCD"), list("BACD")])["acc"] == pytest.approx(brute)


def test_edge_cases_and_bad_input() -> None:
    assert kendall_tau(["x"], ["x"]) == 1.0
    assert sequence_scores(["x"], ["x"])["acc"] == 1.0
    assert longest_common_subsequence("", "abc") == 0 and longest_common_substring("abc", "") == 0
    with pytest.raises(ValueError):
        sequence_scores(list("ABD"), list("ABC"))
    with pytest.raises(ValueError):
        sequencing_scores(list("AB"), [])


@settings(max_examples=60, deadline=None)
@given(st.permutations(list(range(6))), st.permutations(list(range(6))))
def test_metric_invariants(predicted: list[int], reference: list[int]) -> None:
    scores = sequence_scores(predicted, reference)
    n = len(reference)
    assert (scores["pmr"] == 1.0) == (predicted == reference) == (scores["dist"] == 0)
    assert 1 <= scores["l_r"] <= scores["l_q"] <= n
    assert -1.0 <= scores["tau"] <= 1.0
    assert scores["tau"] == pytest.approx(-sequence_scores(predicted[::-1], reference)["tau"])
    assert position_distance(predicted, reference) == position_distance(reference, predicted)
    assert longest_common_subsequence(predicted, reference) == longest_common_subsequence(reference, predicted)


def test_bootstrap_interval() -> None:
    values = np.array([1.0] * 60 + [0.0] * 40)
    lo, hi = bootstrap_ci(values, resamples=2000, rng=np.random.default_rng(0))
    assert lo < 0.6 < hi and hi - lo < 0.25
    assert bootstrap_ci(values, resamples=500, rng=np.random.default_rng(3)) == bootstrap_ci(
        values, resamples=500, rng=np.random.default_rng(3)
    )
    assert bootstrap_ci(np.full(10, 0.25), rng=np.random.default_rng(0)) == (0.25, 0.25)
    assert bootstrap_ci(np.array([]), rng=np.random.default_rng(0)) is None
    assert bootstrap_ci(values, resamples=0, rng=np.random.default_rng(0)) is None
    # 10 procedures of 10 questions, each procedure all right or all wrong: resampling procedures gives an
    # interval about sqrt(10) times wider than pretending the 100 questions are independent
    clustered = np.repeat([1.0, 0.0] * 5, 10)
    procedures = np.repeat(np.arange(10), 10)
    lo_g, hi_g = bootstrap_ci(clustered, procedures, resamples=2000, rng=np.random.default_rng(1))
    lo_q, hi_q = bootstrap_ci(clustered, resamples=2000, rng=np.random.default_rng(1))
    assert hi_g - lo_g > 2 * (hi_q - lo_q) and lo_g < 0.5 < hi_g


def test_registry_suggests_close_names() -> None:
    with pytest.raises(BadInput, match="did you mean 'htrn'"):
        get_model("htrm")
    with pytest.raises(BadInput, match="does not answer sequencing"):
        get_model("hasty").check_task("sequencing")
