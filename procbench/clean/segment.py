"""Fused-word splitting: ``preheattheoven`` -> ``preheat the oven``, ``350degrees`` -> ``350 degrees``.

A token (a run of letters and digits) is split only when the split is confident:

- letters glued to numbers are separated when the letter part is a unit (``2cups``, ``5mm``) or a
  dictionary word (``350degrees``, ``oven350``); ordinals, decades, dimensions and codes (``21st``,
  ``1980s``, ``2x4``, ``3D``, ``mp3``) stay as they are;
- a letter run missing from the dictionary is split by a search for the most probable sequence of
  dictionary words (web bigram probabilities where known, unigrams otherwise; common words only,
  two-letter parts from a short list, a lone ``a`` at the end only after words like ``for``), then
  the split must beat the token itself: when the token is a known web token (``kitchenaid``,
  ``longboard``) the split must be ``margin`` orders of magnitude more probable than the token; when it
  is unknown, its parts must be common enough on average (``min_mean_logp``, stricter for capitalised
  tokens, which are often names), and two words of three letters or fewer are not enough;
- text of procedures detected as another language is not split at all (``pegamento`` is Spanish);
- tokens with more than three letter/digit runs are codes (``9ede3229ae``) and stay whole; a mixed
  token is split only where every boundary separates a number from a word or unit;
- names and brands are left alone: tokens with inner capitals (``KitchenAid``, ``iPhone``), all-caps
  tokens, and capitalised tokens that do not start a sentence; URLs, e-mail addresses, hashtags,
  mentions, dotted names (``example.com``) and identifiers with underscores are never touched.

- every split of a letter run must then pass the precision gate (:mod:`procbench.clean.gate`): no
  misspelling is split (``togather``, ``teespoon`` stay), no part shorter than 3 letters other than a
  function word that the web bigrams show next to its neighbour, no suffix or prefix split off as a word
  (``instruct able``, ``dis troy``), no word of the domain lexicon (``instructable``) or of the corpus's
  own lexicon, no inflected dictionary word (``marshmallowed``), no token right after ``member``, ``user`` or
  a credit line (``Photo from holisticmonkey``), and a token that ``wordfreq``'s 2021 English list knows
  (``hashtag``) is split only when the split is more probable than the token.

Splits only insert spaces, so the original spelling and case are kept. Results are memoised per token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from procbench.clean.gate import credited, modern_logp, refusal
from procbench.clean.vocab import UNITS, Vocabulary, get_vocabulary

__all__ = ["Segmenter", "SegmenterSettings"]

_TOKEN = re.compile(r"[^\W_]+")
_RUNS = re.compile(r"\d+|[^\W\d_]+")
_PROTECTED = re.compile(
    r"(?:https?|ftp)://\S+|\bwww\.\S+|\b[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+|(?<![\w&])[#@][^\W_][\w-]*|"
    r"\b[^\W\d_][\w-]*(?:\.[\w-]+)+(?:/\S*)?|\b\w*_\w*|\b[A-Za-z]:\\\S*|(?<!\w)/[\w./-]+"
)
_PROTECT_GATE = re.compile(r"\w\.[^\W_]")
_SENTENCE_END = frozenset(".!?:;\n")
_OPENERS = " \t\"'([{\u201c\u2018-*\u2022"
_NOT_UNIT_SUFFIX = frozenset({"st", "nd", "rd", "th", "s", "d", "x", "k", "am", "pm"})
_MAX_PART = 24
#: A lone "a" may end a split only after one of these ("goesfora" -> "goes for a"); otherwise it is
#: usually the end of a name or foreign word ("Nutella" is not "nut ell a").
_BEFORE_FINAL_A = frozenset(
    [
        "for",
        "to",
        "in",
        "of",
        "on",
        "with",
        "into",
        "onto",
        "is",
        "as",
        "at",
        "by",
        "from",
        "and",
        "or",
        "was",
        "be",
        "make",
        "add",
        "use",
        "get",
        "have",
        "has",
        "need",
        "take",
        "cut",
        "put",
        "give",
        "find",
        "buy",
        "choose",
        "pick",
        "grab",
        "place",
        "set",
        "form",
        "such",
        "like",
        "what",
    ]
)


@dataclass(frozen=True)
class SegmenterSettings:
    """Thresholds of :class:`Segmenter` (defaults chosen for precision; see the module docstring)."""

    min_length: int = 4
    max_length: int = 40
    margin: float = 0.5
    min_mean_logp: float = -5.5
    min_mean_logp_capitalised: float = -4.0
    min_run_word: int = 4
    #: Apply the precision gate (False: the splitter before issue 56, kept to measure what the gate removed).
    gate: bool = True
    #: Words never split besides the built-in domain lexicon (the corpus's own frequent words; see
    #: :func:`procbench.clean.gate.corpus_lexicon`), lowercase.
    lexicon: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Split:
    text: str
    capital: bool  # the split applies only where the token starts a sentence


class Segmenter:
    """Split fused words in tokens and texts, memoising the decision per token."""

    def __init__(self, vocab: Vocabulary | None = None, settings: SegmenterSettings | None = None) -> None:
        self.vocab = vocab or get_vocabulary()
        self.settings = settings or SegmenterSettings()
        self._tokens: dict[str, _Split | None] = {}
        self._alpha: dict[tuple[str, bool], list[str] | None] = {}
        self._safe: set[str] = set()
        #: Every split applied to a text so far: token -> split form.
        self.applied: dict[str, str] = {}

    # -- letter runs -----------------------------------------------------------------------------------
    def split_word(self, word: str, *, capitalised: bool = False) -> list[str] | None:
        """The confident split of a lowercase letter run into dictionary words, or None.

        ``capitalised``: the run was written with a capital (a stricter bar: it may be a name).
        """
        key = (word, capitalised)
        if key in self._alpha:
            return self._alpha[key]
        result = self._split_word(word, capitalised)
        self._alpha[key] = result
        return result

    def _split_word(self, word: str, capitalised: bool) -> list[str] | None:
        s, vocab = self.settings, self.vocab
        if not (s.min_length <= len(word) <= s.max_length) or vocab.knows(word):
            return None
        found = self.best_split(word)
        if found is None:
            return None
        score, parts = found
        if len(parts) < 2 or len(parts) > max(2, (len(word) + 1) // 2):
            return None
        whole = vocab.unigram_logp.get(word)
        if s.gate:
            # words coined after the 2006 web counts (hashtag, upcycle, instructable) are known tokens too
            modern = modern_logp(word)
            if modern is not None and (whole is None or modern > whole):
                whole = modern
        if whole is not None:
            return self._gated(word, parts, score) if score - whole >= s.margin else None
        if len(parts) == 2 and max(map(len, parts)) <= 3:
            return None
        floor = s.min_mean_logp_capitalised if capitalised else s.min_mean_logp
        if score / len(parts) < floor:
            return None
        return self._gated(word, parts, score)

    def _gated(self, word: str, parts: list[str], score: float) -> list[str] | None:
        if self.settings.gate and self.refusal(word, parts, score) is not None:
            return None
        return parts

    def refusal(self, word: str, parts: list[str], score: float) -> str | None:
        """Why the gate leaves ``word`` unsplit (:func:`procbench.clean.gate.refusal`), or None."""
        return refusal(word, parts, score, self.vocab, self.settings.lexicon)

    def best_split(self, word: str) -> tuple[float, list[str]] | None:
        """The most probable segmentation of ``word`` into part words and its log10 probability.

        Scores ``log10 P(w1) + sum log10 P(w_k | w_k-1)`` (bigram conditionals where the pair is known,
        unigrams otherwise); a lone ``a`` ends it only after ``for``, ``to``, ``add`` and the like. None when no
        segmentation exists.
        """
        parts, vocab = self.vocab.parts, self.vocab
        n = len(word)
        memo: dict[tuple[int, str], tuple[float, tuple[str, ...]] | None] = {}

        def best(i: int, prev: str) -> tuple[float, tuple[str, ...]] | None:
            key = (i, prev)
            if key in memo:
                return memo[key]
            out: tuple[float, tuple[str, ...]] | None = None
            for j in range(i + 1, min(n, i + _MAX_PART) + 1):
                piece = word[i:j]
                if piece not in parts or (j == n and piece == "a" and prev not in _BEFORE_FINAL_A):
                    continue
                rest = (0.0, ()) if j == n else best(j, piece)
                if rest is None:
                    continue
                score = vocab.conditional_logp(piece, prev) + rest[0]
                if out is None or score > out[0]:
                    out = (score, (piece, *rest[1]))
            memo[key] = out
            return out

        found = best(0, "")
        return None if found is None else (found[0], list(found[1]))

    # -- tokens ----------------------------------------------------------------------------------------
    def split_token(self, token: str, *, sentence_start: bool = True) -> str:
        """``token`` with spaces inserted where it is confidently fused (unchanged otherwise)."""
        split = self._token(token)
        if split is None or (split.capital and not sentence_start):
            return token
        return split.text

    def _token(self, token: str) -> _Split | None:
        if token in self._tokens:
            return self._tokens[token]
        result = self._decide(token)
        self._tokens[token] = result
        if result is None:
            self._safe.add(token)
        return result

    def _decide(self, token: str) -> _Split | None:
        if token.isalpha():
            if not _plain_case(token):
                return None
            capital = token[0].isupper()
            parts = self.split_word(token.lower(), capitalised=capital)
            return None if parts is None else _Split(_respace(token, parts), capital)
        if token.isdigit():
            return None
        runs = _RUNS.findall(token)
        if not 2 <= len(runs) <= 3 or not all(self._boundary(p, r) for p, r in zip(runs, runs[1:], strict=False)):
            return None
        capital = False
        out = []
        for piece in runs:
            if piece.isalpha() and _plain_case(piece):
                parts = self.split_word(piece.lower(), capitalised=piece[0].isupper())
                if parts is not None:
                    capital = capital or piece[0].isupper()
                    piece = _respace(piece, parts)
            out.append(piece)
        return _Split(" ".join(out), capital)

    def _boundary(self, prev: str, run: str) -> bool:
        """Whether a digit/letter boundary inside a token separates a number from a word or unit."""
        if prev.isdigit():  # number then letters: 350degrees, 2cups, 5mm
            word = run.lower()
            if word in _NOT_UNIT_SUFFIX or not _plain_case(run, allow_caps=True) or (len(run) == 1 and run.isupper()):
                return False
            if word in UNITS:
                return True
            return len(word) >= 3 and (self.vocab.knows(word) or self.split_word(word) is not None)
        # letters then number: oven350, step1
        word = prev.lower()
        if len(word) < self.settings.min_run_word or not _plain_case(prev):
            return False
        return word in self.vocab.words or self.split_word(word, capitalised=prev[0].isupper()) is not None

    # -- texts -----------------------------------------------------------------------------------------
    def split_text(self, text: str) -> str:
        """Split the confidently fused tokens of ``text``; protected spans (URLs, e-mails, ...) are kept."""
        tokens = _TOKEN.findall(text)
        if self._safe.issuperset(tokens):
            return text
        splits = {t: sp for t in set(tokens).difference(self._safe) if (sp := self._token(t)) is not None}
        if not splits:
            return text
        protected = _protected_spans(text)
        edits: list[tuple[int, int, str]] = []
        n = len(text)
        for token, split in splits.items():
            start = 0
            while (i := text.find(token, start)) >= 0:
                j = start = i + len(token)
                if (i > 0 and text[i - 1].isalnum()) or (j < n and text[j].isalnum()):
                    continue
                if protected and any(a < j and i < b for a, b in protected):
                    continue
                if split.capital and not _starts_sentence(text, i):
                    continue
                if self.settings.gate and credited(text, i):
                    continue  # a user or site name: "member dirtymac", "Photo from holisticmonkey"
                edits.append((i, j, split.text))
                self.applied[token] = split.text
        if not edits:
            return text
        edits.sort()
        out, last = [], 0
        for i, j, replacement in edits:
            out.append(text[last:i])
            out.append(replacement)
            last = j
        out.append(text[last:])
        return "".join(out)


def _protected_spans(text: str) -> list[tuple[int, int]]:
    """Spans of URLs, e-mail addresses, hashtags, dotted names, identifiers and paths (cheap test first)."""
    if not (_PROTECT_GATE.search(text) or any(c in text for c in "@#_/\\")):
        return []
    return [m.span() for m in _PROTECTED.finditer(text)]


def _plain_case(token: str, *, allow_caps: bool = False) -> bool:
    """lowercase or Capitalised (no inner capitals: names like KitchenAid, acronyms like NASA)."""
    rest = token[1:]
    if rest.islower() or not rest:
        return True
    return allow_caps and token.isupper()


def _respace(token: str, parts: list[str]) -> str:
    out, pos = [], 0
    for part in parts:
        out.append(token[pos : pos + len(part)])
        pos += len(part)
    return " ".join(out)


def _starts_sentence(text: str, index: int) -> bool:
    i = index - 1
    while i >= 0 and text[i] in _OPENERS:
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END
