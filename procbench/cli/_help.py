"""Help screens that show every option's full name, however narrow the terminal.

Typer lays out ``--help`` options in a Rich table whose columns all shrink together when the terminal is
narrow, so a long name came out as ``--questions-per-proc…`` at 80 columns (and ``--near-duplicate-thresho…``
even at 100). :class:`HelpCommand` marks the option-name columns no-wrap while it draws its help, so only
the type and help columns wrap, and a help word too long for its column folds onto the next line.
Rich and Typer's help renderer are imported only when help is drawn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from typer.core import TyperCommand

__all__ = ["HelpCommand"]


@contextlib.contextmanager
def _whole_option_names() -> Iterator[None]:
    from rich.columns import Columns
    from rich.table import Table
    from rich.text import Text
    from typer import rich_utils

    class _OptionsTable(Table):
        def add_row(self, *renderables: Any, **kwargs: Any) -> None:
            super().add_row(*renderables, **kwargs)
            for column, cell in zip(self.columns, renderables, strict=False):
                if isinstance(cell, Text) and cell.plain.startswith("-"):
                    column.no_wrap = True
                for text in cell.renderables if isinstance(cell, Columns) else ():
                    if isinstance(text, Text):  # a long word (an env var, a URL) folds instead of ending in …
                        text.overflow = "fold"

    original = rich_utils.Table
    rich_utils.Table = _OptionsTable  # type: ignore[misc]  # a class swapped while help draws
    try:
        yield
    finally:
        rich_utils.Table = original  # type: ignore[misc]  # (restored)


class HelpCommand(TyperCommand):
    """A Typer command whose ``--help`` never truncates an option name."""

    # Any: the Context and HelpFormatter are click's, or (newer typer) those of typer's own copy of click
    def format_help(self, ctx: Any, formatter: Any) -> None:
        with _whole_option_names():
            super().format_help(ctx, formatter)
