from __future__ import annotations

from typing import Annotated

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, SeedOption, StoreOption

NAME = "filter"


def command(
    qset: Annotated[str, typer.Argument(help="The question set: a set folder, or TASK/SETTING in --store.")],
    aflite: Annotated[
        bool,
        typer.Option(
            "--aflite", help="AFLite: repeatedly drop the questions that linear models on context-free features solve."
        ),
    ] = False,
    target_size: Annotated[
        int | None,
        typer.Option("--target-size", help="Stop at this many questions (default: when none is predictable).", min=1),
    ] = None,
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="linear (discriminants on the features and the choice embedding) or trees (the audit's "
            "partial_input gradient-boosted trees: catches non-linear shortcuts, slower).",
        ),
    ] = "linear",
    partitions: Annotated[
        int | None,
        typer.Option("--partitions", help="Random procedure halvings per round (default 64 linear, 8 trees).", min=1),
    ] = None,
    threshold: Annotated[
        float, typer.Option("--threshold", help="Remove only questions predicted correctly at least this often.")
    ] = 0.75,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="Replace a filtered set of the same name made with other options."),
    ] = False,
    store: StoreOption = DEFAULT_STORE,
    seed: SeedOption = 0,
    json: JsonOption = False,
) -> None:
    """Filter a question set into a new setting next to it (SETTING-aflite): card, provenance, same seed same bytes.

    --aflite (Le Bras et al. 2020): each round fits linear models on random halves of the procedures over
    context-free per-choice features (distances and their ranks, length, word overlap, frequency, the choice
    embedding) and removes the questions the held-out models answer most often; --model trees uses the
    audit's partial_input gradient-boosted trees instead (SETTING-aflite-trees).
    """
    from procbench.audit.aflite import filter_question_set
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.errors import BadInput

    if not aflite:
        raise BadInput("choose a filter: --aflite")
    with progress_bar() as progress:
        folder, result = filter_question_set(
            qset,
            store=store,
            target_size=target_size,
            seed=seed,
            overwrite=overwrite,
            progress=progress,
            model=model,
            n_partitions=partitions,
            threshold=threshold,
        )
    summary = {"setting": folder.name, "path": str(folder), **result.summary()}
    if json:
        print_json(summary)
        return
    console.print(
        f"AFLite kept {summary['kept']} of {summary['kept'] + summary['removed']} questions "
        f"in {len(result.rounds)} rounds -> {folder}",
        highlight=False,
        soft_wrap=True,
    )
