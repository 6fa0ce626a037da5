"""The offline English dictionary and word frequencies that cleaning measures and splits with.

Everything comes from data files that PyPI packages ship, so it works without network:

- ``symspellpy``: ``frequency_dictionary_en_82_765.txt``, 82,765 English words (SCOWL spelling lists
  intersected with Google n-gram counts), each with its count;
- ``wordsegment``: ``words.txt`` (178,758 lowercase English words with inflections, no proper names),
  ``unigrams.txt`` (the 333,213 most frequent tokens of Google's web 1T corpus, with counts) and
  ``bigrams.txt`` (286,358 frequent word pairs, with counts).

A token is *in the vocabulary* when it is one of the dictionary words (either list), a measurement unit
abbreviation, a single letter, an ordinal or decade (``21st``, ``1980s``), or a dictionary word with a
clitic (``don't``, ``children's``). Word tokens are maximal runs of letters, digits and inner apostrophes
that contain at least one letter; pure numbers are not counted.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench.errors import MissingDependency

__all__ = [
    "TOKEN_SPLIT_PATTERN",
    "UNITS",
    "VocabCounts",
    "Vocabulary",
    "count_in_vocabulary",
    "get_vocabulary",
    "word_tokens",
]

#: Measurement units and abbreviations common in How-To text; in the vocabulary, and split off numbers.
UNITS = frozenset(
    [
        "mm",
        "cm",
        "km",
        "m",
        "g",
        "mg",
        "kg",
        "ml",
        "l",
        "dl",
        "oz",
        "fl",
        "lb",
        "lbs",
        "tsp",
        "tsps",
        "tbsp",
        "tbsps",
        "tbs",
        "qt",
        "qts",
        "pt",
        "pts",
        "gal",
        "gals",
        "ft",
        "yd",
        "yds",
        "in",
        "inch",
        "inches",
        "min",
        "mins",
        "hr",
        "hrs",
        "sec",
        "secs",
        "pcs",
        "pc",
        "sq",
        "cc",
        "mph",
        "kph",
        "rpm",
        "psi",
        "ghz",
        "mhz",
        "hz",
        "kw",
        "kwh",
        "mah",
    ]
)
#: Two-letter words a fused token may be split into (other two-letter dictionary entries are too often
#: abbreviations or name fragments to be trusted as parts).
TWO_LETTER_PARTS = frozenset(
    [
        "am",
        "an",
        "as",
        "at",
        "be",
        "by",
        "do",
        "go",
        "he",
        "if",
        "in",
        "is",
        "it",
        "me",
        "my",
        "no",
        "of",
        "oh",
        "ok",
        "on",
        "or",
        "so",
        "to",
        "up",
        "us",
        "we",
    ]
)
_CLITICS = frozenset({"s", "t", "d", "ll", "re", "ve", "m"})
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th|s)")
#: RE2 pattern (pyarrow) that separates tokens: anything but letters, marks, digits and apostrophes.
TOKEN_SPLIT_PATTERN = r"[^\p{L}\p{M}\p{N}']+"
#: Total token count of the web corpus behind ``unigrams.txt`` (as wordsegment uses it).
_WEB_TOTAL = 1_024_908_267_229.0
#: Words of 3-5 letters below this web count are not used as parts of a split (too rare to be confident).
_MIN_PART_COUNT = 100_000
#: log10 probability given to words missing from the web list (its rarest count).
_UNLISTED_LOGP = math.log10(12_711 / _WEB_TOTAL)


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependency(
            f"procbench clean needs the {package!r} package for its word lists: pip install {package}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True)
class Vocabulary:
    """Dictionary words, part words for splitting and log10 web frequencies.

    Attributes:
        words: every lowercase dictionary word (both lists, units, single letters).
        parts: words a fused token may be split into, mapped to their log10 web probability.
        unigram_logp: log10 probability of each of the 333k most frequent web tokens.
        bigram_count: counts of frequent ``"w1 w2"`` pairs.
        unigram_count: counts of the web tokens (for bigram conditional probabilities).
    """

    words: frozenset[str]
    parts: dict[str, float]
    unigram_logp: dict[str, float]
    unigram_count: dict[str, int]
    bigram_count: dict[str, int]

    def knows(self, token: str) -> bool:
        """Whether a lowercase word token is in the vocabulary (see the module docstring)."""
        if token in self.words:
            return True
        if "'" in token:
            base, _, clitic = token.partition("'")
            return base in self.words and clitic in _CLITICS
        return _ORDINAL.fullmatch(token) is not None

    def logp(self, word: str) -> float:
        """log10 web probability of ``word`` (the rarest listed count when it is not listed)."""
        return self.unigram_logp.get(word, _UNLISTED_LOGP)

    def conditional_logp(self, word: str, prev: str) -> float:
        """log10 P(word | prev): the bigram conditional where the pair is listed, else the unigram probability."""
        if prev:
            pair = self.bigram_count.get(f"{prev} {word}")
            prev_count = self.unigram_count.get(prev)
            if pair and prev_count:
                return math.log10(pair / prev_count)
        return self.logp(word)

    def sequence_logp(self, parts: list[str]) -> float:
        """log10 probability of a word sequence: bigram conditionals where known, unigrams otherwise."""
        return self.logp(parts[0]) + sum(self.conditional_logp(w, p) for p, w in zip(parts, parts[1:], strict=False))


def _read_counts(path: Path, sep: str | None) -> dict[str, int]:
    counts: dict[str, int] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            word, _, count = line.rstrip("\n").rpartition(sep or " ")
            if word:
                counts[word] = int(count)
    return counts


@functools.cache
def get_vocabulary() -> Vocabulary:
    """Load (once per process) the word lists and frequencies shipped by ``symspellpy`` and ``wordsegment``."""
    sym_dir, ws_dir = _package_dir("symspellpy"), _package_dir("wordsegment")
    spelling = _read_counts(sym_dir / "frequency_dictionary_en_82_765.txt", " ")
    plain = frozenset((ws_dir / "words.txt").read_text(encoding="utf-8").split())
    unigram_count = _read_counts(ws_dir / "unigrams.txt", "\t")
    bigram_count = _read_counts(ws_dir / "bigrams.txt", "\t")
    letters = frozenset("abcdefghijklmnopqrstuvwxyz")
    words = frozenset(spelling) | plain | UNITS | letters
    log_total = math.log10(_WEB_TOTAL)
    unigram_logp = {w: math.log10(c) - log_total for w, c in unigram_count.items()}
    # Parts: common spelling-dictionary words; short ones must also be in the plain word list, which has
    # no proper names (so "sam", "var" fragments of names are not parts; "fiberglass" is).
    parts = {
        w: unigram_logp.get(w, math.log10(c) - log_total)
        for w, c in spelling.items()
        if w.isalpha() and (len(w) >= 6 or (len(w) >= 3 and c >= _MIN_PART_COUNT and w in plain))
    }
    for w in (*TWO_LETTER_PARTS, "a"):
        parts[w] = unigram_logp[w]
    return Vocabulary(
        words=words, parts=parts, unigram_logp=unigram_logp, unigram_count=unigram_count, bigram_count=bigram_count
    )


def word_tokens(texts: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """Lowercase tokens of ``texts`` (nulls give none) and the index of the text each token comes from.

    Tokens are runs of letters, digits and inner apostrophes that contain a letter (numbers are dropped).

    Returns:
        ``(tokens, parents)``: a string array and an ``(n_tokens,) int64`` array of row indices.
    """
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks() if texts.num_chunks else pa.array([], pa.string())
    lists = pc.split_pattern_regex(pc.utf8_lower(texts), TOKEN_SPLIT_PATTERN)
    flat = pc.utf8_trim(pc.list_flatten(lists), "'")
    parents = np.asarray(pc.list_parent_indices(lists), dtype=np.int64)
    keep = pc.and_(pc.not_equal(flat, ""), pc.invert(pc.utf8_is_numeric(flat)))
    keep_np = np.asarray(keep.fill_null(False), dtype=bool)
    return flat.filter(keep), parents[keep_np]


@dataclass(frozen=True)
class VocabCounts:
    """Per-row word-token and in-vocabulary token counts, ``(n_rows,) int64`` each."""

    tokens: np.ndarray
    in_vocab: np.ndarray

    @property
    def ratio(self) -> float:
        """In-vocabulary tokens over word tokens (1.0 when there are none)."""
        total = int(self.tokens.sum())
        return float(self.in_vocab.sum()) / total if total else 1.0


def count_in_vocabulary(
    texts: pa.Array | pa.ChunkedArray, vocab: Vocabulary | None = None, *, chunk_rows: int = 100_000
) -> VocabCounts:
    """Count word tokens and in-vocabulary word tokens of each text.

    Vectorised, one dictionary lookup per distinct token of a chunk, ``chunk_rows`` texts at a time so
    memory stays bounded.
    """
    vocab = vocab or get_vocabulary()
    n = len(texts)
    tokens_out = np.zeros(n, dtype=np.int64)
    vocab_out = np.zeros(n, dtype=np.int64)
    for start in range(0, n, chunk_rows):
        tokens, parents = word_tokens(texts.slice(start, chunk_rows))
        if len(tokens) == 0:
            continue
        encoded = pc.dictionary_encode(tokens)
        distinct = encoded.dictionary.to_pylist()
        known = np.fromiter((vocab.knows(t) for t in distinct), dtype=bool, count=len(distinct))
        hit = known[np.asarray(encoded.indices, dtype=np.int64)]
        size = min(chunk_rows, n - start)
        tokens_out[start : start + size] = np.bincount(parents, minlength=size)
        vocab_out[start : start + size] = np.bincount(parents, weights=hit, minlength=size).astype(np.int64)
    return VocabCounts(tokens_out, vocab_out)
