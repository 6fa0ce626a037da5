"""The precision gate of fused-word splitting: a split is made only when it is clearly better than the token.

:class:`~procbench.clean.segment.Segmenter` finds the most probable split of an unknown letter run;
:func:`refusal` then names the first reason to leave the token as written, or None when the split may be
made. The reasons, in the order they are checked:

- ``lexicon``: the token is a word of the domain (:data:`DOMAIN_LEXICON`: ``instructable``, ``upcycle``)
  or one the corpus itself writes often unsplit (:func:`corpus_lexicon`);
- ``short_part``: a part shorter than 3 letters that is not a function word (:data:`FUNCTION_WORDS`), or a
  function word that the web bigrams never show beside its neighbour (``sand a per``, ``me range``), or
  one in a split of three or more parts that has a pair of neighbours the web bigrams never show
  (``qua drop us``: "drop us" is common, "qua drop" is not; ``stir in the``, ``cut it up`` pass);
- ``affix``: the last part is a suffix that is also a word (``instruct able``, ``flavour less``, ``do
  ness``) or the first a prefix (``dis troy``, ``per serve``);
- ``inflection``: the token is a dictionary word of 5 or more letters plus an inflectional ending
  (:data:`INFLECTIONS`; doubled consonant, dropped e and y -> i allowed): ``marshmallowed`` is marshmallow
  + ed, not ``marsh mall owed``;
- ``misspelling``: one edit (insertion, deletion, substitution, transposition) turns the token into a
  known word at least as probable as the split, allowing one order of magnitude per edit (``togather``:
  together, ``teespoon``: teaspoon, ``chicharones``: chicharrones), or the token drops a g (``sayin``), or a
  token of 8 or more letters is two adjacent transpositions from a dictionary word as probable as the split
  at two edits' cost (``glasswear``: glassware; letters swapped, none added or lost, which two glued words
  rarely are).

:func:`credited` is the one check that needs the text around a token: a token right after ``member``,
``user`` or a credit line (``Photo from``, ``image by``, ``courtesy of``) is a user or site name
(``member dirtymac``, ``Photo from holisticmonkey``) and is left whole wherever it stands so.

Before the gate, :class:`~procbench.clean.segment.Segmenter` also leaves alone a token that a frequency list
knows as a word (Google's 2006 web counts or :func:`modern_logp`, ``wordfreq``'s list to 2021: ``hashtag``)
unless its split is more probable. Everything is decided from data files that PyPI packages ship (symspellpy's
and wordsegment's SCOWL words and Google web unigram and bigram counts, wordfreq's frequencies); nothing is
downloaded. docs/cleaning.md gives each check's measured effect on the hand-labelled gold file.
"""

from __future__ import annotations

import functools
import math
import re
import string
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from procbench.clean.vocab import TWO_LETTER_PARTS, Vocabulary, word_tokens

__all__ = [
    "AFFIX_PREFIXES",
    "AFFIX_SUFFIXES",
    "DOMAIN_LEXICON",
    "FUNCTION_WORDS",
    "INFLECTIONS",
    "corpus_lexicon",
    "credited",
    "edits1",
    "inflected_stem",
    "transposed2",
    "modern_logp",
    "refusal",
]

