from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from procbench.cli._options import (
    DEFAULT_STORE,
    EngineOption,
    JsonOption,
    RayAddressOption,
    RayWorkersOption,
    StoreOption,
)

NAME = "clean"


def command(
    manifest: Annotated[
        Path | None,
        typer.Option(
            "--manifest", "-m", help="Manifest (TOML) whose \\[clean] section sets the defaults.", show_default=False
        ),
    ] = None,
    min_steps: Annotated[
        int | None,
        typer.Option("--min-steps", min=0, show_default=False, help="Drop procedures with fewer steps (default 3)."),
    ] = None,
    max_steps: Annotated[
        int | None,
        typer.Option("--max-steps", min=0, show_default=False, help="Drop procedures with more steps (default 25)."),
    ] = None,
    language: Annotated[
        list[str] | None,
        typer.Option(
            "--language",
            "-l",
            show_default=False,
            help="Allowed language (ISO 639-1), repeatable (default: en). 'any' keeps every language.",
        ),
    ] = None,
    min_language_confidence: Annotated[
        float | None,
        typer.Option(
            "--min-language-confidence",
            min=0.0,
            max=1.0,
            show_default=False,
            help="Detected-language probability from which detection decides (default 0.9).",
        ),
    ] = None,
    min_words: Annotated[
        int | None,
        typer.Option(
            "--min-words",
            min=0,
            show_default=False,
            help="Drop procedures with fewer words in their steps (default 3).",
        ),
    ] = None,
    category: Annotated[
        list[str] | None,
        typer.Option(
            "--category", show_default=False, help="Keep only procedures in this category (any level), repeatable."
        ),
    ] = None,
    exclude_category: Annotated[
        list[str] | None,
        typer.Option("--exclude-category", show_default=False, help="Drop procedures in this category, repeatable."),
    ] = None,
    keyword: Annotated[
        list[str] | None,
        typer.Option(
            "--keyword",
            show_default=False,
            help="Keep only procedures mentioning one of these words (title or steps), repeatable.",
        ),
    ] = None,
    exclude_keyword: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude-keyword",
            show_default=False,
            help="Drop procedures whose title or slug mentions this word, repeatable.",
        ),
    ] = None,
    split: Annotated[
        bool | None, typer.Option("--split/--no-split", show_default=False, help="Split fused words (default: split).")
    ] = None,
    ascii_only: Annotated[
        bool | None,
        typer.Option(
            "--ascii/--no-ascii", show_default=False, help="Remove non-ASCII characters (paper 004; default: keep)."
        ),
    ] = None,
    dedupe: Annotated[
        bool | None,
        typer.Option(
            "--dedupe/--no-dedupe", show_default=False, help="Drop exact and near duplicates (default: drop)."
        ),
    ] = None,
    near_duplicate_threshold: Annotated[
        float | None,
        typer.Option(
            "--near-duplicate-threshold",
            min=0.0,
            max=1.0,
            show_default=False,
            help="Word-bigram Jaccard from which procedures with similar titles are duplicates (default 0.5).",
        ),
    ] = None,
    examples: Annotated[
        int | None,
        typer.Option(
            "--examples", min=0, show_default=False, help="Before/after examples per rule in the report (default 3)."
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", min=1, show_default=False, help="Processes for the text rules (default: CPUs, at most 4)."
        ),
    ] = None,
    engine: EngineOption = "local",
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = None,
    store: StoreOption = DEFAULT_STORE,
    json: JsonOption = False,
) -> None:
    """Clean the store: normalise text, split fused words, drop non-English / too short / off-domain /
    duplicate procedures, and report what each rule touched or removed.

    Raw columns are kept: steps gain title_clean and text_clean, procedures gain keep and drop_reason,
    so cleaning can be redone with other settings. Cleaning a clean store changes nothing. With --engine
    ray the text rules run as Ray tasks over shards of steps (the same result as --workers).
    """
    from procbench.clean import CleanOptions, clean_store
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.engine import Engine
    from procbench.errors import BadInput
    from procbench.manifest import load_manifest
    from procbench.store import Store

    options = load_manifest(manifest).clean_options() if manifest else CleanOptions()
    languages = None if language is None else ([] if [v.lower() for v in language] == ["any"] else language)
    options = options.replace(
        min_steps=min_steps,
        max_steps=max_steps,
        languages=languages,
        min_language_confidence=min_language_confidence,
        min_words=min_words,
        categories=category,
        exclude_categories=exclude_category,
        keywords=keyword,
        exclude_keywords=exclude_keyword,
        split_fused=split,
        ascii_only=ascii_only,
        dedupe=dedupe,
        near_duplicate_threshold=near_duplicate_threshold,
        examples=examples,
    )
    where = Engine.parse(engine, address=ray_address, workers=ray_workers)
    if workers is not None and where.is_ray:
        raise BadInput("--workers is for --engine local; with --engine ray use --ray-workers")
    opened = Store.open(store)
    with progress_bar() as progress:
        report = clean_store(opened, options=options, progress=progress, workers=workers, engine=where)
    if json:
        print_json({"store": str(opened.root), **report.to_dict()})
        return
    _render(console, str(opened.root), report.to_dict())


def _render(console: Any, where: str, report: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    from procbench.clean.report import VOCABULARY_NOTE, snippet_pair

    table = Table(
        "rule",
        "kind",
        "procedures",
        "steps",
        "tokens",
        "example",
        title="What each rule did",
        title_justify="left",
        show_lines=False,
    )
    for rule in report["rules"]:
        lines = []
        for ex in rule["examples"]:
            if rule["kind"] == "text":
                before, after = snippet_pair(ex["before"], ex["after"] or "", context=12)
                lines.append(f"{_short(before)} -> {_short(after)}")
            else:
                lines.append(f"{ex['procedure_id']}: {ex['after']}")
        example = "\n".join(lines)
        verb = "touched" if rule["kind"] == "text" else "removed"
        table.add_row(
            rule["rule"], verb, str(rule["procedures"]), str(rule["steps"]), str(rule["tokens"]), Text(example)
        )
    console.print(table)
    vocab = report["in_vocabulary"]
    console.print(
        f"in-vocabulary tokens: [bold]{vocab['before']:.1%}[/] before, [bold]{vocab['after']:.1%}[/] after, "
        f"[bold]{vocab['after_kept']:.1%}[/] in kept procedures ({VOCABULARY_NOTE})",
        highlight=False,
    )
    languages = ", ".join(f"{k}={v}" for k, v in list(report["languages"].items())[:8])
    if languages:
        console.print(f"languages detected: {languages}; filled {report['language_filled']} missing", highlight=False)
    written = ", ".join(report["written"]) or "nothing (already clean)"
    n_no_text = report["kept_steps_without_text"]
    no_text = f", {n_no_text} of them without text, kept for their title or images" if n_no_text else ""
    console.print(
        f"[bold green]cleaned[/] {where}: kept {report['kept']} of {report['procedures']} procedures "
        f"({report['kept_steps']} of {report['steps']} steps{no_text}); wrote {written}. "
        f"Examples: `procbench clean --json --store {where}`",
        highlight=False,
    )


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
