from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, StoreOption

NAME = "export"


def command(
    qsets: Annotated[
        list[str],
        typer.Argument(help="Question sets: TASK (every setting), TASK/SETTING, or set folders.", show_default=False),
    ],
    to: Annotated[Path, typer.Option("--to", help="The folder to write the dataset repository into.")],
    fmt: Annotated[str, typer.Option("--format", help="Output format: 'hf' (Hugging Face dataset layout).")] = "hf",
    push_to_hub: Annotated[
        str | None,
        typer.Option(
            "--push-to-hub", help="Upload the folder to this Hub dataset repository (OWNER/NAME; needs a token)."
        ),
    ] = None,
    private: Annotated[bool, typer.Option("--private", help="With --push-to-hub: create a private repo.")] = False,
    contact: Annotated[
        str | None,
        typer.Option(
            "--contact",
            envvar="PROCBENCH_CONTACT",
            help="Who answers questions about the dataset (e-mail or URL), written into the card's Contact section "
            "(default: env PROCBENCH_CONTACT). With --push-to-hub the card also points to the repository's "
            "discussions.",
        ),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an earlier export in --to.")] = False,
    store: StoreOption = DEFAULT_STORE,
    json: JsonOption = False,
) -> None:
    """Export question sets as a self-contained Hugging Face dataset: one config per setting, texts inlined,
    images embedded, a dataset card (README.md) and Croissant metadata (croissant.json).

    Load it with `datasets.load_dataset(DIR, SETTING)`; --push-to-hub OWNER/NAME uploads it.
    """
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.export import export_sets
    from procbench.export import push_to_hub as push

    with progress_bar() as progress:
        result = export_sets(
            qsets,
            to,
            store=store,
            fmt=fmt,
            overwrite=overwrite,
            progress=progress,
            repo_id=push_to_hub,
            contact=contact,
        )
    if push_to_hub:
        result.url = push(to, push_to_hub, private=private)
    if json:
        print_json(result.to_dict())
        return
    for config, splits in result.configs.items():
        console.print(f"[bold]{config}[/]: " + ", ".join(f"{k} {v}" for k, v in splits.items()), highlight=False)
    console.print(
        f"[bold green]exported[/] {len(result.configs)} configs, {result.images} images to {result.out}"
        + (f" and {result.url}" if result.url else ""),
        highlight=False,
    )
