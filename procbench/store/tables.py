"""Where a table's rows live on disk: one Parquet file, or a directory of Parquet part-files.

Two layouts, read the same way (:func:`read_table`):

- ``file``: ``STORE/<name>.parquet``, the original layout. Appending rewrites the file.
- ``parts``: ``STORE/<name>/part-NNNNN.parquet`` plus ``STORE/<name>/_parts.json``, the list of parts in
  row order. Appending adds one part and replaces the list; nothing else is rewritten. The directory is a
  plain pyarrow / Ray dataset (readers skip ``_``-prefixed files), and :func:`table_files` gives the parts in
  order for a reader that shards them (``ray.data.read_parquet(files)``).

The list file, not the directory listing, decides which parts belong to the table: a transaction moves its
new parts in first and the list last, so a reader sees the old rows or the new ones, never a part without
the rest. Rows read in list order, then row order, so a table appended in k parts reads equal to the same
rows appended to one file.

Parts may differ in columns (a batch appended before ``clean`` added ``keep``): reading fills a part's
missing columns with nulls, exactly as an append to one file does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = [
    "DEFAULT_PART_ROWS",
    "FILE",
    "FORMAT_FILES_ONLY",
    "FORMAT_WITH_PARTS",
    "LAYOUTS",
    "PARTS",
    "PARTS_LIST",
    "Layout",
    "TableFiles",
    "locate",
    "part_file_name",
    "part_number",
    "read_files",
    "read_schema",
    "read_table",
    "split_rows",
]

Layout = Literal["file", "parts"]
FILE: Layout = "file"
PARTS: Layout = "parts"
LAYOUTS: tuple[Layout, ...] = (FILE, PARTS)
#: The list of a part-layout table's files, in row order (its name starts with ``_``: dataset readers skip it).
PARTS_LIST = "_parts.json"
#: Store format of a store whose tables are all single files (older procbench reads it).
FORMAT_FILES_ONLY = 1
#: Store format once a table uses (or new tables default to) the part layout: older procbench refuses it
#: instead of taking a part-layout table for a missing one.
FORMAT_WITH_PARTS = 2
#: Rows per part when a whole table is (re)written in the part layout (an append writes one part, any size).
DEFAULT_PART_ROWS = 250_000
_PART = re.compile(r"^part-(\d+)\.parquet$")
#: How often a read starts again when a writer replaced the part list (and removed old parts) under it.
_READ_ATTEMPTS = 5


@dataclass(frozen=True)
class TableFiles:
    """A table as found on disk.

    Attributes:
        name: the table's name.
        layout: ``"file"``, ``"parts"``, or None when the table was never written.
        files: its Parquet files in row order (one for ``file``; the listed parts for ``parts``).
        rows: the rows of each file, as the part list records them (None for the ``file`` layout).
    """

    name: str
    layout: Layout | None
    files: tuple[Path, ...]
    rows: tuple[int, ...] | None = None


def part_file_name(number: int) -> str:
    """``part-00012.parquet`` (more digits past 99999)."""
    return f"part-{number:05d}.parquet"


def part_number(file_name: str) -> int | None:
    """The number of a part file name, None for any other name."""
    match = _PART.match(file_name)
    return int(match.group(1)) if match else None


def read_parts_list(directory: Path) -> list[dict[str, Any]]:
    """The entries (``{"file": ..., "rows": ...}``) of a part-layout table's list file."""
    data = json.loads((directory / PARTS_LIST).read_text(encoding="utf-8"))
    return list(data["parts"])


def locate(root: Path, name: str) -> TableFiles:
    """Find table ``name`` under the store ``root``: the part list wins over ``<name>.parquet``.

    (While a transaction converts a table from one layout to the other, both exist for a moment; the part
    list is moved in last when converting to parts and removed first when converting to a file.)
    """
    directory = root / name
    if (directory / PARTS_LIST).is_file():
        entries = read_parts_list(directory)
        return TableFiles(
            name, PARTS, tuple(directory / e["file"] for e in entries), tuple(int(e["rows"]) for e in entries)
        )
    path = root / f"{name}.parquet"
    if path.is_file():
        return TableFiles(name, FILE, (path,))
    return TableFiles(name, None, ())


def read_files(files: Sequence[Path], columns: Sequence[str] | None) -> pa.Table:
    """The rows of ``files`` in order (only ``columns`` when given); a column a file lacks is null there."""
    if len(files) == 1:
        return pq.read_table(files[0], columns=list(columns) if columns is not None else None, memory_map=True)
    pieces = []
    for path in files:
        handle = pq.ParquetFile(path, memory_map=True)
        if columns is None:
            pieces.append(handle.read())
        else:
            present = set(handle.schema_arrow.names)
            pieces.append(handle.read(columns=[c for c in columns if c in present]))
    table = pa.concat_tables(pieces, promote_options="default")
    if columns is not None:
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise KeyError(f"no column {missing[0]!r} in any part of the table")
        table = table.select(list(columns))
    return table


def read_table(root: Path, name: str, columns: Sequence[str] | None = None) -> pa.Table | None:
    """Table ``name`` (only ``columns`` when given), None when it was never written.

    A part-layout table with no parts reads as None too (the caller supplies the declared empty table).
    """
    for attempt in range(_READ_ATTEMPTS):
        found = locate(root, name)
        if not found.files:
            return None
        try:
            return read_files(found.files, columns)
        except FileNotFoundError:  # a writer replaced the list and removed the parts we were about to read
            if attempt == _READ_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def read_schema(root: Path, name: str) -> pa.Schema | None:
    """The table's schema from the files' footers only (the parts' schemas unified), None if never written."""
    for attempt in range(_READ_ATTEMPTS):
        found = locate(root, name)
        if not found.files:
            return None
        try:
            schemas = [pq.read_schema(path) for path in found.files]
        except FileNotFoundError:
            if attempt == _READ_ATTEMPTS - 1:
                raise
            continue
        return schemas[0] if len(schemas) == 1 else pa.unify_schemas(schemas, promote_options="default")
    raise AssertionError("unreachable")


def split_rows(table: pa.Table, part_rows: int) -> list[pa.Table]:
    """``table`` cut into consecutive slices of at most ``part_rows`` rows (one, possibly empty, at least)."""
    if table.num_rows <= part_rows:
        return [table]
    return [table.slice(start, part_rows) for start in range(0, table.num_rows, part_rows)]
