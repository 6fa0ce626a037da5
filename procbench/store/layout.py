"""Convert a store's tables between the one-file and the part layout (:mod:`procbench.store.tables`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from procbench.errors import BadInput
from procbench.progress import SILENT, Progress
from procbench.store._store import Store
from procbench.store.tables import LAYOUTS, Layout

__all__ = ["LayoutReport", "set_layout"]


@dataclass
class LayoutReport:
    """What :func:`set_layout` did: the new default and, per table, its files before and after."""

    layout: Layout
    part_rows: int | None
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"layout": self.layout, "part_rows": self.part_rows, "tables": self.tables}


def set_layout(
    store: Store, layout: Layout, *, part_rows: int | None = None, progress: Progress = SILENT
) -> LayoutReport:
    """Rewrite every table of ``store`` in ``layout`` and make it the layout of tables written later.

    ``"parts"``: each table becomes ``STORE/<name>/part-*.parquet`` cut every ``part_rows`` rows (the store's
    setting, 250,000 unless set); from then on an append (``ingest``, a ``scrape`` batch) adds one part
    instead of rewriting the table. Run again on a part-layout store, it compacts many small parts into even
    ones. ``"file"``: each table becomes one ``STORE/<name>.parquet`` again. Rows keep their order; one
    transaction, so an interrupted run leaves the store as it was.

    Raises:
        BadInput: an unknown layout or a ``part_rows`` below 1.
    """
    if layout not in LAYOUTS:
        raise BadInput(f"unknown layout {layout!r}: use one of {', '.join(LAYOUTS)}")
    if part_rows is not None and part_rows < 1:
        raise BadInput(f"--part-rows must be at least 1, not {part_rows}")
    report = LayoutReport(layout, part_rows)
    args: dict[str, Any] = {"layout": layout, "part_rows": part_rows}
    with store.transaction("layout", args=args) as txn:
        txn.settings["table_layout"] = layout
        if part_rows is not None:
            txn.settings["part_rows"] = part_rows
        before = store.tables_info()
        progress.start("layout", total=len(before))
        for name, info in before.items():
            txn.write_table(name, store.table(name), layout=layout)
            report.tables[name] = {"rows": info["rows"], "files_before": info["files"]}
            progress.advance()
        txn.counts["tables"] = len(before)
    for name, info in store.tables_info().items():
        if name in report.tables:
            report.tables[name]["files_after"] = info["files"]
            report.tables[name]["bytes"] = info["bytes"]
    return report
