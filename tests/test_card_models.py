"""The model rows `procbench evaluate` keeps beside a set (models.json) and the card's Models section."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from procbench.card import CardSet
from procbench.card.models import MODELS_FILE, models_section, read_model_rows, record_model_rows


def _set_folder(root: Path) -> Path:
    folder = root / "questions" / "textual-cloze" / "default"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"qid": ["a"]}), folder / "test.parquet")
    return folder


def test_rows_merge_per_model_and_an_overwritten_set_forgets_them(tmp_path: Path) -> None:
    folder = _set_folder(tmp_path)
    record_model_rows(folder, {"chance": {"accuracy": {"value": 0.25, "ci": [0.25, 0.25], "n": 5}}})
    record_model_rows(
        folder,
        {"lm-eval gpt2": {"accuracy": {"value": 0.4, "ci": [0.1, 0.7], "n": 5, "interval": "stderr"}}},
    )
    rows = read_model_rows(folder)
    assert set(rows) == {"chance", "lm-eval gpt2"} and rows["lm-eval gpt2"]["accuracy"]["value"] == 0.4
    record_model_rows(folder, {"chance": {"accuracy": {"value": 0.3, "ci": None, "n": 5}}})
    assert read_model_rows(folder)["chance"]["accuracy"]["value"] == 0.3
    # `generate --overwrite` rewrites the split files: the rows were scored on the set as it was
    later = (folder / "test.parquet").stat().st_mtime + 10
    os.utime(folder / "test.parquet", (later, later))
    assert read_model_rows(folder) == {}
    assert (folder / MODELS_FILE).is_file()


def test_models_section_puts_models_in_rows_and_settings_in_columns() -> None:
    def card_set(setting: str, models: dict[str, float]) -> CardSet:
        s = CardSet("textual-cloze", setting, {"test": 5}, 5)
        s.models = {
            label: {"accuracy": {"value": v, "ci": [v - 0.1, v + 0.1], "n": 5, "interval": "bootstrap"}}
            for label, v in models.items()
        }
        return s

    sets = [card_set("default", {"chance": 0.25, "lm-eval gpt2": 0.5}), card_set("recipeqa", {"chance": 0.25})]
    sets[1].models["lm-eval gpt2 (no context)"] = {"accuracy": {"value": 0.3, "ci": None, "interval": "stderr"}}
    lines = models_section(sets)
    assert lines[0] == "## Models"
    table = [line for line in lines if line.startswith("|")]
    assert table[0] == "| model | `default` | `recipeqa` |"
    assert table[2] == "| chance | 25.0 [15.0, 35.0] | 25.0 [15.0, 35.0] |"
    assert table[3] == "| lm-eval gpt2 | 50.0 [40.0, 60.0] | - |"
    assert table[4] == "| lm-eval gpt2 (no context) | - | 30.0* |"
    assert models_section([CardSet("pair-order", "default", {"test": 1}, 1)]) == []
