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
    assert header["license_name"] == "CC BY-NC-SA (no version)"
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
