from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, StoreOption

NAME = "evaluate-extraction"


def command(
    gold: Annotated[Path, typer.Argument(help="Gold JSONL: procedure_id, step, [sentence], [key], tuples.")],
    predictions: Annotated[
        Path | None,
        typer.Option("--predictions", help="Score this JSONL (the gold format) instead of STORE/actions.parquet."),
    ] = None,
    all_verbs: Annotated[
        bool, typer.Option("--all-verbs", help="Score every extracted tuple, not only the lexicon's (w/o heur.).")
    ] = False,
    store: StoreOption = DEFAULT_STORE,
    json: JsonOption = False,
) -> None:
    """Score extracted tuples against gold (paper 002 §6, App. D).

    Stage 1: accuracy, precision, recall and F1 of key sentences. Stage 2: verb and argument precision,
    recall and F1 under exact, fuzzy (normalised Levenshtein, best one-to-one assignment) and partial fuzzy
    matching, on gold key units (oracle) and on predicted key units.
    """
    from procbench.cli._console import console, print_json
    from procbench.extract import evaluate_extraction
    from procbench.store import Store

    opened = Store.open(store) if predictions is None else None
    report = evaluate_extraction(gold, store=opened, predictions_path=predictions, all_verbs=all_verbs)
    if json:
        print_json(report)
        return
    _render(console, report)


def _render(console: Any, report: dict[str, Any]) -> None:
    from rich.table import Table

    s1 = report["stage1"]
    console.print(
        f"[bold]{report['predictions']}[/] vs {report['gold']}: {report['units']} units "
        f"({report['gold_key_units']} key)",
        highlight=False,
    )
    console.print(
        f"stage 1 (key sentences): accuracy {s1['accuracy']:.1%}, precision {s1['precision']:.1%}, "
        f"recall {s1['recall']:.1%}, F1 {s1['f1']:.1%}",
        highlight=False,
    )
    table = Table("key units", "phrases", "match", "P", "R", "F1", "TP", "#pred", "#gold", title="Stage 2")
    for setting, data in report["stage2"].items():
        for kind in ("verbs", "arguments"):
            for mode, s in data[kind].items():
                table.add_row(
                    setting,
                    kind,
                    mode,
                    f"{s['precision']:.1%}",
                    f"{s['recall']:.1%}",
                    f"{s['f1']:.1%}",
                    f"{s['tp']:.2f}",
                    str(s["n_predicted"]),
                    str(s["n_gold"]),
                )
    console.print(table)
