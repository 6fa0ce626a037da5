"""The only place that renders output: consoles, progress bars, JSON printing, one-line errors."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.segment import Segment

from procbench.safetext import plain


class SafeConsole(Console):
    """A Rich console that removes control characters (ESC, NUL, bidi overrides, ...) from every text it
    writes, to a terminal or a file: names and texts from a store cannot retitle, clear or move the terminal.
    Rich's own styling and control segments (progress bars) are kept."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(plain(segment.text, keep_newlines=True), segment.style)
            for segment in buffer
        )


class _PlainRecords(logging.Filter):
    """Log messages printed by logging's last-resort handler (warnings, no handler configured) made plain."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = plain(record.getMessage(), keep_newlines=True), None
        return True


console = SafeConsole()
err_console = SafeConsole(stderr=True)
if logging.lastResort is not None and not any(isinstance(f, _PlainRecords) for f in logging.lastResort.filters):
    logging.lastResort.addFilter(_PlainRecords())


def print_json(data: Any) -> None:
    """Machine-readable output on stdout (ASCII JSON: a control character is written as a ``\\u`` escape)."""
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=True) + "\n")


def error(message: str) -> None:
    """One line on stderr, no traceback."""
    err_console.print(f"[bold red]error:[/] {escape(plain(message))}", highlight=False, soft_wrap=True)


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
