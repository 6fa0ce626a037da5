"""The domain action lexicon of paper 002 §4.1, built from the store's own steps.

Recipes and how-tos are written in short imperative sentences whose first word is usually the action
verb, so the lexicon is: the first words of the steps' sentences seen at least ``min_count`` times
(paper 002: a threshold of 5), kept only if WordNet knows them as verbs (they have a verb synset), minus a
stop-list of verbs too general to be actions (paper 002 filtered these by hand; "go" is its example).

WordNet is read from its database files (``index.verb``, the format of Princeton WordNet 3.0 and of
Debian's ``wordnet-base`` package). :func:`find_wordnet` looks in ``$PROCBENCH_WORDNET``, NLTK's data
folders (``corpora/wordnet``) and ``/usr/share/wordnet``. Without WordNet the lexicon degrades to a
parser-based check (the word was tagged as a verb in at least half of its first-word occurrences) and
says so in :attr:`Lexicon.note`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from procbench.errors import BadInput, InputFileNotFound

__all__ = [
    "DEFAULT_MIN_COUNT",
    "STOP_VERBS",
    "WORDNET_HINT",
    "Lexicon",
    "build_lexicon",
    "find_wordnet",
    "read_lexicon_file",
    "wordnet_verbs",
]

DEFAULT_MIN_COUNT = 5

#: Verbs too general to mark an action of a procedure (paper 002 §4.1: "noisy or too general verbs like go").
STOP_VERBS = frozenset(
    [
        "be",
        "have",
        "do",
        "go",
        "get",
        "make",
        "let",
        "give",
        "take",
        "keep",
        "try",
        "want",
        "need",
        "come",
        "see",
        "look",
        "know",
        "think",
        "say",
        "seem",
        "become",
        "start",
        "begin",
        "continue",
        "find",
        "feel",
        "help",
        "like",
        "love",
        "wish",
        "hope",
        "mean",
        "tell",
        "ask",
        "consider",
        "remember",
        "note",
        "read",
        "understand",
        "learn",
        "decide",
        "choose",
        "plan",
        "enjoy",
    ]
)

WORDNET_HINT = (
    "WordNet not found (apt-get install wordnet-base, or set PROCBENCH_WORDNET to a folder with WordNet's "
    "index.verb): first words were kept when the parser tagged them as verbs in at least half of their uses"
)

_NLTK_DIRS = ("~/nltk_data", "/usr/share/nltk_data", "/usr/local/share/nltk_data", "/usr/lib/nltk_data")


def find_wordnet(path: str | os.PathLike[str] | None = None) -> Path | None:
    """The WordNet database folder (one holding ``index.verb``), or None when there is none.

    ``path`` (or ``$PROCBENCH_WORDNET``) wins when given; a given folder without ``index.verb`` is an error.
    """
    given = path if path is not None else os.environ.get("PROCBENCH_WORDNET")
    if given:
        folder = Path(given).expanduser()
        for candidate in (folder, folder / "corpora" / "wordnet", folder / "dict"):
            if (candidate / "index.verb").is_file():
                return candidate
        raise BadInput(f"no WordNet index.verb in {folder}")
    roots = [*os.environ.get("NLTK_DATA", "").split(os.pathsep), *_NLTK_DIRS]
    for root in filter(None, roots):
        candidate = Path(root).expanduser() / "corpora" / "wordnet"
        if (candidate / "index.verb").is_file():
            return candidate
    debian = Path("/usr/share/wordnet")
    return debian if (debian / "index.verb").is_file() else None


def wordnet_verbs(folder: Path) -> frozenset[str]:
    """Every lemma with a verb synset in WordNet's ``index.verb`` (multi-word lemmas joined by spaces)."""
    verbs = set()
    with open(folder / "index.verb", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith(" ") or not line.strip():
                continue  # the licence header is indented
            verbs.add(line.split(" ", 1)[0].replace("_", " ").lower())
    return frozenset(verbs)


@dataclass(frozen=True)
class Lexicon:
    """Action verbs (lower-case lemmas) and how they were chosen."""

    verbs: frozenset[str]
    source: str  # "store" (built here) or the path of a --lexicon file
    min_count: int | None = None
    wordnet: str | None = None  # the WordNet folder used, None when not found / not needed
    note: str | None = None
    candidates: int = 0  # first words at or above the threshold
    dropped: dict[str, list[str]] = field(default_factory=dict)  # reason -> words

    def __contains__(self, verb: object) -> bool:
        return isinstance(verb, str) and verb.lower() in self.verbs

    def __len__(self) -> int:
        return len(self.verbs)

    def summary(self) -> dict[str, object]:
        """A JSON-ready description (sizes and a sample of what was dropped)."""
        return {
            "size": len(self.verbs),
            "source": self.source,
            "min_count": self.min_count,
            "wordnet": self.wordnet,
            "note": self.note,
            "candidates": self.candidates,
            "dropped": {reason: len(words) for reason, words in self.dropped.items()},
            "dropped_examples": {reason: words[:10] for reason, words in self.dropped.items()},
        }


def build_lexicon(
    first_words: Mapping[str, int] | Iterable[str],
    *,
    min_count: int = DEFAULT_MIN_COUNT,
    verb_tagged: Mapping[str, int] | None = None,
    wordnet: frozenset[str] | None = None,
    stop_verbs: frozenset[str] = STOP_VERBS,
    wordnet_folder: str | None = None,
) -> Lexicon:
    """Paper 002 §4.1's lexicon from sentence-initial words.

    Args:
        first_words: counts of each lower-cased sentence-initial word (or the words themselves, one per use).
        min_count: keep words seen at least this many times.
        verb_tagged: how many of those uses the parser tagged as a verb; used only without ``wordnet``.
        wordnet: lemmas with a verb synset (:func:`wordnet_verbs`); None when WordNet is unavailable.
        stop_verbs: too-general verbs removed last.
    """
    if min_count < 1:
        raise BadInput("--min-verb-count must be at least 1")
    counts = Counter(first_words) if not isinstance(first_words, Mapping) else Counter(dict(first_words))
    frequent = sorted(w for w, c in counts.items() if c >= min_count and w.isalpha())
    dropped: dict[str, list[str]] = {"no_verb_synset": [], "not_tagged_verb": [], "stop_list": []}
    kept = []
    for word in frequent:
        if wordnet is not None:
            if word not in wordnet:
                dropped["no_verb_synset"].append(word)
                continue
        elif 2 * (verb_tagged or {}).get(word, 0) < counts[word]:
            dropped["not_tagged_verb"].append(word)
            continue
        if word in stop_verbs:
            dropped["stop_list"].append(word)
            continue
        kept.append(word)
    return Lexicon(
        frozenset(kept),
        "store",
        min_count=min_count,
        wordnet=wordnet_folder if wordnet is not None else None,
        note=None if wordnet is not None else WORDNET_HINT,
        candidates=len(frequent),
        dropped={k: v for k, v in dropped.items() if v},
    )


def read_lexicon_file(path: str | os.PathLike[str]) -> Lexicon:
    """A lexicon given by hand: one verb per line; blank lines and ``#`` comments ignored."""
    file = Path(path)
    if not file.is_file():
        raise InputFileNotFound(f"lexicon file not found: {file}")
    verbs = set()
    for line in file.read_text(encoding="utf-8").splitlines():
        word = line.split("#", 1)[0].strip().lower()
        if word:
            verbs.add(" ".join(word.split()))
    if not verbs:
        raise BadInput(f"lexicon file {file} lists no verbs")
    return Lexicon(frozenset(verbs), str(file))
