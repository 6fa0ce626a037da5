"""Step numbering at the start of step texts: ``2. Find a photo.``, ``Step 3 - Mount the motors``, ``(3)``.

Real step texts often carry their list number (wikiHow headlines arrive as ``2. Find a photo.``, build
guides as ``Step 1 - ...`` or ``3. Mount ...``). Wherever a task shows step texts (ordering, sequencing,
pair order, text items, next action) such a number gives the answer order away, so ``clean`` removes it
from ``text_clean`` as :mod:`procbench.clean.titles` does from titles (paper 004 §3.2).

What goes, at the start of a text (repeatedly, so ``Step 2: 1. Open`` loses both):

* ``1.``, ``1)``, ``1.)``, ``1:``, ``(1)``, ``[1]``, ``#1`` (``#1`` only before a capital or punctuation),
  ``1 -`` only before a capital (``3 - 4 cups`` stays), glued forms ``1.Take``/``1)Put`` (only before a
  capital: ``2.jpg`` stays); inside markdown emphasis (``**2. Attach the board**``) the emphasis stays;
* ``Step 3:``, ``Step 3 -``, ``Step 3.``, ``Step 3 Mix`` (before a capital), ``Step Three:``,
  ``Part 2 of 3:``, ``Step IV:``, ``Final step:``;
* Roman numerals up to 39 where they cannot be a word: two or more letters (``ii.``, ``IV)``, ``xii:``)
  in one case, or any in brackets (``(i)``, ``(iv)``) or before ``)`` (``i)``); ``I.``/``V.``/``X.`` stay
  (an initial or the pronoun), as do words that are numerals only by letters (``Mix.`` is not 1009);
* a numbered sub-list glued at the start: after a leading ``1.`` the markers ``2.``, ``3.``, ... that
  follow in sequence (also glued to the previous word, as RecipeQA has ``Sauce2. Shredded cheese``) become
  sentence breaks: ``1. Remove the zip tie 2. Tuck the wires`` -> ``Remove the zip tie. Tuck the wires``
  (a second list in the same text may start again at 1; never after ``for``, ``to``, ... : ``bake for 2.``).

Numbers that are content stay: ``3 cups of flour``, ``10 serial bus servos``, ``1/2 cup sugar``,
``1.5 inch``, ``4:30 pm``, ``2 - 3 eggs``, ``Step up onto the stool``, ``First, cut the wood``. The rule is
idempotent and never makes a text longer.
"""

from __future__ import annotations

import re

__all__ = ["leading_numbering_end", "strip_step_numbering"]

_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    "seventeen|eighteen|nineteen|twenty|thirty|forty|fifty"
)
_ORDINAL_WORDS = "(?i:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|final|next)"
_WORD_NUM = rf"(?i:(?:{_NUMBER_WORDS})(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?)"
#: Roman numerals 1-39 in one case (validated: ``mix`` or ``vix`` are no numerals).
_ROMAN_LOWER = r"x{0,3}(?:ix|iv|v?i{0,3})"
_ROMAN = rf"(?:(?=[ivx]){_ROMAN_LOWER}|(?=[IVX]){_ROMAN_LOWER.upper()})"
_ROMAN_MULTI = rf"(?=[ivxIVX]{{2}}){_ROMAN}"
_KEYWORD = r"(?i:step|part|method|stage|phase|section|chapter|task)"
_OF_TOTAL = rf"(?:\s*(?i:of|/|out\s+of)\s*(?:\d{{1,3}}|{_WORD_NUM}))?"
_PUNCT = r"[:.)\]\-\u2013\u2014]"
#: What may follow a marker's punctuation: a space, the end, a letter, a quote or bracket (no digit: ``3.5``).
_AFTER_PUNCT = r"(?=\s|$|[^\W\d_]|[\"'(])"
#: Or, for markers that may also end without punctuation: a space and a capital (``Step 3 Mix``).
_ENDS = rf"(?:\s*{_PUNCT}+{_AFTER_PUNCT}|\s+(?=[A-Z])|\s*$)"

