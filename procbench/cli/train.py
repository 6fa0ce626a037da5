from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, SeedOption, StoreOption

NAME = "train"

# Kept as a literal so that `procbench --help` does not import procbench.models (checked by a test).
_MODELS = (
    "hasty-choice-only, hasty, impatient-reader, bidaf, htrn (multiple choice); pair-order; "
    "pairwise-sort, order-pointer (sequencing)"
)


def command(
    qset: Annotated[
        str,
        typer.Argument(help="Question set: its folder, TASK/SETTING in the store, or a sweep (TASK: every setting)."),
    ],
    model: Annotated[str, typer.Option("--model", "-m", help=f"Model to train: {_MODELS}.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory (for a sweep: one run per setting in it).")],
    epochs: Annotated[int, typer.Option(min=1, help="At most this many epochs.")] = 30,
    patience: Annotated[int, typer.Option(min=1, help="Stop after this many epochs without a better val score.")] = 5,
    batch_size: Annotated[int, typer.Option(min=1, help="Questions per step.")] = 32,
    lr: Annotated[float, typer.Option(help="Adam learning rate.")] = 5e-4,
    hidden: Annotated[int, typer.Option(min=2, help="Encoder / transformer width (paper 001: 512).")] = 256,
    layers: Annotated[
        int | None,
        typer.Option(min=1, show_default=False, help="Transformer layers (default: htrn 4, pointer 2)."),
    ] = None,
    heads: Annotated[int, typer.Option(min=1, help="Attention heads.")] = 8,
    ffn: Annotated[
        int | None, typer.Option(min=1, show_default=False, help="Feed-forward size (default 2 x hidden).")
    ] = None,
    dropout: Annotated[float, typer.Option(min=0.0, max=0.99, help="Dropout.")] = 0.1,
    context: Annotated[
        str, typer.Option(help="Multiple choice: context steps as 'text' or 'both' (+ step images, the answer's too).")
    ] = "text",
    features: Annotated[str, typer.Option(help="Ordering tasks: step features 'text', 'image' or 'both'.")] = "both",
    max_context: Annotated[int, typer.Option(min=1, help="Context steps kept per question.")] = 25,
    title: Annotated[bool, typer.Option("--title/--no-title", help="Ordering models also read the title.")] = True,
    threads: Annotated[
        int | None, typer.Option(min=1, show_default=False, help="CPU threads for torch (default: torch's own).")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a different run already in --out.")] = False,
    store: StoreOption = DEFAULT_STORE,
    seed: SeedOption = 0,
    json: JsonOption = False,
) -> None:
    """Train a baseline on a question set (or on every setting of a sweep) from the store's frozen embeddings.

    Adam, cross-entropy over the choices, early stopping on the validation score. The run directory holds
    config.json, the best weights (model.safetensors), the last state (last.pt), train.jsonl and
    metrics.json. Re-running the same command resumes an interrupted run; a finished run returns at once.
    """
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.models import TrainConfig, question_sets, train_many

    config = TrainConfig(
        model=model,
        hidden=hidden,
        layers=layers,
        heads=heads,
        ffn=ffn,
        dropout=dropout,
        context=context,
        features=features,
        max_context=max_context,
        title=title,
        lr=lr,
        batch_size=batch_size,
        epochs=epochs,
        patience=patience,
        seed=seed,
    )
    targets = question_sets(qset, store=store)
    with progress_bar() as progress:
        results = train_many(targets, config, out, overwrite=overwrite, threads=threads, progress=progress)
    if json:
        print_json({"runs": [r.to_dict() for r in results]})
        return
    for r in results:
        _render(console, r.to_dict())


def _render(console: Any, r: dict[str, Any]) -> None:
    def scores(split: str) -> str:
        values = r["metrics"].get(split)
        if not values:
            return f"{split} -"
        if "accuracy" in values:
            return f"{split} {values['accuracy']:.1%}"
        return f"{split} Acc {values['acc']:.1%} PMR {values['pmr']:.1%} tau {values['tau']:.2f}"

    missing = sum(r["missing"].values())
    console.print(
        f"[bold green]{r['model']}[/] on {r['qset']} -> {r['run']}: best epoch {r['best_epoch']} of {r['epochs']} "
        f"(stopped: {r['stopped']}), {r['parameters']:,} parameters, {r['seconds']:.1f} s",
        highlight=False,
    )
    console.print("  " + " · ".join(scores(s) for s in ("train", "val", "test")), highlight=False)
    if missing:
        console.print(f"  [yellow]{missing} items had no vector (zeros used): {r['missing']}[/]", highlight=False)
