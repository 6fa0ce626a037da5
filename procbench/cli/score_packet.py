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
    from rich.markup import escape
    from rich.table import Table

    from procbench.cli._console import console, print_json
    from procbench.readers.score import score_packet

    result = score_packet(packet, list(answers), reader=reader, record=record)
    if json:
        print_json(result.to_dict())
        return
    table = Table(
        title=f"Packet {result.packet_id}, context {result.context}: accuracy [95% Wilson interval];"
        " missing: unanswered (counted wrong)",
        title_justify="left",
    )
    table.add_column("reader", overflow="fold")
    table.add_column("set", overflow="fold")
    for column in ("n", "right", "accuracy", "ambiguous", "missing"):
        table.add_column(column, justify="right", no_wrap=True)
    for s in result.scores:
        lo, hi = s.ci
        table.add_row(
            escape(s.reader),
            escape(s.set),
            str(s.n),
            str(s.correct),
            f"{s.accuracy:.1%} [{100 * lo:.1f}-{100 * hi:.1f}]",
            f"{s.ambiguous_share:.1%}",
            str(len(s.unanswered)),
        )
    console.print(table)
    for s in result.scores:
        if s.unanswered:
            console.print(
                f"[yellow]{escape(s.reader)} left {len(s.unanswered)} of {escape(s.set)} unanswered[/]: "
                + ", ".join(s.unanswered),
                highlight=False,
            )
    for name, ids in result.unknown.items():
        console.print(f"[yellow]{escape(name)} answered ids not in the packet[/]: {', '.join(ids)}", highlight=False)
    for name, path in result.recorded.items():
        console.print(f"recorded with {escape(name)} -> {path}", highlight=False)