#: Words of How-To text missing from the dictionaries that must never be split (the issue's own examples and
#: site and tool names of the maker domain; closed list, not fitted to the gold file).
DOMAIN_LEXICON = frozenset(
    [
        "instructable",
        "instructables",
        "upcycle",
        "upcycled",
        "upcycles",
        "upcycling",
        "downcycle",
        "downcycled",
        "tinkercad",
        "fusion360",
        "makerspace",
        "makerspaces",
        "hackerspace",
        "hackerspaces",
        "youtube",
        "pinterest",
        "facebook",
        "arduino",
        "thingiverse",
    ]
)
#: Parts shorter than 3 letters a split may have (closed list of function words): "a" and the segmenter's
#: two-letter parts but its interjections and the parts that are as often names or abbreviations.
FUNCTION_WORDS = frozenset({"a"}) | (TWO_LETTER_PARTS - {"am", "go", "he", "oh", "ok"})
#: Endings that are also dictionary words: split off a stem they are a suffix, not a second word.
AFFIX_SUFFIXES = frozenset(
    [
        "able",
        "ible",
        "less",
        "ness",
        "ful",
        "ment",
        "ments",
        "tic",
        "ted",
        "ion",
        "ions",
        "ism",
        "ist",
        "ists",
        "ous",
        "ity",
        "age",
        "ant",
        "ent",
        "ance",
        "ence",
        "ary",
        "ery",
        "ory",
        "ize",
        "ise",
        "ish",
        "tor",
        "ator",
        "ling",
        "lings",
    ]
)
#: Beginnings that are also dictionary words (or common fragments) but here are a prefix.
AFFIX_PREFIXES = frozenset(
    ["dis", "per", "con", "pre", "mis", "inter", "non", "anti", "mono", "semi", "multi", "nano", "micro", "ref", "sub"]
)
#: Inflectional endings: a dictionary word plus one of these is that word inflected, not two words.
INFLECTIONS = ("ed", "d", "s", "es", "ing", "er", "ers", "y", "ly")
#: Shortest stem :func:`inflected_stem` accepts (untuned: shorter dictionary words, ``cor`` + ``ner``, end
#: too many letter runs by chance).
MIN_STEM = 5
#: Shortest token checked for two transpositions (untuned: the usual length from which spelling correctors
#: allow a second edit).
MIN_TRANSPOSED = 8
#: Words before a user or site name: ``member dirtymac``, ``Photo from holisticmonkey``, ``courtesy of x``.
_CREDIT = re.compile(
    r"(?<![a-z])(?:member|user|username|(?:photo|image|picture|pic)s?\s+(?:from|by)|courtesy\s+of)\s+\Z",
    re.IGNORECASE,
)
#: log10 cost of one edit when a misspelling competes with a split (untuned: one order of magnitude, the
#: usual prior of a single typing error; 1.5 gives the same splits on the tuning half of the gold file).
EDIT_LOGP = -1.0
_LETTERS = string.ascii_lowercase


@functools.cache
def _modern() -> dict[str, float]:
    from wordfreq import get_frequency_dict

    return get_frequency_dict("en", wordlist="best")


def modern_logp(word: str) -> float | None:
    """log10 frequency of lowercase ``word`` in ``wordfreq``'s English list (web, subtitles, news, social
    media up to 2021), or None when the list does not have it; a token the list knows is a word of its own."""
    freq = _modern().get(word)
    return math.log10(freq) if freq else None