_LEADING = re.compile(
    rf"""\A(?P<lead>\s*(?:\*\*|__)?)\s*(?:
        [(\[]?\s*{_KEYWORD}\s*(?:\#|(?i:no)\.?|(?i:number))?\s*
            (?:\d{{1,3}}[a-z]?|{_WORD_NUM}|{_ROMAN}){_OF_TOTAL}\s*[)\]]?{_ENDS}  # Step 3: / Step 3 Mix / Step Three -
      | {_ORDINAL_WORDS}\s+{_KEYWORD}\s*{_PUNCT}+{_AFTER_PUNCT}           # Final step:
      | (?P<num>\d{{1,3}})(?P<style>\.\)|[.)])(?=\s|[A-Z]|$)                # 1.  1)  1.)  1.Take (not 2.jpg)
      | \d{{1,3}}:(?=\s+\D)                                                # 1: Cut (not 4:30)
      | \d{{1,3}}\s*[\-\u2013\u2014]+\s*(?=[A-Z])                          # 3 - Mix (not 3 - 4 cups)
      | \(\s*(?P<pnum>\d{{1,3}})\s*\)(?=\s*[^\s\d]|\s*$)           # (3)
      | [(\[]\s*(?:\d{{1,3}}|{_ROMAN})\s*[)\]](?=\s*[^\s\d]|\s*$)          # [3]  (iv)
      | \#\s*\d{{1,3}}{_ENDS}                                              # #3: / #3 Mix
      | {_ROMAN_MULTI}\s*[.):](?=\s+[^\W\d_]|\s*$)                         # ii.  IV)  xii:
      | [ivxIVX]\)(?=\s+[^\W\d_]|\s*$)                                     # i)
    )[\s\-\u2013\u2014:]*""",
    re.VERBOSE,
)
# Cheap gate: a text that cannot start with numbering is returned untouched.
_HINT = re.compile(rf"\A\W*(?:\d|{_KEYWORD}\b|{_ORDINAL_WORDS}\s|[ivxIVX]+\W)")
_SENTENCE_END = re.compile(r"[.!?:;,]\s*\Z")


#: Words after which a number ending in ``.`` is a quantity, not the next marker (``bake for 2. Then``).
_BEFORE_QUANTITY = frozenset(
    ["a", "about", "after", "at", "by", "for", "from", "in", "into", "of", "on", "or", "over", "per"]
    + ["than", "the", "to", "under", "until", "up", "with", "within"]
)
_LAST_WORD = re.compile(r"([^\W\d_]+)\s+\Z")


def _next_marker(number: int, style: str) -> re.Pattern[str]:
    """The marker ``number`` of a sub-list in ``style`` (``.``, ``)``, ``.)`` or ``(``, for ``(2)``): after a
    space, a word or a word's full stop (``bowl.2. Add``; never after a digit, ``/`` or a number's ``.``:
    ``1/2``, ``3.5``), before a space or a letter."""
    marker = rf"\(\s*{number}\s*\)" if style == "(" else rf"{number}{re.escape(style)}"
    return re.compile(
        rf"(?:(?<=\s)|(?<=[^\W\d_])|(?<=[^\W\d_]\.)|(?<=[)\]!?\"']))[^\S\n]*(?P<nl>\n?)\s*{marker}"
        rf"(?=\s*[^\W\d_(\"'])"
    )


def _strip_sublist(text: str, number: int, style: str) -> str:
    """Turn the markers ``number+1, number+2, ...`` that follow in sequence into sentence breaks (a line
    break stays a line break)."""
    out: list[str] = []
    pos = 0
    while True:
        number += 1
        match = _next_marker(number, style).search(text, pos)
        if match is None and number > 2:  # a second list in the same text starts again at 1
            number = 1
            match = _next_marker(number, style).search(text, pos)
        if match is None:
            break
        word = _LAST_WORD.search(text, pos, match.start() + 1)
        if word is not None and word.group(1).lower() in _BEFORE_QUANTITY:
            break
        before = text[pos : match.start()].rstrip()
        if before:
            end = "" if _SENTENCE_END.search(before) else "."
            out.append(before + end + ("\n" if match.group("nl") else " "))
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    if not out:
        return text
    return "".join(out) + text[pos:]


def strip_step_numbering(text: str) -> str:
    """Remove leading step numbering (and a numbered sub-list's markers) from a step text.

    >>> strip_step_numbering("2. Find a photo.")
    'Find a photo.'
    >>> strip_step_numbering("1. Cut the zip tie 2. Tuck the wires")
    'Cut the zip tie. Tuck the wires'
    >>> strip_step_numbering("3 cups of flour")
    '3 cups of flour'
    """
    if not _HINT.match(text):
        return text
    while True:
        match = _LEADING.match(text)
        if match is None:
            return text
        rest = text[match.end() :]
        if match.group("num") is not None:
            rest = _strip_sublist(rest, int(match.group("num")), match.group("style"))
        elif match.group("pnum") is not None:
            rest = _strip_sublist(rest, int(match.group("pnum")), "(")
        rest = match.group("lead").strip() + rest  # markdown emphasis around a numbered heading stays
        if rest == text:
            return text
        text = rest


def leading_numbering_end(text: str) -> int:
    """Where a text's content starts after its leading step numbering (0 when there is none).

    The offset form of :func:`strip_step_numbering` for readers that keep offsets into the raw text
    (``extract``): only leading markers count (not a sub-list's later ones, nor markers inside emphasis).

    >>> leading_numbering_end("Step 2: 1. Open Settings.")
    11
    """
    if not _HINT.match(text):
        return 0
    end = 0
    while True:
        match = _LEADING.match(text[end:])  # \A anchors at the real start of the string only
        if match is None or match.group("lead").strip() or match.end() == 0:
            return end
        end += match.end()
