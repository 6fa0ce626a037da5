"""Blinded reader packets (procbench packet) and their scores (procbench score-packet)."""

from __future__ import annotations

import json
import math
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from procbench.cli import app
from procbench.embed import embed_store
from procbench.generate import Setting, generate
from procbench.readers.packet import LETTERS, balanced_letters, build_packet, make_packet
from procbench.readers.score import read_answers, score_packet, wilson_interval
from procbench.readers.views import readers_card_lines
from procbench.store import Store

SETS = ["textual-cloze/default", "visual-cloze/default", "pair-order/default"]
Z = 1.959963984540054  # the 97.5% normal quantile


@pytest.fixture(scope="module")
def store_template(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("readers") / "store"
    shutil.copytree(ingested_sample, root)
    store = Store.open(root)
    embed_store(store, text_encoder="hashed", image_encoder="colour-layout", fields="step_title,step_text,image")
    for task in ("textual-cloze", "visual-cloze", "pair-order", "sequencing", "visual-coherence"):
        generate(store, task, seed=0)
    generate(store, "textual-cloze", Setting("needs-context"), seed=0)
    return root


@pytest.fixture
def store(store_template: Path, tmp_path: Path) -> Path:
    shutil.copytree(store_template, tmp_path / "store")
    return tmp_path / "store"


def _questions(store: Path, name: str) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for split in ("train", "val", "test"):
        path = store / "questions" / name / f"{split}.parquet"
        if path.is_file():
            rows.update({r["qid"]: r for r in pq.read_table(path).to_pylist()})
    return rows


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- the packet ---------------------------------------------------------------------------------------------


def test_a_packet_reveals_no_set_procedure_or_answer(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "packet"
    result = make_packet(SETS, out, store=store, n=6, context="with", seed=0, split="all")
    assert result.questions == 18 and result.per_set == dict.fromkeys(SETS, 6)
    sheet = (out / "packet.md").read_text(encoding="utf-8")
    twin = (out / "packet.json").read_text(encoding="utf-8")
    key = json.loads((out / "key.json").read_text(encoding="utf-8"))
    assert set(key["questions"]) == {f"Q{i:02d}" for i in range(1, 19)}
    data = json.loads(twin)
    assert [q["id"] for q in data["questions"]] == sorted(key["questions"])
    secrets: set[str] = {str(store), "sample:", "example.org", "https://", *SETS, "default", "pair-order", "cloze"}
    stored = Store.open(store)
    procedures = stored.table("procedures", ["id", "title", "url"]).to_pylist()
    image_ids = set(stored.table("images", ["id"])["id"].to_pylist())
    for entry in key["questions"].values():
        secrets.add(entry["qid"])
        proc = next(p for p in procedures if p["id"] == entry["qid"].rsplit("#", 1)[0])
        secrets |= {proc["id"], proc["title"], proc["url"]}
    secrets |= image_ids
    for text in (sheet, twin, *(p.name for p in (out / "images").iterdir())):
        leaked = [s for s in secrets if s in text]
        assert leaked == []
    assert '"answer"' not in twin and "qid" not in twin and "setting" not in twin
    # images are copied under neutral names, and every image the sheet shows is there
    shown = {c["image"] for q in data["questions"] for c in [*q["question"], *q["choices"]] if "image" in c}
    assert shown and all((out / name).is_file() for name in shown)
    assert {p.name for p in (out / "images").iterdir()} == {Path(s).name for s in shown}
    # re-encoded as PNG (every viewer opens it) without the stored file's metadata
    from PIL import Image

    for name in shown:
        with Image.open(out / name) as image:
            assert image.format == "PNG" and not image.getexif() and "exif" not in image.info


def test_a_lone_blank_is_not_numbered_and_its_context_is_its_step_text(store: Path, tmp_path: Path) -> None:
    """needs-context: "1. ____" would say the blank is the procedure's first step; the context is one step's text,
    not numbered either ("7." would say where the blank lies)."""
    rows = _questions(store, "textual-cloze/needs-context")
    make_packet(["textual-cloze/needs-context"], tmp_path / "with", store=store, n=5, context="with", split="all")
    sheet = (tmp_path / "with" / "packet.md").read_text()
    packet = json.loads((tmp_path / "with" / "packet.json").read_text())
    key = json.loads((tmp_path / "with" / "key.json").read_text())["questions"]
    assert sheet.count("**Question:** ____") == len(packet["questions"]) == 5 and "1. ____" not in sheet
    for q in packet["questions"]:
        row = rows[key[q["id"]]["qid"]]
        assert len(row["context"]) == len(q["context"]) == 1
        assert set(q["context"][0]) == {"text"}  # the step's text, never its title (the answer), and no number
        assert f"- {q['context'][0]['text'][:20]}" in sheet
    make_packet(["textual-cloze/needs-context"], tmp_path / "without", store=store, n=5, split="all")
    assert "Context" not in (tmp_path / "without" / "packet.md").read_text()


def test_one_question_per_procedure_and_the_answer_kept(store: Path) -> None:
    packet = build_packet(SETS, store=store, n=10, context="with", seed=3, split="all")
    procs = [e["qid"].rsplit("#", 1)[0] for e in packet.key["questions"].values()]
    assert len(procs) == 30 and len(set(procs)) == 30
    rows = {name: _questions(store, name) for name in SETS}
    for q in packet.questions:
        entry = packet.key["questions"][q["id"]]
        row = rows[entry["set"]][entry["qid"]]
        shown = next(c for c in q["choices"] if c["letter"] == entry["answer"])
        assert entry["order"][LETTERS.index(entry["answer"])] == row["answer"]
        if entry["set"] == "textual-cloze/default":  # the choices are the titles themselves
            assert (shown.get("text") or shown.get("title")) == row["choices"][row["answer"]]
            # the context holds the steps' texts only: the titles are the question's items and choices
            assert q["context"] and all("title" not in step and step["text"] for step in q["context"])
            # the whole procedure: its steps keep their numbers
            assert [step["step"] for step in q["context"]] == [i + 1 for i in row["context"]]
            assert sum(1 for item in q["question"] if item.get("blank")) == 1
    without = build_packet(SETS, store=store, n=10, context="without", seed=3, split="all")
    assert all("context" not in q for q in without.questions)
    assert [q["choices"] for q in without.questions] == [q["choices"] for q in packet.questions]


def test_answer_letters_are_balanced(store: Path) -> None:
    packet = build_packet(["textual-cloze/default", "visual-cloze/default"], store=store, n=11, seed=5, split="all")
    counts = Counter(e["answer"] for e in packet.key["questions"].values())
    assert sum(counts.values()) == 22 and set(counts) == set("ABCD")
    assert max(counts.values()) - min(counts.values()) <= 1


def test_same_seed_same_bytes(store: Path, tmp_path: Path) -> None:
    make_packet(SETS, tmp_path / "a", store=store, n=5, context="with", seed=7, split="all")
    make_packet(SETS, tmp_path / "b", store=store, n=5, context="with", seed=7, split="all")
    make_packet(SETS, tmp_path / "c", store=store, n=5, context="with", seed=8, split="all")
    a, b, c = (_files(tmp_path / x) for x in "abc")
    assert a == b
    assert a["key.json"] != c["key.json"] and a["packet.md"] != c["packet.md"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([2, 3, 4]), max_size=60), st.integers(0, 2**32 - 1))
def test_balanced_letters_property(counts: list[int], seed: int) -> None:
    targets = balanced_letters(counts, np.random.default_rng(seed))
    assert len(targets) == len(counts)
    assert all(0 <= t < k for t, k in zip(targets, counts, strict=True))
    for k in set(counts):
        per = Counter(t for t, c in zip(targets, counts, strict=True) if c == k)
        m = counts.count(k)
        assert sorted(per.get(p, 0) for p in range(k)) == sorted([m // k + (p < m % k) for p in range(k)])


# -- answers and scores ---------------------------------------------------------------------------------------


def test_answer_formats(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"Q01": "b", "Q02": "C?", "Q03": {"answer": "A", "ambiguous": True}, "Q04": ""}))
    (answers,) = read_answers(path)
    assert answers.reader == "a" and answers.letters == {"Q01": "B", "Q02": "C", "Q03": "A"}
    assert answers.ambiguous == {"Q02", "Q03"}
    studio = [
        {
            "data": {"question_id": "Q01"},
            "annotations": [
                {
                    "completed_by": 7,
                    "result": [
                        {"from_name": "answer", "value": {"choices": ["D"]}},
                        {"from_name": "flags", "value": {"choices": ["ambiguous"]}},
                    ],
                },
                {"completed_by": 8, "result": [{"from_name": "answer", "value": {"choices": ["A"]}}]},
            ],
        },
        {"data": {"question_id": "Q02"}, "annotations": [{"completed_by": 7, "was_cancelled": True, "result": []}]},
    ]
    path.write_text(json.dumps(studio))
    by = {a.reader: a for a in read_answers(path, "ls")}
    assert by["ls/7"].letters == {"Q01": "D"} and by["ls/7"].ambiguous == {"Q01"}
    assert by["ls/8"].letters == {"Q01": "A"} and by["ls/8"].ambiguous == set()
    path.write_text('{"Q01": "BB"}')
    with pytest.raises(ValueError, match="not a letter"):
        read_answers(path)


def test_wilson_interval_matches_the_formula() -> None:
    for k, n in ((0, 6), (6, 6), (3, 10), (37, 40)):
        p = k / n
        centre = (p + Z**2 / (2 * n)) / (1 + Z**2 / n)
        half = Z / (1 + Z**2 / n) * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2))
        lo, hi = wilson_interval(k, n)
        assert lo == pytest.approx(max(0.0, centre - half), abs=1e-9)
        assert hi == pytest.approx(min(1.0, centre + half), abs=1e-9)
    assert wilson_interval(37, 40) == pytest.approx((0.8014, 0.9742), abs=1e-4)  # issue 32: 92.5% [80, 97]


