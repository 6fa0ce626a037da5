"""What an import reader yields: procedures, or problems with the place they were found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from procbench.procedure import Procedure

__all__ = [
    "MAX_FIELD_CHARS",
    "MAX_ID_CHARS",
    "MAX_LINE_BYTES",
    "MAX_PROCEDURES_PER_FILE",
    "MAX_STEPS",
    "Problem",
    "oversized",
    "unstorable_text",
]

#: Longest accepted record id (ids are keys in every table).
MAX_ID_CHARS = 500
# Size caps of an import (README "Size limits"). The largest records of the shared corpora are far below
# them (RecipeQA: 24 KB lines, 8,427-character steps, 20 steps; wikiHow and build guides smaller), and each
# keeps one hostile record from costing gigabytes in ingest and every later stage.
#: Longest JSONL line, in bytes (longer lines are skipped without being read into memory whole).
MAX_LINE_BYTES = 4 * 1024 * 1024
#: Longest text field (a title, a step's text, a URL, ...), in characters.
MAX_FIELD_CHARS = 200_000
#: Most steps one procedure may have.
MAX_STEPS = 1_000
#: Most procedures one input file may hold (the rest of the file is skipped: split it into several files).
MAX_PROCEDURES_PER_FILE = 1_000_000


@dataclass(frozen=True)
class Problem:
    """An input record that was skipped: ``where`` is e.g. ``"line 12"`` or ``"entry 3"``."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def oversized(procedure: Procedure) -> str | None:
    """Why ``procedure`` exceeds a size cap (:data:`MAX_STEPS`, :data:`MAX_FIELD_CHARS`), None when it does not."""
    if len(procedure.steps) > MAX_STEPS:
        return f"{len(procedure.steps)} steps, more than the {MAX_STEPS:,} a procedure may have"
    fields = {
        "id": procedure.id,
        "source": procedure.source,
        "title": procedure.title,
        "url": procedure.url,
        "author": procedure.author,
        "license": procedure.license,
        "language": procedure.language,
        "split": procedure.split,
    }
    for name, value in fields.items():
        if value is not None and len(value) > MAX_FIELD_CHARS:
            return f"'{name}' has {len(value):,} characters, more than the {MAX_FIELD_CHARS:,} a field may have"
    for i, part in enumerate(procedure.category):
        if len(part) > MAX_FIELD_CHARS:
            return f"category level {i + 1} has {len(part):,} characters, more than the {MAX_FIELD_CHARS:,} allowed"
    for number, step in enumerate(procedure.steps, 1):
        for name, value in (("text", step.text), ("title", step.title), ("part", step.part), ("kind", step.kind)):
            if value is not None and len(value) > MAX_FIELD_CHARS:
                return (
                    f"step {number}: '{name}' has {len(value):,} characters, more than the "
                    f"{MAX_FIELD_CHARS:,} a field may have"
                )
        for ref in step.images:
            if len(ref) > MAX_FIELD_CHARS:
                return f"step {number}: an image reference is longer than {MAX_FIELD_CHARS:,} characters"
    return None


def unstorable_text(procedure: Procedure) -> str | None:
    """The first field of ``procedure`` holding text no file can store (a lone UTF-16 surrogate such as
    JSON's ``"\\ud800"``), or None when every string is valid Unicode."""
    fields = {
        "id": procedure.id,
        "source": procedure.source,
        "title": procedure.title,
        "url": procedure.url,
        "author": procedure.author,
        "license": procedure.license,
        "language": procedure.language,
        "split": procedure.split,
        "category": "".join(procedure.category),
    }
    for number, step in enumerate(procedure.steps, 1):
        fields[f"step {number}"] = "".join(
            [step.text, step.title or "", step.part or "", step.kind or "", *step.images]
        )
    for name, value in fields.items():
        if value is not None:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return name
    return None
