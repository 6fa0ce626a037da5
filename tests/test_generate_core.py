from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from procbench.cli import app
from procbench.errors import BadInput
from procbench.generate import Setting, balance_answer_positions, generate, parse_knobs
from procbench.qsets import Question, read_question_set
from procbench.qsets.splits import parse_ratios, split_by_category, split_by_procedure
from procbench.store import Store


def _copy(src: Path, dst: Path) -> Store:
    import shutil

    shutil.copytree(src, dst)
    return Store.open(dst)


def test_setting_names_and_knob_parsing() -> None:
    assert Setting("knobs", (0, 1, 1)).name == "knobs-011"
    assert Setting("debias", budget=10).name == "debias-b10"
    assert Setting("recipeqa").name == "recipeqa"
    # the paper's settings first (K3 = 0, 1; ordering: 0), then the rank-uniform K3 = 2 of each K1, K2
    names = [s.name for s in Setting.all_knobs()]
    assert names[:8] == [f"knobs-{k1}{k2}{k3}" for k1 in "01" for k2 in "01" for k3 in "01"]
    assert names[8:] == ["knobs-002", "knobs-012", "knobs-102", "knobs-112"]
    assert [s.name for s in Setting.all_knobs(with_k3=False)] == [
        *("knobs-000", "knobs-010", "knobs-100", "knobs-110", "knobs-002", "knobs-012", "knobs-102", "knobs-112")
    ]
    assert len(Setting.all_knobs(with_k3=False, rank_uniform=False)) == 4
    assert parse_knobs("0,1,1") == (0, 1, 1) == parse_knobs("011")
    for bad in ("0,2,1", "0,1", "a,b,c"):
        with pytest.raises(BadInput):
            parse_knobs(bad)
    assert parse_ratios("0.7,0.2,0.1") == (0.7, 0.2, 0.1)
    with pytest.raises(BadInput):
        parse_ratios("0.7,0.2,0.2")


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 200), st.integers(0, 2**32 - 1))
def test_answer_positions_balanced_and_correct_choice_kept(n: int, seed: int) -> None:
    questions = [Question(f"p{i}", [], [], [f"right{i}", "w1", "w2", "w3"], 0, {}) for i in range(n)]
    balance_answer_positions(questions, np.random.default_rng(seed))
    counts = Counter(q.answer for q in questions)
    assert max(counts.values()) - min(counts.get(k, 0) for k in range(4)) <= 1
    assert all(q.choices[q.answer] == f"right{i}" for i, q in enumerate(questions))
    assert all(sorted(q.choices[: q.answer] + q.choices[q.answer + 1 :]) == ["w1", "w2", "w3"] for q in questions)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=60, unique=True), st.integers(0, 99))
def test_procedure_splits_are_stable_and_a_partition(ids: list[str], seed: int) -> None:
    splits = split_by_procedure(ids, seed=seed)
    assert set(splits) == set(ids) and set(splits.values()) <= {"train", "val", "test"}
    # adding procedures never moves existing ones
    more = split_by_procedure([*ids, "extra-1", "extra-2"], seed=seed)
    assert all(more[i] == splits[i] for i in ids)


def test_category_split_keeps_categories_whole() -> None:
    categories = {f"p{i}": ["Root", f"Mid{i % 3}", f"Leaf{i % 7}"] for i in range(140)}
    splits = split_by_category(categories, level=3, seed=1)
    leaf_splits: dict[tuple[str, ...], set[str]] = {}
    for pid, split in splits.items():
        leaf_splits.setdefault(tuple(categories[pid]), set()).add(split)
    assert all(len(s) == 1 for s in leaf_splits.values())
    assert Counter(splits.values())["train"] >= 60


def test_sequencing_questions(ingested_sample: Path, tmp_path: Path) -> None:
    store = _copy(ingested_sample, tmp_path / "s")
    result = generate(store, "sequencing", seed=3)
    qset = read_question_set(result.paths["default"])
    rows = qset.table().to_pylist()
    assert len(rows) == 45
    for row in rows:
        reference = row["choices"][0]
        assert row["answer"] == 0 and sorted(row["question"]) == sorted(reference)
        assert row["question"] != reference and 3 <= len(reference) <= 5
        indices = [int(k.rsplit("#", 1)[1]) for k in reference]
        assert indices == list(range(indices[0], indices[0] + len(indices)))
        assert row["meta"]["modality"] == "both"


def test_pair_order_balanced_and_no_leak(ingested_sample: Path, tmp_path: Path) -> None:
    store = _copy(ingested_sample, tmp_path / "s")
    result = generate(store, "pair-order", seed=1, split_by="category:3", pairs_per_procedure=3)
    table = read_question_set(result.paths["default"]).table()
    labels = Counter(table["answer"].to_pylist())
    assert abs(labels[0] - labels[1]) <= 1 and labels[0] + labels[1] == 135
    for row in table.to_pylist():
        a, b = (int(k.rsplit("#", 1)[1]) for k in row["question"])
        assert (a < b) == (row["answer"] == 1)
    split_of: dict[str, set[str]] = {}
    for row in table.select(["procedure_id", "split"]).to_pylist():
        split_of.setdefault(row["procedure_id"], set()).add(row["split"])
    assert all(len(s) == 1 for s in split_of.values())
    assert result.counts["per_category"] == {
        "Food and Entertaining": 45,
        "Hobbies and Crafts": 45,
        "Home and Garden": 45,
    }


