from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
import yaml

from procbench.card import SET_FIELDS, DatasetCard, dataset_card, set_parameters, spdx_license, summarise_set


@pytest.mark.parametrize(
    ("text", "spdx"),
    [
        ("https://creativecommons.org/licenses/by-nc-sa/3.0/", "CC-BY-NC-SA-3.0"),
        ("https://creativecommons.org/licenses/by/4.0/deed.en", "CC-BY-4.0"),
        ("https://creativecommons.org/publicdomain/zero/1.0/", "CC0-1.0"),
        ("CC BY-NC-SA 3.0", "CC-BY-NC-SA-3.0"),
        ("CC BY-NC-SA 3.0 (wikiHow content)", "CC-BY-NC-SA-3.0"),  # as the wikiHow data records it
        ("CC BY-SA 4.0 International", "CC-BY-SA-4.0"),
        ("CC0 1.0 Universal (public domain)", "CC0-1.0"),
        ("cc-by-sa-4.0", "CC-BY-SA-4.0"),
        ("Creative Commons Attribution-ShareAlike 4.0", "CC-BY-SA-4.0"),
        ("CC0-1.0", "CC0-1.0"),
        ("MIT", "MIT"),
        ("CC BY-NC-SA (Instructables authors; RecipeQA)", None),  # no version: cannot be named exactly
        (None, None),
    ],
)
def test_spdx_license(text: str | None, spdx: str | None) -> None:
    assert spdx_license(text) == spdx


def _table(setting: str, meta: list[dict[str, object]]) -> pa.Table:
    n = len(meta)
    return pa.table(
        {
            "procedure_id": [f"p{i % 3}" for i in range(n)],
            "split": ["train", "train", "test", "val"][:n],
            "answer": [i % 4 for i in range(n)],
            "meta": meta,
        }
    )


def test_set_parameters_are_the_values_shared_by_every_question() -> None:
    meta = [{"setting": "x", "k1": 0, "budget": None, "d": 0.1 * i, "keys": ["a"]} for i in range(4)]
    assert set_parameters(pa.array(meta)) == {"setting": "x", "k1": 0}


def test_card_header_is_what_the_hub_reads() -> None:
    first = summarise_set("textual-cloze", "debias-b10", _table("debias-b10", [{"budget": 10}] * 4))
    first.data_files, first.config_name = {"train": "data/debias-b10/train-*.parquet"}, "debias-b10"
    licenses = Counter({"https://creativecommons.org/licenses/by-nc-sa/3.0/": 3, "CC BY-NC-SA (no version)": 1})
    card = DatasetCard(
        title="t",
        sets=[first],
        fields=SET_FIELDS,
        procedures={"sources": Counter({"wikihow": 4}), "licenses": licenses, "languages": Counter({"en": 4})},
        generation={"textual-cloze": {"seed": 3, "args": {"budget": 10}, "counts": {}}},
        build={"encoders": {"step_title": {"encoder": "hashed", "revision": "abc", "dim": 8}}},
    )
    text = dataset_card(card)
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["license"] == ["cc-by-nc-sa-3.0", "other"]
    assert header["license_name"] == "cc-by-nc-sa-no-version"  # an id, as the Hub asks
    assert header["license_details"] == "CC BY-NC-SA (no version)"
    assert header["task_categories"] == ["multiple-choice"] and header["size_categories"] == ["n<1K"]
    assert header["configs"] == [
        {
            "config_name": "debias-b10",
            "data_files": [{"split": "train", "path": "data/debias-b10/train-*.parquet"}],
            "default": True,
        }
    ]
    assert "| `debias-b10` | textual-cloze | 2 | 1 | 1 | 3 | budget=10 |" in text
    assert "| step_title | hashed | abc | 8 |" in text and "seed 3" in text
    assert "Not audited yet" in text and "@article{sahu2021towards" in text


def _audit(**probes: dict[str, object]) -> dict[str, object]:
    return {"n_questions": 4, "probes": probes}


