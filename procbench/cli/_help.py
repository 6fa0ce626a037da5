"""Help screens that read cleanly at 80 columns: whole option names, whole words, paragraphs that reflow.

Typer lays out ``--help`` options in a Rich table of seven columns (required mark, long and short names,
negated names, type, help) that all shrink together when the terminal is narrow: a long name came out as
``--questions-per-proc…``, and the help column was left some 20 characters wide, so a word such as
``step_first_sentence`` was broken in two. :class:`HelpCommand` draws each option in two columns instead:
its names (never wrapped) with its type on the line below, and its help in the rest of the width. A word still
too long for that column (a URL) folds onto the next line. Docstring paragraphs, wrapped at the source's line
length, are reflowed to the terminal's width (a line starting with ``-`` or ``*`` stays a line of its own).
Rich and Typer's help renderer are imported only when help is drawn.
"""

from __future__ import annotations

import contextlib
import inspect
import re
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
            if len(renderables) in (6, 7) and not self.columns or len(self.columns) in (2, 3) and self.rows:
                renderables = _two_columns(renderables)
            super().add_row(*renderables, **kwargs)
            for column, cell in zip(self.columns, renderables, strict=False):
                if isinstance(cell, Text) and cell.plain.lstrip().startswith("-"):
                    column.no_wrap = True
                for text in cell.renderables if isinstance(cell, Columns) else ():
                    if isinstance(text, Text):  # a long word (an env var, a URL) folds instead of ending in …
                        text.overflow = "fold"

    def _two_columns(cells: tuple[Any, ...]) -> tuple[Any, ...]:
        """``[required] long short negated-long negated-short type help`` -> ``[required] names+type help``."""
        *names, kind, help_ = cells[-6:]
        label = Text(" ").join(n for n in names if isinstance(n, Text) and n.plain)
        if isinstance(kind, Text) and kind.plain:
            label.append("\n")
            label.append_text(kind)
        return (*cells[:-6], label, help_)

    original = rich_utils.Table
    rich_utils.Table = _OptionsTable  # type: ignore[misc]  # a class swapped while help draws
    try:
        yield
    finally:
        rich_utils.Table = original  # type: ignore[misc]  # (restored)


def reflow(text: str | None) -> str | None:
    """Join the source's line breaks inside each paragraph of a docstring (blank lines separate paragraphs),
    so that Rich wraps it to the terminal; lines starting with ``-`` or ``*`` (lists) and ``\\b`` paragraphs
    (click's "do not rewrap") keep their breaks."""
    if not text:
        return text
    paragraphs = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        if paragraph.startswith("\b"):
            paragraphs.append(paragraph)
            continue
        lines: list[str] = []
        for line in paragraph.splitlines():
            stripped = line.strip()
            if lines and not stripped.startswith(("- ", "* ")):
                lines[-1] += " " + stripped
            else:
                lines.append(stripped)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


class HelpCommand(TyperCommand):
    """A Typer command whose ``--help`` keeps option names and words whole and reflows its paragraphs."""

    # Any: the Context and HelpFormatter are click's, or (newer typer) those of typer's own copy of click
    def format_help(self, ctx: Any, formatter: Any) -> None:
        original = self.help
        helps = [(param, getattr(param, "help", None)) for param in self.params]
        self.help = escape_brackets(reflow(original))
        for param, text in helps:
            if text:
                param.help = escape_brackets(text)  # type: ignore[attr-defined]  # click's Option and Argument
        try:
            with _whole_option_names():
                super().format_help(ctx, formatter)
        finally:
            self.help = original
            for param, text in helps:
                if text:
                    param.help = text  # type: ignore[attr-defined]


def escape_brackets(text: str | None) -> str | None:
    """Escape ``[word]`` where ``word`` is no Rich style (a default such as ``[auto]`` or ``[title]``), which Rich
    markup would otherwise swallow; real markup (``[bold]``, ``[dim]``, ``[/]``) stays."""
    if not text:
        return text
    from rich.errors import StyleSyntaxError
    from rich.style import Style

    def keep_or_escape(match: re.Match[str]) -> str:
        tag = match.group(2)
        if tag.startswith("/"):
            return match.group(0)
        try:
            Style.parse(tag)
        except StyleSyntaxError:
            return f"{match.group(1)}\\[{tag}]"
        return match.group(0)

    # Rich's own tag pattern (rich.markup.RE_TAGS): a tag starts with a letter, #, / or @; \\[ is already literal
    return re.sub(r"((?<!\\)(?:\\\\)*)\[([a-z#/@][^\[]*?)]", keep_or_escape, text)
