"""The needs-context textual setting: decoys and lookalikes that only the step texts rule out."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from procbench.corpus import load_sample
from procbench.embed import embed_store, load_embeddings
from procbench.errors import BadInput
from procbench.generate import Setting, generate
from procbench.generate import textual as tc
from procbench.generate.textual.needs_context import (
    DECOYS,
    PARAPHRASE,
    TEXT_MARGIN,
    order_prior,
    window_length,
)
from procbench.ingest import ingest_file
from procbench.qsets import read_question_set
from procbench.store import Store
from procbench.store.views import kept_steps

from helpers import write_jsonl


@pytest.fixture(scope="module")
def titled_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("needs-context")
    store = root / "store"
    ingest_file(store, write_jsonl(root / "in.jsonl", load_sample()))
    embed_store(store, text_encoder="hashed", fields="step_title,step_text,procedure_title")
    return store


def test_window_length_leaves_steps_outside_the_window() -> None:
    assert [window_length(n) for n in (3, 5, 6, 7, 8, 20)] == [2, 2, 3, 3, 4, 4]
    assert all(n - window_length(n) >= 1 for n in range(3, 26))


def test_order_prior_learns_an_order_it_never_saw_a_procedure_of() -> None:
    """Steps drift along one direction over a procedure: the cross-fitted earliness ranks held-out steps."""
    rng = np.random.default_rng(0)
    direction = rng.normal(size=16)
    direction /= np.linalg.norm(direction)
    vectors, procedures, order = [], [], []
    for p in range(40):
        topic = rng.normal(size=16)
        for i in range(6):
            v = topic + 1.5 * i * direction + 0.3 * rng.normal(size=16)
            vectors.append(v / np.linalg.norm(v))
            procedures.append(p)
            order.append(i)
    scores = order_prior(np.array(vectors, dtype=np.float32), np.array(procedures), np.array(order), seed=0)
    earlier_scores_higher = [scores[p * 6 + i] > scores[p * 6 + i + 1] for p in range(40) for i in range(5)]
    assert np.mean(earlier_scores_higher) > 0.9
    # the same seed gives the same scores
    again = order_prior(np.array(vectors, dtype=np.float32), np.array(procedures), np.array(order), seed=0)
    assert np.array_equal(scores, again)


def test_every_question_meets_the_readers_rules(titled_store: Path) -> None:
    store = Store.open(titled_store)
    # the rules hold before adversarial filtering and the filter only swaps in candidates that meet them
    sets, counts = tc.build(store, [Setting("needs-context")], seed=0, rounds=0, min_yield=1.0)
    questions = sets["needs-context"]
    assert len(questions) >= 20, counts
    titles, texts = load_embeddings(store, "step_title"), load_embeddings(store, "step_text")
    title_row = {k: i for i, k in enumerate(titles.keys.to_pylist())}
    text_row = {k: i for i, k in enumerate(texts.keys.to_pylist())}
    n_steps: dict[str, int] = {}
    for row in kept_steps(store, ["procedure_id", "index"]).to_pylist():
        n_steps[row["procedure_id"]] = n_steps.get(row["procedure_id"], 0) + 1
    for q in questions:
        meta = q.meta
        n = n_steps[q.procedure_id]
        assert len(q.question) == window_length(n)
        assert meta["placeholder"] in (0, len(q.question) - 1)  # the blank sits at an edge of the window
        answer_index = int(meta["answer_key"].rsplit("#", 1)[1])
        assert 0 < answer_index < n - 1  # never the first or last step: their role gives them away
        assert q.context == list(range(n))
        keys = meta["choice_keys"]
        assert len(set(q.choices)) == 4 and keys[q.answer] == meta["answer_key"]
        own = [k for i, k in enumerate(keys) if i != q.answer and k.rsplit("#", 1)[0] == q.procedure_id]
        assert len(own) <= DECOYS
        window = {k for k in meta["question_keys"] if k is not None}
        assert not window & set(keys)
        vectors = np.asarray(titles.vectors)
        shown = [title_row[k] for k in window] + [title_row[meta["answer_key"]]]
        text = np.asarray(texts.vectors[text_row[meta["answer_key"]]])
        answer_fit = float(vectors[title_row[meta["answer_key"]]] @ text)
        for i, key in enumerate(keys):
            if i == q.answer:
                continue
            v = vectors[title_row[key]]
            assert float((vectors[shown] @ v).max()) < PARAPHRASE
            assert float(v @ text) <= answer_fit - TEXT_MARGIN + 1e-6


@pytest.mark.slow  # three generations with adversarial filtering: `make test-slow`
def test_needs_context_is_in_the_sweep_and_same_seed_same_bytes(titled_store: Path, tmp_path: Path) -> None:
    snapshots = []
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        store = Store.open(shutil.copytree(titled_store, tmp_path / name))
        result = generate(store, "textual-cloze", Setting("needs-context"), seed=seed, rounds=2)
        folder = result.paths["needs-context"]
        snapshots.append({p.name: p.read_bytes() for p in sorted(folder.iterdir())})
        assert read_question_set(folder).table().num_rows == result.questions["needs-context"]
    assert snapshots[0] == snapshots[1]
    assert snapshots[0] != snapshots[2]
    assert "needs-context" in [s.name for s in tc.SWEEP]


def test_needs_context_only_over_titles(titled_store: Path) -> None:
    store = Store.open(titled_store)
    with pytest.raises(BadInput, match="needs-context"):
        tc.build(store, [Setting("needs-context")], seed=0, items="text")
    # a sweep over step texts leaves it out instead of failing
    embed_store(titled_store, text_encoder="hashed", fields="step_text")
    sets, _ = tc.build(store, [Setting("recipeqa"), Setting("needs-context")], seed=0, items="text")
    assert set(sets) == {"recipeqa"}
