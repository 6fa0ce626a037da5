"""The precision gate of fused-word splitting: a split is made only when it is clearly better than the token.

:class:`~procbench.clean.segment.Segmenter` finds the most probable split of an unknown letter run;
:func:`refusal` then names the first reason to leave the token as written, or None when the split may be
made. The reasons, in the order they are checked:

- ``lexicon``: the token is a word of the domain (:data:`DOMAIN_LEXICON`: ``instructable``, ``upcycle``)
  or one the corpus itself writes often unsplit (:func:`corpus_lexicon`);
- ``short_part``: a part shorter than 3 letters that is not a function word (:data:`FUNCTION_WORDS`), or a
  function word that the web bigrams never show beside its neighbour (``sand a per``, ``me range``);
- ``affix``: the last part is a suffix that is also a word (``instruct able``, ``flavour less``, ``do
  ness``) or the first a prefix (``dis troy``, ``per serve``);
- ``misspelling``: one edit (insertion, deletion, substitution, transposition) turns the token into a
  known word at least as probable as the split, allowing one order of magnitude per edit (``togather``:
  together, ``teespoon``: teaspoon, ``chicharones``: chicharrones), or the token drops a g (``sayin``).

Before the gate, :class:`~procbench.clean.segment.Segmenter` also leaves alone a token that a frequency list
knows as a word (Google's 2006 web counts or :func:`modern_logp`, ``wordfreq``'s list to 2021: ``hashtag``)
unless its split is more probable. Everything is decided from data files that PyPI packages ship (symspellpy's
and wordsegment's SCOWL words and Google web unigram and bigram counts, wordfreq's frequencies); nothing is
downloaded. docs/cleaning.md gives each check's measured effect on the hand-labelled gold file.
"""

from __future__ import annotations

import functools
import math
import string
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from procbench.clean.vocab import Vocabulary, word_tokens

__all__ = [
    "AFFIX_PREFIXES",
    "AFFIX_SUFFIXES",
    "DOMAIN_LEXICON",
    "FUNCTION_WORDS",
    "corpus_lexicon",
    "edits1",
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
#: Parts shorter than 3 letters a split may have (closed list of function words).
FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "as",
        "at",
        "be",
        "by",
        "do",
        "if",
        "in",
        "is",
        "it",
        "me",
        "my",
        "no",
        "of",
        "on",
        "or",
        "so",
        "to",
        "up",
        "us",
        "we",
    ]
)
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
    if parts[-1] in AFFIX_SUFFIXES or parts[0] in AFFIX_PREFIXES:
        return "affix"
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
