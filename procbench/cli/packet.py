from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, SeedOption, StoreOption

NAME = "packet"


def command(
    qsets: Annotated[
        list[str],
        typer.Argument(help="Question sets: TASK (every setting), TASK/SETTING, or set folders.", show_default=False),
    ],
    out: Annotated[Path, typer.Option("--out", help="The folder to write the packet into.", show_default=False)],
    n: Annotated[
        int | None,
        typer.Option(
            "--n",
            help="Questions drawn from each set (default: at most 40, fewer when the split holds fewer from"
            " distinct procedures).",
            min=1,
            show_default=False,
        ),
    ] = None,
    context: Annotated[
        str, typer.Option("--context", help="'with': show each question's context; 'without': the question alone.")
    ] = "without",
    split: Annotated[
        str, typer.Option("--split", help="The split questions are drawn from: test, val, train or all.")
    ] = "test",
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a packet already in --out.")] = False,
    store: StoreOption = DEFAULT_STORE,
    seed: SeedOption = 0,
    json: JsonOption = False,
) -> None:
    """Write a blinded reader packet: --n questions of each set for people or language-model readers.

    OUT/packet.md is the answer sheet (neutral ids Q01, Q02, ..., choices reshuffled so the answer letters are
    uniform, at most one question per procedure, nothing that names the set, source or answer), OUT/packet.json
    its JSON twin, OUT/images/ the images of visual questions under neutral names. OUT/key.json is the key:
    keep it from readers. Score the answers with `procbench score-packet OUT ANSWERS.json`.
    """
    from rich.text import Text

    from procbench.cli._console import console, print_json, progress_bar
    from procbench.readers.packet import make_packet

    with progress_bar() as progress:
        result = make_packet(
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
    for name, count in result.per_set.items():  # names and paths printed as plain text, never as markup
        console.print(Text(name, style="bold") + Text(f": {count} questions"), highlight=False)
    if result.note:
        console.print(Text(result.note), highlight=False)
    console.print(
        Text("packet", style="bold green")
        + Text(
            f" {result.packet_id} of {result.questions} questions, context {result.context}, {result.images} images"
            f" -> {result.out / 'packet.md'} (key: {result.out / 'key.json'}, keep it from readers)"
        ),
        highlight=False,
    )
