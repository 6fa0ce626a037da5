"""Sentence boundaries in step texts, by rule (no model, no downloaded data): what ``--items first-sentence``
shows and the ``step_first_sentence`` embedding field holds.

NLTK's Punkt needs its trained ``punkt`` data, which is downloaded at run time and is not available offline;
untrained, it keeps "350 F. Grease a pan." together and breaks "the U.S. map" apart. These rules are
deterministic and read the text alone:

- a sentence ends at ``.``, ``!``, ``?`` or ``…`` (runs of them, then closing quotes or brackets) followed
  by whitespace and a character that is not a lowercase letter ("tbsp. of sugar" goes on; "5 min. Then"
  ends); at CJK full stops ``。！？`` whatever follows; and at a line break after which text starts with a
  capital, digit or bullet;
- a word glued to the next sentence by a lost space (``bacon.Make``: lowercase word, period, capitalised
  word, as RecipeQA's texts have them) is a boundary too;
- a period after a known abbreviation that is normally followed by a name or number (:data:`ABBREVIATIONS`:
  "Dr.", "e.g.", "approx."; "No." and "Fig." before a number) or after an initial ("J. Smith", but not the
  unit of "350 F.") is not a boundary, nor is one inside a number (``1.5``) or after a list marker at the start
  of a line ("1. Preheat", "a. Mix"); a piece without letters ("!!!") belongs to the next sentence.

A text without terminal punctuation is one sentence; an empty text has none.
"""

from __future__ import annotations

import re

__all__ = ["ABBREVIATIONS", "NUMBER_ABBREVIATIONS", "first_sentence", "split_sentences"]

#: Abbreviations whose period does not end a sentence even before a capital or a digit (compared casefolded,
#: without their periods): titles before names and Latin abbreviations.
ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "mt", "jr", "sr", "eg", "ie", "cf", "vs", "viz", "approx", "ca", "esp"}
)
#: Abbreviations whose period does not end a sentence before a digit ("No. 5", "Fig. 2").
NUMBER_ABBREVIATIONS = frozenset({"no", "nos", "fig", "figs", "vol", "pp", "p", "nr"})

# A candidate boundary: terminal punctuation (with closing quotes/brackets), then whitespace before a
# character that is not lowercase; or a CJK full stop; or a lost space between a lowercase word and a
# capitalised one; or a line break before a capital, digit or bullet.
_BOUNDARY = re.compile(
    r"""
      (?P<end>[.!?\u2026]+["'\u201d\u2019)\]]*)(?P<gap>\s+)(?=[^\s])
    | (?P<cjk>[\u3002\uff01\uff1f]+["'\u201d\u2019\u300d\u300f)\]]*)(?P<cjkgap>\s*)
    | (?<=[a-z]{2})(?P<glued>\.)(?=[A-Z][a-z])
    | (?P<line>\s*\n\s*)(?=[A-Z0-9\u2022*\-])
    """,
    re.VERBOSE,
)
_WORD_BEFORE = re.compile(r"([^\s\"'(\[]*)$")
_LIST_MARKER = re.compile(r"\d{1,3}|[A-Za-z]")
# A leading step number ("1.", "2)", "Step 3:"): it would tell the step's position, as title indicators do.
_NUMBERED = re.compile(r"(?:step\s*)?\d{1,3}\s*[.):]+\s+(?=\S)", re.IGNORECASE)


def _ends_sentence(text: str, match: re.Match[str]) -> bool:
    """Whether the ``end`` boundary ``match`` ends a sentence (not an abbreviation, initial or lowercase start)."""
    following = text[match.end()]
    if following.islower():
        return False
    end = match.group("end")
    if not end.startswith(".") or end.startswith(".."):
        return True  # ! ? and ellipses always end before a non-lowercase character
    word = _WORD_BEFORE.search(text, 0, match.start()).group(1)  # type: ignore[union-attr]
    line = text[: match.start() - len(word)].rsplit("\n", 1)[-1]
    if not line.strip() and _LIST_MARKER.fullmatch(word):  # "1. Preheat", "a. Mix" at the start of a line
        return False
    bare = word.replace(".", "").casefold()
    if bare in ABBREVIATIONS or (bare in NUMBER_ABBREVIATIONS and following.isdigit()):
        return False
    if len(word) == 1 and word.isalpha() and word.isupper():  # an initial ("J. Smith"), not "350 F."
        before = text[: match.start() - 1].rstrip()
        return bool(before) and (before[-1].isdigit() or before[-1] == "\u00b0")
    return True


def split_sentences(text: str | None) -> list[str]:
    """The sentences of ``text`` in order, each with its whitespace collapsed (``[]`` for empty text)."""
    if not text or not text.strip():
        return []
    out: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if match.group("end") is not None:
            if not _ends_sentence(text, match):
                continue
            cut = match.start("gap")
        elif match.group("cjk") is not None:
            cut = match.end("cjk")
        elif match.group("glued") is not None:
            cut = match.end("glued")
        else:
            cut = match.start("line")
        piece = " ".join(text[start:cut].split())
        if not any(ch.isalpha() for ch in piece):
            continue  # no words ("!!!", "1.)"): part of the next sentence
        out.append(piece)
        start = match.end()
    rest = " ".join(text[start:].split())
    if rest:
        out.append(rest)
    return out


def first_sentence(text: str | None) -> str | None:
    """The first sentence of ``text`` (:func:`split_sentences`) without a leading step number ("1. Mix" reads
    "Mix"), or None when it has none."""
    sentences = split_sentences(text)
    if not sentences:
        return None
    bare = _NUMBERED.sub("", sentences[0], count=1)
    return bare if any(ch.isalpha() for ch in bare) else sentences[0]
