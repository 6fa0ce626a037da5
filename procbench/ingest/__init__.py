"""``procbench ingest``: import procedures from files into a store (DESIGN §4)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procbench.errors import BadInput, InputFileNotFound
from procbench.ingest.jsonl import parse_procedure, read_jsonl
from procbench.ingest.recipeqa import read_recipeqa
from procbench.ingest.records import MAX_PROCEDURES_PER_FILE, Problem, oversized
from procbench.procedure import Procedure
from procbench.progress import SILENT, Progress
from procbench.store import Store
from procbench.store.append import add_procedures, local_image_loader

__all__ = ["FORMATS", "IngestReport", "Problem", "ingest_file", "parse_procedure"]

FORMATS = ("jsonl", "recipeqa")


@dataclass
class IngestReport:
    """What one ingest did. ``problems`` lists every skipped record with its line (or entry) number."""

    path: str
    format: str
    added: int = 0
    already_present: int = 0
    duplicates_in_file: int = 0
    images_stored: int = 0
    images_remote: int = 0
    image_failures: list[tuple[str, str]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """The numbers of this report (what the provenance log records)."""
        return {
            "added": self.added,
            "already_present": self.already_present,
            "duplicates_in_file": self.duplicates_in_file,
            "malformed": len(self.problems) - self.duplicates_in_file,
            "images_stored": self.images_stored,
            "images_remote": self.images_remote,
            "images_failed": len(self.image_failures),
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (what ``--json`` prints)."""
        return {
            "path": self.path,
            "format": self.format,
            **self.counts(),
            "problems": [{"where": p.where, "message": p.message} for p in self.problems],
            "image_failures": [{"image": ref, "error": err} for ref, err in self.image_failures],
        }


def ingest_file(
    store: Store | str | Path,
    path: str | Path,
    *,
    format: str = "jsonl",
    images_dir: str | Path | None = None,
    max_image_side: int = 512,
    allow_outside: bool = False,
    progress: Progress = SILENT,
) -> IngestReport:
    """Import the procedures in ``path`` into ``store`` in one atomic transaction.

    Procedures whose id is already in the store (or earlier in the file) are skipped, so importing the
    same file twice adds nothing. Malformed records are skipped and reported with their line number.
    Local image paths are resolved against ``images_dir`` (default: the file's folder), verified and
    stored; image URLs are recorded without fetching them. A local path must lie in the file's folder or
    ``images_dir`` (links resolved) unless ``allow_outside``. Records over the size caps of
    :mod:`procbench.ingest.records` (line, field, steps, procedures per file) are skipped as problems.

    ``store`` may be a path: the store is created there (only once the input has been found).

    Raises:
        InputFileNotFound: ``path`` does not exist.
        BadInput: unknown ``format``, or a file that is not in that format at all.
    """
    path = Path(path)
    if format not in FORMATS:
        raise BadInput(f"unknown format {format!r}; choose one of: {', '.join(FORMATS)}")
    if not path.is_file():
        raise InputFileNotFound(f"no such file: {path}")
    if not isinstance(store, Store):
        store = Store.open(store, create=True)
    report = IngestReport(path=str(path), format=format)
    progress.start(f"ingest {path.name}", total=path.stat().st_size)
    if format == "jsonl":
        records: Iterable[tuple[str, Procedure | Problem]] = read_jsonl(path, on_bytes=progress.advance)
    else:
        records = read_recipeqa(path)
    first_seen: dict[str, str] = {}

    def procedures() -> Iterator[Procedure]:
        read = 0
        for where, record in records:
            if isinstance(record, Problem):
                report.problems.append(record)
                continue
            read += 1
            if read > MAX_PROCEDURES_PER_FILE:
                report.problems.append(
                    Problem(
                        where,
                        f"more than {MAX_PROCEDURES_PER_FILE:,} procedures in one file: this one and the rest of "
                        "the file skipped (split the file)",
                    )
                )
                return
            if why := oversized(record):
                report.problems.append(Problem(where, why))
            elif record.id in first_seen:
                report.duplicates_in_file += 1
                report.problems.append(Problem(where, f"duplicate id {record.id} (first on {first_seen[record.id]})"))
            else:
                first_seen[record.id] = where
                yield record

    args = {
        "file": str(path),
        "format": format,
        "images_dir": str(images_dir) if images_dir else None,
        "max_image_side": max_image_side,
        "allow_outside": allow_outside,
    }
    with store.transaction("ingest", args=args) as txn:
        batch = add_procedures(
            store,
            txn,
            procedures(),
            image_loader=local_image_loader(
                Path(images_dir) if images_dir else path.parent,
                missing_ok=format == "recipeqa" and not images_dir,
                # a feed names files in its own folder (or --images): ../x, /abs and file:// elsewhere are refused
                confine=not allow_outside,
                roots=[path.parent] if format == "jsonl" else [],  # RecipeQA: its image folder only
            ),
            max_image_side=max_image_side,
            opaque_image_errors=True,
        )
        report.added, report.already_present = batch.added, batch.already_present
        report.images_stored, report.images_remote = batch.images_stored, batch.images_remote
        report.image_failures = batch.image_failures
        txn.counts.update(report.counts())
    if format == "recipeqa":
        progress.advance(path.stat().st_size)
    return report