def test_packet_then_score_packet_on_the_command_line(store: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "packet"
    sets = ["textual-cloze/default", "visual-cloze/default"]
    args = ["packet", *sets, "--n", "6", "--context", "without", "--split", "all", "--seed", "2"]
    made = runner.invoke(app, [*args, "--out", str(out), "--store", str(store), "--json"])
    assert made.exit_code == 0, made.output
    assert json.loads(made.output)["questions"] == 12
    again = runner.invoke(app, [*args, "--out", str(out), "--store", str(store)])
    assert again.exit_code == 2 and "--overwrite" in again.output
    key = json.loads((out / "key.json").read_text(encoding="utf-8"))
    perfect = {q: e["answer"] for q, e in key["questions"].items()}
    wrong = {q: LETTERS[(LETTERS.index(a) + 1) % 4] for q, a in perfect.items()}
    first = sorted(perfect)[0]
    wrong[first] += "?"  # marked ambiguous
    (tmp_path / "perfect.json").write_text(json.dumps(perfect))
    (tmp_path / "wrong.json").write_text(json.dumps(wrong))
    scored = runner.invoke(
        app, ["score-packet", str(out), str(tmp_path / "perfect.json"), str(tmp_path / "wrong.json"), "--json"]
    )
    assert scored.exit_code == 0, scored.output
    result = json.loads(scored.output)
    by = {(s["reader"], s["set"]): s for s in result["scores"]}
    assert set(by) == {(r, s) for r in ("perfect", "wrong") for s in sets}
    for s in sets:
        good, bad = by["perfect", s], by["wrong", s]
        assert good["n"] == bad["n"] == 6 and good["accuracy"] == 1.0 and bad["accuracy"] == 0.0
        assert good["ci"] == pytest.approx([6 / (6 + Z**2), 1.0], abs=1e-9)  # Wilson at p = 1: n / (n + z^2)
        assert bad["ci"] == pytest.approx([0.0, Z**2 / (6 + Z**2)], abs=1e-9)
    ambiguous_set = key["questions"][first]["set"]
    assert by["wrong", ambiguous_set]["ambiguous_share"] == pytest.approx(1 / 6)
    # recorded with each set, through the store's transaction (a provenance entry)
    for s in sets:
        records = json.loads((store / "questions" / s / "readers.json").read_text(encoding="utf-8"))["results"]
        assert {r["reader"]: r["accuracy"] for r in records} == {"perfect": 1.0, "wrong": 0.0}
        assert all(r["context"] == "without" and r["n"] == 6 and r["seed"] == 2 for r in records)
    log = json.loads((store / "store.json").read_text(encoding="utf-8"))["provenance"]
    assert log[-1]["command"] == "score-packet"
    # scoring the same reader again replaces its entry; a missing answer counts as wrong and is reported
    del perfect[first]
    (tmp_path / "perfect.json").write_text(json.dumps(perfect))
    text = runner.invoke(app, ["score-packet", str(out), str(tmp_path / "perfect.json")])
    assert text.exit_code == 0 and "unanswered" in text.output and first in text.output
    records = json.loads((store / "questions" / ambiguous_set / "readers.json").read_text())["results"]
    assert sorted((r["reader"], r["correct"]) for r in records) == [("perfect", 5), ("wrong", 0)]
    # the report shows them beside the probes
    from procbench.report import write_report

    report = write_report(sets, tmp_path / "report", store=store, runs=[])
    index = report.index.read_text(encoding="utf-8")
    assert "Readers: blinded answer sheets" in index and "83.3%" in index and "wrong" in index


def test_the_card_shows_recorded_readers() -> None:
    record = {"reader": "p1", "context": "with", "n": 40, "accuracy": 0.975, "ci": [0.87, 1.0], "date": "2026-01-01"}
    lines = readers_card_lines([("adversarial", [record]), ("recipeqa", [])])
    assert lines[0] == "## Readers"
    assert "| `adversarial` | p1 | with | 40 | 97.5% [87, 100] | 0% | 2026-01-01 |" in lines
    assert readers_card_lines([("recipeqa", [])]) == []


def test_bad_inputs_are_one_line_errors(store: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["--store", str(store), "--out", str(tmp_path / "p")]
    busy = tmp_path / "busy"  # a folder holding something else: a packet is not written into it
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    cases = [
        ["packet", "sequencing/default", *base],
        ["packet", "textual-cloze/default", "--n", "1000", "--split", "all", *base],
        ["packet", "textual-cloze/default", "--context", "maybe", *base],
        ["score-packet", str(tmp_path), str(tmp_path / "a.json")],
        ["packet", "textual-cloze/default", "--split", "all", "--n", "2", "--store", str(store), "--out", str(busy)],
    ]
    for args in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
    made = runner.invoke(app, ["packet", "textual-cloze/default", "--n", "3", "--split", "all", *base])
    assert made.exit_code == 0, made.output
    (tmp_path / "a.json").write_text("[1, 2]")
    result = runner.invoke(app, ["score-packet", str(tmp_path / "p"), str(tmp_path / "a.json")])
    assert result.exit_code == 2 and "Label Studio" in result.output
    # a set rewritten since the packet was made is not scored into its record
    generate(Store.open(store), "textual-cloze", seed=1, overwrite=True)
    (tmp_path / "a.json").write_text("{}")
    result = runner.invoke(app, ["score-packet", str(tmp_path / "p"), str(tmp_path / "a.json")])
    assert result.exit_code == 2 and "changed since the packet was made" in result.output
    assert score_packet(tmp_path / "p", [tmp_path / "a.json"], record=False).scores[0].accuracy == 0.0
