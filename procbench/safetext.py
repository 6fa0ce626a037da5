"""Text from data made safe to show: control characters removed (terminals, files, cards).

Names and texts in a store come from feeds and scraped pages: an ESC sequence in a source name would
retitle or clear a terminal, a NUL or a line break would cut a Markdown table row. :func:`plain` is what
every renderer applies to such values.
"""

from __future__ import annotations

import re

__all__ = ["plain"]

#: C0 and C1 controls, DEL, and the bidirectional overrides and isolates (which reorder what a reader sees).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_BREAKS = re.compile("[\t\n\r\u2028\u2029]+")


def plain(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` without control characters; tabs and line breaks become one space (kept with
    ``keep_newlines``: then only ``\\n`` and ``\\t`` stay)."""
    if keep_newlines:
        return _CONTROLS.sub("", text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n"))
    return _CONTROLS.sub("", _BREAKS.sub(" ", text))
