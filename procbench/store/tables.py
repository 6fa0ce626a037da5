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

from procbench.errors import StoreDamaged

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
    "count_rows",
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


def _damaged(path: Path, why: str) -> StoreDamaged:
    """``path``: the table's folder or file (or one of its parts)."""
    return StoreDamaged(f"damaged store table {path}: {why}")


def read_parts_list(directory: Path) -> list[dict[str, Any]]:
    """The entries (``{"file": ..., "rows": ...}``) of a part-layout table's list file.

    Every entry must name a part file of ``directory`` itself (``part-NNNNN.parquet``, no folder, no link)
    with a whole number of rows.

    Raises:
        StoreDamaged: the list is not JSON, not a list of such entries, or names a file elsewhere.
    """
    listing = directory / PARTS_LIST
    if listing.is_symlink():
        raise _damaged(directory, f"{PARTS_LIST} is a symbolic link")
    try:
        data = json.loads(listing.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _damaged(directory, f"{PARTS_LIST} is not readable JSON ({type(exc).__name__})") from None
    parts = data.get("parts") if isinstance(data, dict) else None
    if not isinstance(parts, list):
        raise _damaged(directory, f"{PARTS_LIST} holds no list of parts")
    entries: list[dict[str, Any]] = []
    for entry in parts:
        name = entry.get("file") if isinstance(entry, dict) else None
        rows = entry.get("rows") if isinstance(entry, dict) else None
        if not isinstance(name, str) or part_number(name) is None or "/" in name or "\\" in name:
            raise _damaged(directory, f"{PARTS_LIST} lists {name!r}, not a part file of the table's folder")
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
            raise _damaged(directory, f"{PARTS_LIST} gives part {name} a row count of {rows!r}")
        entries.append({"file": name, "rows": rows})
    return entries


def _first_line(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return lines[0][:100] if lines else type(exc).__name__


def _inside(root: Path, path: Path) -> bool:
    """Whether ``path`` is no symbolic link and lies (links resolved) in ``root``."""
    return not path.is_symlink() and path.resolve().is_relative_to(root.resolve())


def locate(root: Path, name: str) -> TableFiles:
    """Find table ``name`` under the store ``root``: the part list wins over ``<name>.parquet``.

    (While a transaction converts a table from one layout to the other, both exist for a moment; the part
    list is moved in last when converting to parts and removed first when converting to a file.)

    Raises:
        StoreDamaged: the table's folder, part list or file is a symbolic link or lies outside the store, or
            its part list is damaged (:func:`read_parts_list`).
    """
    directory = root / name
    if (directory / PARTS_LIST).is_file() or (directory / PARTS_LIST).is_symlink():
        if not _inside(root, directory):
            raise _damaged(directory, "its folder is a symbolic link or lies outside the store")
        entries = read_parts_list(directory)
        return TableFiles(
            name, PARTS, tuple(directory / e["file"] for e in entries), tuple(int(e["rows"]) for e in entries)
        )
    path = root / f"{name}.parquet"
    if path.is_symlink():
        raise _damaged(path, "it is a symbolic link")
    if path.is_file():
        return TableFiles(name, FILE, (path,))
    return TableFiles(name, None, ())


def _open_part(path: Path, expected_rows: int | None) -> pq.ParquetFile:
    """Open one Parquet file of a table, refusing links, a missing or non-Parquet file and a wrong row count."""
    if path.is_symlink():
        raise _damaged(path, "it is a symbolic link")
    try:
        handle = pq.ParquetFile(path, memory_map=True)
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as exc:
        raise _damaged(path, f"not a Parquet file ({_first_line(exc)})") from None
    if expected_rows is not None and handle.metadata.num_rows != expected_rows:
        raise _damaged(path, f"{PARTS_LIST} says {expected_rows} rows, the part holds {handle.metadata.num_rows}")
    return handle


def read_files(files: Sequence[Path], columns: Sequence[str] | None, rows: Sequence[int] | None = None) -> pa.Table:
    """The rows of ``files`` in order (only ``columns`` when given); a column a file lacks is null there.

    ``rows``: the row count the part list records for each file, checked against the file.
    """
    expected: Sequence[int | None] = rows if rows is not None else [None] * len(files)
    pieces = []
    for path, count in zip(files, expected, strict=True):
        handle = _open_part(path, count)
        try:
            if len(files) == 1:
                return pq.read_table(path, columns=list(columns) if columns is not None else None, memory_map=True)
            if columns is None:
                pieces.append(handle.read())
            else:
                present = set(handle.schema_arrow.names)
                pieces.append(handle.read(columns=[c for c in columns if c in present]))
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise _damaged(path, f"cannot be read ({_first_line(exc)})") from None
    table = pa.concat_tables(pieces, promote_options="default")
    if columns is not None:
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise KeyError(f"no column {missing[0]!r} in any part of the table")
        table = table.select(list(columns))
    return table


def _missing_part(files: Sequence[Path], exc: FileNotFoundError) -> str:
    """Which listed part is missing, named (pyarrow's error does not always carry the file name)."""
    gone = [path.name for path in files if not path.exists()]
    if gone:
        return f"its part {gone[0]} is missing"
    return f"its part {Path(exc.filename).name} is missing" if exc.filename else "one of its parts is missing"


def read_table(root: Path, name: str, columns: Sequence[str] | None = None) -> pa.Table | None:
    """Table ``name`` (only ``columns`` when given), None when it was never written.

    A part-layout table with no parts reads as None too (the caller supplies the declared empty table).

    Raises:
        StoreDamaged: a listed part is missing (after re-reading the list in case a writer replaced it), is
            not Parquet, has another row count than the list says, or the list is damaged.
    """
    for attempt in range(_READ_ATTEMPTS):
        found = locate(root, name)
        if not found.files:
            return None
        try:
            return read_files(found.files, columns, found.rows)
        except FileNotFoundError as exc:  # a writer replaced the list and removed the parts we were about to read
            if attempt == _READ_ATTEMPTS - 1:
                raise _damaged(root / name, _missing_part(found.files, exc)) from None
    raise AssertionError("unreachable")


def read_schema(root: Path, name: str) -> pa.Schema | None:
    """The table's schema from the files' footers only (the parts' schemas unified), None if never written."""
    for attempt in range(_READ_ATTEMPTS):
        found = locate(root, name)
        if not found.files:
            return None
        try:
            schemas = [
                _open_part(path, count).schema_arrow
                for path, count in zip(found.files, found.rows or [None] * len(found.files), strict=True)
            ]
        except FileNotFoundError as exc:
            if attempt == _READ_ATTEMPTS - 1:
                raise _damaged(root / name, _missing_part(found.files, exc)) from None
            continue
        return schemas[0] if len(schemas) == 1 else pa.unify_schemas(schemas, promote_options="default")
    raise AssertionError("unreachable")


def count_rows(root: Path, name: str) -> int:
    """Rows of table ``name`` from its files' footers, each part checked against its part list; 0 if unwritten.

    Raises:
        StoreDamaged: as :func:`read_table`.
    """
    for attempt in range(_READ_ATTEMPTS):
        found = locate(root, name)
        try:
            return sum(
                _open_part(path, count).metadata.num_rows
                for path, count in zip(found.files, found.rows or [None] * len(found.files), strict=True)
            )
        except FileNotFoundError as exc:
            if attempt == _READ_ATTEMPTS - 1:
                raise _damaged(root / name, _missing_part(found.files, exc)) from None
    raise AssertionError("unreachable")


def split_rows(table: pa.Table, part_rows: int) -> list[pa.Table]:
    """``table`` cut into consecutive slices of at most ``part_rows`` rows (one, possibly empty, at least)."""
    if table.num_rows <= part_rows:
        return [table]
    return [table.slice(start, part_rows) for start in range(0, table.num_rows, part_rows)]
