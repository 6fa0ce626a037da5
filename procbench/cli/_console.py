"""The only place that renders output: consoles, progress bars, JSON printing, one-line errors.

Progress goes to stderr: a Rich bar on a terminal, a plain line per stage otherwise (a log file or a pipe then
shows what a long command is doing). ``PROCBENCH_PROGRESS`` overrides the choice: ``bar``, ``lines`` or ``off``
(``auto``, the default, picks by whether stderr is a terminal).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
import time
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


#: How progress is shown: ``auto`` (bar on a terminal, lines otherwise), ``bar``, ``lines`` or ``off``.
PROGRESS_ENV = "PROCBENCH_PROGRESS"
_PROGRESS_MODES = ("auto", "bar", "lines", "off")
#: A stage that repeats with other numbers (training epochs: ``hasty epoch 3/20 · loss ...``) prints at most one
#: line per this many seconds; every other stage prints its line.
REPEAT_INTERVAL = 10.0


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


class LineProgress:
    """A :class:`procbench.progress.Progress` printed as one plain line per stage on stderr, with the seconds
    since the command started: what a log file of a long command shows (no bar, no colour, no cursor moves).

    A stage that only differs from the last printed one by its numbers (an epoch counter) prints at most once per
    :data:`REPEAT_INTERVAL` seconds, so a long training run does not fill the log.
    """

    def __init__(self, write: Any = None, clock: Any = time.monotonic) -> None:
        self._write = write if write is not None else _stderr_line
        self._clock = clock
        self._started = clock()
        self._last_family: str | None = None
        self._last_time = float("-inf")
        self._stage: tuple[str, int, int | None] = ("", 0, None)  # description, steps done, total
        self._last_line = float("-inf")

    def start(self, description: str, total: int | None = None) -> None:
        now = self._clock()
        self._stage = (description, 0, total)
        family = re.sub(r"\d+", "#", description.split(" · ")[0])
        if family == self._last_family and now - self._last_time < REPEAT_INTERVAL:
            return
        self._last_family, self._last_time = family, now
        size = f" ({total})" if total is not None else ""
        self._write(f"[{now - self._started:7.1f}s] {description}{size}")
        self._last_line = now

    def advance(self, n: int = 1) -> None:
        """A stage's steps: a ``description done/total`` line once :data:`REPEAT_INTERVAL` seconds have passed since
        the last line (a long stage, e.g. adversarial filtering's rounds, shows it is moving)."""
        description, done, total = self._stage
        self._stage = (description, done + n, total)
        now = self._clock()
        if description and now - self._last_line >= REPEAT_INTERVAL:
            of = f"/{total}" if total is not None else ""
            self._write(f"[{now - self._started:7.1f}s] {description} {done + n}{of}")
            self._last_line = now


def _stderr_line(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class _NoProgress:
    def start(self, description: str, total: int | None = None) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


def progress_mode() -> str:
    """``bar``, ``lines`` or ``off``: :data:`PROGRESS_ENV` when set to one of them, else by whether stderr is a
    terminal."""
    mode = os.environ.get(PROGRESS_ENV, "auto").strip().lower() or "auto"
    if mode not in _PROGRESS_MODES:
        mode = "auto"
    if mode == "auto":
        return "bar" if err_console.is_terminal else "lines"
    return mode


@contextlib.contextmanager
def progress_bar() -> Iterator[RichProgress | LineProgress | _NoProgress]:
    """A progress sink for library calls: a bar on a terminal, a line per stage otherwise (see the module doc)."""
    mode = progress_mode()
    if mode == "lines":
        yield LineProgress()
        return
    if mode == "off":
        yield _NoProgress()
        return
    bar = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    )
    with bar:
        yield RichProgress(bar)
