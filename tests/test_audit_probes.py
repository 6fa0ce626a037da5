"""The audit probes on synthetic sets: planted shortcuts of known strength are found (value above chance,
interval excluding it), sets without them report chance inside the interval, and reports are deterministic."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procbench.audit import PROBES, ArrayVectors, AuditSet, audit_set, audit_sets, resolve_probes
from procbench.audit.stats import Bootstrap, group_codes, js_divergence, mc_hits, procedure_folds
from procbench.errors import BadInput

WORDS = [f"word{i}" for i in range(300)]
CHANCE_PROBES = (
    "choice_only",
    "question_distance",
    "hubness",
    "partial_input",
    "answer_position",
    "length",
    "lexical_overlap",
    "cluster_balance",
)


def make_cloze(
    n: int = 600,
    *,
    seed: int = 0,
    per_procedure: int = 2,
    dim: int = 24,
    longest: float = 0.0,
    one_cluster: bool = False,
    near_question: bool = False,
    position_zero: float = 0.0,
    hubs: bool = False,
    task: str = "textual-cloze",
    name: str = "synthetic",
) -> AuditSet:
    """A textual-cloze-like set with fresh items per question (nothing shared between questions).

    Planted shortcuts: ``longest`` = share of questions whose correct title is padded to be the longest;
    ``one_cluster`` = correct choices always from cluster 0, wrong ones never; ``near_question`` = the
    correct choice is a small perturbation of the question mean; ``position_zero`` = share of answers
    forced to position 0 (the rest uniform); ``hubs`` = the wrong choices share a direction (hubs of the
    embedding space, as an answer's nearest neighbours are), the correct ones do not.
    """
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(8, dim)) * 1.5
    hub = rng.normal(size=dim)
    hub *= 2.0 / np.linalg.norm(hub)
    keys: list[str] = []
    vectors: list[np.ndarray] = []

    def item(vector: np.ndarray, words: list[str]) -> tuple[str, str]:
        keys.append(f"item{len(keys)}")
        vectors.append(vector / np.linalg.norm(vector))
        return keys[-1], " ".join(words)

    def words() -> list[str]:
        return [str(w) for w in rng.choice(WORDS, int(rng.integers(2, 6)))]

    rows: dict[str, list] = {k: [] for k in ("pid", "q", "qk", "c", "ck", "a", "ctx")}
    for i in range(n):
        mean = centres[rng.integers(8)] + rng.normal(size=dim)
        shown = [item(mean + rng.normal(size=dim) * 0.5, words()) for _ in range(3)]
        options = []
        for j in range(4):
            cluster = (0 if j == 0 else 1 + int(rng.integers(7))) if one_cluster else int(rng.integers(8))
            vector = centres[cluster] + rng.normal(size=dim) * 0.7
            if near_question and j == 0:
                vector = mean + rng.normal(size=dim) * 0.2
            if hubs and j > 0:
                vector = vector / np.linalg.norm(vector) + hub
            options.append([vector, words()])
        if rng.random() < longest:
            options[0][1] = options[0][1] + ["padding"] * 12
        made = [item(v, w) for v, w in options]
        position = 0 if rng.random() < position_zero else int(rng.integers(4))
        order = made[1:]
        order.insert(position, made[0])
        blank = int(rng.integers(4))
        qk: list[str | None] = [k for k, _ in shown]
        qt = [t for _, t in shown]
        qk.insert(blank, None)
        qt.insert(blank, "@placeholder")
        rows["pid"].append(f"proc{i // per_procedure}")
        rows["q"].append(qt)
        rows["qk"].append(qk)
        rows["c"].append([t for _, t in order])
        rows["ck"].append([k for k, _ in order])
        rows["a"].append(position)
        rows["ctx"].append(" ".join(rng.choice(WORDS, 40)))
    return AuditSet(
        name=name,
        task=task,
        procedure_ids=rows["pid"],
        questions=rows["q"],
        choices=rows["c"],
        answers=np.array(rows["a"]),
        question_keys=rows["qk"],
        choice_keys=rows["ck"],
        contexts=rows["ctx"],
        vectors=ArrayVectors(keys, np.array(vectors), encoder="synthetic"),
        encoder="synthetic",
    )


def _assert_found(result, *, at_least: float) -> None:
    assert result.value is not None and result.value >= at_least, result
    assert result.ci[0] > result.chance, result
    assert result.verdict == "above"


def _assert_chance(result) -> None:
    assert result.value is not None, result.reason
    lo, hi = result.ci
    assert lo <= result.chance <= hi, (result.value, result.ci, result.chance)
    assert result.verdict == "chance"


@pytest.fixture(scope="module")
def null_audit():
    return audit_set(make_cloze(seed=11, name="none"), seed=3, n_boot=400)


def test_a_set_without_shortcuts_reports_chance_inside_every_interval(null_audit) -> None:
    for probe in CHANCE_PROBES:
        _assert_chance(null_audit.probes[probe])
    assert null_audit.probes["choice_only"].chance == pytest.approx(0.25)
    overlap = null_audit.probes["question_overlap"]
    assert overlap.value == 0.0 and overlap.chance is None and overlap.ci == (0.0, 0.0)


def test_correct_choice_longest_in_70_percent_of_questions_is_found() -> None:
    result = audit_set(make_cloze(seed=1, longest=0.7), seed=0, n_boot=400, probes="length").probes["length"]
    # 70% planted + about a quarter of the other 30% by luck
    _assert_found(result, at_least=0.7)
    assert result.value == pytest.approx(0.7 + 0.3 * 0.25, abs=0.06)
    assert result.details["rule_accuracy"]["longest_chars"] == pytest.approx(result.value, abs=0.03)
    assert set(result.details["rule_per_fold"]) <= {"longest_chars", "longest_words"}


def test_correct_choice_always_from_one_cluster_is_found() -> None:
    audit = audit_set(make_cloze(seed=2, one_cluster=True), seed=0, n_boot=400)
    cluster = audit.probes["cluster_balance"]
    _assert_found(cluster, at_least=0.5)
    assert cluster.details["p_value"] < 0.01
    top = cluster.details["most_over_represented_in_correct"]
    # KMeans splits the correct choices' region into a few clusters that wrong choices never visit
    assert sum(c["share_correct"] for c in top) > 0.6 and all(c["share_wrong"] < 0.02 for c in top)
    _assert_found(audit.probes["choice_only"], at_least=0.9)
    _assert_chance(audit.probes["answer_position"])
    _assert_chance(audit.probes["length"])


def test_correct_choice_near_the_question_is_found_by_the_distance_svm() -> None:
    audit = audit_set(make_cloze(seed=3, near_question=True), seed=0, n_boot=400, probes="question_distance")
    result = audit.probes["question_distance"]
    _assert_found(result, at_least=0.95)
    assert result.details["nearest_accuracy"] > 0.95 and result.details["farthest_accuracy"] < 0.05
    assert result.details["mean_distance_correct"] < result.details["mean_distance_wrong"]
    assert len(result.arrays["distance_correct"]) == 600 and len(result.arrays["distance_wrong"]) == 1800


def test_negatives_that_are_hubs_are_found_by_the_centrality_probe() -> None:
    audit = audit_set(make_cloze(seed=4, hubs=True), seed=0, n_boot=200, probes="hubness")
    result = audit.probes["hubness"]
    _assert_found(result, at_least=0.9)
    assert set(result.details["rule_per_fold"]) == {"least_central"}
    assert result.details["answer_rank_shares"][0] > 0.9  # rank 0 = least central


def test_answer_position_bias_is_found_and_balanced_positions_are_not() -> None:
    biased = audit_set(make_cloze(seed=4, position_zero=0.3), seed=0, n_boot=400, probes="answer_position")
    result = biased.probes["answer_position"]
    _assert_found(result, at_least=0.4)
    assert result.details["most_common_position"] == 0 and result.details["p_value"] < 1e-6
    # exactly balanced positions, as procbench's generators write them
    balanced = make_cloze(seed=5)
    balanced.answers = np.resize(np.arange(4), len(balanced))
    even = audit_set(balanced, seed=0, n_boot=400, probes="answer_position").probes["answer_position"]
    _assert_chance(even)
    assert even.value == pytest.approx(0.25) and even.details["p_value"] == pytest.approx(1.0)


def _overlap_set(task: str, questions, choices, answers, procedure_ids) -> AuditSet:
    return AuditSet("overlap", task, procedure_ids, questions, choices, np.array(answers))


def test_question_overlap_counts_answers_shown_by_other_questions_of_the_procedure() -> None:
    ph = "@placeholder"
    cloze = _overlap_set(
        "visual-cloze",
        questions=[["a", "b", "c", ph], [ph, "b", "c", "d"], ["x", ph, "z", "w"], ["q", "r", ph, "t"]],
        choices=[["d", "m", "n", "o"], ["m", "a", "n", "o"], ["y", "m", "n", "o"], ["m", "n", "o", "s"]],
        answers=[0, 1, 0, 3],
        procedure_ids=["p", "p", "other", "third"],
    )
    result = audit_sets([cloze], n_boot=50, probes="question_overlap").sets["overlap"].probes["question_overlap"]
    # p's two questions reveal each other's answer (d is shown in Q2, a in Q1); the others are alone
    assert result.value == pytest.approx(0.5) and result.details["revealed"] == 2
    assert result.chance is None and result.details["procedures_with_several_questions"] == 1

    ordering = _overlap_set(
        "visual-ordering",
        questions=[[], [], []],
        choices=[[["a", "b", "c"], ["c", "b", "a"]], [["b", "c", "d"], ["d", "c", "b"]], [["e", "f"], ["f", "e"]]],
        answers=[0, 0, 1],
        procedure_ids=["p", "p", "p"],
    )
    result = audit_sets([ordering], n_boot=50, probes="question_overlap").sets["overlap"].probes["question_overlap"]
    # (b, c) is consecutive in both orders of p's first two questions; the third shares nothing
    assert result.value == pytest.approx(2 / 3)

    coherence = _overlap_set(
        "visual-coherence",
        questions=[[], [], []],
        choices=[["x", "a", "b", "c"], ["a", "y", "b", "c"], ["d", "e", "z", "f"]],
        answers=[0, 1, 2],
        procedure_ids=["p", "p", "q"],
    )
    result = audit_sets([coherence], n_boot=50, probes="question_overlap").sets["overlap"].probes["question_overlap"]
    # p's coherent images a, b, c are known from the other question: the odd one out is given away
    assert result.value == pytest.approx(2 / 3)


def test_probes_that_do_not_apply_say_why_instead_of_faking_a_value() -> None:
    pair = AuditSet(
        "pairs",
        "pair-order",
        [f"p{i}" for i in range(40)],
        [[f"p{i}#0", f"p{i}#1"] for i in range(40)],
        [["inverted", "in order"]] * 40,
        np.resize([0, 1], 40),
    )
    audit = audit_set(pair, n_boot=50)
    assert list(audit.probes) == list(PROBES)
    for name in (
        "choice_only",
        "question_distance",
        "hubness",
        "length",
        "lexical_overlap",
        "context_overlap",
        "cluster_balance",
        "question_overlap",
    ):
        result = audit.probes[name]
        assert result.value is None and result.ci is None and result.reason, name
        assert result.to_dict()["value"] is None and result.to_dict()["reason"] == result.reason
    assert audit.probes["answer_position"].value == pytest.approx(0.5)
    assert audit.probes["answer_position"].chance == pytest.approx(0.5)

    images = make_cloze(n=200, seed=6, task="visual-cloze")
    image_audit = audit_set(images, n_boot=50, probes="length,lexical_overlap,context_overlap")
    assert all("images" in r.reason for r in image_audit.probes.values())

    no_vectors = make_cloze(n=200, seed=7)
    no_vectors.vectors = None
    no_vectors.vectors_note = "no store to read step_title embeddings from: pass --store"
    result = audit_set(no_vectors, n_boot=50, probes="choice_only").probes["choice_only"]
    assert result.value is None and "--store" in result.reason

    empty = AuditSet("empty", "visual-cloze", [], [], [], np.zeros(0))
    assert all(r.reason == "the set has no questions" for r in audit_set(empty).probes.values())


def test_same_seed_same_report_and_report_shape() -> None:
    sets = [make_cloze(n=150, seed=8, name="a"), make_cloze(n=150, seed=9, longest=0.5, name="b")]
    first = audit_sets(sets, seed=4, n_boot=100).to_dict()
    for s in sets:
        s._cache.clear()
    second = audit_sets(sets, seed=4, n_boot=100).to_dict()
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert list(first) == ["sets"] and list(first["sets"]) == ["a", "b"]
    for entry in first["sets"].values():
        assert set(entry) == {"n_questions", "probes"} and entry["n_questions"] == 150
        assert list(entry["probes"]) == list(PROBES)
        for probe in entry["probes"].values():
            assert {"value", "chance", "ci"} <= set(probe)
            assert probe["value"] is None or (isinstance(probe["ci"], list) and len(probe["ci"]) == 2)
    json.dumps(first, allow_nan=False)


def test_duplicate_names_are_kept_apart_and_options_are_checked() -> None:
    one = make_cloze(n=100, seed=10, name="same")
    two = make_cloze(n=100, seed=12, name="same")
    report = audit_sets([one, two], n_boot=20, probes="answer_position")
    assert list(report.sets) == ["same", "same (2)"]
    with pytest.raises(BadInput, match="did you mean 'choice_only'"):
        resolve_probes("choice_onyl")
    with pytest.raises(BadInput):
        audit_sets([one], n_boot=1)
    assert [s.name for s in resolve_probes("length, cluster-balance")] == ["length", "cluster_balance"]


# -- statistics ------------------------------------------------------------------------------------------
def test_tie_aware_hits_make_constant_scores_exactly_chance() -> None:
    valid = np.ones((6, 4), dtype=bool)
    valid[5, 3] = False
    answers = np.array([0, 1, 2, 3, 0, 2])
    hits = mc_hits(np.zeros((6, 4)), answers, valid)
    assert hits.tolist() == [0.25] * 5 + [pytest.approx(1 / 3)]
    scores = np.array([[1.0, 0.0, 0.0, 0.0]] * 6)
    assert mc_hits(scores, answers, valid).tolist() == [1, 0, 0, 0, 1, 0]
    stacked = mc_hits(np.stack([scores, np.zeros((6, 4))], axis=2), answers, valid)
    assert stacked.shape == (6, 2) and stacked[:, 1].tolist() == hits.tolist()


def test_jensen_shannon_bounds() -> None:
    assert js_divergence(np.array([3, 1, 0]), np.array([6, 2, 0])) == pytest.approx(0.0)
    assert js_divergence(np.array([1, 0]), np.array([0, 5])) == pytest.approx(1.0)
    assert 0 < js_divergence(np.array([2, 1]), np.array([1, 2])) < 1


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=2, max_size=200), st.integers(2, 6), st.integers(0, 99))
def test_folds_never_split_a_procedure(ids: list[int], n_folds: int, seed: int) -> None:
    codes, n_groups = group_codes([f"p{i}" for i in ids])
    folds = procedure_folds(codes, n_groups, n_folds, seed)
    for code in np.unique(codes):
        assert len(np.unique(folds[codes == code])) == 1
    assert len(np.unique(folds)) == min(n_folds, n_groups)


def test_bootstrap_resamples_procedures_deterministically() -> None:
    codes, n_groups = group_codes(["a", "a", "b", "c", "c", "c"])
    boot = Bootstrap(codes, n_groups, n_boot=300, seed=1)
    assert (boot.weights.sum(axis=1) == n_groups).all()
    again = Bootstrap(codes, n_groups, n_boot=300, seed=1)
    assert np.array_equal(boot.weights, again.weights)
    values = np.array([1.0, 1.0, 0.0, 0.5, 0.5, 0.5])
    replicates = boot.ratio(values, np.ones(6))
    assert replicates.shape == (300,) and ((replicates >= 0) & (replicates <= 1)).all()
    huge = Bootstrap(np.arange(200_000), 200_000, n_boot=1000, seed=0)
    assert huge.n_boot < 1000  # capped work for very large sets


def make_rank_set(n: int = 400, *, answer_rank: int | None = 1, seed: int = 0, dim: int = 16) -> AuditSet:
    """Visual-cloze-like questions whose answer is the choice at distance rank ``answer_rank`` from the
    question mean (0 = nearest), never at another rank: the K3 'second closest' shortcut. None: a quarter of
    the answers at each rank, dealt at random (K3=2 with no shortcut)."""
    rng = np.random.default_rng(seed)
    dealt = rng.permutation(np.arange(n) % 4) if answer_rank is None else np.full(n, answer_rank)
    keys: list[str] = []
    vectors: list[np.ndarray] = []

    def item(vector: np.ndarray) -> str:
        keys.append(f"img{len(keys)}")
        vectors.append(vector / np.linalg.norm(vector))
        return keys[-1]

    rows: dict[str, list] = {k: [] for k in ("pid", "q", "c", "a")}
    for i in range(n):
        mean = rng.normal(size=dim)
        mean /= np.linalg.norm(mean)
        shown = [item(mean + rng.normal(size=dim) * 0.05) for _ in range(3)]
        made = []
        for radius in (0.3, 0.6, 0.9, 1.2):  # distance ranks 0..3
            direction = rng.normal(size=dim)
            direction -= direction @ mean * mean
            made.append(item(mean + radius * direction / np.linalg.norm(direction)))
        order = rng.permutation(4)
        choices = [made[r] for r in order]
        rows["pid"].append(f"p{i // 2}")
        rows["q"].append([*shown[:2], "@placeholder", shown[2]])
        rows["c"].append(choices)
        rows["a"].append(int(np.flatnonzero(order == dealt[i])[0]))
    return AuditSet(
        name=f"rank{answer_rank}",
        task="visual-cloze",
        procedure_ids=rows["pid"],
        questions=rows["q"],
        choices=rows["c"],
        answers=np.array(rows["a"]),
        vectors=ArrayVectors(keys, np.array(vectors), encoder="synthetic"),
    )


def test_answer_at_the_second_distance_rank_is_found_by_the_rank_aware_distance_probe() -> None:
    result = audit_set(make_rank_set(answer_rank=1), seed=0, n_boot=200, probes="question_distance")
    distance = result.probes["question_distance"]
    _assert_found(distance, at_least=0.9)
    assert distance.details["nearest_accuracy"] == 0.0  # a nearest-choice rule reads far below chance
    assert distance.details["answer_rank_shares"] == [0.0, 1.0, 0.0, 0.0]
    assert distance.details["best_rank_rule"]["accuracy"] == 1.0
    assert set(distance.details["best_rank_rule"]["rule_per_fold"]) == {"rank_1"}
    assert distance.flagged and distance.to_dict()["flagged"] is True


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_answers_dealt_exactly_evenly_over_the_ranks_read_chance_not_below(seed: int) -> None:
    """The distance probe's folds are stratified by the answer's rank: on unstratified folds a set balanced
    exactly over the ranks reads below chance (each training fold holds most of what its test fold lacks)."""
    result = audit_set(make_rank_set(800, answer_rank=None, seed=seed), seed=0, n_boot=200, probes="question_distance")
    distance = result.probes["question_distance"]
    assert distance.details["answer_rank_shares"] == [0.25] * 4
    assert not distance.flagged and 0.2 < distance.value < 0.3, distance.to_dict()


def test_an_interval_below_chance_is_flagged_as_a_bias_unless_the_probe_is_a_reference() -> None:
    from procbench.audit import ProbeResult

    below = ProbeResult(0.04, 0.25, (0.02, 0.06))
    assert below.verdict == "below" and below.flagged
    assert below.to_dict()["flagged"] is True
    at_chance = ProbeResult(0.26, 0.25, (0.22, 0.30))
    assert at_chance.verdict == "chance" and not at_chance.flagged
    reference = ProbeResult(0.9, 0.25, (0.85, 0.95), reference=True)
    assert reference.verdict == "above" and not reference.flagged and reference.to_dict()["reference"] is True
    rate = ProbeResult(0.3, None, (0.2, 0.4))
    assert rate.verdict is None and not rate.flagged and "flagged" not in rate.to_dict()


@pytest.mark.parametrize("planted", ["near_question", "longest", "rank"])
def test_the_partial_input_trees_find_distance_length_and_rank_shortcuts(planted: str) -> None:
    if planted == "rank":
        aset = make_rank_set(answer_rank=2)
    else:
        aset = make_cloze(seed=1, **{planted: True if planted == "near_question" else 0.7})
    result = audit_set(aset, seed=0, n_boot=200, probes="partial_input").probes["partial_input"]
    _assert_found(result, at_least=0.7)
    assert result.details["features"][0] == "qmean_value" and result.details["n_skipped"] == 0


def test_the_partial_input_trees_can_be_smaller_and_the_details_state_their_size() -> None:
    """The demo's audit fits the adversarial filter's cheaper trees (``trees``): they are the ones fitted (the
    per-question probabilities change), they still find a planted shortcut, and the probe's details say so."""
    from procbench.demo import DEMO_TREES

    aset = make_cloze(n=300, seed=1, longest=0.7)
    standard = audit_set(aset, seed=0, n_boot=100, probes="partial_input", per_question=True)
    small = audit_set(aset, seed=0, n_boot=100, probes="partial_input", per_question=True, trees=DEMO_TREES)
    assert standard.probes["partial_input"].details["trees"] == "150 boosting iterations over 255 bins per feature"
    assert small.probes["partial_input"].details["trees"] == "60 boosting iterations over 63 bins per feature"
    _assert_found(small.probes["partial_input"], at_least=0.7)
    assert not small.scores["partial_input"].equals(standard.scores["partial_input"])


def test_per_question_scores_are_cross_fitted_answer_probabilities() -> None:
    from procbench.audit.scores import SCORE_COLUMNS

    aset = make_cloze(n=400, seed=5, near_question=True)
    audit = audit_set(aset, seed=0, n_boot=100, probes="partial_input", per_question=True)
    table = audit.scores
    assert tuple(table.column_names) == SCORE_COLUMNS and table.num_rows == 400
    assert table["qid"].to_pylist() == [str(i) for i in range(400)]
    assert table["procedure_id"].to_pylist() == aset.procedure_ids
    partial = np.array(table["partial_input"].to_pylist())
    assert np.median(partial) > 0.9  # the planted answer sits on the question mean
    hits = np.array(table["shortcut_pick"].to_pylist())
    assert hits.mean() > 0.9
    # the probe and the per-question file agree: the probe's hits are the trees' argmax
    assert audit.probes["partial_input"].value == pytest.approx(float((partial >= 0.5).mean()), abs=0.05)
    null = audit_set(make_cloze(n=400, seed=6), seed=0, n_boot=100, probes="length", per_question=True).scores
    assert abs(float(np.mean(null["shortcut_score"].to_pylist())) - 0.25) < 0.05
    again = audit_set(
        make_cloze(n=400, seed=5, near_question=True), seed=0, n_boot=100, probes="length", per_question=True
    )
    assert again.scores.equals(table)


def test_context_reference_reads_the_context_and_is_never_flagged() -> None:
    aset = make_rank_set(n=200, answer_rank=3)
    # the context shows the answer's own item (a step the blank stands for): the reference finds it
    aset.context_keys = [[c[a]] for c, a in zip(aset.choices, aset.answers, strict=True)]
    aset.context_what = "context step images"
    result = audit_set(aset, seed=0, n_boot=100, probes="context_reference").probes["context_reference"]
    assert result.value == 1.0 and result.reference and not result.flagged
    assert result.to_dict()["reference"] is True
    aset.context_keys = None
    aset.context_note = "no context reference: no step_text embeddings"
    aset._cache.clear()
    missing = audit_set(aset, seed=0, n_boot=100, probes="context_reference").probes["context_reference"]
    assert missing.value is None and "step_text" in missing.reason


def test_word_overlap_with_the_context_is_a_reference_and_with_the_question_a_shortcut() -> None:
    aset = make_cloze(n=300, seed=12)
    # the context repeats the answer's words: a bag-of-words reader finds it, the question items do not
    aset.contexts = [
        f"{c} {choices[a]}" for c, choices, a in zip(aset.contexts, aset.choices, aset.answers, strict=True)
    ]
    audit = audit_set(aset, seed=0, n_boot=200, probes="lexical_overlap,context_overlap")
    reader = audit.probes["context_overlap"]
    assert reader.value is not None and reader.value > 0.9 and reader.reference and not reader.flagged
    _assert_chance(audit.probes["lexical_overlap"])
    # the answer's words planted among the question items: the context-free rule finds that
    aset.questions = [
        [*q, choices[a]] for q, choices, a in zip(aset.questions, aset.choices, aset.answers, strict=True)
    ]
    shortcut = audit_set(aset, seed=0, n_boot=200, probes="lexical_overlap").probes["lexical_overlap"]
    _assert_found(shortcut, at_least=0.9)
    assert shortcut.flagged
    aset.contexts = None
    assert "context" in audit_set(aset, seed=0, n_boot=50, probes="context_overlap").probes["context_overlap"].reason


def test_hubness_scores_the_centre_of_a_cloud_above_its_outliers_and_leaves_copies_out() -> None:
    from procbench.shortcuts import HubnessTable, hubness

    rng = np.random.default_rng(0)
    cloud = rng.normal(size=(200, 16)) * 0.3 + np.eye(16)[0]
    points = np.vstack([np.eye(16)[0], np.eye(16)[1], cloud])  # the centre, an outlier, the cloud
    unit = (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)
    central, density = hubness(unit[:2], unit)
    assert central[0] > central[1] and density[0] > density[1]
    # the point itself (and a copy of it) is not its own neighbour
    alone, _ = hubness(unit[:1], unit[:1])
    assert hubness(unit[:1], unit[:1])[1][0] == 0.0 and alone[0] == pytest.approx(1.0)
    table = HubnessTable(unit)
    got = table(np.array([[0, 1], [-1, 0]]))
    assert got[0].shape == (2, 2) and got[1][1, 0] == 0.0 and got[0][1, 1] == got[0][0, 0]
    np.testing.assert_allclose(table(np.array([0, 1]))[1], hubness(unit[:2], table.reference)[1])
