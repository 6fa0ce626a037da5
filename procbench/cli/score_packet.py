from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from procbench.cli._options import JsonOption

NAME = "score-packet"


def command(
    packet: Annotated[Path, typer.Argument(help="The packet folder (procbench packet --out).", show_default=False)],
    answers: Annotated[
        list[Path],
        typer.Argument(
            help='Answers files: {"Q01": "B", ...} ("B?" or {"answer": "B", "ambiguous": true} marks a question'
            " ambiguous), or a Label Studio export.",
            show_default=False,
        ),
    ],
    reader: Annotated[
        str | None,
        typer.Option("--reader", help="Label of the reader (default: the answers file's name).", show_default=False),
    ] = None,
    record: Annotated[
        bool,
        typer.Option(
            "--record/--no-record", help="Record the scores with each set (readers.json, shown by card and report)."
        ),
    ] = True,
    json: JsonOption = False,
) -> None:
    """Score readers' answers to a packet: accuracy with its 95% Wilson interval per set, the share marked
    ambiguous, and the questions left unanswered (counted wrong).

    The scores are recorded with each set (readers.json beside its files) so that the dataset card and the
    report show them beside the audit's probes; --no-record only prints them.
    """
    from rich.table import Table
    from rich.text import Text

    from procbench.cli._console import console, err_console, print_json
    from procbench.readers.score import SHOW_IDS, score_packet

    result = score_packet(packet, list(answers), reader=reader, record=record)
    if json:
        print_json(result.to_dict())
        return

    def ids(values: list[str]) -> str:
        more = f" and {len(values) - SHOW_IDS:,} more" if len(values) > SHOW_IDS else ""
        return ", ".join(values[:SHOW_IDS]) + more

    # every name (reader, set, ids, paths) is anyone's text: printed as plain text, never as Rich markup
    for warning in result.warnings:
        err_console.print(Text("warning: ", style="bold yellow") + Text(warning), highlight=False, soft_wrap=True)
    table = Table(
        title=Text(
            f"Packet {result.packet_id}, context {result.context}: accuracy [95% Wilson interval];"
            " missing: unanswered (counted wrong)"
        ),
        title_justify="left",
    )
    table.add_column("reader", overflow="fold")
    table.add_column("set", overflow="fold")
    for column in ("n", "right", "accuracy", "ambiguous", "missing"):
        table.add_column(column, justify="right", no_wrap=True)
    for s in result.scores:
        lo, hi = s.ci
        table.add_row(
            Text(s.reader),
            Text(s.set),
            str(s.n),
            str(s.correct),
            Text(f"{s.accuracy:.1%} [{100 * lo:.1f}-{100 * hi:.1f}]"),
            f"{s.ambiguous_share:.1%}",
            str(len(s.unanswered)),
        )
    console.print(table)
    for s in result.scores:
        if s.unanswered:
            line = Text(f"{s.reader} left {len(s.unanswered)} of {s.set} unanswered", style="yellow")
            console.print(line + Text(": " + ids(s.unanswered)), highlight=False)
    for name, unknown in result.unknown.items():
        line = Text(f"{name} answered {len(unknown):,} ids not in the packet", style="yellow")
        console.print(line + Text(": " + ids(unknown)), highlight=False)
    for name, path in result.recorded.items():
        console.print(Text(f"recorded with {name} -> {path}"), highlight=False)
