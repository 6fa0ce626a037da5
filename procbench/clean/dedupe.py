"""Exact and near-duplicate procedures: the same procedure scraped twice, or lightly edited copies.

Procedures are compared on the word bigrams of their clean step titles and texts (lowercased, within
steps). Candidate pairs come from three cheap sources; pairs whose MinHash estimate is far below the
threshold (by more than 2.4 standard errors) are set aside, and every other candidate is verified exactly:

1. MinHash signatures (64 hash functions, vectorised with NumPy) banded for LSH (16 bands of 4), which
   finds pairs with Jaccard similarity above ~0.6 with high probability;
2. procedures that share an identical step of at least four words (steps shared by more than 20
   procedures, such as "Enjoy!", are boilerplate and ignored);
3. procedures whose titles have the same content words (at most 20 procedures per title).

A verified pair is a duplicate when its Jaccard similarity reaches ``strong`` (0.9), or reaches
``threshold`` (0.5) while the titles' content words also agree (Jaccard >= ``title_threshold``): templated
articles such as "Make Carrot Cake Mix in a Jar" / "Make Raisin Walnut Muffin Mix in a Jar" share most
of their steps but are different procedures. Duplicates are grouped (union-find) and each group keeps
one procedure, chosen deterministically: the most word tokens, then the first in the table (the copy
imported first).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench.clean.vocab import word_tokens

__all__ = ["DuplicateMatch", "find_duplicates"]

_NUM_PERM = 64
_BANDS = 16
_MAX_STEP_SHARERS = 20
_MIN_STEP_WORDS = 4
_ESTIMATE_SLACK = 0.15
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_TITLE_STOP = frozenset(
    [
        "how",
        "to",
        "make",
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "in",
        "on",
        "for",
        "with",
        "your",
        "you",
        "diy",
        "easy",
        "simple",
        "best",
        "homemade",
        "from",
        "at",
        "by",
        "my",
        "using",
        "use",
        "into",
        "up",
        "do",
        "get",
        "own",
        "its",
        "it",
    ]
)
_TITLE_TOKEN = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class DuplicateMatch:
    """A dropped procedure, the kept one it duplicates and their word-bigram Jaccard similarity."""

    index: int
    kept: int
    similarity: float
    exact: bool


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, elementwise on uint64 (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _hash_tokens(tokens: pa.Array) -> np.ndarray:
    """A stable 64-bit hash of each token (the same in every run and process), ``(T,) uint64``."""
    if len(tokens) == 0:
        return np.zeros(0, dtype=np.uint64)
    encoded = pc.dictionary_encode(tokens)
    unique = encoded.dictionary.to_pylist()
    hashes = np.fromiter(
        (int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest(), "little") for t in unique),
        dtype=np.uint64,
        count=len(unique),
    )
    return hashes[np.asarray(encoded.indices, dtype=np.int64)]


@dataclass
class _Chunk:
    """Word hashes and bigram shingles of a run of steps (whole procedures), in step order."""

    word: np.ndarray  # (T,) uint64
    shingles: np.ndarray  # (T,) uint64
    docs: np.ndarray  # (T,) int64, non-decreasing
    first: np.ndarray  # (T,) bool, the token starts a step


def _chunk(texts: pa.Array, doc_of_row: np.ndarray) -> _Chunk:
    tokens, parents = word_tokens(texts)
    word = _hash_tokens(tokens)
    first = np.ones(len(word), dtype=bool)
    first[1:] = parents[1:] != parents[:-1]
    prev = np.empty_like(word)
    prev[1:] = word[:-1]
    prev[first] = np.uint64(0x5851F42D4C957F2D)  # beginning-of-step marker
    with np.errstate(over="ignore"):
        shingles = _mix(prev * np.uint64(0x2545F4914F6CDD1D) + word)
    return _Chunk(word, shingles, doc_of_row[parents], first)


def find_duplicates(
    step_texts: pa.Array,
    doc_of_step: np.ndarray,
    titles: Sequence[str],
    active: np.ndarray,
    *,
    threshold: float = 0.5,
    title_threshold: float = 0.5,
    strong: float = 0.9,
    chunk_steps: int = 50_000,
) -> list[DuplicateMatch]:
    """Find duplicates among the ``active`` procedures.

    Works through the steps in chunks of whole procedures, so memory stays bounded on large stores.

    Args:
        step_texts: clean "title text" of every step, grouped by procedure in step order, ``(S,)`` strings.
        doc_of_step: procedure index of each step, ``(S,) int64``, non-decreasing.
        titles: clean procedure titles, one per procedure (in table order, which breaks ties in which
            copy is kept).
        active: ``(N,) bool``, the procedures still kept by earlier filters.

    Returns:
        One match per dropped procedure, sorted by procedure index.
    """
    n_docs = len(titles)
    rows = np.flatnonzero(active[doc_of_step]) if len(doc_of_step) else np.zeros(0, dtype=np.int64)
    if len(rows) == 0:
        return []
    texts = step_texts.take(pa.array(rows))
    doc_of_row = doc_of_step[rows]
    first_rows = np.flatnonzero(np.r_[True, doc_of_row[1:] != doc_of_row[:-1]])  # first row of each procedure
    sig = np.zeros((n_docs, _NUM_PERM), dtype=np.uint64)
    has_sig = np.zeros(n_docs, dtype=bool)
    word_counts = np.zeros(n_docs, dtype=np.int64)
    step_keys, step_docs = [], []
    start = 0
    while start < len(rows):
        cut = int(np.searchsorted(first_rows, start + chunk_steps, side="left"))
        end = max(int(first_rows[cut]) if cut < len(first_rows) else len(rows), start + 1)
        part = _chunk(texts.slice(start, end - start), doc_of_row[start:end])
        if len(part.word):
            starts = np.flatnonzero(np.r_[True, part.docs[1:] != part.docs[:-1]])
            docs = part.docs[starts]
            sig[docs] = _signatures(part.shingles, starts)
            has_sig[docs] = True
            word_counts[docs] = np.diff(np.r_[starts, len(part.docs)])
            keys, key_docs = _step_keys(part)
            step_keys.append(keys)
            step_docs.append(key_docs)
        start = end
    doc_ids = np.flatnonzero(has_sig)
    found = [_lsh_pairs(sig[doc_ids], doc_ids), _same_title_pairs(titles, doc_ids)]
    if step_keys:
        found.append(_bucket_pairs(np.concatenate(step_keys), np.concatenate(step_docs), max_size=_MAX_STEP_SHARERS))
    codes = np.unique(np.concatenate([f[:, 0] * n_docs + f[:, 1] for f in found]))
    if len(codes) == 0:
        return []
    # Cheap vectorised prefilter: the signature agreement estimates the Jaccard similarity (standard error
    # <= 0.0625 with 64 hash functions); pairs far below the threshold are not verified, and pairs that can
    # only qualify through their titles are verified only when the titles agree.
    pair_array = np.stack([codes // n_docs, codes % n_docs], axis=1)
    estimate = (sig[pair_array[:, 0]] == sig[pair_array[:, 1]]).mean(axis=1)
    keep = estimate >= threshold - _ESTIMATE_SLACK
    pair_array, maybe_strong = pair_array[keep], estimate[keep] >= strong - _ESTIMATE_SLACK
    title_words: dict[int, set[str]] = {}

    def title_sim(a: int, b: int) -> float:
        for d in (a, b):
            if d not in title_words:
                title_words[d] = _title_words(titles[d])
        ta, tb = title_words[a], title_words[b]
        return len(ta & tb) / len(ta | tb) if (ta or tb) else 1.0

    to_verify = [
        (a, b)
        for (a, b), likely in zip(pair_array.tolist(), maybe_strong.tolist(), strict=True)
        if likely or title_sim(a, b) >= title_threshold
    ]
    if not to_verify:
        return []
    sets, sequences = _exact_features({d for pair in to_verify for d in pair}, texts, doc_of_row, first_rows)

    def similarity(a: int, b: int) -> tuple[float, bool]:
        sa, sb = sets[a], sets[b]
        inter = len(np.intersect1d(sa, sb, assume_unique=True))
        union = len(sa) + len(sb) - inter
        return (inter / union if union else 1.0), sequences[a] == sequences[b]

    parent: dict[int, int] = {}

    def root(d: int) -> int:
        parent.setdefault(d, d)
        while parent[d] != d:
            parent[d] = parent[parent[d]]
            d = parent[d]
        return d

    verified: dict[tuple[int, int], tuple[float, bool]] = {}
    for a, b in to_verify:
        jac, exact = similarity(a, b)
        if jac >= strong or (jac >= threshold and title_sim(a, b) >= title_threshold):
            verified[(a, b)] = (jac, exact)
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for d in sorted(parent):
        groups.setdefault(root(d), []).append(d)
    matches: list[DuplicateMatch] = []
    for members in groups.values():
        kept = min(members, key=lambda d: (-int(word_counts[d]), d))
        for d in members:
            if d != kept:
                jaccard, exact = verified.get((min(d, kept), max(d, kept))) or similarity(d, kept)
                matches.append(DuplicateMatch(d, kept, jaccard, exact))
    return sorted(matches, key=lambda m: m.index)


def _exact_features(
    docs: set[int], texts: pa.Array, doc_of_row: np.ndarray, first_rows: np.ndarray, chunk_steps: int = 50_000
) -> tuple[dict[int, np.ndarray], dict[int, bytes]]:
    """Shingle sets (sorted unique arrays) and word-hash sequences of the given procedures, recomputed from
    their steps in chunks."""
    ends = np.r_[first_rows[1:], len(doc_of_row)]
    where = {int(d): i for i, d in enumerate(doc_of_row[first_rows].tolist())}
    sets: dict[int, np.ndarray] = dict.fromkeys(docs, np.zeros(0, dtype=np.uint64))
    sequences: dict[int, bytes] = dict.fromkeys(docs, b"")
    ordered = sorted(docs)
    i = 0
    while i < len(ordered):
        batch: list[np.ndarray] = []
        size = 0
        while i < len(ordered) and (not batch or size < chunk_steps):
            d = ordered[i]
            i += 1
            batch.append(np.arange(first_rows[where[d]], ends[where[d]]))
            size += len(batch[-1])
        rows = np.concatenate(batch)
        part = _chunk(texts.take(pa.array(rows)), doc_of_row[rows])
        if not len(part.word):
            continue
        bounds = np.flatnonzero(np.r_[True, part.docs[1:] != part.docs[:-1]])
        for s, e in zip(bounds.tolist(), np.r_[bounds[1:], len(part.docs)].tolist(), strict=True):
            d = int(part.docs[s])
            sets[d] = np.unique(part.shingles[s:e])
            sequences[d] = part.word[s:e].tobytes()
    return sets, sequences


def _step_keys(part: _Chunk) -> tuple[np.ndarray, np.ndarray]:
    """A hash of each step's word sequence (steps of at least four words) and the step's procedure."""
    step_starts = np.flatnonzero(part.first)
    lengths = np.diff(np.r_[step_starts, len(part.word)])
    positions = np.arange(len(part.word), dtype=np.uint64) - np.repeat(step_starts.astype(np.uint64), lengths)
    with np.errstate(over="ignore"):
        acc = np.add.reduceat(_mix(part.word * (positions + np.uint64(1))), step_starts)
    long_enough = lengths >= _MIN_STEP_WORDS
    keys = _mix(acc[long_enough] ^ lengths[long_enough].astype(np.uint64))
    return keys, part.docs[step_starts[long_enough]]


def _signatures(shingles: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """MinHash signatures, ``(n_docs, 64) uint64``: per hash function the minimum over a document's shingles."""
    rng = np.random.default_rng(20240917)  # fixed: signatures only propose candidates, all verified exactly
    a = rng.integers(1, 2**63, size=_NUM_PERM, dtype=np.uint64) | np.uint64(1)
    b = rng.integers(0, 2**63, size=_NUM_PERM, dtype=np.uint64)
    sig = np.empty((len(starts), _NUM_PERM), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for p in range(_NUM_PERM):
            sig[:, p] = np.minimum.reduceat(shingles * a[p] + b[p], starts)
    return sig


def _lsh_pairs(sig: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
    """Candidate pairs from LSH banding of the signatures, ``(P, 2) int64``."""
    rows = _NUM_PERM // _BANDS
    found = []
    for band in range(_BANDS):
        block = sig[:, band * rows : (band + 1) * rows]
        key = np.zeros(len(block), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for r in range(rows):
                key = _mix(key * np.uint64(0x100000001B3) + block[:, r])
        found.append(_bucket_pairs(key, doc_ids))
    return np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)


def _bucket_pairs(keys: np.ndarray, doc_ids: np.ndarray, max_size: int | None = None) -> np.ndarray:
    """Pairs of documents with equal keys, ``(P, 2) int64`` with ``a < b``: each document with its bucket's
    first and with its predecessor (buckets of more than ``max_size`` documents are ignored)."""
    if len(keys) < 2:
        return np.zeros((0, 2), dtype=np.int64)
    order = np.lexsort((doc_ids, keys))
    k, d = keys[order], doc_ids[order].astype(np.int64)
    distinct = np.r_[True, (k[1:] != k[:-1]) | (d[1:] != d[:-1])]
    k, d = k[distinct], d[distinct]
    head = np.r_[True, k[1:] != k[:-1]]
    bucket = np.cumsum(head) - 1
    starts = np.flatnonzero(head)
    sizes = np.diff(np.r_[starts, len(k)])[bucket]
    members = ~head & (sizes >= 2)
    if max_size is not None:
        members &= sizes <= max_size
    idx = np.flatnonzero(members)
    cur = d[idx]
    return np.concatenate([np.stack([d[starts[bucket[idx]]], cur], axis=1), np.stack([d[idx - 1], cur], axis=1)])


def _same_title_pairs(titles: Sequence[str], doc_ids: np.ndarray) -> np.ndarray:
    """Pairs of documents whose titles have the same content words (at most 20 documents per title)."""
    keys, docs = [], []
    for d in doc_ids.tolist():
        words = sorted(_title_words(titles[d]))
        if words:
            keys.append(int.from_bytes(hashlib.blake2b(" ".join(words).encode(), digest_size=8).digest(), "little"))
            docs.append(d)
    return _bucket_pairs(np.array(keys, dtype=np.uint64), np.array(docs, dtype=np.int64), max_size=_MAX_STEP_SHARERS)


def _title_words(title: str) -> set[str]:
    return {t for t in _TITLE_TOKEN.findall(title.lower()) if t not in _TITLE_STOP}
