"""An export's target folder: what ``--overwrite`` may replace, and nothing else.

Every export writes a marker (:data:`EXPORT_MARKER`) naming its format and the files it wrote. ``--overwrite``
replaces only a folder holding a marker of the same format, and of it only the files the marker lists (and that
the format writes, so a crafted marker names nothing else); a symbolic link where the export writes, or a file
of the user's where it would write, is refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from procbench.errors import BadInput

__all__ = ["EXPORT_MARKER", "ExportFormat", "is_link", "prepare_target", "read_marker"]

#: The file every export writes into its folder: its format and the files it wrote.
EXPORT_MARKER = ".procbench-export.json"


@dataclass(frozen=True)
class ExportFormat:
    """One kind of export.

    Attributes:
        marker: the marker's ``format`` value (another format's folder is not replaced by this one).
        label: how messages name such an export.
        writes: whether a path (relative to the folder) is one this format writes.
    """

    marker: str
    label: str
    writes: Callable[[str], bool]


def is_link(path: Path) -> bool:
    """A symbolic link (or a Windows junction)."""
    return path.is_symlink() or (hasattr(path, "is_junction") and path.is_junction())


def read_marker(out: Path, kind: ExportFormat) -> list[str] | None:
    """The files an earlier export of ``kind`` listed in its marker (only paths ``kind`` writes), None when ``out``
    holds no readable marker of ``kind``."""
    marker = out / EXPORT_MARKER
    if not marker.is_file() or is_link(marker):
        return None
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != kind.marker or not isinstance(data.get("files"), list):
        return None
    return [f for f in data["files"] if isinstance(f, str) and kind.writes(f)]


def _refuse_links(out: Path, relpaths: list[str]) -> None:
    """Refuse a planned file (or a folder on its way) under ``out`` that is a symbolic link."""
    for rel in relpaths:
        path = out
        for part in Path(rel).parts:
            path = path / part
            if is_link(path):
                raise BadInput(f"{path} is a symbolic link; export writes only real files and folders in --to")


def prepare_target(out: Path, planned: list[str], kind: ExportFormat, *, overwrite: bool) -> None:
    """Make ``out`` ready for the ``planned`` files (relative paths) and write ``kind``'s marker listing them:
    ``out`` is new or empty, or (with ``overwrite``) an earlier export of ``kind`` whose own files are removed,
    then the folders it made if they are empty. Nothing else in ``out`` is touched.

    Raises:
        BadInput: ``out`` is a file or a link to no folder, is not empty (without ``overwrite``), is not an earlier
            export of ``kind``, holds a symbolic link where the export writes, or holds a file of the user's where
            it would write.
    """
    if is_link(out) and not out.is_dir():
        raise BadInput(f"{out} is a symbolic link to no folder; choose another --to")
    if out.exists() and not out.is_dir():
        raise BadInput(f"{out} is a file, not a folder; choose another --to")
    owned: list[str] = []
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise BadInput(f"{out} is not empty; choose another --to or pass --overwrite")
        listed = read_marker(out, kind)
        if listed is None:
            raise BadInput(
                f"{out} is not an earlier {kind.label} (no {EXPORT_MARKER} of one); --overwrite replaces only such "
                "an export's own files: choose an empty or new --to"
            )
        owned = listed
    _refuse_links(out, sorted(set(owned) | set(planned)))
    foreign = [rel for rel in planned if (out / rel).exists() and (rel not in owned or not (out / rel).is_file())]
    if foreign:
        raise BadInput(
            f"{out / foreign[0]} exists and was not written by procbench export; move it or choose another --to"
        )
    out.mkdir(parents=True, exist_ok=True)
    for rel in owned:
        path = out / rel
        if path.is_file():
            path.unlink()
    for rel in owned:
        folder = (out / rel).parent
        while folder != out and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    marker = {"format": kind.marker, "files": sorted(set(planned))}
    (out / EXPORT_MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
