"""The visual needs-context setting (cloze and coherence): four photos of one procedure, exchangeable without the
context."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from procbench.embed import embed_store, load_embeddings
from procbench.errors import BadInput
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.generate import Setting, generate
from procbench.generate.options import VisualClozeOptions, VisualCoherenceOptions
from procbench.generate.policy import current
from procbench.generate.visual import cloze, coherence
from procbench.qsets.files import QuestionSet, question_set_dir
from procbench.qsets.questions import Question
from procbench.store import Store
from procbench.store.views import kept_steps


@pytest.fixture(scope="module")
def photo_store(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("visual-needs-context") / "store"
    shutil.copytree(ingested_sample, root)
    embed_store(root, text_encoder="hashed", image_encoder="colour-layout", fields="step_text,image")
    return root


TASKS = {
    "visual-cloze": (cloze.build, VisualClozeOptions),
    "visual-coherence": (coherence.build, VisualCoherenceOptions),
}


def _shows(task: str, q: Question) -> tuple[list[str], list[int]]:
    """What a question of ``task`` should show: its items and its context (the answer's step, or the others')."""
    steps = q.meta["choice_steps"]
    if task == "visual-cloze":
        return [PLACEHOLDER], [steps[q.answer]]
    return [], sorted(s for i, s in enumerate(steps) if i != q.answer)


@pytest.mark.parametrize("task", TASKS)
def test_every_question_is_four_photos_of_its_procedure_that_the_rule_keeps(photo_store: Path, task: str) -> None:
    store = Store.open(photo_store)
    build = TASKS[task][0]
    sets, counts = build(store, [Setting("needs-context")])
    questions, entry = sets["needs-context"], counts["per_setting"]["needs-context"]
    assert len(questions) >= 20 and entry.questions == len(questions)
    images, texts = load_embeddings(store, "image"), load_embeddings(store, "step_text")
    image_row = {k: i for i, k in enumerate(images.keys.to_pylist())}
    text_row = {k: i for i, k in enumerate(texts.keys.to_pylist())}
    image_of = {
        (r["procedure_id"], r["index"]): set(r["image_ids"] or [])
        for r in kept_steps(store, ["procedure_id", "index", "image_ids"]).to_pylist()
    }
    for q in questions:
        steps = q.meta["choice_steps"]
        assert (q.question, q.context) == _shows(task, q) and steps[q.answer] == q.meta["answer_step"]
        assert len(set(q.choices)) == 4 and len(set(steps)) == 4
        assert all(c in image_of[(q.procedure_id, s)] for c, s in zip(q.choices, steps, strict=True))
        photos = np.asarray(images.vectors)[[image_row[c] for c in q.choices]]
        photos = photos / np.linalg.norm(photos, axis=1, keepdims=True)
        said = np.asarray(texts.vectors)[[text_row[f"{q.procedure_id}#{s}"] for s in steps]]
        off = ~np.eye(4, dtype=bool)
        assert (photos @ photos.T)[off].max() < current().IMAGE_ALIKE and (said @ said.T)[
            off
        ].max() < current().TEXT_ALIKE


@pytest.mark.parametrize("task", TASKS)
def test_the_answer_is_uniform_among_the_four_photos_and_its_odd_one_out_rank_dealt_evenly(
    photo_store: Path, task: str
) -> None:
    store = Store.open(photo_store)
    build, options = TASKS[task]
    images = load_embeddings(store, "image")
    vectors = np.asarray(images.vectors, dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    row = {k: i for i, k in enumerate(images.keys.to_pylist())}
    places: Counter[int] = Counter()
    positions: Counter[int] = Counter()
    for seed in range(10):
        ranks: Counter[int] = Counter()
        for q in build(store, [Setting("needs-context")], options(seed=seed))[0]["needs-context"]:
            places[sorted(q.meta["choice_steps"]).index(q.meta["answer_step"])] += 1
            positions[q.answer] += 1
            photos = vectors[[row[c] for c in q.choices]]
            odd = np.linalg.norm(photos - photos.mean(axis=0), axis=1)  # the audit's odd-one-out distance, x 3/4
            ranks[int((odd < odd[q.answer]).sum())] += 1
        assert max(ranks.values()) - min(ranks[r] for r in range(4)) <= 1, ranks  # as the audit ranks them
    total = sum(places.values())
    expected = total / 4
    chi2 = sum((places[p] - expected) ** 2 / expected for p in range(4))
    assert total >= 200 and chi2 < 16.3, places  # chi-square, 3 degrees of freedom: p = 0.001
    assert max(positions.values()) - min(positions.values()) <= 10  # answer positions balanced per set


@pytest.mark.parametrize("task", TASKS)
def test_same_seed_same_bytes(photo_store: Path, tmp_path: Path, task: str) -> None:
    snapshots = []
    for name, seed in (("a", 2), ("b", 2), ("c", 3)):
        store = Store.open(shutil.copytree(photo_store, tmp_path / name))
        result = generate(store, task, Setting("needs-context"), seed=seed)
        folder = result.paths["needs-context"]
        snapshots.append({p.name: p.read_bytes() for p in sorted(folder.iterdir())})
        rows = sum(pq.read_table(folder / f"{s}.parquet").num_rows for s in ("train", "val", "test"))
        assert rows == result.questions["needs-context"]
    assert snapshots[0] == snapshots[1] and snapshots[0] != snapshots[2]


def test_without_step_texts_alone_is_an_error_and_a_sweep_says_why_it_left_it_out(
    ingested_sample: Path, tmp_path: Path
) -> None:
    root = shutil.copytree(ingested_sample, tmp_path / "store")
    embed_store(root, image_encoder="colour-layout", fields="image")
    store = Store.open(root)
    for task, (build, options) in TASKS.items():
        with pytest.raises(BadInput, match=f"{task}/needs-context: no step-text embeddings"):
            build(store, [Setting("needs-context")])
        with pytest.raises(BadInput, match="--adversarial"):
            build(store, [Setting("needs-context")], options(rounds=3))
        sets, counts = build(store, [Setting("recipeqa"), Setting("needs-context")])
        assert set(sets) == {"recipeqa"} and "step-text" in counts["per_setting"]["needs-context"].empty


def test_coherence_asks_for_the_photo_its_context_does_not_show_in_every_format(
    photo_store: Path, tmp_path: Path
) -> None:
    """The task's RecipeQA instruction ("the incoherent image") would mislead a reader of three of the steps: the
    set, its recipeqa.json and its inlined records word the question as it is asked; other settings keep
    RecipeQA's words."""
    from procbench.export.inline import Inliner

    store = Store.open(shutil.copytree(photo_store, tmp_path / "store"))
    generate(store, "visual-coherence", Setting("needs-context"), seed=0)
    generate(store, "visual-coherence", Setting("recipeqa"), seed=0)
    own = "Three of the images show the steps given; select the image that shows none of them."
    for setting, instruction in (("needs-context", own), ("recipeqa", "Select the incoherent image in the following")):
        qset = QuestionSet(question_set_dir(store, "visual-coherence", setting))
        assert qset.instruction.startswith(instruction)
        written = json.loads((qset.path / "recipeqa.json").read_text(encoding="utf-8"))["data"]
        assert written and {q["question_text"] for q in written} == {qset.instruction}
    qset = QuestionSet(question_set_dir(store, "visual-coherence", "needs-context"))
    records = list(
        Inliner(store, set(pq.read_table(qset.path / "train.parquet")["procedure_id"].to_pylist())).records(
            qset, "train"
        )
    )
    assert records and all(r["instruction"] == own and len(r["context"]) == 3 for r in records)
    assert all(set(c) == {"index", "title", "text"} for r in records for c in r["context"])  # no photo shown


