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
    answer_sheet: Annotated[
        int | None,
        typer.Option(
            "--answer-sheet",
            min=1,
            show_default=False,
            help="Answer mode: write only a page where a person answers N blinded questions of each set (as"
            " `procbench packet` samples them) and downloads the answers; the key goes to OUT/key.json.",
        ),
    ] = None,
    context: Annotated[
        str, typer.Option("--context", help="Answer mode: 'with' or 'without' each question's context.")
    ] = "without",
    split: Annotated[
        str, typer.Option("--split", help="Answer mode: the split to sample: test, val, train, all.")
    ] = "test",
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Answer mode: replace an answer sheet in --out.")
    ] = False,
    store: StoreOption = DEFAULT_STORE,
    seed: SeedOption = 0,
    json: JsonOption = False,
) -> None:
    """Write a static HTML report that works offline: browse each set's questions as a person sees them,
    the audit's probes side by side with their intervals, distance histograms and the sweep table.

    Open OUT/index.html in a browser (OUT: STORE/report unless --out says otherwise); nothing is loaded from
    the network. The run is recorded in the store's provenance log. With --answer-sheet N, the report
    is an answer sheet instead: people answer blinded questions offline and download a JSON of answers that
    `procbench score-packet OUT ANSWERS.json` scores (keep OUT/key.json from them).
    """
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.report import write_report

    if answer_sheet is not None:
        if out is None:
            from procbench.errors import BadInput

            raise BadInput("--answer-sheet needs --out: the answer page and its key.json are written there")
        _answer_mode(qsets or [], out, store, answer_sheet, context, split, seed, overwrite, json)
        return
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


def _answer_mode(
    qsets: list[str], out: Path, store: Path, n: int, context: str, split: str, seed: int, overwrite: bool, json: bool
) -> None:
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.readers.sheet import write_answer_page

    with progress_bar() as progress:
        result = write_answer_page(
            qsets,
            out,
            store=store,
            n=n,
            context=context,
            seed=seed,
            split=split,
            overwrite=overwrite,
            progress=progress,
        )
    if json:
        print_json(result.to_dict())
        return
    from rich.text import Text

    console.print(  # paths printed as plain text, never as markup
        Text("answer sheet", style="bold green")
        + Text(
            f": packet {result.packet_id}, {result.questions} questions, context {result.context} -> {result.main} "
            f"(key: {result.out / 'key.json'}, keep it from readers)"
        ),
        highlight=False,
    )
