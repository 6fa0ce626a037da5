from __future__ import annotations

from typing import Annotated, Any

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, StoreOption

NAME = "info"

_COUNTS_WIDTH = 70


def command(
    history: Annotated[
        int, typer.Option("--history", min=0, help="Provenance entries shown, newest last (0: all; --json: all).")
    ] = 10,
    store: StoreOption = DEFAULT_STORE,
    json: JsonOption = False,
) -> None:
    """Show what the store holds: counts by source and category, later stages' outputs, each table's layout
    (one file or N parts) and size, provenance."""
    from procbench.cli._console import console, print_json
    from procbench.store import Store

    summary = Store.open(store).summary()
    if json:
        print_json(summary)
        return
    _render(console, summary, history=history)


def _render(console: Any, summary: dict[str, Any], *, history: int) -> None:
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
    stages = dict(summary["stages"])
    clean = stages.pop("clean", None)
    if clean is not None:
        dropped = ", ".join(f"{k} {v}" for k, v in clean["dropped"].items()) or "none"
        console.print(f"[bold]clean[/]: kept {clean['kept']} procedures; dropped: {dropped}", highlight=False)
    splits = stages.pop("splits", None)
    if splits:
        console.print("[bold]splits[/]: " + ", ".join(f"{k} {v}" for k, v in splits.items()), highlight=False)
    embeddings = stages.pop("embeddings", None)
    indexes = set(stages.pop("indexes", []))
    if embeddings:
        table = Table("embedding", "rows", "dim", "encoder", "index", title="Embeddings", title_justify="left")
        for name, meta in embeddings.items():
            table.add_row(
                name,
                str(meta.get("rows", "")),
                str(meta.get("dim", "")),
                str(meta.get("encoder", "")),
                "yes" if name in indexes else "no",
            )
        console.print(table)
    sets = stages.pop("question_sets", None)
    if sets:
        table = Table("question set", "train", "val", "test", title="Question sets", title_justify="left")
        for name, sizes in sets.items():
            table.add_row(name, *(str(sizes.get(s, 0)) for s in ("train", "val", "test")))
        console.print(table)
    tables = summary.get("tables")
    if tables:
        table = Table("table", "layout", "rows", "size", title="Tables", title_justify="left")
        for name, meta in tables.items():
            layout = "file" if meta["layout"] == "file" else f"{meta['files']} parts"
            table.add_row(name, layout, str(meta["rows"]), _size(meta["bytes"]))
        console.print(table)
    for stage, value in stages.items():
        text = ", ".join(f"{k} {v}" for k, v in value.items()) if isinstance(value, dict) else str(value)
        console.print(f"[bold]{stage}[/]: {text}", highlight=False)
    entries = summary["provenance"]
    if entries:
        shown = entries[-history:] if history else entries
        title = "Provenance" + (
            f" (last {len(shown)} of {len(entries)}; --history 0 for all)" if len(shown) < len(entries) else ""
        )
        table = Table("time (UTC)", "command", "seed", "counts", title=title, title_justify="left")
        for entry in shown:
            seed = "-" if entry["seed"] is None else str(entry["seed"])
            table.add_row(entry["time"], entry["command"], seed, _counts(entry["counts"]))
        console.print(table)


def _size(n: int) -> str:
    """Bytes as ``812 B``, ``3.4 kB``, ``12.0 MB`` (powers of 1000)."""
    value = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def _counts(counts: dict[str, Any]) -> str:
    """The scalar counts of a provenance entry on one short line (nested ones: `procbench info --json`)."""
    flat: dict[str, Any] = {}
    for key, value in counts.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    parts = [f"{k}={v}" for k, v in flat.items() if isinstance(v, (int, float, str)) and v not in (0, None, "")]
    nested = sum(1 for v in flat.values() if isinstance(v, (dict, list)))
    text = ", ".join(parts)
    if len(text) > _COUNTS_WIDTH:
        text = text[: _COUNTS_WIDTH - 3] + "..."
    return text + (f" (+{nested} nested: --json)" if nested else "")
