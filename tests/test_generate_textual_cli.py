from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from procbench.cli import app
from procbench.embed import embed_store
from procbench.qsets import read_question_set
from procbench.store import Store


@pytest.fixture(scope="module")
def embedded(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tc-cli")
    shutil.copytree(ingested_sample, root / "store")  # the sample, ingested once per session
    embed_store(root / "store", text_encoder="hashed", image_encoder="colour-layout", fields="step_title,step_text")
    return root / "store"


def _store(embedded: Path, tmp_path: Path) -> str:
    shutil.copytree(embedded, tmp_path / "s")
    return str(tmp_path / "s")


def test_cli_three_styles_and_sweep(embedded: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    store = _store(embedded, tmp_path)
    base = ["generate", "--task", "textual-cloze", "--store", store, "--json", "--seed", "2"]

    recipeqa = runner.invoke(app, [*base, "--style", "recipeqa"])
    assert recipeqa.exit_code == 0, recipeqa.output
    assert json.loads(recipeqa.stdout)["questions"] == {"recipeqa": 45}

    default = runner.invoke(app, base)
    assert default.exit_code == 0, default.output
    summary = json.loads(default.stdout)
    assert summary["questions"] == {"default": 45} and summary["counts"]["per_setting"]["default"]["knn_k"] == 100

    debias = runner.invoke(app, [*base, "--debias", "--budget", "6", "--clusters", "12"])
    assert debias.exit_code == 0, debias.output
    counts = json.loads(debias.stdout)["counts"]
    assert counts["clustering"]["clusters"] == 12 and counts["per_setting"]["debias-b6"]["budget"]["per_cluster"] == 6
    table = read_question_set(Path(store) / "questions" / "textual-cloze" / "debias-b6").table()
    spent = Counter(
        c for row in table.to_pylist() for i, c in enumerate(row["meta"]["choice_clusters"]) if i != row["answer"]
    )
    assert [spent[c] for c in range(12)] == counts["per_setting"]["debias-b6"]["budget"]["spent_per_cluster"]
    assert all(v <= 6 for v in spent.values())

    # the sweep (seed 0) rewrites recipeqa and default made above with seed 2: refused without --overwrite
    refused = runner.invoke(app, ["generate", "--task", "textual-cloze", "--sweep", "--store", store])
    assert refused.exit_code == 2 and "--overwrite" in refused.output
    sweep = runner.invoke(
        app, ["generate", "--task", "textual-cloze", "--sweep", "--overwrite", "--policy", "demo", "--store", store]
    )
    assert sweep.exit_code == 0, sweep.output
    assert "textual-cloze/debias-auto" in sweep.output and "title_source" in sweep.output
    written = sorted(p.name for p in (Path(store) / "questions" / "textual-cloze").iterdir())
    assert written == ["adversarial", "debias-auto", "debias-b6", "default", "needs-context", "recipeqa"]
    provenance = Store.open(store).provenance[-1]
    assert provenance["command"] == "generate" and "debias-auto" in provenance["counts"]["per_setting"]
    auto = provenance["counts"]["per_setting"]["debias-auto"]
    assert auto["auto_budget"]["chosen"] == auto["budget"]["per_cluster"] and auto["yield"] >= 0.98


def test_cli_rejects_what_does_not_apply(embedded: Path, ingested_sample: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    store = _store(embedded, tmp_path)
    base = ["generate", "--task", "textual-cloze", "--store", store]
    for extra, message in (
        (["--style", "recipeqa", "--clusters", "5"], "--clusters applies only"),
        (["--knobs", "0,1,1"], "Control-Knobs"),
        (["--debias", "--clusters", "100000"], "distinct titles"),
        (["--adjacent"], "does not apply"),
        (["--min-yield", "0.9"], "apply only with --adversarial"),
        (["--adversarial", "--min-yield", "0"], "--min-yield must be a share in (0, 1]"),
    ):
        result = runner.invoke(app, [*base, *extra])
        assert result.exit_code == 2 and message in result.stderr, (extra, result.output)
        assert "Traceback" not in result.output
    unembedded = shutil.copytree(ingested_sample, tmp_path / "bare")  # ingested, not embedded
    bare = runner.invoke(app, ["generate", "--task", "textual-cloze", "--store", str(unembedded)])
    assert bare.exit_code == 2 and "procbench embed" in bare.stderr


def test_cli_questions_per_procedure(embedded: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    store = _store(embedded, tmp_path)
    result = runner.invoke(
        app, ["generate", "--task", "textual-cloze", "--questions-per-procedure", "2", "--store", store, "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["questions"] == {"default": 90}
