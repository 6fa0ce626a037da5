from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, SeedOption, StoreOption

NAME = "export"


def command(
    qsets: Annotated[
        list[str],
        typer.Argument(help="Question sets: TASK (every setting), TASK/SETTING, or set folders.", show_default=False),
    ],
    to: Annotated[Path, typer.Option("--to", help="The folder to write the dataset repository into.")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="Output format: 'hf' (Hugging Face dataset layout), 'lm-eval' (lm-evaluation-harness tasks) or"
            " 'label-studio' (a blinded sample as a Label Studio import and labeling config, with key.json for"
            " score-packet).",
        ),
    ] = "hf",
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
    n: Annotated[
        int | None,
        typer.Option(
            "--n",
            help="label-studio: questions drawn from each set (default: at most 40, fewer when the split holds"
            " fewer from distinct procedures).",
            min=1,
            show_default=False,
        ),
    ] = None,
    context: Annotated[
        str, typer.Option("--context", help="label-studio: 'with' or 'without' the context.")
    ] = "without",
    split: Annotated[
        str, typer.Option("--split", help="label-studio: the split to sample: test, val, train, all.")
    ] = "test",
    store: StoreOption = DEFAULT_STORE,
    seed: SeedOption = 0,
    json: JsonOption = False,
) -> None:
    """Export question sets as a self-contained Hugging Face dataset: one config per setting, texts inlined,
    images embedded, a dataset card (README.md) and Croissant metadata (croissant.json).

    Load it with `datasets.load_dataset(DIR, SETTING)`; --push-to-hub OWNER/NAME uploads it.
    --format lm-eval writes lm-evaluation-harness tasks instead, with and without the context (the visual
    tasks for vision-language models, images inlined; DIR/README.md: how to run them; `procbench evaluate
    --lm-eval RESULTS.json` reads the results back).
    """
    from procbench.cli._console import console, print_json, progress_bar

    if fmt == "lm-eval":
        _export_lm_eval(qsets, to, store=store, overwrite=overwrite, push_to_hub=push_to_hub, json=json)
        return
    from procbench.export import export_sets
    from procbench.export import push_to_hub as push

    if fmt == "label-studio":
        _label_studio(
            qsets, to, store=store, n=n, context=context, seed=seed, split=split, overwrite=overwrite, json=json
        )
        return
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


def _label_studio(
    qsets: list[str],
    to: Path,
    *,
    store: Path,
    n: int | None,
    context: str,
    seed: int,
    split: str,
    overwrite: bool,
    json: bool,
) -> None:
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.readers.sheet import write_label_studio

    with progress_bar() as progress:
        sample = write_label_studio(
            qsets,
            to,
            store=store,
            n=n,
            context=context,
            seed=seed,
            split=split,
            overwrite=overwrite,
            progress=progress,
        )
    if json:
        print_json(sample.to_dict())
        return
    from rich.text import Text

    if sample.note:
        console.print(Text(sample.note), highlight=False)
    console.print(
        Text("label-studio", style="bold green")
        + Text(
            f": packet {sample.packet_id}, {sample.questions} questions -> {sample.main} and "
            f"{to / 'labeling_config.xml'} (key: {to / 'key.json'}, keep it from annotators)"
        ),
        highlight=False,
    )


def _export_lm_eval(
    qsets: list[str], to: Path, *, store: Path, overwrite: bool, push_to_hub: str | None, json: bool
) -> None:
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.errors import BadInput
    from procbench.export.lmeval import export_lm_eval

    if push_to_hub:
        raise BadInput("--push-to-hub uploads Hugging Face datasets: use it with --format hf")
    with progress_bar() as progress:
        result = export_lm_eval(qsets, to, store=store, overwrite=overwrite, progress=progress)
    if json:
        print_json(result.to_dict())
        return
    for group, tasks in result.groups.items():
        console.print(f"[bold]{group}[/]: " + ", ".join(tasks), highlight=False)
    for name, why in result.skipped.items():
        console.print(f"[yellow]skipped[/] {name}: {why}", highlight=False)
    visual = [g for g in result.groups if g.startswith("visual_")]
    text = [g for g in result.groups if g not in visual]
    runs = [
        f"lm_eval --model {backend} --model_args pretrained=MODEL --tasks {','.join(groups)} "
        f"--include_path {result.out.resolve()}"
        for backend, groups in (("hf", text), ("hf-multimodal", visual))
        if groups
    ]
    console.print(
        f"[bold green]exported[/] {len(result.tasks)} lm-eval tasks to {result.out} "
        f"(run: {'; images: '.join(runs)}; see {result.out / 'README.md'})",
        highlight=False,
        soft_wrap=True,
    )
