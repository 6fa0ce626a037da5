"""AFLite (``procbench filter --aflite``): questions made predictable by a planted context-free shortcut are
the ones dropped, a target size is met exactly, the result is deterministic, and the CLI writes a new
setting (parquet, card, provenance) beside the source set without touching it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from procbench.audit import ArrayVectors, AuditSet
from procbench.audit.aflite import aflite_features, aflite_filter, aflite_setting, aflite_tree_scores
from procbench.audit.context import ProbeContext
from procbench.cli import app
from procbench.embed import embed_store
from procbench.errors import BadInput
from procbench.generate import generate
from procbench.qsets import QuestionSet
from procbench.shortcuts import choice_features
from procbench.store import Store

WORDS = [f"w{i}" for i in range(200)]


def _planted_set(n: int, *, planted: float, seed: int = 0, dim: int = 16) -> tuple[AuditSet, np.ndarray]:
    """A cloze-like set with fresh items per question; in a ``planted`` share of the questions the answer is
    the longest choice and lies next to the question's items (a shortcut needing no context).

    Returns the set and the ``(n,)`` mask of the planted questions.
    """
    rng = np.random.default_rng(seed)
    keys: list[str] = []
    vectors: list[np.ndarray] = []

    def item(vector: np.ndarray, n_words: int) -> tuple[str, str]:
        keys.append(f"k{len(keys)}")
        vectors.append(vector / np.linalg.norm(vector))
        return keys[-1], " ".join(rng.choice(WORDS, n_words))

    pids, questions, qkeys, choices, ckeys, answers = [], [], [], [], [], []
    is_planted = rng.random(n) < planted
    for i in range(n):
        mean = rng.normal(size=dim)
        shown = [item(mean + rng.normal(size=dim) * 0.5, int(rng.integers(2, 6))) for _ in range(3)]
        if is_planted[i]:
            answer = item(mean + rng.normal(size=dim) * 0.1, 12)
        else:
            answer = item(rng.normal(size=dim), int(rng.integers(2, 6)))
        made = [answer] + [item(rng.normal(size=dim), int(rng.integers(2, 6))) for _ in range(3)]
        position = int(rng.integers(4))
        order = made[1:]
        order.insert(position, made[0])
        blank = int(rng.integers(4))
        qk: list[str | None] = [k for k, _ in shown]
        qt = [t for _, t in shown]
        qk.insert(blank, None)
        qt.insert(blank, "@placeholder")
        pids.append(f"p{i // 2}")
        questions.append(qt)
        qkeys.append(qk)
        choices.append([t for _, t in order])
        ckeys.append([k for k, _ in order])
        answers.append(position)
    aset = AuditSet(
        name="planted",
        task="textual-cloze",
        procedure_ids=pids,
        questions=questions,
        choices=choices,
        answers=np.array(answers),
        question_keys=qkeys,
        choice_keys=ckeys,
        vectors=ArrayVectors(keys, np.array(vectors), encoder="synthetic"),
        encoder="synthetic",
    )
    return aset, is_planted


def test_planted_shortcut_questions_are_the_ones_dropped() -> None:
    aset, planted = _planted_set(400, planted=0.3)
    result = aflite_filter(aset, seed=0, n_partitions=16)
    dropped = ~result.kept
    assert dropped[planted].mean() >= 0.9, (dropped[planted].mean(), result.rounds)
    assert dropped[~planted].mean() <= 0.1, (dropped[~planted].mean(), result.rounds)
    assert result.stopped == "threshold"
    summary = result.summary()
    assert summary["kept"] + summary["removed"] == 400
    assert summary["iterations"] == len(result.rounds) and summary["threshold"] == 0.75
    assert sum(r["removed"] for r in result.rounds) == summary["removed"]
    # predictability fell: the first round's mean is well above the last one's
    assert result.rounds[0]["mean_predictability"] > result.rounds[-1]["mean_predictability"] + 0.1
    # every dropped question was predictable at or above the threshold when it went
    assert np.all(result.predictability[dropped] >= 0.75)

    again = aflite_filter(aset, seed=0, n_partitions=16)
    assert np.array_equal(again.kept, result.kept) and again.rounds == result.rounds


def test_the_partial_input_trees_score_planted_questions_as_predictable() -> None:
    aset, planted = _planted_set(240, planted=0.3, seed=3)
    ctx = ProbeContext.for_set(aset, seed=0, n_boot=10, n_folds=2)
    _, batch, rows = aflite_features(aset, ctx)
    assert rows.all()
    scores = aflite_tree_scores(
        batch, choice_features(batch), np.ones(len(aset), dtype=bool), rng=np.random.default_rng(0), n_partitions=2
    )
    assert scores[planted].mean() >= 0.8 and scores[~planted].mean() <= 0.5, (
        scores[planted].mean(),
        scores[~planted].mean(),
    )
    assert aflite_setting("recipeqa", 400, "trees") == "recipeqa-aflite-trees-n400"


def test_target_size_is_met_exactly_and_options_are_checked() -> None:
    aset, planted = _planted_set(200, planted=0.5, seed=1)
    result = aflite_filter(aset, seed=0, n_partitions=8, target_size=150)
    assert result.kept.sum() == 150 and result.stopped == "target"
    # the 50 dropped are planted ones but for a chance-predictable one or two (dropping at random: 25 of 50)
    assert (~planted[~result.kept]).sum() <= 2
    with pytest.raises(BadInput):
        aflite_filter(aset, target_size=201)
    with pytest.raises(BadInput):
        aflite_filter(aset, threshold=1.5)
    with pytest.raises(BadInput, match="linear or trees"):
        aflite_filter(aset, model="forest")


def test_a_set_without_shortcuts_keeps_nearly_everything() -> None:
    aset, _ = _planted_set(300, planted=0.0, seed=2)
    result = aflite_filter(aset, seed=0, n_partitions=16)
    assert result.kept.mean() >= 0.9, result.rounds


@pytest.fixture(scope="module")
def store_template(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("aflite")
    store = Store.open(shutil.copytree(ingested_sample, root / "store"))  # the sample, ingested once per session
    embed_store(store, text_encoder="hashed", fields="step_title")
    generate(store, "textual-cloze", seed=0)
    return root / "store"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_cli_writes_a_new_setting_beside_the_source(store_template: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(store_template, store)
    source = store / "questions" / "textual-cloze" / "default"
    before = _files(source)
    result = CliRunner().invoke(
        app, ["filter", "textual-cloze/default", "--aflite", "--store", str(store), "--partitions", "16", "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    folder = store / "questions" / "textual-cloze" / aflite_setting("default")
    assert summary["setting"] == "default-aflite" and Path(summary["path"]) == folder
    assert _files(source) == before  # the source set is untouched

    src = QuestionSet(source).table()
    out = QuestionSet(folder).table()
    assert out.num_rows == summary["kept"] == src.num_rows - summary["removed"]
    assert summary["removed"] > 0  # the sample's random negatives leave predictable questions
    meta = out["meta"].combine_chunks()
    source_qids = meta.field("source_qid").to_pylist()
    by_qid = {r["qid"]: r for r in src.select(["qid", "question", "choices", "answer", "split"]).to_pylist()}
    for qid, row in zip(source_qids, out.select(["question", "choices", "answer", "split"]).to_pylist(), strict=True):
        original = dict(by_qid[qid])
        del original["qid"]
        assert row == original
    assert all(0.0 <= p <= 1.0 for p in meta.field("aflite_predictability").to_pylist())
    assert {"train.parquet", "val.parquet", "test.parquet", "card.md", "recipeqa.json"} <= set(_files(folder))
    card = (folder / "card.md").read_text(encoding="utf-8")
    assert f"on textual-cloze/default: kept {summary['kept']} of {src.num_rows} questions" in card
    entry = Store.open(store).provenance[-1]
    assert entry["command"] == "filter" and entry["args"]["source"] == "textual-cloze/default"
    assert entry["counts"]["per_setting"]["default-aflite"]["aflite"]["removed"] == summary["removed"]
    options = json.loads((folder / "options.json").read_text(encoding="utf-8"))["options"]
    assert options["setting"] == "default-aflite" and options["partitions"] == 16
    # same store, options and seed: same bytes; the filtered set audits like any other
    again = tmp_path / "again"
    shutil.copytree(store_template, again)
    rerun = CliRunner().invoke(
        app, ["filter", str(again / "questions/textual-cloze/default"), "--aflite", "--partitions", "16"]
    )
    assert rerun.exit_code == 0, rerun.output
    assert _files(again / "questions/textual-cloze/default-aflite") == _files(folder)
    audit = CliRunner().invoke(app, ["audit", str(folder), "--probes", "choice_only", "--json"])
    assert audit.exit_code == 0, audit.output
    assert pq.read_table(folder / "train.parquet").num_rows > 0

    # the same options again replace it; other options are refused unless --overwrite
    base = ["filter", "textual-cloze/default", "--aflite", "--store", str(store)]
    assert CliRunner().invoke(app, [*base, "--partitions", "16"]).exit_code == 0
    written = _files(folder)
    refused = CliRunner().invoke(app, [*base, "--partitions", "8"])
    assert refused.exit_code == 2 and "--overwrite" in refused.output
    assert _files(folder) == written
    assert CliRunner().invoke(app, [*base, "--partitions", "8", "--overwrite"]).exit_code == 0
    assert json.loads((folder / "options.json").read_text(encoding="utf-8"))["options"]["partitions"] == 8


@pytest.mark.parametrize(
    "args",
    [
        ["textual-cloze/default"],  # no filter chosen
        ["textual-cloze/default", "--aflite", "--target-size", "100000"],
        ["textual-cloze/default", "--aflite", "--threshold", "2"],
        ["textual-cloze/missing", "--aflite"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(store_template: Path, tmp_path: Path, args: list[str]) -> None:
    store = tmp_path / "store"
    shutil.copytree(store_template, store)
    result = CliRunner().invoke(app, ["filter", *args, "--store", str(store)])
    assert result.exit_code == 2, result.output
    assert sorted(p.name for p in (store / "questions" / "textual-cloze").iterdir()) == ["default"]