def edits1(word: str) -> set[str]:
    """Every string one deletion, transposition, substitution or insertion (a-z) away from ``word``."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in splits if b}
    out.update(a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1)
    out.update(a + c + b[1:] for a, b in splits if b for c in _LETTERS)
    out.update(a + c + b for a, b in splits for c in _LETTERS)
    out.discard(word)
    return out


def transposed2(word: str) -> set[str]:
    """Every string one or two adjacent transpositions away from ``word`` (same letters, other order)."""
    once = {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1)}
    twice = {w[:i] + w[i + 1] + w[i] + w[i + 2 :] for w in once for i in range(len(w) - 1)}
    return (once | twice) - {word}


def inflected_stem(word: str, words: frozenset[str]) -> str | None:
    """The dictionary word of which ``word`` is an inflection (:data:`INFLECTIONS`), or None.

    Spelling changes allowed before the ending: a doubled last consonant (``chopped``), a dropped e
    (``baking``) and y -> i (``tried``). Stems shorter than :data:`MIN_STEM` letters are not considered.
    """
    for ending in INFLECTIONS:
        if not word.endswith(ending):
            continue
        stem = word[: -len(ending)]
        stems = [stem]
        if len(stem) >= 2 and stem[-1] == stem[-2]:
            stems.append(stem[:-1])
        if ending[0] in "aeiouy":
            stems.append(stem + "e")
        if stem.endswith("i"):
            stems.append(stem[:-1] + "y")
        for candidate in stems:
            if len(candidate) >= MIN_STEM and candidate in words:
                return candidate
    return None


def credited(text: str, start: int) -> bool:
    """Whether the token at ``text[start:]`` follows ``member``, ``user`` or a credit line (``Photo from``):
    a user or site name, never split."""
    return _CREDIT.search(text, max(0, start - 40), start) is not None


def _known_logp(word: str, vocab: Vocabulary) -> float | None:
    listed = vocab.unigram_logp.get(word) if word in vocab.words else None
    modern = modern_logp(word)
    return max((x for x in (listed, modern) if x is not None), default=None)


def refusal(
    word: str,
    parts: list[str],
    score: float,
    vocab: Vocabulary,
    lexicon: Iterable[str] = (),
) -> str | None:
    """The reason to leave ``word`` unsplit (see the module docstring), or None when ``parts`` may be used.

    Args:
        word: the lowercase letter run.
        parts: its best split (concatenated, they give ``word``).
        score: log10 probability of the split (:meth:`Segmenter.best_split`).
        vocab: the word lists.
        lexicon: more words never split (the corpus lexicon), lowercase.
    """
    if word in DOMAIN_LEXICON or word in lexicon:
        return "lexicon"
    for i, part in enumerate(parts):
        if len(part) >= 3:
            continue
        if part not in FUNCTION_WORDS:
            return "short_part"
        if i > 0 and f"{parts[i - 1]} {part}" not in vocab.bigram_count:
            return "short_part"
        if i + 1 < len(parts) and f"{part} {parts[i + 1]}" not in vocab.bigram_count:
            return "short_part"
        pairs = (f"{a} {b}" for a, b in zip(parts, parts[1:], strict=False))
        if len(parts) >= 3 and any(pair not in vocab.bigram_count for pair in pairs):
            # a function word makes three or more parts a phrase: the web bigrams must show all of it
            # (stir in the, cut it up), not only the pairs around the short word (qua drop us)
            return "short_part"
    if parts[-1] in AFFIX_SUFFIXES or parts[0] in AFFIX_PREFIXES:
        return "affix"
    stem = inflected_stem(word, vocab.words)
    if stem is not None and stem not in parts:
        return "inflection"
    n = len(parts)
    if word.endswith("in") and word + "g" in vocab.words:
        return "misspelling"  # a dropped g (sayin', shrimpin'), not a word followed by "in"
    pieces = {"".join(parts[i:j]) for i in range(n) for j in range(i + 1, n + 1)}
    for near in edits1(word):
        if near in pieces:
            continue
        listed = vocab.unigram_logp.get(near) if near in vocab.words else None
        modern = modern_logp(near)
        if listed is not None or modern is not None:
            logp = max(x for x in (listed, modern) if x is not None) + EDIT_LOGP
        elif near in vocab.words:
            # a dictionary word missing from both frequency lists costs one more order of magnitude (rare)
            logp = vocab.logp(near) + 2 * EDIT_LOGP
        else:
            continue
        if logp >= score:
            return "misspelling"
    if len(word) >= MIN_TRANSPOSED:
        for near in transposed2(word):
            # letters swapped twice: a dictionary word with a frequency, two edits' cost
            swapped = _known_logp(near, vocab) if near in vocab.words else None
            if swapped is not None and swapped + 2 * EDIT_LOGP >= score:
                return "misspelling"
    return None


def corpus_lexicon(
    texts: pa.Array | pa.ChunkedArray, groups: pa.Array | pa.ChunkedArray, *, min_groups: int = 3
) -> frozenset[str]:
    """Lowercase letter tokens the corpus itself writes unsplit in at least ``min_groups`` procedures.

    Only the ones the segmenter would split matter (dictionary words are never split anyway).

    Args:
        texts: step texts, ``(n,)`` strings (nulls have no tokens).
        groups: the procedure of each text, ``(n,)`` (ids or indexes).
        min_groups: procedures a token must occur in (untuned: three, so that one author's habit, or one
            recipe's typo repeated in every step, does not protect a token).
    """
    tokens, parents = word_tokens(texts)
    if len(tokens) == 0:
        return frozenset()
    if isinstance(groups, pa.ChunkedArray):
        groups = groups.combine_chunks()
    table = pa.table({"token": tokens, "group": groups.take(pa.array(parents, pa.int64()))})
    grouped = table.group_by("token").aggregate([("group", "count_distinct")])
    frequent = pc.filter(grouped["token"], pc.greater_equal(grouped["group_count_distinct"], min_groups))
    return frozenset(t for t in frequent.to_pylist() if t.isalpha())
