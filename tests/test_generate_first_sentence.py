"""``generate --task textual-cloze --items first-sentence`` end to end on a corpus without step headlines:
the ``step_first_sentence`` embedding field, the message when it is missing, the items and instruction the
set files carry, the sweep (adversarial included) and the audit reading the items' own embeddings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from procbench.audit import load_question_set
from procbench.cli import app
from procbench.embed import load_embeddings
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.ingest import ingest_file
from procbench.models.featurisation import featurise
from procbench.qsets import read_question_set
from procbench.store import Store

from helpers import write_jsonl

WORDS = ["wood", "glue", "paint", "saw", "nail", "sand", "drill", "clamp", "brush", "tape", "rope", "wax", "oil"]
INSTRUCTION = "Choose the best first sentence of a step for the missing blank to correctly complete the procedure."


def _first(n: int, i: int) -> str:
    """Step ``i`` of procedure ``n``'s first sentence (with abbreviations that must not end it)."""
    return f"Rub the {WORDS[(n + i) % 13]} with approx. {i + 2} drops of {WORDS[(3 * n + i) % 13]} for Dr. Lee {n}."


def _records(count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"p{n}",
            "title": f"Fix thing {n}",
            "steps": [
                {"text": f"{_first(n, i)} Then wait {i + 1} min. Wipe the {WORDS[(n + 2 * i) % 13]} off."}
                for i in range(5)
            ],
        }
        for n in range(count)
    ]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("first-sentence")
    ingest_file(root / "store", write_jsonl(root / "p.jsonl", _records(30)))
    return root / "store"


def _invoke(*args: str) -> Any:
    return CliRunner(env={"COLUMNS": "240"}).invoke(app, list(args))


def test_first_sentence_items_end_to_end(store: Path, tmp_path: Path) -> None:
    where = str(store)
    embedded = _invoke("embed", "--store", where, "-t", "hashed", "--json")
    assert embedded.exit_code == 0, embedded.output
    fields = {f["field"]: f for f in json.loads(embedded.stdout)["fields"]}
    assert "step_first_sentence" not in fields  # embedded only when asked

    missing = _invoke("generate", "--store", where, "--task", "textual-cloze", "--items", "first-sentence")
    assert missing.exit_code == 2
    message = " ".join(missing.output.split())
    assert f"procbench embed --store {where} --fields step_first_sentence -t hashed" in message
    assert not (store / "questions").exists()

    asked = _invoke("embed", "--store", where, "-t", "hashed", "--fields", "step_first_sentence", "--json")
    assert asked.exit_code == 0, asked.output
    vectors = load_embeddings(Store.open(store), "step_first_sentence")
    assert len(vectors) == 150
    assert vectors.metadata["field"] == "step_first_sentence"

    made = _invoke(  # adversarial filtering demo-sized: the items, not the filter's size, are under test here
        "generate",
        "--store",
        where,
        "--task",
        "textual-cloze",
        "--items",
        "first-sentence",
        "--sweep",
        "--policy",
        "demo",
        "--json",
    )
    assert made.exit_code == 0, made.output
    summary = json.loads(made.stdout)
    assert summary["counts"]["items"] == "first-sentence"
    assert set(summary["questions"]) == {"recipeqa", "default", "debias-auto", "adversarial"}
    assert all(n > 0 for n in summary["questions"].values())

    firsts = {f"local:p{n}#{i}": _first(n, i) for n in range(30) for i in range(5)}
    for setting in summary["questions"]:
        folder = store / "questions" / "textual-cloze" / setting
        rows = read_question_set(folder).table().to_pylist()
        for row in rows:
            meta = row["meta"]
            shown = [firsts[k] if k is not None else PLACEHOLDER for k in meta["question_keys"]]
            assert row["question"] == shown
            assert row["choices"] == [firsts[k] for k in meta["choice_keys"]]
            assert row["choices"][row["answer"]] == firsts[meta["answer_key"]]
            # the context leaves out the question's own steps (their texts hold the answer)
            window = {int(k.rsplit("#", 1)[1]) for k in meta["question_keys"] if k is not None}
            assert not window & set(row["context"])
        data = json.loads((folder / "recipeqa.json").read_text(encoding="utf-8"))["data"]
        assert data and {entry["question_text"] for entry in data} == {INSTRUCTION}
        card = (folder / "card.md").read_text(encoding="utf-8")
        assert "Items (`--items first-sentence`): the first sentence of each step text" in card
        assert INSTRUCTION in card

    # the audit reads the items' own embeddings, not step titles or the set's texts refitted
    audited = load_question_set(store / "questions" / "textual-cloze" / "default")
    assert audited.encoder == "step_first_sentence.hashed"
    # and so do the models' features (items), with the step texts as context
    featurised = featurise(read_question_set(store / "questions" / "textual-cloze" / "default"))
    assert set(featurised.encoders) == {"step_first_sentence", "step_text", "procedure_title"}
    assert featurised.missing.get("step_first_sentence", 0) == 0

    # a later `procbench embed` without --fields keeps the field current
    more = tmp_path / "more.jsonl"
    write_jsonl(more, [{**r, "id": f"q{r['id']}"} for r in _records(2)])
    ingest_file(store, more)
    again = _invoke("embed", "--store", where, "-t", "hashed", "--json")
    assert again.exit_code == 0, again.output
    assert {f["field"]: f["rows"] for f in json.loads(again.stdout)["fields"]}["step_first_sentence"] == 160


def test_text_items_instruction_is_not_about_titles(tmp_path: Path) -> None:
    root = tmp_path / "store"
    ingest_file(root, write_jsonl(tmp_path / "p.jsonl", _records(12)))
    assert _invoke("embed", "--store", str(root), "-t", "hashed").exit_code == 0
    made = _invoke("generate", "--store", str(root), "--task", "textual-cloze", "--items", "text")
    assert made.exit_code == 0, made.output
    data = json.loads((root / "questions" / "textual-cloze" / "default" / "recipeqa.json").read_text())["data"]
    assert {entry["question_text"] for entry in data} == {
        "Choose the best step text for the missing blank to correctly complete the procedure."
    }


def test_first_sentence_items_need_step_texts(tmp_path: Path) -> None:
    records = [
        {"id": f"p{n}", "title": f"Thing {n}", "steps": [{"title": f"Do {w} {n}"} for w in WORDS[:4]]}
        for n in range(6)
    ]
    root = tmp_path / "store"
    ingest_file(root, write_jsonl(tmp_path / "p.jsonl", records))
    refused = _invoke("generate", "--store", str(root), "--task", "textual-cloze", "--items", "first-sentence")
    assert refused.exit_code == 2
    assert "needs step texts and no kept step has one" in " ".join(refused.output.split())
