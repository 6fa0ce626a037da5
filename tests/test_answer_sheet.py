"""Answer sheets for people: the report's answer mode in a browser, and the Label Studio export."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from lxml import etree
from test_publish import _browser, _Chromium
from typer.testing import CliRunner

from procbench.cli import app
from procbench.embed import embed_store
from procbench.generate import generate
from procbench.readers.packet import LETTERS
from procbench.readers.score import score_packet
from procbench.readers.sheet import write_answer_page
from procbench.store import Store

SETS = ["textual-cloze/default", "pair-order/default"]


@pytest.fixture(scope="module")
def store_template(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sheets") / "store"
    shutil.copytree(ingested_sample, root)
    store = Store.open(root)
    embed_store(store, text_encoder="hashed", fields="step_title")
    generate(store, "textual-cloze", seed=0)
    generate(store, "pair-order", seed=0)  # its items are steps with images
    return root


@pytest.fixture
def store(store_template: Path, tmp_path: Path) -> Path:
    shutil.copytree(store_template, tmp_path / "store")
    return tmp_path / "store"


_STATE = (
    "JSON.stringify({ready: document.body.dataset.ready, current: document.body.dataset.current,"
    " answered: Number(document.body.dataset.answered), chosen: document.querySelectorAll('.chosen').length,"
    " choices: document.querySelectorAll('.choice-button').length,"
    " context: document.querySelectorAll('ol.context li').length,"
    " images: document.images.length,"
    " broken: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).length})"
)


def _loaded(browser: _Chromium, session: str) -> dict[str, Any]:
    """The page's state once the images of the question shown have decoded (or 10 s have passed)."""
    deadline = time.monotonic() + 10
    state: dict[str, Any] = json.loads(browser.evaluate(session, _STATE))
    while state["broken"] and time.monotonic() < deadline:
        time.sleep(0.1)
        state = json.loads(browser.evaluate(session, _STATE))
    return state


