from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from procbench.cli import app
from procbench.store import Store

from helpers import write_jsonl

runner = CliRunner()

TEXTS = [
    "Measure the board twice and mark the cut line with a sharp pencil.",
    "Clamp the board to the bench so that it cannot move while you saw.",
    "Cut slowly along the line and let the saw do the work for you.",
    "Sand the edges with medium grit paper until they feel smooth.",
    "Wipe away the dust with a damp cloth before you apply the finish.",
]


def records() -> list[dict[str, Any]]:
    shelf = {
        "source": "t",
        "id": "Build-a-Shelf",
        "title": "Build a Shelf",
        "category": ["Woodworking"],
        "steps": [
            {"title": f"{i + 1}. Do it", "text": f"<b>{t}</b> Thenpreheattheoven."} for i, t in enumerate(TEXTS)
        ],
    }
    french = {
        "source": "t",
        "id": "Couper",
        "title": "Couper une planche",
        "steps": [
            {"text": "Mesurez la planche deux fois et tracez la ligne de coupe avec un crayon."},
            {"text": "Fixez la planche sur l'établi pour qu'elle ne bouge pas pendant la coupe."},
            {"text": "Coupez lentement le long de la ligne et laissez la scie travailler."},
        ],
    }
    calculator = {
        "source": "t",
        "id": "nutrient-calculator",
        "title": "Nutrient Calculator",
        "steps": [{"text": f"{t} Count the calories."} for t in TEXTS],
    }
    return [shelf, french, calculator]


def ingest(tmp_path: Path) -> str:
    store = str(tmp_path / "store")
    result = runner.invoke(app, ["ingest", str(write_jsonl(tmp_path / "in.jsonl", records())), "--store", store])
    assert result.exit_code == 0, result.output
    return store


def test_clean_json_end_to_end(tmp_path: Path) -> None:
    store = ingest(tmp_path)
    result = runner.invoke(
        app, ["clean", "--store", store, "--json", "--exclude-keyword", "calculator", "--examples", "1"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["dropped"] == {"no_text": 0, "language": 1, "step_count": 0, "off_domain": 1, "duplicate": 0}
    assert report["kept"] == 1 and report["steps"] == 13 and report["kept_steps"] == 5
    rules = {r["rule"]: r for r in report["rules"]}
    assert rules["fused_words"]["examples"][0]["after"].endswith("Then preheat the oven.")
    assert rules["step_titles"]["steps"] == 5 and len(rules["step_titles"]["examples"]) == 1
    assert rules["language"]["examples"][0]["procedure_id"] == "t:Couper"
    assert 0 < report["in_vocabulary"]["before"] < report["in_vocabulary"]["after_kept"] <= 1
    assert Store.open(store).table("steps", ["title_clean"])["title_clean"].to_pylist()[:2] == ["Do it", "Do it"]
    again = runner.invoke(app, ["clean", "--store", store, "--json", "--exclude-keyword", "calculator"])
    assert json.loads(again.stdout)["written"] == []


def test_clean_table_output_and_manifest(tmp_path: Path) -> None:
    store = ingest(tmp_path)
    manifest = tmp_path / "m.toml"
    manifest.write_text('[clean]\nlanguages = ["en", "fr"]\nmin_steps = 4\n', encoding="utf-8")
    result = runner.invoke(app, ["clean", "--store", store, "--manifest", str(manifest), "--min-steps", "3"])
    assert result.exit_code == 0, result.output
    assert "What each rule did" in result.output and "in-vocabulary tokens" in result.output
    assert "kept 3 of 3 procedures" in " ".join(result.output.split())
    result = runner.invoke(app, ["clean", "--store", store, "--manifest", str(manifest), "--json"])
    assert json.loads(result.stdout)["dropped"]["step_count"] == 1  # the manifest's min_steps = 4


def test_clean_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    store = ingest(tmp_path)
    result = runner.invoke(app, ["clean", "--store", store, "--min-steps", "9", "--max-steps", "3"])
    assert result.exit_code == 2 and "min_steps" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["clean", "--store", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "no procbench store" in result.output
    result = runner.invoke(app, ["clean", "--store", store, "--manifest", str(tmp_path / "missing.toml")])
    assert result.exit_code == 2 and "no such manifest" in result.output


def test_the_bundled_sample_is_kept_whole(tmp_path: Path) -> None:
    """What the demo cleans (tests/test_demo.py runs the demo itself): nothing in the sample is removed."""
    from procbench.corpus import load_sample

    sample = load_sample()
    store = str(tmp_path / "sample")
    assert (
        runner.invoke(app, ["ingest", str(write_jsonl(tmp_path / "s.jsonl", sample)), "--store", store]).exit_code == 0
    )
    report = json.loads(runner.invoke(app, ["clean", "--store", store, "--json"]).stdout)
    assert report["kept"] == report["procedures"] == len(sample)
    assert report["in_vocabulary"]["after_kept"] >= report["in_vocabulary"]["before"] > 0.95
    assert report["languages"] == {"en": len(sample)}


def test_table_output_shows_markup_like_examples_verbatim(tmp_path: Path) -> None:
    record = {
        "source": "t",
        "id": "Brackets",
        "title": "Brackets",
        "steps": [{"text": f"{t} [/b] Finished.[3]"} for t in TEXTS],
    }
    store = str(tmp_path / "store")
    assert (
        runner.invoke(app, ["ingest", str(write_jsonl(tmp_path / "b.jsonl", [record])), "--store", store]).exit_code
        == 0
    )
    result = runner.invoke(app, ["clean", "--store", store])
    assert result.exit_code == 0, result.output
    assert "[3]" in result.output


def test_an_unknown_language_code_is_bad_input_and_drops_nothing(tmp_path: Path) -> None:
    store = ingest(tmp_path)
    before = (Path(store) / "procedures.parquet").read_bytes()
    result = runner.invoke(app, ["clean", "--store", store, "-l", "xx"])
    assert result.exit_code == 2 and "unknown language code(s) 'xx'" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert (Path(store) / "procedures.parquet").read_bytes() == before
    manifest = tmp_path / "m.toml"
    manifest.write_text('[clean]\nlanguages = ["en", "english"]\n', encoding="utf-8")
    result = runner.invoke(app, ["clean", "--store", store, "--manifest", str(manifest)])
    assert result.exit_code == 2 and "'english'" in result.output
    ok = runner.invoke(app, ["clean", "--store", store, "-l", "EN", "-l", "de", "-l", "yue", "--json"])
    assert ok.exit_code == 0, ok.output
