from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, SeedOption, StoreOption

NAME = "report"


def command(
    qsets: Annotated[
        list[str] | None,
        typer.Argument(
            help="Question sets: TASK, TASK/SETTING or set folders (default: every set in --store).",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="The folder to write the report into (default: STORE/report, inside the store the sets come from).",
            show_default=False,
        ),
    ] = None,
    runs: Annotated[
        list[Path] | None,
        typer.Option("--runs", help="Trained runs for the sweep table (default: every run under STORE/runs)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Questions shown per set (test first).", min=1)] = 500,
    store: StoreOption = DEFAULT_STORE,
    seed: SeedOption = 0,
    json: JsonOption = False,
) -> None:
    """Write a static HTML report that works offline: browse each set's questions as a person sees them,
    the audit's probes side by side with their intervals, distance histograms and the sweep table.

    Open OUT/index.html in a browser (OUT: STORE/report unless --out says otherwise); nothing is loaded from
    the network. The run is recorded in the store's provenance log.
    """
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.report import write_report

    with progress_bar() as progress:
        result = write_report(qsets, out, store=store, runs=runs, limit=limit, seed=seed, progress=progress)
    if json:
        print_json(result.to_dict())
        return
    console.print(
        f"[bold green]report[/]: {len(result.pages)} sets, {sum(result.questions.values())} questions, "
        f"{result.images} images -> {result.index}",
        highlight=False,
        soft_wrap=True,  # the path stays whole, to be copied
    )
