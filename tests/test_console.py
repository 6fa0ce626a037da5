"""Progress output (procbench/cli/_console.py): a bar on a terminal, a plain line per stage when piped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from procbench.cli._console import REPEAT_INTERVAL, LineProgress, progress_mode

from helpers import make_record, write_jsonl


def test_piped_commands_print_a_line_per_stage(tmp_path: Path) -> None:
    records = [make_record(f"p{i}", 5) for i in range(6)]
    path = write_jsonl(tmp_path / "in.jsonl", records)
    env = {k: v for k, v in os.environ.items() if k != "PROCBENCH_PROGRESS"}
    store = str(tmp_path / "s")
    lines = []
    for args in (["ingest", str(path)], ["clean"]):
        done = subprocess.run(
            [sys.executable, "-m", "procbench", *args, "--store", store], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr
        lines += done.stderr.splitlines()
    stages = [line.split("] ", 1)[1] for line in lines]
    assert stages[0].startswith("ingest in.jsonl (") and any(s.startswith("clean: ") for s in stages)
    assert all(line.startswith("[") and line.split("]")[0].strip("[ ").endswith("s") for line in lines)
    assert "\x1b[" not in "".join(lines)  # no bar, no colour, no cursor moves


def test_repeated_stages_print_at_most_a_line_per_interval() -> None:
    printed: list[str] = []
    now = [0.0]
    progress = LineProgress(write=printed.append, clock=lambda: now[0])
    for epoch in range(1, 6):
        progress.start(f"hasty epoch {epoch}/5 · loss 0.{epoch}", total=10)
        progress.advance(10)
        now[0] += REPEAT_INTERVAL / 4
    progress.start("evaluate", total=3)
    now[0] += REPEAT_INTERVAL
    progress.start("hasty epoch 1/5", total=10)
    assert printed == [
        "[    0.0s] hasty epoch 1/5 · loss 0.1 (10)",
        "[   10.0s] hasty epoch 5/5 · loss 0.5 (10)",
        "[   12.5s] evaluate (3)",
        "[   22.5s] hasty epoch 1/5 (10)",
    ]


def test_the_mode_follows_the_environment_then_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, mode in (("bar", "bar"), ("LINES", "lines"), ("off", "off")):
        monkeypatch.setenv("PROCBENCH_PROGRESS", value)
        assert progress_mode() == mode
    for value in ("auto", "", "nonsense"):
        monkeypatch.setenv("PROCBENCH_PROGRESS", value)
        assert progress_mode() == "lines"  # the test's stderr is not a terminal


def test_a_long_stage_prints_its_steps_at_most_once_per_interval() -> None:
    printed: list[str] = []
    now = [0.0]
    progress = LineProgress(write=printed.append, clock=lambda: now[0])
    progress.start("adversarial filtering", total=15)
    for _ in range(4):
        now[0] += REPEAT_INTERVAL / 2
        progress.advance()
    assert printed == [
        "[    0.0s] adversarial filtering (15)",
        "[   10.0s] adversarial filtering 2/15",
        "[   20.0s] adversarial filtering 4/15",
    ]
