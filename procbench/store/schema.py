"""Arrow schemas of the store's tables (DESIGN §3).

Later stages may add columns (``clean`` adds ``title_clean``, ``keep`` ...); :func:`conform` keeps
such extra columns and fills the declared ones that a table lacks with nulls.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["IMAGES", "PROCEDURES", "SCHEMA_VERSION", "STEPS", "TABLES", "conform", "empty_table"]

#: Bumped whenever a table's declared columns change meaning or type.
SCHEMA_VERSION = 1

PROCEDURES = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("url", pa.string()),
        pa.field("title", pa.string(), nullable=False),
        pa.field("category", pa.list_(pa.string())),
        pa.field("author", pa.string()),
        pa.field("license", pa.string()),
        pa.field("language", pa.string()),
        pa.field("n_steps", pa.int32(), nullable=False),
        pa.field("fetched_at", pa.timestamp("s", tz="UTC")),
        pa.field("split", pa.string()),
    ]
)

STEPS = pa.schema(
    [
        pa.field("procedure_id", pa.string(), nullable=False),
        pa.field("index", pa.int32(), nullable=False),
        pa.field("title", pa.string()),
        pa.field("text", pa.string(), nullable=False),
        pa.field("image_ids", pa.list_(pa.string()), nullable=False),
        # Name of the wikiHow part or method the step belongs to (null when the procedure has one list).
        pa.field("part", pa.string()),
        # What the step is: "step"; "part" / "method" for a step of a multi-part / multi-method wikiHow
        # article; "intro" / "supplies" for Instructables' Introduction and Supplies; null when unknown.
        pa.field("kind", pa.string()),
    ]
)

IMAGES = pa.schema(
    [
        # sha256 of the normalised bytes; ``url:<sha256 of url>`` for a remote image not yet fetched.
        pa.field("id", pa.string(), nullable=False),
        pa.field("procedure_id", pa.string(), nullable=False),
        pa.field("step_index", pa.int32(), nullable=False),
        pa.field("url", pa.string()),
        pa.field("width", pa.int32()),
        pa.field("height", pa.int32()),
        # True when the normalised bytes are under images/ (False: only the URL is known).
        pa.field("stored", pa.bool_(), nullable=False),
    ]
)

TABLES: dict[str, pa.Schema] = {"procedures": PROCEDURES, "steps": STEPS, "images": IMAGES}


def empty_table(schema: pa.Schema) -> pa.Table:
    """A zero-row table with ``schema``."""
    return schema.empty_table()


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Return ``table`` with the columns of ``schema`` first (cast, nulls where missing), extra columns after."""
    arrays = []
    fields = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            if column.type != field.type:
                column = column.cast(field.type)
        else:
            column = pa.nulls(table.num_rows, field.type)
        arrays.append(column)
        fields.append(field.with_nullable(True) if column.null_count else field)
    for name in table.column_names:
        if name not in schema.names:
            arrays.append(table.column(name))
            fields.append(table.schema.field(name))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=schema.metadata))
