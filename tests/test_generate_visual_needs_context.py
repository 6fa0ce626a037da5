"""Visual cloze's needs-context setting: four photos of one procedure, exchangeable without the context."""

from __future__ import annotations

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
from procbench.generate.options import VisualClozeOptions
from procbench.generate.visual.cloze import build
from procbench.generate.visual.needs_context import IMAGE_ALIKE, TEXT_ALIKE
from procbench.store import Store
from procbench.store.views import kept_steps


@pytest.fixture(scope="module")
def photo_store(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("visual-needs-context") / "store"
    shutil.copytree(ingested_sample, root)
    embed_store(root, text_encoder="hashed", image_encoder="colour-layout", fields="step_text,image")
    return root


def test_every_question_is_four_photos_of_its_procedure_that_the_rule_keeps(photo_store: Path) -> None:
    store = Store.open(photo_store)
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
        assert q.question == [PLACEHOLDER] and q.context == [steps[q.answer]] == [q.meta["answer_step"]]
        assert len(set(q.choices)) == 4 and len(set(steps)) == 4
        assert all(c in image_of[(q.procedure_id, s)] for c, s in zip(q.choices, steps, strict=True))
        photos = np.asarray(images.vectors)[[image_row[c] for c in q.choices]]
        photos = photos / np.linalg.norm(photos, axis=1, keepdims=True)
        said = np.asarray(texts.vectors)[[text_row[f"{q.procedure_id}#{s}"] for s in steps]]
        off = ~np.eye(4, dtype=bool)
        assert (photos @ photos.T)[off].max() < IMAGE_ALIKE and (said @ said.T)[off].max() < TEXT_ALIKE


def test_the_answer_is_uniform_among_the_four_photos(photo_store: Path) -> None:
    store = Store.open(photo_store)
    places: Counter[int] = Counter()
    positions: Counter[int] = Counter()
    for seed in range(10):
        for q in build(store, [Setting("needs-context")], VisualClozeOptions(seed=seed))[0]["needs-context"]:
            places[sorted(q.meta["choice_steps"]).index(q.context[0])] += 1
            positions[q.answer] += 1
    total = sum(places.values())
    expected = total / 4
    chi2 = sum((places[p] - expected) ** 2 / expected for p in range(4))
    assert total >= 200 and chi2 < 16.3, places  # chi-square, 3 degrees of freedom: p = 0.001
    assert max(positions.values()) - min(positions.values()) <= 10  # answer positions balanced per set


def test_written_in_the_sweep_same_seed_same_bytes(photo_store: Path, tmp_path: Path) -> None:
    snapshots = []
    for name, seed in (("a", 2), ("b", 2), ("c", 3)):
        store = Store.open(shutil.copytree(photo_store, tmp_path / name))
        result = generate(store, "visual-cloze", Setting("needs-context"), seed=seed)
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
    with pytest.raises(BadInput, match="step-text embeddings"):
        build(store, [Setting("needs-context")])
    with pytest.raises(BadInput, match="--adversarial"):
        build(store, [Setting("needs-context")], VisualClozeOptions(rounds=3))
    sets, counts = build(store, [Setting("recipeqa"), Setting("needs-context")])
    assert set(sets) == {"recipeqa"} and "step-text" in counts["per_setting"]["needs-context"].empty