def test_a_packet_shows_coherence_s_context_unnumbered_whichever_steps_it_holds(
    photo_store: Path, tmp_path: Path
) -> None:
    """Three steps of a longer procedure are some of its steps, even the first three: numbered "1. 2. 3." they
    would say that the fourth photo shows a later step."""
    from procbench.readers.packet import make_packet

    store = Store.open(shutil.copytree(photo_store, tmp_path / "store"))
    generate(store, "visual-coherence", Setting("needs-context"), seed=0)
    qset = QuestionSet(question_set_dir(store, "visual-coherence", "needs-context"))
    rows = [r for s in ("train", "val", "test") if (qset.path / f"{s}.parquet").is_file()
            for r in pq.read_table(qset.path / f"{s}.parquet").to_pylist()]  # fmt: skip
    assert any(r["context"] == [0, 1, 2] for r in rows)  # the case the old rule numbered
    out = tmp_path / "packet"
    make_packet(["visual-coherence/needs-context"], out, store=store.root, n=len(rows), context="with", split="all")
    sheet = json.loads((out / "packet.json").read_text(encoding="utf-8"))
    contexts = [q["context"] for q in sheet["questions"]]
    assert len(contexts) == len(rows) and all(len(c) == 3 and all("step" not in s for s in c) for c in contexts)
    markdown = (out / "packet.md").read_text(encoding="utf-8")
    assert markdown.count("**Context** (some of the procedure's steps):") == len(rows)
    assert "**Context** (the procedure's steps):" not in markdown