@pytest.mark.skipif(_browser() is None, reason="no Chromium installed (apt-get install chromium)")
def test_answer_mode_in_headless_chromium(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "sheet"
    runner = CliRunner()
    made = runner.invoke(
        app,
        ["report", *SETS, "--answer-sheet", "3", "--context", "with", "--split", "all", "--seed", "4"]
        + ["--store", str(store), "--out", str(out), "--json"],
    )
    assert made.exit_code == 0, made.output
    assert json.loads(made.output)["questions"] == 6
    key = json.loads((out / "key.json").read_text(encoding="utf-8"))
    page = (out / "index.html").read_text(encoding="utf-8")
    for secret in [*SETS, "sample:", "example.org", *(e["qid"] for e in key["questions"].values())]:
        assert secret not in page
    assert '"answer"' not in page and not (out / "sets").exists()  # no answers shipped in the page
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser = _Chromium(str(_browser()), tmp_path / "profile")
    try:
        session = browser.open((out / "index.html").as_uri())
        browser.send(
            "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads), "eventsEnabled": True}
        )
        state = json.loads(browser.evaluate(session, _STATE))
        assert state["ready"] == "1" and state["current"] == "Q01" and state["context"] > 0
        expected: dict[str, str] = {}
        for i in range(5):  # click through 5 questions: 4 right answers, the 5th wrong, the 2nd marked ambiguous
            state = _loaded(browser, session)
            qid = state["current"]
            assert state["broken"] == 0 and state["choices"] == key["questions"][qid]["choices"]
            right = key["questions"][qid]["answer"]
            letter = right if i < 4 else LETTERS[(LETTERS.index(right) + 1) % state["choices"]]
            expected[qid] = letter
            click = f"document.querySelector('.choice-button[data-letter=\"{letter}\"]').click()"
            browser.evaluate(session, click)
            if i == 1:
                browser.evaluate(session, "document.getElementById('ambiguous').click()")
            state = json.loads(browser.evaluate(session, _STATE))
            assert state["answered"] == i + 1 and state["chosen"] == 1
            browser.evaluate(session, "document.getElementById('next').click()")
        assert json.loads(browser.evaluate(session, _STATE))["current"] == sorted(key["questions"])[5]
        browser.evaluate(session, "document.getElementById('reader').value = 'tester'")
        browser.evaluate(session, "document.getElementById('download').click()")
        target = downloads / "answers-tester.json"
        deadline = time.monotonic() + 30
        while not target.is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert target.is_file(), sorted(p.name for p in downloads.iterdir())
        assert browser.errors() == []
        assert {u.split(":", 1)[0] for u in browser.requested()} <= {"file", "blob"}
    finally:
        browser.close()
    downloaded = json.loads(target.read_text(encoding="utf-8"))
    assert downloaded["reader"] == "tester" and downloaded["packet_id"] == key["packet_id"]
    ambiguous = sorted(key["questions"])[1]
    assert downloaded["answers"] == {
        q: ({"answer": a, "ambiguous": True} if q == ambiguous else a) for q, a in expected.items()
    }
    result = score_packet(out, [target])
    assert sum(s.correct for s in result.scores) == 4 and sum(s.n for s in result.scores) == 6
    assert sum(len(s.unanswered) for s in result.scores) == 1 and sum(s.ambiguous for s in result.scores) == 1
    assert all(s.reader == "tester" for s in result.scores)
    assert set(result.recorded) == set(SETS)


def test_label_studio_export_and_its_annotations(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "ls"
    runner = CliRunner()
    args = ["export", *SETS, "--format", "label-studio", "--n", "3", "--split", "all", "--seed", "4"]
    made = runner.invoke(app, [*args, "--to", str(out), "--store", str(store)])
    assert made.exit_code == 0, made.output
    assert runner.invoke(app, [*args, "--to", str(out), "--store", str(store)]).exit_code == 2  # no overwrite
    tasks = json.loads((out / "tasks.json").read_text(encoding="utf-8"))
    key = json.loads((out / "key.json").read_text(encoding="utf-8"))
    assert [t["data"]["question_id"] for t in tasks] == sorted(key["questions"])
    config = etree.fromstring((out / "labeling_config.xml").read_bytes())
    assert config.tag == "View" and config.find("HyperText").get("value") == "$html"
    letters = [c.get("value") for c in config.find("Choices[@name='answer']")]
    assert letters == ["A", "B", "C", "D"]
    text = (out / "tasks.json").read_text(encoding="utf-8")
    assert all(e["qid"] not in text for e in key["questions"].values()) and "sample:" not in text
    assert "data:image/jpeg;base64," in text  # pair-order steps carry their images inline
    # the same sample as `procbench packet` and the answer page with the same options
    page = tmp_path / "page"
    write_answer_page(SETS, page, store=store, n=3, context="without", split="all", seed=4)
    assert json.loads((page / "key.json").read_text(encoding="utf-8")) == key
    # a Label Studio export of the annotations: two annotators, one right on everything, one cancelled task
    annotated = []
    for task in tasks:
        qid = task["data"]["question_id"]
        right = key["questions"][qid]["answer"]
        wrong = LETTERS[(LETTERS.index(right) + 1) % key["questions"][qid]["choices"]]
        annotated.append(
            {
                **task,
                "annotations": [
                    {
                        "completed_by": 1,
                        "result": [{"from_name": "answer", "type": "choices", "value": {"choices": [right]}}],
                    },
                    {
                        "completed_by": 2,
                        "result": [{"from_name": "answer", "type": "choices", "value": {"choices": [wrong]}}],
                    },
                ],
            }
        )
    (tmp_path / "export.json").write_text(json.dumps(annotated))
    scored = runner.invoke(app, ["score-packet", str(out), str(tmp_path / "export.json"), "--reader", "ls", "--json"])
    assert scored.exit_code == 0, scored.output
    by = {(s["reader"], s["set"]): s["accuracy"] for s in json.loads(scored.output)["scores"]}
    assert by == {("ls/1", s): 1.0 for s in SETS} | {("ls/2", s): 0.0 for s in SETS}


def test_a_context_that_is_part_of_the_procedure_is_an_unnumbered_list() -> None:
    """A needs-context question's context (some of the procedure's steps) numbered "1." would say where it lies."""
    from procbench.readers.sheet import question_html

    base = {"id": "Q01", "instruction": "Pick.", "question": [], "choices": [{"letter": "A", "text": "x"}]}
    part = question_html({**base, "context": [{"title": "Cut"}, {"title": "Glue"}]}, {})
    assert "some of the procedure&#x27;s steps" in part and "<ul><li>" in part and "value=" not in part
    whole = question_html({**base, "context": [{"step": 1, "title": "Cut"}, {"step": 2, "title": "Glue"}]}, {})
    assert "(the procedure&#x27;s steps)" in whole and '<ol><li value="1">' in whole and '<li value="2">' in whole
