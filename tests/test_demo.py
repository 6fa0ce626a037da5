from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from procbench.cli import app
from procbench.corpus import load_sample
from procbench.demo import DEMO_PACKET_QUESTIONS, DEMO_VISUAL_SETTINGS
from procbench.store import Store


@pytest.mark.slow  # the whole pipeline on the sample: about a minute and a half on two idle cores
def test_demo_builds_the_sample_store_and_is_rerunnable(tmp_path: Path) -> None:
    from procbench.cli.demo import next_command
    from procbench.tasks import TASKS

    runner = CliRunner()
    store = tmp_path / "demo"
    first = runner.invoke(app, ["demo", "--store", str(store)])
    assert first.exit_code == 0, first.output
    # it says where the store and the report are, then its last screen is the table of the recommended sets
    lines = first.stdout.rstrip("\n").splitlines()
    assert f"store  {store}" in lines and f"report {store / 'report' / 'index.html'} (open it in a browser)" in lines
    title = next(i for i, line in enumerate(lines) if "The recommended set of every task" in line)
    assert title > lines.index(f"store  {store}")
    table = "\n".join(lines[title:])
    for spec in TASKS.values():  # the first column (never wrapped): each task above its recommended setting
        assert re.search(rf"^\s*{spec.name}\s.*\n\s*{spec.recommended}\s", table, re.MULTILINE), spec.name
    assert "run the next command" in " ".join(line.strip() for line in lines[-3:])  # the table's caption ends it
    assert "[" not in first.stdout  # no list repr of the plots' paths, no markup left

    second = runner.invoke(app, ["demo", "--store", str(store), "--json"])  # stages skip what is done
    assert second.exit_code == 0, second.output
    result = json.loads(second.stdout)
    sample = load_sample()
    assert result["procedures"] == len(sample)
    assert result["steps"] == sum(len(r["steps"]) for r in sample)
    opened = Store.open(store)
    assert opened.table("procedures").num_rows == len(sample)
    images = opened.table("images")
    assert images.num_rows == result["steps"] and all(images["stored"].to_pylist())
    assert all(opened.image_path(i).is_file() for i in images["id"].to_pylist())
    report = Path(result["report"])
    assert report == store / "report" / "index.html" and report.is_file()
    assert "hasty-choice-only" in report.read_text()  # the sweep table of the demo's runs
    # the demo's audit size, stated in the report (procbench audit: 5 folds, 1000 replicates, 150 x 255 trees)
    stated = "Audited with 3 procedure-grouped folds; 200 bootstrap replicates per interval; partial-input trees of "
    assert stated + "60 boosting iterations over 63 bins per feature." in report.read_text()
    generated = result["stages"]["generate"]
    assert len(list((store / "report" / "sets").glob("*.html"))) == len(generated)
    assert {f"{task}/{s.name}" for task, settings in DEMO_VISUAL_SETTINGS.items() for s in settings} <= set(generated)

    # the recommended set of every task: built, audited, with its report page and (multiple choice) a packet
    rows = {row["task"]: row for row in result["recommended"]}
    assert set(rows) == set(TASKS.names())
    for spec in TASKS.values():
        row = rows[spec.name]
        assert row["setting"] == spec.recommended
        assert row["questions"] == generated[f"{spec.name}/{spec.recommended}"] > 0, row
        assert row["verdict"].startswith(("nothing flagged", "flagged: ")), row
        assert (store / row["report"]).is_file(), row
        if spec.family == "sequencing":
            assert row["packet"] is None
        else:
            packet = (store / row["packet"]).read_text()
            shown = min(DEMO_PACKET_QUESTIONS, row["questions"])  # a small set (the sample's ordering) gives fewer
            assert re.findall(r"^## (Q\d+)$", packet, re.MULTILINE) == [f"Q{i:02d}" for i in range(1, shown + 1)]
            assert (store / row["packet"]).with_name("key.json").is_file()
    assert rows["visual-cloze"]["setting"] == rows["visual-coherence"]["setting"] == "needs-context"

    # the next command of a row works: a reader's answers to the packet, scored
    command = next_command(rows["textual-cloze"], str(store), "procbench").split()[1:]
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({f"Q{i:02d}": "A" for i in range(1, DEMO_PACKET_QUESTIONS + 1)}))
    command[command.index("ANSWERS.json")] = str(answers)
    tried = runner.invoke(app, command)
    assert tried.exit_code == 0, tried.output
    assert (store / "questions" / "textual-cloze" / "needs-context" / "readers.json").is_file()

    plots = result["stages"]["audit"]["plots"]
    assert plots and all((store / p).is_file() and p.startswith("audit-plots/") and p.endswith(".png") for p in plots)
    # audit --per-question's scores: the report's shortcut-score filter is there for the multiple-choice sets
    assert result["stages"]["audit"]["shortcut_scores"] > 0
    page = (store / "report" / "sets" / "textual-cloze--default.html").read_text()
    assert (store / "questions" / "textual-cloze" / "default" / "shortcut_scores.parquet").is_file()
    assert '"has_scores":true' in page and 'id="score"' in page
    commands = [e["command"] for e in opened.provenance]
    assert {"scrape", "clean", "embed", "extract", "generate", "audit", "train", "report"} <= set(commands)


def test_the_next_command_runs_procbench_as_this_shell_can(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import shutil
    import sys

    from procbench.cli.demo import launcher

    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/procbench")
    assert launcher() == "procbench"
    monkeypatch.setattr(shutil, "which", lambda name: None)
    script = tmp_path / ".venv" / "bin" / "procbench"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [".venv/bin/procbench", "demo"])
    assert launcher() == ".venv/bin/procbench"
    monkeypatch.setattr(sys, "argv", ["-c"])
    assert launcher() == f"{sys.executable} -m procbench"


def test_make_demo_ends_by_saying_how_to_run_procbench() -> None:
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    root = Path(__file__).resolve().parents[1]
    planned = subprocess.run(
        ["make", "-n", "-C", str(root), "demo", "VENV=.venv"], capture_output=True, text=True, check=True
    ).stdout
    after = planned.split(".venv/bin/procbench demo", 1)[1]
    assert ". .venv/bin/activate" in after and ".venv/bin/procbench --help" in after


def test_every_setting_the_demo_sizes_takes_the_demo_policy() -> None:
    """The demo passes ``policy`` to each adversarial setting it generates: each task's options must take it
    (an option a task does not take is a BadInput, and the demo stops on it)."""
    from procbench.generate.options import options_class

    tasks = {"textual-cloze"} | {
        t for t, settings in DEMO_VISUAL_SETTINGS.items() if any(s.style == "adversarial" for s in settings)
    }
    for task in tasks:
        assert "policy" in options_class(task).names(), task
