"""What later stages read: kept procedures and their steps, with cleaned text where ``clean`` has run."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from procbench.store._store import Store

__all__ = ["kept_procedures", "kept_steps"]


def kept_procedures(store: Store, columns: Sequence[str] | None = None) -> pa.Table:
    """Procedures that ``clean`` kept (all of them before ``clean`` has run).

    Procedures imported after the last ``clean`` (``keep`` is null) are left out until it runs again.
    """
    available = store.columns("procedures")
    wanted = list(columns or ()) or [c for c in available if c not in ("keep", "drop_reason")]
    if "keep" not in available:
        return store.table("procedures", wanted)
    table = store.table("procedures", list(dict.fromkeys([*wanted, "keep"])))
    return table.filter(pc.fill_null(table["keep"], False)).select(wanted)


def kept_steps(store: Store, columns: list[str] | None = None) -> pa.Table:
    """Steps of kept procedures in authored order: ``procedure_id, index, title, text, image_ids``.

    ``title`` and ``text`` are ``title_clean`` and ``text_clean`` when the store has been cleaned.
    ``columns``: only these (``procedure_id`` and ``index`` are read anyway, to order the steps).
    """
    wanted = columns or ["procedure_id", "index", "title", "text", "image_ids"]
    cleaned = {"title_clean", "text_clean"} <= set(store.columns("steps"))
    source = {"title": "title_clean", "text": "text_clean"} if cleaned else {}
    read = list(dict.fromkeys(["procedure_id", "index", *wanted]))
    steps = store.table("steps", [source.get(name, name) for name in read]).rename_columns(read)
    keep_ids = kept_procedures(store, ["id"])["id"]
    steps = steps.filter(pc.is_in(steps["procedure_id"], value_set=keep_ids))
    return steps.sort_by([("procedure_id", "ascending"), ("index", "ascending")]).select(wanted)