def test_card_records_adversarial_and_debias_runs_and_every_probe() -> None:
    adversarial = summarise_set(
        "textual-cloze",
        "adversarial",
        _table("adversarial", [{"replacements": r, "ceiling": 0.8} for r in (0, 2, 1, 0)]),
    )
    adversarial.generation = {
        "yield": 0.9876,
        "adversarial": {
            "rounds": 10,
            "ceiling": 0.8,
            "rounds_run": 3,
            "stopped": "chance",
            "replacements": 3,
            "final_accuracy": {"choice_only": 0.25, "partial_input": 0.3},
            "chance_bound": 0.36,
            "rules": ["no negative nearer the answer's own step text than the answer"],
        },
    }
    adversarial.audit = _audit(
        choice_only={"value": 0.1, "chance": 0.25, "ci": [0.05, 0.2], "verdict": "below", "flagged": True},
        context_reference={"value": 0.9, "chance": 0.25, "ci": [0.8, 1.0], "verdict": "above", "reference": True},
        length={"value": None, "chance": None, "ci": None, "reason": "choices are images"},
    )
    debias = summarise_set("textual-cloze", "debias-auto", _table("debias-auto", [{"budget": 8}] * 4))
    debias.generation = {
        "yield": 0.98,
        "auto_budget": {
            "chosen": 8,
            "even_share": 6,
            "tried": [{"budget": 6, "yield": 0.9}, {"budget": 8, "yield": 0.98}],
        },
        "skipped_questions": {"budget_exhausted": 1},
    }
    recipeqa = summarise_set("textual-cloze", "recipeqa", _table("recipeqa", [{"min_distance": 1.2}] * 4))
    card = DatasetCard(
        title="t",
        sets=[adversarial, debias, recipeqa],
        fields=SET_FIELDS,
        procedures={
            "sources": Counter({"x": 3}),
            "licenses": Counter({"CC0-1.0": 3}),
            "languages": Counter({"en": 3}),
        },
        generation={"textual-cloze": {"seed": 0, "args": {}, "counts": {}}},
        build={},
    )
    text = dataset_card(card)
    assert adversarial.totals == {"replacements": 3, "replacements_questions": 2}
    assert "adversarial filtering: at most 10 rounds, 3 run (stopped: chance)" in text
    assert "similarity ceiling 0.8" in text and "3 negatives replaced in 2 of 4 questions" in text
    assert "questions; no negative nearer the answer's own step text than the answer;" in text
    assert "held-out probe accuracy on the final set choice_only 0.25, partial_input 0.3 (stop bound 0.36)" in text
    assert "yield 98.8%" in text and "budget auto: 8 per cluster (even share 6" in text and "8 → 98.0%" in text
    assert "skipped questions: budget_exhausted 1" in text
    # the audit: a below-chance shortcut is bold, the reference probe is marked and never bold
    assert "| choice_only | **0.100 [0.050, 0.200] (0.250)** ↓ |" in text
    assert "| context_reference (*reference*) | 0.900 [0.800, 1.000] (0.250) |" in text
    assert "Not applicable to any textual-cloze set: length (choices are images)." in text
    assert "Not audited: `debias-auto`, `recipeqa`." in text


def test_a_config_named_default_is_the_only_default() -> None:
    sets = []
    for name in ("adversarial", "default", "recipeqa"):
        s = summarise_set("textual-cloze", name, _table(name, [{"setting": name}] * 4))
        s.config_name, s.data_files = name, {"train": f"data/{name}/train-*.parquet"}
        sets.append(s)
    card = DatasetCard(
        title="t",
        sets=sets,
        fields=SET_FIELDS,
        procedures={"sources": Counter(), "licenses": Counter(), "languages": Counter()},
        generation={},
        build={},
    )
    header = yaml.safe_load(dataset_card(card).split("---\n")[1])
    # datasets takes a config named "default" as the default: a second default would not load
    assert [c["config_name"] for c in header["configs"] if c.get("default")] == ["default"]
