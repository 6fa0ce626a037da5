"""Every registered textual sampler through the same contract, and a new sampler as one class + one entry."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from procbench.clean import strip_step_indicator
from procbench.corpus import load_sample
from procbench.embed import embed_store
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.generate import Setting, assign_splits
from procbench.generate.options import TextualClozeOptions
from procbench.generate.textual import build as textual_build
from procbench.generate.textual import normalise_title
from procbench.generate.textual.pool import Draft
from procbench.generate.textual.samplers import SAMPLERS, Drawn, PerDraft
from procbench.ingest import ingest_file
from procbench.qsets import Question
from procbench.registry import Registry
from procbench.store import Store
from procbench.store.views import kept_procedures, kept_steps

from helpers import write_jsonl

#: one setting per registered style (a new sampler adds its own here, or the contract test says so)
SETTINGS = {
    "recipeqa": Setting("recipeqa"),
    "default": Setting("default"),
    "debias": Setting("debias", budget="auto"),
    "adversarial": Setting("adversarial"),
    "needs-context": Setting("needs-context"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    root = tmp_path_factory.mktemp("samplers")
    ingest_file(root / "store", write_jsonl(root / "in.jsonl", load_sample()))
    embed_store(root / "store", text_encoder="hashed", image_encoder="colour-layout", fields="step_title,step_text")
    return Store.open(root / "store")


def _splits(store: Store) -> dict[str, str]:
    kept = set(kept_procedures(store, ["id"])["id"].to_pylist())
    return assign_splits(store, kept, split_by="procedure", ratios=(0.5, 0.25, 0.25), seed=0)


def _titles(store: Store) -> dict[str, str | None]:
    """Each step's title as choices show it (step indicators stripped: the store is not cleaned)."""
    rows = kept_steps(store, ["procedure_id", "index", "title"]).to_pylist()
    return {f"{r['procedure_id']}#{r['index']}": r["title"] and strip_step_indicator(r["title"]) for r in rows}


def _check_question(
    q: Question, name: str, titles: dict[str, str | None], splits: dict[str, str], own_allowed: int = 0
) -> None:
    meta = q.meta
    assert meta["setting"] == name and len(q.choices) == 4 and 0 <= q.answer < 4
    assert q.question.count(PLACEHOLDER) == 1 and q.question.index(PLACEHOLDER) == meta["placeholder"]
    keys = meta["choice_keys"]
    assert len(keys) == 4 and keys[q.answer] == meta["answer_key"]
    assert keys[q.answer].rsplit("#", 1)[0] == q.procedure_id
    assert [normalise_title(titles[k]) for k in keys] == [normalise_title(c) for c in q.choices]
    norms = [normalise_title(c) for c in q.choices]
    assert len(set(norms)) == 4, q.choices  # no choice repeats a title
    shown = {normalise_title(t) for t in q.question if t != PLACEHOLDER}
    own = 0
    for n, key in enumerate(keys):
        if n == q.answer:
            continue
        other = key.rsplit("#", 1)[0]
        own += other == q.procedure_id
        assert splits[other] == splits[q.procedure_id]
        assert norms[n] not in shown and key not in meta["question_keys"]
    assert own <= own_allowed, (name, keys)
    for name_ in ("choice_distances", "choice_keys"):
        assert len(meta[name_]) == 4


#: samplers that run the adversarial filter: minutes of CPU, so `make test-slow`
FILTERED = ("adversarial",)


@pytest.mark.parametrize(
    "style", [pytest.param(s, marks=pytest.mark.slow) if s in FILTERED else s for s in SAMPLERS.names()]
)
def test_every_registered_sampler_keeps_the_contract(store: Store, style: str) -> None:
    """Questions well formed, negatives from the split (from other procedures but the sampler's allowance),
    every draft made or counted under a skip reason, same seed same questions."""
    assert style in SETTINGS, f"add a setting of the new sampler {style!r} to SETTINGS"
    setting, splits = SETTINGS[style], _splits(store)
    titles = _titles(store)
    filtered = style in FILTERED
    options = TextualClozeOptions(seed=5, rounds=2) if filtered else TextualClozeOptions(seed=5)
    sets, counts = textual_build(store, [setting], options, splits=splits)
    questions, entry = sets[setting.name], counts["per_setting"][setting.name]
    assert questions and entry.questions == len(questions)
    for q in questions:
        _check_question(q, setting.name, titles, splits, SAMPLERS.get(style).own_procedure_negatives)
    if entry.drafted is not None:
        assert entry.drafted == len(questions) + sum(entry.skipped_questions.values())
    again, _ = textual_build(store, [setting], options, splits=splits)
    assert [(q.choices, q.answer, q.meta) for q in again[setting.name]] == [
        (q.choices, q.answer, q.meta) for q in questions
    ]


class _Farthest(PerDraft):
    """A toy sampler: the 3 farthest distinct titles of other procedures of the split."""

    style = "farthest"

    def draw(self, draft: Draft, rng: np.random.Generator) -> Drawn | str:
        pool = self.context.pool
        answer = pool.positions[draft.answer_key]
        rows = pool.group_rows[pool.group_of[draft.procedure_id]]
        rows = rows[(pool.procedures[rows] != pool.procedures[answer]) & (pool.norm_codes[rows] >= 0)]
        gaps = pool.distance(rows, np.full(len(rows), answer))
        picked: list[int] = []
        seen = set(draft.norms)
        for i in np.argsort(-gaps, kind="stable").tolist():
            if pool.norms[rows[i]] not in seen:
                seen.add(pool.norms[rows[i]])
                picked.append(int(rows[i]))
            if len(picked) == 3:
                return Drawn(picked, [float(gaps[rows.tolist().index(r)]) for r in picked])
        return "few_candidates"


def test_a_new_sampler_is_one_class_and_one_registry_entry(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    build_module = importlib.import_module("procbench.generate.textual.build")  # the package's `build` is the function

    registry: Registry[Any] = Registry("textual sampler")
    for name, sampler in SAMPLERS.items():
        registry.add(name, sampler)
    registry.add("farthest", _Farthest)
    monkeypatch.setattr(build_module, "SAMPLERS", registry)
    splits = _splits(store)
    titles = _titles(store)
    settings = [Setting("farthest"), Setting("default")]
    sets, counts = build_module.build(store, settings, TextualClozeOptions(seed=1), splits=splits)
    assert len(sets["farthest"]) == counts["per_setting"]["farthest"].questions > 0
    for q in sets["farthest"]:
        _check_question(q, "farthest", titles, splits)
    # the drafts are shared: the same questions as the default setting, other negatives
    assert [q.question for q in sets["farthest"]] == [q.question for q in sets["default"]]
    far = np.mean([np.mean(q.meta["choice_distances"]) for q in sets["farthest"]])
    near = np.mean([np.mean(q.meta["choice_distances"]) for q in sets["default"]])
    assert far > near
