"""How long-running library functions report progress without knowing who is watching.

Library code takes a :class:`Progress` and calls ``start``/``advance``; the CLI passes one that draws a
Rich progress bar on a terminal. The default, :data:`SILENT`, does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["SILENT", "Labelled", "Progress", "SilentProgress"]


class Progress(Protocol):
    """Receives progress of one long task at a time."""

    def start(self, description: str, total: int | None = None) -> None:
        """Begin a (new) task of ``total`` units (unknown when None)."""

    def advance(self, n: int = 1) -> None:
        """Mark ``n`` more units done."""


class SilentProgress:
    """A progress sink that ignores everything."""

    def start(self, description: str, total: int | None = None) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


SILENT: Progress = SilentProgress()


@dataclass(frozen=True)
class Labelled:
    """``progress`` with every task's description prefixed by ``label`` (e.g. which set a long step is for)."""

    progress: Progress
    label: str

    def start(self, description: str, total: int | None = None) -> None:
        self.progress.start(f"{self.label}: {description}", total)

    def advance(self, n: int = 1) -> None:
        self.progress.advance(n)
