from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from procbench.cli import app
from procbench.corpus import load_sample
from procbench.store import Store


def test_demo_builds_the_sample_store_and_is_rerunnable(tmp_path: Path) -> None:
    runner = CliRunner()
    store = tmp_path / "demo"
    first = runner.invoke(app, ["demo", "--store", str(store), "--json"])
    assert first.exit_code == 0, first.output
    result = json.loads(first.stdout)
    sample = load_sample()
    assert result["procedures"] == len(sample)
    assert result["steps"] == sum(len(r["steps"]) for r in sample)
    opened = Store.open(store)
    images = opened.table("images")
    assert images.num_rows == result["steps"] and all(images["stored"].to_pylist())
    assert all(opened.image_path(i).is_file() for i in images["id"].to_pylist())
    report = Path(result["report"])
    assert report == store / "report" / "index.html" and report.is_file()
    assert "hasty-choice-only" in report.read_text()  # the sweep table of the demo's runs
    assert len(list((store / "report" / "sets").glob("*.html"))) == len(result["stages"]["generate"])
    plots = result["stages"]["audit"]["plots"]
    assert plots and all((store / p).is_file() and p.startswith("audit-plots/") and p.endswith(".png") for p in plots)
    # audit --per-question's scores: the report's shortcut-score filter is there for the multiple-choice sets
    assert result["stages"]["audit"]["shortcut_scores"] > 0
    page = (store / "report" / "sets" / "textual-cloze--default.html").read_text()
    assert (store / "questions" / "textual-cloze" / "default" / "shortcut_scores.parquet").is_file()
    assert '"has_scores":true' in page and 'id="score"' in page
    second = runner.invoke(app, ["demo", "--store", str(store), "--json"])
    assert second.exit_code == 0, second.output
    assert Store.open(store).table("procedures").num_rows == len(sample)
