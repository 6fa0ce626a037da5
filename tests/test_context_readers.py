"""The zero-shot context readers (``evaluate --model context-tfidf|context-embedding``): their rule, and their
scores on a needs-context set of the bundled sample against chance."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from procbench.cli import app
from procbench.embed import embed_store
from procbench.errors import BadInput
from procbench.generate import Setting, generate
from procbench.models import evaluate
from procbench.models.context_readers import context_scores
from procbench.models.registry import REFERENCE_MODELS, get_model
from procbench.store import Store


def test_a_choice_scores_by_the_context_step_the_question_leaves_unexplained() -> None:
    # two context steps; the question's shown item explains step 0 fully
    choice_sim = np.array([[0.9, 0.2], [0.1, 0.6]])  # choice 0 matches step 0, choice 1 step 1
    question_sim = np.array([[0.95, 0.1]])
    assert context_scores(choice_sim, None).argmax() == 0  # without the question, the closer match wins
    assert context_scores(choice_sim, question_sim).argmax() == 1  # step 0 is taken: choice 1 fills the blank
    np.testing.assert_allclose(context_scores(choice_sim, question_sim), [0.1, 0.5])


def test_the_readers_are_references_that_answer_text_choices_only() -> None:
    assert {"context-tfidf", "context-embedding"} <= set(REFERENCE_MODELS)
    spec = get_model("context-tfidf")
    assert spec.answers("textual-cloze") and not spec.answers("visual-cloze") and not spec.answers("sequencing")
    with pytest.raises(BadInput, match="does not answer visual-cloze"):
        spec.check_task("visual-cloze")


@pytest.fixture(scope="module")
def needs_context_store(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("context-readers") / "store"
    shutil.copytree(ingested_sample, root)
    embed_store(root, text_encoder="hashed", fields="step_title,step_text,procedure_title")
    generate(Store.open(root), "textual-cloze", Setting("needs-context"), seed=0)
    return root


def test_both_readers_read_the_context_well_above_chance(needs_context_store: Path) -> None:
    qset = needs_context_store / "questions" / "textual-cloze" / "needs-context"
    report = evaluate(
        qsets=[qset], models=["chance", "context-tfidf", "context-embedding"], splits=["train"], bootstrap=0
    )
    values = {r.model: r.value for r in report.results}
    assert values["chance"] == 0.25
    # the sample's step texts name what their titles say: both readers find most answers from the context
    assert values["context-tfidf"] > 0.6 and values["context-embedding"] > 0.6


def test_the_cli_scores_a_reader_and_notes_the_tasks_it_skips(needs_context_store: Path) -> None:
    qset = needs_context_store / "questions" / "textual-cloze" / "needs-context"
    result = CliRunner().invoke(
        app, ["evaluate", str(qset), "--model", "context-tfidf", "--split", "train", "--json", "--no-record"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["results"]
    assert [r["model"] for r in rows] == ["context-tfidf"] and rows[0]["value"] > 0.6
