from __future__ import annotations

from typing import Any

from procbench.cli._options import DEFAULT_STORE, JsonOption, StoreOption

NAME = "info"


def command(store: StoreOption = DEFAULT_STORE, json: JsonOption = False) -> None:
    """Show what the store holds: counts by source and category, later stages' outputs, provenance."""
    from procbench.cli._console import console, print_json
    from procbench.store import Store

    summary = Store.open(store).summary()
    if json:
        print_json(summary)
        return
    _render(console, summary)


def _render(console: Any, summary: dict[str, Any]) -> None:
    from rich.table import Table

    console.print(
        f"[bold]{summary['path']}[/]: {summary['procedures']} procedures, {summary['steps']} steps, "
        f"{summary['images']} images ({summary['images_stored']} stored)",
        highlight=False,
    )
    groups = (("by_source", "source"), ("by_category", "category (root)"), ("by_subcategory", "category (2 levels)"))
    for key, title in groups:
        if summary[key]:
            table = Table(title, "procedures", "steps", "images", title=title.capitalize(), title_justify="left")
            for category, counts in summary[key].items():
                table.add_row(category, str(counts["procedures"]), str(counts["steps"]), str(counts["images"]))
            console.print(table)
    for stage, value in summary["stages"].items():
        console.print(f"[bold]{stage}[/]: {value}", highlight=False)
    if summary["provenance"]:
        table = Table("time (UTC)", "command", "seed", "counts", title="Provenance", title_justify="left")
        for entry in summary["provenance"]:
            counts = ", ".join(f"{k}={v}" for k, v in entry["counts"].items())
            table.add_row(entry["time"], entry["command"], str(entry["seed"]), counts)
        console.print(table)
