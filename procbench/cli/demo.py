from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    generated step images, and ends with a static HTML report (STORE/report/index.html, path printed).
    Safe to re-run: stages skip what is already done.
    """
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.demo import run_demo

    with progress_bar() as progress:
        result = run_demo(store, seed=seed, progress=progress)
    if json:
        print_json(result)
        return
    for stage, counts in result["stages"].items():
        console.print(f"[bold]{stage}[/]: " + ", ".join(f"{k}={v}" for k, v in counts.items()), highlight=False)
    console.print(
        f"[bold green]demo store ready[/] at {result['store']}: {result['procedures']} procedures, "
        f"{result['steps']} steps, {result['images']} images. Next: `procbench info --store {result['store']}`",
        highlight=False,
    )
    console.print(f"[bold green]report[/]: open {result['report']}", highlight=False)
