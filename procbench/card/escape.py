"""Values from the store written into a card's Markdown: one line, no controls, nothing Markdown or HTML
reads as markup (a license text `| --- | # x <script>` stays text in its table cell)."""

from __future__ import annotations

import re
from typing import Any

from procbench.safetext import plain

__all__ = ["md_code", "md_text", "yaml_safe"]

#: Characters CommonMark/GFM read as markup inside a line; each is written backslash-escaped.
_MARKUP = re.compile(r"([\\`*\[\]<>|#])")


def md_text(value: Any) -> str:
    """``value`` as inline Markdown text, safe in a table cell: one line, controls removed, markup escaped."""
    return _MARKUP.sub(r"\\\1", plain(str(value)))


def md_code(value: Any) -> str:
    """``value`` for a code span (the caller writes the backticks): one line, no controls, no backtick, and
    ``|`` escaped (GFM splits table cells on it even inside code)."""
    return plain(str(value)).replace("`", "'").replace("|", "\\|")


def yaml_safe(value: Any) -> Any:
    """``value`` (a card header) with control characters removed from every string in it."""
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, dict):
        return {yaml_safe(k): yaml_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [yaml_safe(v) for v in value]
    return value