def test_outputs_are_byte_identical_under_a_seed(ingested_sample: Path, tmp_path: Path) -> None:
    digests = []
    for name in ("a", "b"):
        store = _copy(ingested_sample, tmp_path / name)
        result = generate(store, "pair-order", seed=5)
        folder = result.paths["default"]
        digests.append({p.name: p.read_bytes() for p in sorted(folder.iterdir())})
    assert digests[0] == digests[1]


def test_recipeqa_export_and_card(ingested_sample: Path, tmp_path: Path) -> None:
    store = _copy(ingested_sample, tmp_path / "s")
    folder = generate(store, "sequencing").paths["default"]
    document = json.loads((folder / "recipeqa.json").read_text())
    total = sum(pq.read_metadata(folder / f"{s}.parquet").num_rows for s in ("train", "val", "test"))
    assert len(document["data"]) == total
    assert {"recipe_id", "task", "context", "question", "choice_list", "answer"} <= set(document["data"][0])
    card = (folder / "card.md").read_text()
    assert card.startswith("---\n") and "seed 0" in card and "CC0-1.0" in card and "license: cc0-1.0" in card
    assert "task_categories:\n- text-classification" in card and "answer positions" not in card  # not MC
    assert store.provenance[-1]["command"] == "generate"


def test_cli_generate_errors_and_json(ingested_sample: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    store = _copy(ingested_sample, tmp_path / "s")
    unknown = runner.invoke(app, ["generate", "--task", "nope", "--store", str(store.root)])
    assert unknown.exit_code == 2 and "unknown task" in unknown.stderr
    both = runner.invoke(
        app, ["generate", "--task", "pair-order", "--knobs", "0,1,1", "--debias", "--store", str(store.root)]
    )
    assert both.exit_code == 2
    budget = runner.invoke(app, ["generate", "--task", "pair-order", "--budget", "5", "--store", str(store.root)])
    assert budget.exit_code == 2 and "--budget applies only with --debias" in budget.stderr
    wrong_option = runner.invoke(app, ["generate", "--task", "sequencing", "--adjacent", "--store", str(store.root)])
    assert wrong_option.exit_code == 2 and "does not apply" in wrong_option.stderr
    ok = runner.invoke(app, ["generate", "--task", "pair-order", "--adjacent", "--json", "--store", str(store.root)])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["questions"] == {"default": 90}


def test_a_set_made_with_other_options_is_not_overwritten(ingested_sample: Path, tmp_path: Path) -> None:
    store = _copy(ingested_sample, tmp_path / "s")
    first = generate(store, "pair-order", seed=0)
    folder = first.paths["default"]
    record = json.loads((folder / "options.json").read_text())
    assert record["options"]["seed"] == 0 and len(record["fingerprint"]) == 64
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert generate(store, "pair-order", seed=0).paths["default"] == folder  # same options: regenerated
    with pytest.raises(BadInput, match=r"pair-order/default exists, made with other options: pairs_per_procedure"):
        generate(store, "pair-order", seed=0, pairs_per_procedure=3)
    with pytest.raises(BadInput, match="split_by"):
        generate(store, "pair-order", seed=0, split_by="category:1")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # refused: nothing changed
    runner = CliRunner()
    args = ["generate", "-t", "pair-order", "--seed", "4", "--store", str(store.root)]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2 and "--overwrite" in refused.stderr and "seed 0 -> 4" in refused.stderr
    assert len([line for line in refused.stderr.splitlines() if line.strip()]) == 1
    assert runner.invoke(app, [*args, "--overwrite"]).exit_code == 0
    assert json.loads((folder / "options.json").read_text())["options"]["seed"] == 4


def test_empty_split_warns_and_fails_with_strict(ingested_sample: Path, tmp_path: Path) -> None:
    store = _copy(ingested_sample, tmp_path / "s")
    runner = CliRunner()
    args = ["generate", "-t", "sequencing", "--split-by", "category:1", "--store", str(store.root)]
    strict = runner.invoke(app, [*args, "--strict"])
    assert strict.exit_code == 2 and "empty" in strict.stderr and "--strict" in strict.stderr
    assert not (store.root / "questions").exists()
    loose = runner.invoke(app, [*args, "--json"])
    assert loose.exit_code == 0, loose.output
    report = json.loads(loose.stdout)
    sizes = report["split_sizes"]["default"]
    assert sum(sizes.values()) == report["questions"]["default"] and 0 in sizes.values()
    assert "warning:" in loose.stderr and report["warnings"]
    card = (store.root / "questions" / "sequencing" / "default" / "card.md").read_text()
    assert "Empty splits: `default` " in card  # the card (procbench.card) names the empty split
    store = Store.open(store.root)  # the CLI wrote since `store` read it
    ok = generate(store, "sequencing", split_ratios=(1.0, 0.0, 0.0), overwrite=True)
    assert ok.warnings == [] and ok.split_sizes["default"]["val"] == 0  # an empty split asked for is fine
