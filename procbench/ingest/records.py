"""What an import reader yields: procedures, or problems with the place they were found."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Problem"]


@dataclass(frozen=True)
class Problem:
    """An input record that was skipped: ``where`` is e.g. ``"line 12"`` or ``"entry 3"``."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"
