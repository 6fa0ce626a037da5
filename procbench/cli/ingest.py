from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, StoreOption

NAME = "ingest"


def command(
    file: Annotated[Path, typer.Argument(help="File to import.", show_default=False)],
    format: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="jsonl (one procedure per line; README: Import format) or recipeqa (RecipeQA's JSON).",
        ),
    ] = "jsonl",
    images: Annotated[
        Path | None,
        typer.Option("--images", help="Folder that local image paths are relative to (default: the file's folder)."),
    ] = None,
    max_image_side: Annotated[int, typer.Option(help="Longest side of stored images, in pixels.", min=16)] = 512,
    allow_outside: Annotated[
        bool,
        typer.Option(
            "--allow-outside",
            help="Read local images outside the file's folder and --images too (absolute paths, ../, links).",
        ),
    ] = False,
    store: StoreOption = DEFAULT_STORE,
    json: JsonOption = False,
) -> None:
    """Import procedures from a JSONL file or RecipeQA's JSON into the store.

    Re-importing a file adds nothing (ids are stable). Bad lines are reported with their line number and
    skipped; everything else is imported in one atomic step, so an interrupted import changes nothing.
    """
    from rich.markup import escape

    from procbench.cli._console import console, err_console, print_json, progress_bar
    from procbench.ingest import ingest_file

    with progress_bar() as progress:
        report = ingest_file(
            store,
            file,
            format=format,
            images_dir=images,
            max_image_side=max_image_side,
            allow_outside=allow_outside,
            progress=progress,
        )
    if json:
        print_json(report.to_dict())
        return
    for problem in report.problems:
        err_console.print(f"[yellow]skipped[/] {escape(f'{file}:{problem}')}", highlight=False, soft_wrap=True)
    for ref, why in report.image_failures[:20]:
        err_console.print(f"[yellow]image skipped[/] {escape(f'{ref}: {why}')}", highlight=False, soft_wrap=True)
    counts = report.counts()
    console.print(
        f"[bold green]ingested[/] {counts['added']} procedures from {file} into {store} "
        f"({counts['already_present']} already there, {counts['malformed']} malformed, "
        f"{counts['duplicates_in_file']} duplicate; images: {counts['images_stored']} stored, "
        f"{counts['images_remote']} by URL, {counts['images_failed']} failed)",
        highlight=False,
    )
