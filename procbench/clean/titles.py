"""Step-title indicators (paper 004 §3.2): ``Step 3:``, ``3.``, ``Step Three -``, ``Part 2 of 3:`` are removed
so that a title does not give its position away.

Only the indicator goes; a title that is nothing but an indicator becomes empty (``title_clean`` null).
Numbers that are content stay: ``3 Ways to Fold``, ``2x4 Frame``, ``3.5 Inch Cut``, ``1950s Lamp``.
"""

from __future__ import annotations

import re

__all__ = ["strip_step_indicator"]

_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    "seventeen|eighteen|nineteen|twenty|thirty|forty|fifty"
)
_ORDINAL_WORDS = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|"
    "fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|last|final|next|1st|2nd|3rd|[4-9]th|1\\d th"
).replace(" ", "")
_WORD_NUM = rf"(?:{_NUMBER_WORDS})(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?"
_ROMAN = r"(?=[ivxlc]+\b)[ivxlc]{1,6}"
_SEP = r"\s*(?:[:.)\]|,;/\\\-\u2013\u2014>]+|(?=\s)|$)"
_KEYWORD = r"(?:step|part|method|stage|phase|section|chapter|task)"
_OF_TOTAL = rf"(?:\s*(?:of|/|out\s+of)\s*(?:\d{{1,3}}|{_WORD_NUM}))?"

_LEADING = re.compile(
    rf"""^\s*(?:
        [(\[]?\s*{_KEYWORD}\s*(?:\#|no\.?|number)?\s*\d{{1,3}}[a-z]?{_OF_TOTAL}\s*[)\]]?{_SEP}  # Step 3:, Part 2 of 3:
      | [(\[]?\s*{_KEYWORD}\s*(?:{_WORD_NUM}|{_ROMAN}){_OF_TOTAL}\s*[)\]]?\s*(?:[:.)\]|\-\u2013\u2014]+|$)  # Three -
      | (?:{_ORDINAL_WORDS})\s+{_KEYWORD}\s*(?:[:.)\]|\-\u2013\u2014]+|$)  # Final step:
      | \#?\s*\d{{1,3}}{_OF_TOTAL}\s*[.):\]]+(?=\s|$)  # 3.  3)  3/10:
      | \#?\s*\d{{1,3}}{_OF_TOTAL}\s*[\-\u2013\u2014]+(?=\s+\D|$)  # 3 -  (not 3 - 4 cups)
      | [(\[]\s*\d{{1,3}}\s*[)\]]  # (3)  [3]
      | \#\s*\d{{1,3}}(?=\s|$)  # #3
      | \d{{1,3}}\s*(?:/|of)\s*\d{{1,3}}(?=\s|$)  # 3/10
    )\s*""",
    re.IGNORECASE | re.VERBOSE,
)
_TRAILING = re.compile(
    rf"\s*(?:[:\-\u2013\u2014|,]\s*)?[(\[]?\s*{_KEYWORD}\s*(?:\#\s*)?(?:\d{{1,3}}|{_WORD_NUM}){_OF_TOTAL}\s*[)\]]?\s*$",
    re.IGNORECASE,
)
_HINT = re.compile(rf"\d|\b{_KEYWORD}\b|\b(?:{_ORDINAL_WORDS})\b", re.IGNORECASE)


def strip_step_indicator(title: str) -> str:
    """Remove leading (and trailing) step/part numbering from a step title; repeats until none is left."""
    if not _HINT.search(title):
        return title
    for _ in range(4):
        before = title
        title = _LEADING.sub("", title, count=1)
        title = _TRAILING.sub("", title, count=1)
        if title == before:
            break
    return title.strip()
