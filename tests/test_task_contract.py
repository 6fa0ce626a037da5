"""Every registered task through the same contract (issue 31): each setting of its sweep, generated on the bundled
sample, is checked from its files alone as DESIGN §5 states a question set, and from its :class:`SettingReport`.

A new task in :data:`procbench.tasks.TASKS` is checked here without a line of this file changing. The textual
samplers have their own contract (``tests/test_generate_samplers.py``); this one covers what every task shares.
Fast: every task that needs no parsed actions, its whole sweep (adversarial filtering demo-sized). Slow: next
action (its actions come from the spaCy parser) and, for every task, same seed, same bytes.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from procbench.extract.parser import installed_model
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.generate import GenerateResult, generate
from procbench.generate.options import options_class
from procbench.qsets import SPLITS, read_question_set
from procbench.rng import RNG_VERSION
from procbench.store import Store
from procbench.store.views import kept_steps
from procbench.tasks import TASKS, TaskSpec

#: DESIGN §5's columns, in its order.
COLUMNS = ["qid", "task", "procedure_id", "split", "context", "question", "choices", "answer", "meta"]
#: Tasks whose items come from ``procbench extract`` (spaCy), built in the slow part only.
PARSED = {"next-action"}
SEED = 3


def _sweep(store: Store, task: str) -> GenerateResult:
    """Every setting of ``task`` (adversarial filtering demo-sized where the task takes a policy)."""
    sized: dict[str, Any] = (
        {"policy": "demo"} if "policy" in {f.name for f in dataclasses.fields(options_class(task))} else {}
    )
    return generate(store, task, sweep=True, seed=SEED, **sized)


def _store(ingested_sample: Path, root: Path, *, parsed: bool, images: bool = True) -> Store:
    from procbench.embed import embed_store

    shutil.copytree(ingested_sample, root)
    fields = "step_title,step_text" + (",image" if images else "")
    if parsed:
        from procbench.extract import extract_store

        extract_store(Store.open(root))
        fields += ",action"
    embed_store(root, text_encoder="hashed", image_encoder="colour-layout", fields=fields)
    return Store.open(root)


@pytest.fixture(scope="module")
def text_sweeps(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, dict[str, Any]]:
    """The tasks over texts and steps that need no parsed actions; the visual tasks' sweeps are conftest's
    ``sample_visual_sweeps`` (the same sample, seed and filter size), shared with the visual tests."""
    store = _store(ingested_sample, tmp_path_factory.mktemp("contract") / "store", parsed=False, images=False)
    wanted = [s.name for s in TASKS.values() if s.name not in PARSED and s.kind.items != "image"]
    return store, {task: _sweep(store, task) for task in wanted}


def _steps_per_procedure(store: Store) -> dict[str, int]:
    return dict(Counter(kept_steps(store, ["procedure_id"])["procedure_id"].to_pylist()))


def _image_ids(store: Store) -> set[str]:
    return set(store.table("images").column("id").to_pylist())


def check_set(store: Store, spec: TaskSpec, result: GenerateResult, setting: str) -> int:
    """Assert DESIGN §5's contract on the files of ``spec``'s ``setting`` and its report; returns its size."""
    path = result.paths[setting]
    table = read_question_set(path).table()
    rows = table.to_pylist()
    name = f"{spec.name}/{setting}"
    assert table.schema.names == COLUMNS, name
    report = result.reports[setting]
    assert report.questions == len(rows) == result.questions[setting], name
    if report.drafted is not None:  # every drafted question is written or counted under a skip reason
        assert report.drafted == report.questions + sum(report.skipped_questions.values()), name
    assert len(rows) > 0 or report.empty, f"{name}: an empty set says why"
    assert len({r["qid"] for r in rows}) == len(rows), name
    steps, images = _steps_per_procedure(store), _image_ids(store)
    split_of: dict[str, str] = {}
    for r in rows:
        assert r["task"] == spec.name and r["meta"]["setting"] == setting, name
        assert r["split"] in SPLITS and split_of.setdefault(r["procedure_id"], r["split"]) == r["split"], name
        n_steps = steps[r["procedure_id"]]
        assert all(0 <= i < n_steps for i in r["context"]) and r["context"] == sorted(set(r["context"])), name
        choices, answer = r["choices"], r["answer"]
        assert isinstance(answer, int) and 0 <= answer < len(choices), name
        if spec.kind.label_choices:
            assert choices == rows[0]["choices"], f"{name}: the same labels in every question"
        elif spec.kind.multiple_choice:
            assert len(choices) == 4, name
            distinct = {tuple(c) if isinstance(c, list) else c for c in choices}
            assert len(distinct) == 4, f"{name}: choices repeat in {r['qid']}"
        if spec.kind.ordering and spec.kind.multiple_choice:  # every choice orders the same items
            assert len({tuple(sorted(c)) for c in choices}) == 1, name
        if spec.kind.items == "image":
            shown = [i for c in choices for i in (c if isinstance(c, list) else [c])]
            assert set(shown) <= images, f"{name}: a choice is not an image of the store"
            assert set(r["question"]) - {PLACEHOLDER} <= images, name
        if not spec.kind.multiple_choice:
            assert answer == 0 and len(choices) == 1, f"{name}: the one acceptable answer"
        elif not spec.kind.coherence and not spec.kind.ordering and not spec.kind.label_choices:
            assert r["question"].count(PLACEHOLDER) == 1, f"{name}: one blank per cloze question"
    options = json.loads((path / "options.json").read_text())
    assert options["options"]["rng_version"] == RNG_VERSION and options["options"]["seed"] == SEED, name
    assert (path / "card.md").read_text().startswith("---\n"), f"{name}: the card opens with its YAML header"
    assert len(json.loads((path / "recipeqa.json").read_text())["data"]) == len(rows), f"{name}: RecipeQA's layout"
    return len(rows)


@pytest.mark.parametrize("task", [n for n in TASKS.names() if n not in PARSED])
def test_every_registered_task_keeps_the_contract(request: pytest.FixtureRequest, task: str) -> None:
    spec = TASKS.get(task)
    root, results = request.getfixturevalue("sample_visual_sweeps" if spec.kind.items == "image" else "text_sweeps")
    store = Store.open(root) if isinstance(root, Path) else root
    result = results[task]
    for setting in spec.sweep():  # every setting is written, or its report says why not
        assert setting.name in result.paths or result.reports[setting.name].empty, f"{task}/{setting.name}"
    sizes = {setting: check_set(store, spec, result, setting) for setting in result.paths}
    assert sum(sizes.values()) > 0


@pytest.mark.slow
def test_parsed_tasks_keep_the_contract_and_every_task_gives_the_same_bytes_for_the_same_seed(
    ingested_sample: Path, tmp_path: Path
) -> None:
    if installed_model() is None:
        pytest.skip("no spaCy English pipeline installed")
    first = _store(ingested_sample, tmp_path / "a", parsed=True)
    second = Store.open(shutil.copytree(first.root, tmp_path / "b"))
    for spec in TASKS.values():
        result, again = _sweep(first, spec.name), _sweep(second, spec.name)
        for setting, path in result.paths.items():
            if spec.name in PARSED:
                check_set(first, spec, result, setting)
            for split in sorted(path.glob("*.parquet")):
                assert split.read_bytes() == (again.paths[setting] / split.name).read_bytes(), f"{spec.name}/{setting}"
