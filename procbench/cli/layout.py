from __future__ import annotations

from typing import Annotated

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, StoreOption

NAME = "layout"


def command(
    layout: Annotated[str, typer.Argument(help="parts: a directory of part-files per table; file: one file each.")],
    part_rows: Annotated[
        int | None,
        typer.Option(
            "--part-rows", min=1, show_default=False, help="Rows per part when a table is rewritten (default 250000)."
        ),
    ] = None,
    store: StoreOption = DEFAULT_STORE,
    json: JsonOption = False,
) -> None:
    """Store every table as a directory of Parquet part-files (parts) or as one Parquet file (file).

    With parts, ingest and each scrape batch add one part instead of rewriting a table, and Ray or any
    pyarrow dataset reader can read the parts in parallel; running `layout parts` again compacts small parts.
    The setting also applies to tables written later (an empty store is created if there is none).
    The store's format becomes 2 while any table has parts: older procbench versions refuse it.
    """
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.errors import BadInput
    from procbench.store import Store
    from procbench.store.layout import set_layout
    from procbench.store.tables import FILE, LAYOUTS, PARTS

    if layout not in LAYOUTS:
        raise BadInput(f"unknown layout {layout!r}: use one of {', '.join(LAYOUTS)}")
    chosen = PARTS if layout == PARTS else FILE
    opened = Store.open(store, create=True)
    with progress_bar() as progress:
        report = set_layout(opened, chosen, part_rows=part_rows, progress=progress)
    if json:
        print_json({"store": str(opened.root), **report.to_dict()})
        return
    tables = ", ".join(f"{name} {t['rows']} rows in {t['files_after']} file(s)" for name, t in report.tables.items())
    console.print(
        f"[bold green]{opened.root}[/]: layout {report.layout}; {tables or 'no tables yet'}", highlight=False
    )
