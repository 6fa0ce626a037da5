"""``context-ridge``: the photo-choice context reader fitted on a set's train split (``evaluate --model``)."""

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
from procbench.models.context_ridge import ContextRidge, coherence_scores
from procbench.models.featurisation import Featurised, featurise, step_pairs
from procbench.models.registry import REFERENCE_MODELS, get_model
from procbench.qsets.files import read_question_set
from procbench.store import Store
from procbench.store.views import kept_steps


def test_coherence_matches_steps_one_to_one_and_the_photo_left_over_is_the_intruder() -> None:
    # step 0 likes photos 0 and 1 about equally, step 1 only photo 1: a greedy match would leave photo 0 or 2
    sim = np.array([[0.90, 0.91, 0.1, 0.0], [0.2, 0.95, 0.1, 0.0], [0.0, 0.1, 0.2, 0.8]])
    scores = coherence_scores(sim)
    assert int(np.argmin(scores)) == 2
    np.testing.assert_allclose(scores[[0, 1, 3]], [0.90, 0.95, 0.8])


def _questions(texts: np.ndarray, photos: np.ndarray, task: str, rng: np.random.Generator, n: int) -> Featurised:
    """``n`` questions of ``task`` over ``texts``/``photos (P, S, D)``: four steps of one procedure, the answer's
    text the context (cloze) or the three others' (coherence)."""
    n_proc, n_steps = texts.shape[:2]
    contexts, items, answers, steps_of = [], [], [], []
    for _ in range(n):
        p, steps, answer = rng.integers(n_proc), rng.choice(n_steps, 4, replace=False), int(rng.integers(4))
        shown = [steps[answer]] if task == "visual-cloze" else [s for i, s in enumerate(steps) if i != answer]
        contexts.append(texts[p, shown])
        items.append(photos[p, steps])
        answers.append(answer)
        steps_of.append(len(shown))
    width = max(steps_of)
    context_table = np.zeros((1 + n * width, texts.shape[2]), np.float32)
    item_table = np.zeros((1 + 4 * n, photos.shape[2]), np.float32)
    context = np.zeros((n, width), np.int64)
    for q in range(n):
        rows = 1 + q * width + np.arange(len(contexts[q]))
        context_table[rows], context[q, : len(rows)] = contexts[q], rows
        item_table[1 + 4 * q : 5 + 4 * q] = items[q]
    one = np.ones((n, 1), bool)
    return Featurised(
        task=task, family="mc", qset="toy", path=Path("toy"), qids=[str(q) for q in range(n)],
        splits=np.array(["test"] * n, dtype=object), items=item_table, contexts=context_table,
        procedures=np.zeros((1, 0), np.float32), context=context, context_mask=context > 0,
        question=np.zeros((n, 1), np.int64), question_mask=one if task == "visual-cloze" else ~one,
        placeholder=one if task == "visual-cloze" else ~one,
        choices=(1 + 4 * np.arange(n)[:, None] + np.arange(4)[None, :])[:, :, None],
        choice_mask=np.ones((n, 4, 1), bool), choice_valid=np.ones((n, 4), bool),
        query=np.zeros((n, 4, 0), np.int64), query_mask=np.zeros((n, 4, 0), bool),
        procedure=np.zeros(n, np.int64), answer=np.array(answers), order=np.zeros((n, 1), np.int64),
        keys=[[] for _ in range(n)], references=[[] for _ in range(n)],
    )  # fmt: skip


@pytest.mark.parametrize("task", ["visual-cloze", "visual-coherence"])
def test_a_map_fitted_on_other_procedures_reads_the_context_and_an_unrelated_one_reads_chance(task: str) -> None:
    rng = np.random.default_rng(0)
    n_proc, n_steps, dt, di = 60, 6, 12, 20
    texts = rng.normal(size=(n_proc, n_steps, dt))
    mapping = rng.normal(size=(dt, di))
    look = rng.normal(size=(n_proc, 1, di)) * 3  # what each procedure's photos share, which centring removes
    photos = texts @ mapping + look + 0.3 * rng.normal(size=(n_proc, n_steps, di))
    train, test = slice(0, 40), slice(40, None)
    groups = np.repeat(np.arange(40), n_steps)
    related = ContextRidge.from_pairs(texts[train].reshape(-1, dt), photos[train].reshape(-1, di), groups)
    feats = _questions(texts[test], photos[test], task, rng, 200)
    rows = np.arange(200)
    assert np.mean(np.array(related.predict(feats, rows)) == feats.answer) > 0.9
    unrelated_photos = rng.normal(size=photos.shape)  # a world whose texts say nothing of the photos
    unrelated = ContextRidge.from_pairs(texts[train].reshape(-1, dt), unrelated_photos[train].reshape(-1, di), groups)
    feats = _questions(texts[test], unrelated_photos[test], task, rng, 200)
    assert np.mean(np.array(unrelated.predict(feats, rows)) == feats.answer) < 0.45


@pytest.fixture(scope="module")
def photo_sets(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("context-ridge") / "store"
    shutil.copytree(ingested_sample, root)
    embed_store(
        root, text_encoder="hashed", image_encoder="colour-layout", fields="step_title,step_text,procedure_title,image"
    )
    for task in ("visual-cloze", "visual-coherence", "textual-cloze"):
        generate(Store.open(root), task, Setting("needs-context"), seed=0)
    return root


def test_step_pairs_are_the_steps_with_a_text_and_a_photo(photo_sets: Path) -> None:
    store = Store.open(photo_sets)
    steps = kept_steps(store, ["procedure_id", "index", "image_ids"]).to_pylist()
    some = sorted({s["procedure_id"] for s in steps})[:3]
    texts, photos, groups = step_pairs(store, set(some))
    expected = [s for s in steps if s["procedure_id"] in some and s["image_ids"]]
    assert len(texts) == len(photos) == len(groups) == len(expected) > 0
    assert sorted(set(groups.tolist())) == [0, 1, 2]
    assert step_pairs(store, set())[0].shape[0] == 0


def test_evaluate_scores_it_on_photo_sets_and_skips_text_sets(photo_sets: Path) -> None:
    assert "context-ridge" in REFERENCE_MODELS
    assert get_model("context-ridge").answers("visual-coherence") and not get_model("context-ridge").answers(
        "textual-cloze"
    )
    sets = [str(photo_sets / "questions" / t / "needs-context") for t in ("visual-cloze", "textual-cloze")]
    result = CliRunner().invoke(
        app,
        ["evaluate", *sets, "-m", "context-ridge", "--split", "test", "--bootstrap", "0", "--no-record", "--json",
         "--store", str(photo_sets)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    rows = [r for r in report["results"] if r["model"] == "context-ridge"]
    assert [r["qset"] for r in rows] == ["visual-cloze/needs-context"] and 0.0 <= rows[0]["value"] <= 1.0
    assert rows[0]["n"] == read_question_set(sets[0]).split("test").num_rows
    assert any("context-ridge: does not answer textual-cloze" in s for s in report["summary"]["skipped"])


def test_a_set_whose_train_procedures_have_no_photo_pairs_is_one_clear_error(photo_sets: Path) -> None:
    qset = read_question_set(photo_sets / "questions" / "visual-cloze" / "needs-context")
    with pytest.raises(BadInput, match="context-ridge fits a map from step texts to photos"):
        ContextRidge.fit_procedures(Store.open(photo_sets), set(), what="no procedures")
    feats = featurise(qset)
    wrong = ContextRidge(np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(BadInput, match="one store, one encoder per field"):
        wrong.predict(feats, np.arange(1))
