"""The needs-context textual setting: four steps of one procedure, exchangeable without the context."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procbench.corpus import load_sample
from procbench.embed import embed_store, load_embeddings
from procbench.errors import BadInput
from procbench.generate import Setting, generate
from procbench.generate import textual as tc
from procbench.generate.options import TextualClozeOptions
from procbench.generate.policy import current
from procbench.generate.textual.needs_context import readable_sets
from procbench.ingest import ingest_file
from procbench.qsets import read_question_set
from procbench.store import Store

from helpers import write_jsonl


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_readable_sets_keep_what_the_text_tells_and_drop_paraphrases() -> None:
    """Five steps: each text on its own title's axis; step 4's title is a paraphrase of step 0's."""
    titles = np.eye(6, dtype=np.float64)[:5]
    titles[4] = _unit(titles[0] + 0.3 * np.eye(6)[5])  # cosine 0.96 to title 0
    texts = titles.copy()
    norms = np.arange(5)
    sets = {tuple(s) for s in readable_sets(titles, texts, norms).tolist()}
    assert sets == {(0, 1, 2, 3), (1, 2, 3, 4)}  # every 4-set but those holding both 0 and 4
    # a text nearer another choice's title than its own by more than the slack: no set holds both
    texts[1] = _unit(0.2 * titles[1] + titles[2])
    sets = {tuple(s) for s in readable_sets(titles, texts, norms).tolist()}
    assert all(not {1, 2} <= set(s) for s in sets)
    # two titles the same after normalising never meet in a set
    same = readable_sets(np.eye(5), np.eye(5), np.array([0, 1, 2, 3, 0]))
    assert all(not {0, 4} <= set(s) for s in same.tolist())
    assert readable_sets(np.eye(3), np.eye(3), np.arange(3)).shape == (0, 4)


@settings(max_examples=40, deadline=None)
@given(st.integers(4, 9), st.integers(0, 2**32 - 1))
def test_the_rule_treats_the_steps_alike(n: int, seed: int) -> None:
    """Relabelling the steps relabels the kept sets: no step is favoured by its place (what exchangeability needs)."""
    rng = np.random.default_rng(seed)
    titles = _unit(rng.normal(size=(n, 8)))
    texts = _unit(titles + rng.normal(scale=0.6, size=(n, 8)))
    norms = rng.integers(0, n + 2, size=n)
    kept = {tuple(sorted(s)) for s in readable_sets(titles, texts, norms).tolist()}
    perm = rng.permutation(n)
    moved = readable_sets(titles[perm], texts[perm], norms[perm])
    assert {tuple(sorted(perm[s].tolist())) for s in moved} == kept


def test_every_question_meets_the_rules(titled_store: Path) -> None:
    store = Store.open(titled_store)
    sets, counts = tc.build(store, [Setting("needs-context")], TextualClozeOptions(seed=0))
    questions = sets["needs-context"]
    entry = counts["per_setting"]["needs-context"]
    assert len(questions) >= 20, counts
    assert entry.drafted == len(questions) + sum(entry.skipped_questions.values())
    titles, texts = load_embeddings(store, "step_title"), load_embeddings(store, "step_text")
    title_row = {k: i for i, k in enumerate(titles.keys.to_pylist())}
    text_row = {k: i for i, k in enumerate(texts.keys.to_pylist())}
    title_vectors, text_vectors = np.asarray(titles.vectors), np.asarray(texts.vectors)
    for q in questions:
        keys = q.meta["choice_keys"]
        assert q.question == [tc.PLACEHOLDER] and keys[q.answer] == q.meta["answer_key"]
        assert q.context == [int(q.meta["answer_key"].rsplit("#", 1)[1])]  # the context is the blank's step
        assert len(set(keys)) == 4 and {k.rsplit("#", 1)[0] for k in keys} == {q.procedure_id}
        t = title_vectors[[title_row[k] for k in keys]]
        x = text_vectors[[text_row[k] for k in keys]]
        alike = t @ t.T
        assert alike[~np.eye(4, dtype=bool)].max() < current().PARAPHRASE
        fit = x @ t.T  # step i's text against title j
        assert (fit.max(axis=1) - np.diag(fit) <= current().TEXT_SLACK + 1e-6).all()


def test_the_answer_is_uniform_among_its_procedures_steps(titled_store: Path) -> None:
    """Where the answer sits among the four steps (in step order) is uniform over many seeds: the draw of the
    answer does not look at the steps."""
    store = Store.open(titled_store)
    places: Counter[int] = Counter()
    for seed in range(12):
        for q in tc.build(store, [Setting("needs-context")], TextualClozeOptions(seed=seed))[0]["needs-context"]:
            steps = sorted(int(k.rsplit("#", 1)[1]) for k in q.meta["choice_keys"])
            places[steps.index(q.context[0])] += 1
    total = sum(places.values())
    expected = total / 4
    chi2 = sum((places[p] - expected) ** 2 / expected for p in range(4))
    assert total >= 200 and chi2 < 16.3, places  # chi-square, 3 degrees of freedom: p = 0.001


def test_needs_context_is_in_the_sweep_and_same_seed_same_bytes(titled_store: Path, tmp_path: Path) -> None:
    snapshots = []
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        store = Store.open(shutil.copytree(titled_store, tmp_path / name))
        result = generate(store, "textual-cloze", Setting("needs-context"), seed=seed)
        folder = result.paths["needs-context"]
        snapshots.append({p.name: p.read_bytes() for p in sorted(folder.iterdir())})
        assert read_question_set(folder).table().num_rows == result.questions["needs-context"]
    assert snapshots[0] == snapshots[1]
    assert snapshots[0] != snapshots[2]
    assert "needs-context" in [s.name for s in tc.SWEEP]


def test_needs_context_only_over_titles(titled_store: Path) -> None:
    store = Store.open(titled_store)
    with pytest.raises(BadInput, match="needs-context"):
        tc.build(store, [Setting("needs-context")], TextualClozeOptions(items="text"))
    # a sweep over step texts leaves it out instead of failing
    embed_store(titled_store, text_encoder="hashed", fields="step_text")
    sets, _ = tc.build(store, [Setting("recipeqa"), Setting("needs-context")], TextualClozeOptions(items="text"))
    assert set(sets) == {"recipeqa"}


def test_the_adversarial_options_do_not_apply(titled_store: Path) -> None:
    with pytest.raises(BadInput, match="--adversarial"):
        tc.build(Store.open(titled_store), [Setting("needs-context")], TextualClozeOptions(rounds=2))


def test_without_step_texts_alone_is_an_error_and_a_sweep_says_why_it_left_it_out(tmp_path: Path) -> None:
    store_path = tmp_path / "store"
    ingest_file(store_path, write_jsonl(tmp_path / "in.jsonl", load_sample()))
    embed_store(store_path, text_encoder="hashed", fields="step_title")
    store = Store.open(store_path)
    with pytest.raises(BadInput, match="step-text embeddings"):
        tc.build(store, [Setting("needs-context")])
    sets, counts = tc.build(store, [Setting("recipeqa"), Setting("needs-context")])
    assert set(sets) == {"recipeqa"} and "step_text" in counts["per_setting"]["needs-context"].empty
    result = generate(store, "textual-cloze", sweep=True, seed=0, policy="demo")
    assert "needs-context" not in result.paths
    assert any(w.startswith("textual-cloze/needs-context: no questions") for w in result.warnings)
