"""The only place that renders output: consoles, progress bars, JSON printing, one-line errors."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console()
err_console = Console(stderr=True)


def print_json(data: Any) -> None:
    """Machine-readable output on stdout."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def error(message: str) -> None:
    """One line on stderr, no traceback."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


class RichProgress:
    """A :class:`procbench.progress.Progress` drawn as a Rich bar; silent when stderr is not a terminal."""

    def __init__(self, bar: Progress) -> None:
        self._bar = bar
        self._task: Any = None

    def start(self, description: str, total: int | None = None) -> None:
        if self._task is not None:
            self._bar.update(self._task, visible=False)
        self._task = self._bar.add_task(description, total=total)

    def advance(self, n: int = 1) -> None:
        if self._task is not None:
            self._bar.advance(self._task, n)


@contextlib.contextmanager
def progress_bar() -> Iterator[RichProgress]:
    """A progress sink for library calls, shown only on a terminal."""
    bar = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    )
    with bar:
        yield RichProgress(bar)
