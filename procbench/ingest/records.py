"""What an import reader yields: procedures, or problems with the place they were found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from procbench.procedure import Procedure

__all__ = ["MAX_ID_CHARS", "Problem", "unstorable_text"]

#: Longest accepted record id (ids are keys in every table).
MAX_ID_CHARS = 500


@dataclass(frozen=True)
class Problem:
    """An input record that was skipped: ``where`` is e.g. ``"line 12"`` or ``"entry 3"``."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


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
