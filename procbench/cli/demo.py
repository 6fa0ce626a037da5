from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from procbench.cli._options import JsonOption, SeedOption

NAME = "demo"


def command(
    store: Annotated[Path, typer.Option("--store", help="Where to build the demo store.")] = Path("procbench-demo"),
    seed: SeedOption = 0,
    json: JsonOption = False,
) -> None:
    """Run the whole working pipeline offline on the bundled sample corpus and summarise it.

    Builds a store from 45 team-written How-To procedures (woodworking, decoration, cooking) with
    generated step images (coloured shapes, not photos), generates every task (visual ones in four settings:
    recipeqa, the knobs all off and all on, adversarial), audits, trains two quick baselines and ends with a
    static HTML report in STORE/report. The last three lines say where the store and the report are and what
    to try next. Safe to re-run: stages skip what is already done.
    """
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.demo import run_demo

    with progress_bar() as progress:
        result = run_demo(store, seed=seed, progress=progress)
    if json:
        print_json(result)
        return
    for stage, counts in result["stages"].items():
        console.print(f"[bold]{stage}[/]: " + _counts(counts), highlight=False)
    for line in closing_lines(result, launcher()):
        console.print(line, highlight=False, soft_wrap=True)


def _counts(counts: dict[str, Any]) -> str:
    """``key=value, ...``; a list shows as its length (the plots' paths are in --json and on disk)."""
    return ", ".join(f"{k}={len(v) if isinstance(v, list) else v}" for k, v in counts.items())


def launcher() -> str:
    """How to run procbench from here: ``procbench`` when it is on PATH, else the path this run was started
    with (``.venv/bin/procbench`` after ``make demo``), else ``python -m procbench``."""
    import shlex
    import shutil
    import sys

    if shutil.which("procbench"):
        return "procbench"
    started = Path(sys.argv[0])
    if started.name == "procbench" and started.is_file():
        return shlex.quote(os.path.relpath(started) if not started.is_absolute() else str(started))
    return f"{shlex.quote(sys.executable)} -m procbench"


def closing_lines(result: dict[str, Any], command: str) -> list[str]:
    """The demo's last three lines: the store, the report, the next command to try (a blinded reading check of the
    set whose questions need their context: answer ``reading-check/packet.md``, then ``procbench score-packet``)."""
    import shlex

    store = shlex.quote(result["store"])
    return [
        f"[bold green]store[/]:  {result['store']} ({result['procedures']} procedures, {result['steps']} steps, "
        f"{result['images']} images)",
        f"[bold green]report[/]: {result['report']} (open it in a browser)",
        f"[bold green]next[/]:   {command} packet textual-cloze/needs-context --split all --n 10 --out reading-check "
        f"--store {store}",
    ]
