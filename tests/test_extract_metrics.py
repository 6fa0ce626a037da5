"""Paper 002's extraction metrics on hand-worked examples (every value computed by hand in the comments)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from procbench.cli import app
from procbench.errors import BadInput
from procbench.extract import assignment_tp, evaluate_extraction, pair_score, read_units

# -- pairwise scores --------------------------------------------------------------------------------------


def test_pair_scores_by_hand() -> None:
    # fries -> fry: substitute y->i... Levenshtein("fries", "fry") = 3 (y/i, +e, +s); max length 5
    assert pair_score("fries", "fry", "fuzzy") == pytest.approx(1 - 3 / 5)
    # partial: windows of "fries" of length 3: "fri" (d=1), "rie" (3), "ies" (3) -> 1 - 1/3
    assert pair_score("fry", "fries", "partial") == pytest.approx(2 / 3)
    assert pair_score("fries", "fry", "exact") == 0.0
    # "medium heat" (11 chars) is inside "over medium heat" (16): 5 deletions
    assert pair_score("over medium heat", "medium heat", "fuzzy") == pytest.approx(11 / 16)
    assert pair_score("over medium heat", "medium heat", "partial") == 1.0
    # equal lengths: partial is fuzzy
    assert pair_score("stir", "star", "partial") == pair_score("stir", "star", "fuzzy") == pytest.approx(3 / 4)
    assert pair_score("", "x", "partial") == 0.0


def test_assignment_is_one_to_one_and_maximal() -> None:
    # one gold "add" cannot be matched by both predictions
    assert assignment_tp(["add", "add"], ["add"], "exact") == 1.0
    # greedy would pair "heat" with "heats" (0.8) and leave "heater" with "heat" only; the optimum is
    # heat-heat (1) + heater-heats (1 - 2/6 = 2/3)
    assert assignment_tp(["heat", "heater"], ["heats", "heat"], "fuzzy") == pytest.approx(1 + 2 / 3)
    # comparison ignores case and extra whitespace
    assert assignment_tp(["Cast  Iron skillet"], ["cast iron skillet"], "exact") == 1.0


# -- the whole evaluation on a worked example ---------------------------------------------------------------

GOLD = [
    {
        "procedure_id": "p",
        "step": 0,
        "sentence": 0,
        "tuples": [
            {"verb": "heat", "arguments": ["cast iron skillet", "medium heat"]},
            ["fry", "bacon"],
        ],
    },
    {"procedure_id": "p", "step": 1, "sentence": 0, "tuples": [["add", "salt"]]},
    {"procedure_id": "p", "step": 2, "sentence": 0, "key": False, "tuples": []},
    {"procedure_id": "p", "step": 3, "sentence": 0, "tuples": []},
]
PREDICTED = [
    {
        "procedure_id": "p",
        "step": 0,
        "sentence": 0,
        "tuples": [["heat", "cast iron skillet", "over medium heat"], ["fries", "bacon"], ["stir"]],
    },
    {"procedure_id": "p", "step": 2, "sentence": 0, "tuples": [["watch", "video"]]},
]


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def worked(tmp_path: Path) -> dict[str, object]:
    return evaluate_extraction(
        _jsonl(tmp_path / "gold.jsonl", GOLD), predictions_path=_jsonl(tmp_path / "pred.jsonl", PREDICTED)
    )


def _prf(scores: dict[str, float]) -> tuple[float, float, float]:
    return scores["precision"], scores["recall"], scores["f1"]


def test_stage1_worked_example(worked: dict[str, object]) -> None:
    # gold key: step 0, step 1; predicted key: step 0, step 2 -> TP 1, FN 1, FP 1, TN 1
    stage1 = worked["stage1"]
    assert isinstance(stage1, dict)
    assert (stage1["tp"], stage1["fp"], stage1["fn"], stage1["tn"]) == (1, 1, 1, 1)
    assert stage1["accuracy"] == 0.5
    assert _prf(stage1) == (0.5, 0.5, 0.5)


def test_stage2_oracle_worked_example(worked: dict[str, object]) -> None:
    oracle = worked["stage2"]["oracle"]  # type: ignore[index]
    assert oracle["units"] == 2  # the gold key units, steps 0 and 1
    verbs, args = oracle["verbs"], oracle["arguments"]
    # verbs: predicted [heat, fries, stir] vs gold [heat, fry]; [] vs [add] -> 3 predicted, 3 gold
    # exact: heat=heat -> TP 1
    assert _prf(verbs["exact"]) == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    # fuzzy: heat-heat 1 + fries-fry 0.4 (stir, the third, stays unpaired) -> TP 1.4
    assert verbs["fuzzy"]["tp"] == pytest.approx(1.4)
    assert _prf(verbs["fuzzy"]) == pytest.approx((1.4 / 3, 1.4 / 3, 1.4 / 3))
    # partial: heat-heat 1 + fry in fries 2/3 -> TP 5/3
    assert _prf(verbs["partial"]) == pytest.approx((5 / 9, 5 / 9, 5 / 9))
    # arguments: [cast iron skillet, over medium heat, bacon] vs [cast iron skillet, medium heat, bacon]; [] vs
    # [salt] -> 3 predicted, 4 gold
    # exact: 2 -> P 2/3, R 1/2, F1 = 2 TP / (3 + 4) = 4/7
    assert _prf(args["exact"]) == pytest.approx((2 / 3, 1 / 2, 4 / 7))
    # fuzzy: 1 + 1 + 11/16 = 2.6875
    assert args["fuzzy"]["tp"] == pytest.approx(2.6875)
    assert _prf(args["fuzzy"]) == pytest.approx((2.6875 / 3, 2.6875 / 4, 2 * 2.6875 / 7))
    # partial: "medium heat" lies inside "over medium heat" -> 3
    assert _prf(args["partial"]) == pytest.approx((1.0, 3 / 4, 6 / 7))


def test_stage2_predicted_worked_example(worked: dict[str, object]) -> None:
    predicted = worked["stage2"]["predicted"]  # type: ignore[index]
    # units: step 0 (both key), step 1 (gold only: nothing predicted), step 2 (predicted only: no gold)
    assert predicted["units"] == 3
    verbs, args = predicted["verbs"], predicted["arguments"]
    # verbs: 4 predicted (heat, fries, stir, watch), 3 gold (heat, fry, add)
    assert _prf(verbs["exact"]) == pytest.approx((1 / 4, 1 / 3, 2 / 7))
    assert _prf(verbs["fuzzy"]) == pytest.approx((1.4 / 4, 1.4 / 3, 2.8 / 7))
    assert _prf(verbs["partial"]) == pytest.approx((5 / 12, 5 / 9, (10 / 3) / 7))
    # arguments: 4 predicted (+ video), 4 gold
    assert _prf(args["exact"]) == pytest.approx((0.5, 0.5, 0.5))
    assert _prf(args["fuzzy"]) == pytest.approx((2.6875 / 4,) * 3)
    assert _prf(args["partial"]) == pytest.approx((0.75, 0.75, 0.75))


def test_step_units_pool_their_sentences(tmp_path: Path) -> None:
    gold = _jsonl(tmp_path / "gold.jsonl", [{"procedure_id": "p", "step": 0, "tuples": [["mix", "flour"], ["bake"]]}])
    pred = _jsonl(
        tmp_path / "pred.jsonl",
        [
            {"procedure_id": "p", "step": 0, "sentence": 0, "tuples": [["mix", "flour"]]},
            {"procedure_id": "p", "step": 0, "sentence": 1, "tuples": [["bake"]]},
        ],
    )
    report = evaluate_extraction(gold, predictions_path=pred)
    assert report["stage2"]["oracle"]["verbs"]["exact"]["f1"] == 1.0
    assert report["stage2"]["oracle"]["arguments"]["exact"]["f1"] == 1.0


def test_gold_file_errors_name_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"procedure_id": "p", "step": 0, "tuples": []}\n{"procedure_id": "p"}\n', encoding="utf-8")
    with pytest.raises(BadInput, match="bad.jsonl line 2"):
        read_units(bad)
    bad.write_text('{"procedure_id": "p", "step": 0, "tuples": [[]]}\n', encoding="utf-8")
    with pytest.raises(BadInput, match="line 1"):
        read_units(bad)


def test_cli_scores_a_predictions_file(tmp_path: Path) -> None:
    gold, pred = _jsonl(tmp_path / "gold.jsonl", GOLD), _jsonl(tmp_path / "pred.jsonl", PREDICTED)
    result = CliRunner().invoke(app, ["evaluate-extraction", str(gold), "--predictions", str(pred), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["stage2"]["oracle"]["verbs"]["fuzzy"]["tp"] == pytest.approx(1.4)
    table = CliRunner().invoke(app, ["evaluate-extraction", str(gold), "--predictions", str(pred)])
    assert table.exit_code == 0 and "Stage 2" in table.stdout
    missing = CliRunner().invoke(
        app, ["evaluate-extraction", str(tmp_path / "nope.jsonl"), "--predictions", str(pred)]
    )
    assert missing.exit_code == 2
