from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, SeedOption, StoreOption

NAME = "evaluate"


def command(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Runs, folders of runs, question sets (folder or TASK/SETTING) and sweeps (TASK), in any mix.",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            "-m",
            help=(
                "Reference model to score too: chance, distance-svm, context-tfidf, context-embedding, "
                "context-ridge (repeatable)."
            ),
        ),
    ] = None,
    split: Annotated[
        list[str] | None,
        typer.Option("--split", help="train, val, test or all (repeatable; default test)."),
    ] = None,
    bootstrap: Annotated[int, typer.Option(min=0, help="Bootstrap resamples for the 95% intervals (0: none).")] = 1000,
    allow_changed_sets: Annotated[
        bool,
        typer.Option(
            "--allow-changed-sets",
            help="Score a run on its own question set even when the set changed since training (warns).",
        ),
    ] = False,
    lm_eval: Annotated[
        list[Path] | None,
        typer.Option(
            "--lm-eval",
            help="lm-evaluation-harness results (results_*.json, or a folder of them) of tasks `procbench export "
            "--format lm-eval` wrote: rows 'lm-eval MODEL' and '... (no context)' (repeatable).",
            show_default=False,
        ),
    ] = None,
    lm_eval_metric: Annotated[
        str, typer.Option("--lm-eval-metric", help="lm-eval's metric to read: acc, or acc_norm (per byte).")
    ] = "acc",
    record: Annotated[
        bool,
        typer.Option(
            "--record/--no-record", help="Keep the test scores beside each set (models.json) for the dataset card."
        ),
    ] = True,
    store: StoreOption = DEFAULT_STORE,
    seed: SeedOption = 0,
    json: JsonOption = False,
) -> None:
    """Score trained runs and reference models (--model chance|distance-svm|context-tfidf|context-embedding|
    context-ridge) on question sets. The context readers answer text choices zero-shot by matching them with the
    context; context-ridge answers photo choices (visual cloze, coherence) with a map from step texts to photos
    fitted on the set's train split (score it on val or test).

    A run is scored on its own question set (refused when that set changed since training, unless
    --allow-changed-sets), or on every question set given of its task. Over the settings
    of a sweep the table has models as rows, settings as columns and the mean ± std across settings.
    Sequencing reports Acc, PMR, L_q, L_r, Kendall's tau and Dist against every reference order.
    --lm-eval RESULTS.json adds language models run with lm-eval on `procbench export --format lm-eval` tasks,
    with and without the context; intervals resample procedures from lm-eval's per-question log
    (--log_samples), else come from its standard error (said so). Test scores are kept for the dataset card.
    """
    from rich.markup import escape

    from procbench.cli._console import console, err_console, print_json, progress_bar
    from procbench.models import evaluate, resolve_inputs

    runs, qsets = resolve_inputs(paths or [], store=store)
    with progress_bar() as progress:
        report = evaluate(
            runs=runs,
            qsets=qsets,
            models=model or [],
            splits=split or ["test"],
            bootstrap=bootstrap,
            seed=seed,
            allow_changed_sets=allow_changed_sets,
            lm_eval=lm_eval or [],
            lm_eval_metric=lm_eval_metric,
            record=record,
            store=store,
            progress=progress,
        )
    for warning in report.warnings:
        err_console.print(f"[bold yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    data = report.to_dict()
    if json:
        print_json(data)
        return
    _render(console, data["summary"])
    for note in report.notes:  # names from results files: plain text, never markup
        console.print(f"[dim]intervals:[/] {escape(note)}", highlight=False, soft_wrap=True)


def _cell(value: float, percent: bool) -> str:
    return f"{100 * value:.1f}" if percent else f"{value:.2f}"


def _with_ci(row: dict[str, Any], setting: str, percent: bool, with_ci: bool) -> str:
    ci = row["ci"].get(setting) if with_ci else None
    interval = f" ({_cell(ci[0], percent)}-{_cell(ci[1], percent)})" if ci else ""
    return _cell(row["values"][setting], percent) + interval


def _print_wide(console: Any, table: Any) -> None:
    """Print a table at its natural width, even when wider than the console (a sweep has many columns)."""
    from rich.measure import Measurement

    needed = Measurement.get(console, console.options.update_width(1000), table).maximum
    width = console.width
    console.width = max(width, needed)
    try:
        console.print(table)
    finally:
        console.width = width


def _render(console: Any, summary: dict[str, Any]) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for table in summary["tables"]:
        groups.setdefault((table["task"], table["split"]), []).append(table)
    for (task, split), tables in groups.items():
        settings = {tuple(t["settings"]) for t in tables}
        if len(settings) == 1 and len(next(iter(settings))) == 1:
            # one setting: models as rows, metrics as columns, with intervals
            setting = tables[0]["settings"][0]
            with_ci = len(tables) <= 3
            out = Table(
                title=Text(f"{task}/{setting} · {split}"),
                title_justify="left",
                caption=None if with_ci else "95% bootstrap intervals: --json",
                box=box.SIMPLE_HEAD,
            )
            out.add_column("model", no_wrap=True)
            for t in tables:
                out.add_column(t["label"] + (" %" if t["percent"] else ""), justify="right", no_wrap=True)
            models = list(dict.fromkeys(r["model"] for t in tables for r in t["rows"]))
            for name in models:
                cells = []
                for t in tables:
                    row = next((r for r in t["rows"] if r["model"] == name), None)
                    if row is None:
                        cells.append("-")
                        continue
                    ci = row["ci"][setting] if with_ci else None
                    interval = f" ({_cell(ci[0], t['percent'])}-{_cell(ci[1], t['percent'])})" if ci else ""
                    cells.append(_cell(row["values"][setting], t["percent"]) + interval)
                out.add_row(Text(name), *cells)  # a model name (lm-eval's) is plain text, never markup
            _print_wide(console, out)
            continue
        for t in tables:
            many = len(t["settings"]) > 1
            unit = " %" if t["percent"] else ""
            knobs = any(s.startswith("knobs-") for s in t["settings"])
            with_ci = len(t["settings"]) <= 4  # a few settings: each value with its 95% interval
            out = Table(
                title=Text(f"{task} · {split} · {t['label']}{unit}" + (" · knobs K1K2K3" if knobs else "")),
                title_justify="left",
                caption=None if with_ci else "95% bootstrap intervals: --json",
                box=box.SIMPLE_HEAD,
                padding=(0, 1),
            )
            out.add_column("model", no_wrap=True)
            for setting in t["settings"]:
                out.add_column(Text(setting.removeprefix("knobs-")), justify="right", no_wrap=True)
            if many:
                out.add_column("mean ± std", justify="right", no_wrap=True)
            for row in t["rows"]:
                cells = [_with_ci(row, s, t["percent"], with_ci) if s in row["values"] else "-" for s in t["settings"]]
                if many:
                    cells.append(f"{_cell(row['mean'], t['percent'])}±{_cell(row['std'], t['percent'])}")
                out.add_row(Text(row["model"]), *cells)
            _print_wide(console, out)
    for note in summary.get("skipped", []):
        console.print(f"[yellow]skipped[/]: {escape(note)}", highlight=False)
