"""Context-free shortcuts of multiple-choice questions: per-choice features and a cross-fitted probe ensemble.

A question can be answered without its context when something about the choices alone gives the answer
away: the answer *looks* different (paper 004's choice-only bias), or it stands in a telling relation to the
question items (paper 001's bias 3: the answer is the choice nearest to, or at a telling distance rank
from, the question; it shares words with the question; it is the odd one out among the choices). This
module measures both, the same way for the audit (``partial_input`` probe, per-question shortcut scores)
and for generation (adversarial negatives, AFLite):

- :func:`choice_features` turns a :class:`ChoiceBatch` into ``(Q, C, F)`` features that need no context:
  distances to the question mean (and how near the next choice's distance is, :func:`distance_gaps`), to the
  nearest question item, to the items next to the placeholder and to
  the other choices; how central and how dense the choice is among the set's items (:func:`hubness`); each
  centred and standardised within the question and with its rank among the question's choices
  (:func:`within_question`); for
  text items the length and word overlap (content words, and TF-IDF over all tokens) with the question
  items; and how often the item (and its cluster) is a choice in the whole batch.
- :class:`ShortcutEnsemble` fits, per procedure-grouped fold, two *choice-only* models (logistic regression on
  each choice's embedding and its offset from the question's mean choice, :func:`choice_view`; and the audit's
  Fisher discriminant on the embedding, :class:`ChoiceDiscriminant`) and a *partial-input* model
  (gradient-boosted trees on those features), and scores every question with the models that never saw its
  procedure (cross-fitting).

>>> probs = ShortcutEnsemble(n_folds=5, seed=0).fit(batch).predict(batch)   # doctest: +SKIP
>>> probs["ensemble"].argmax(axis=1) == batch.answers                        # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from procbench.rng import stream

__all__ = [
    "DISTANCE_MODEL",
    "FEATURE_NAMES",
    "HUBNESS_NEIGHBOURS",
    "HUBNESS_REFERENCE",
    "MIN_CV_QUESTIONS",
    "MODELS",
    "THREADED_FIT_QUESTIONS",
    "ChoiceBatch",
    "ChoiceDiscriminant",
    "HubnessTable",
    "ShortcutEnsemble",
    "answer_scores",
    "choice_features",
    "choice_view",
    "content_words",
    "contrasts",
    "distance_gaps",
    "distance_view",
    "fit_discriminant",
    "fit_workers",
    "group_folds",
    "hits",
    "hubness",
    "reference_sample",
    "stratified_group_folds",
    "within_question",
    "word_weights",
]

#: The fewest questions a cross-fitted probe is fitted on: the audit reports a probe on fewer as not applicable,
#: and adversarial filtering leaves such a set as drawn (a held-out accuracy there cannot be told from chance).
MIN_CV_QUESTIONS = 20
#: The probes of the ensemble; ``ensemble`` is the mean of their within-question probabilities.
MODELS = ("choice_only", "choice_contrast", "partial_input")
#: A further probe the ensemble can fit (``models``): the audit's ``question_distance`` model, a linear classifier on
#: each choice's distance to the question mean relative to the other choices' (:func:`distance_view`).
DISTANCE_MODEL = "question_distance"

_DISTANCES = ("qmean", "qmean_gap", "nearest_item", "adjacent_item", "other_choices", "centrality", "density")
_TEXT = ("chars", "words", "word_overlap", "tfidf_overlap")
_FREQUENCY = ("item_count", "cluster_count")
#: How :func:`within_question` gives each base feature: its value, centred within the question, standardised
#: within the question, and its rank among the question's choices (0 = smallest, scaled to [0, 1]).
WITHIN_KINDS = ("value", "centred", "scaled", "rank")
#: ``(F,)`` names of :func:`choice_features`' last axis: each base feature in each of :data:`WITHIN_KINDS`.
FEATURE_NAMES: tuple[str, ...] = tuple(
    f"{base}_{kind}" for base in (*_DISTANCES, *_TEXT, *_FREQUENCY) for kind in WITHIN_KINDS
)
_WORD = re.compile(r"[^\W\d_]{3,}")
_TOKEN = re.compile(r"\w+")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "your",
        "you",
        "this",
        "that",
        "from",
        "into",
        "are",
        "was",
        "will",
        "can",
        "but",
        "not",
        "all",
        "any",
        "its",
        "then",
        "them",
        "they",
        "have",
        "has",
        "had",
        "use",
        "using",
        "make",
        "sure",
        "one",
        "two",
        "out",
        "off",
        "onto",
        "over",
    ]
)


@dataclass
class ChoiceBatch:
    """Q multiple-choice questions with C choice slots, L question-item slots and D-dimensional items.

    Attributes:
        choice_vectors: ``(Q, C, D)`` float32, L2-normalised item embeddings (zero rows where missing).
        question_vectors: ``(Q, L, D)`` question items (the placeholder and missing items are zero rows).
        question_mask: ``(Q, L)`` True where a question item has a vector.
        valid: ``(Q, C)`` True where a choice exists and has a vector.
        answers: ``(Q,)`` index of the correct choice.
        groups: ``(Q,)`` procedure of each question; cross-fitting never splits a procedure.
        choice_texts: per question, its choices' texts (text items only: length and overlap features).
        question_texts: per question, its question items' texts (the placeholder left out).
        choice_ids: ``(Q, C)`` int64 identity of each choice's item (e.g. its embedding row; -1 missing):
            how often an item is a choice in the batch is a feature (frequent negatives give themselves away).
        clusters: ``(Q, C)`` int64 cluster of each choice's item (-1: none), for the cluster-frequency feature.
        placeholder: ``(Q,)`` int64 slot of the placeholder among the question items (-1: none), for the
            distance to the items next to it (a cloze answer is the step between them).
        word_weights: token -> inverse document frequency for the TF-IDF overlap of a choice with the question
            items (:func:`word_weights`); None: computed from the batch's own texts. Generation passes the
            pool's, so a batch of candidate variants is weighted like the set.
        text_pairs: with ``word_weights``, a cache of the text features of (question items, choice) pairs that
            batches weighted alike share (adversarial filtering scores the same pairs round after round).
        hubness: ``(Q, C)`` centrality and ``(Q, C)`` density of every choice (:func:`hubness`, e.g. from a
            :class:`HubnessTable` of the pool, so every batch of a set reads them alike); None: measured against
            the batch's distinct choice items, as the audit's ``hubness`` probe measures them. Negatives drawn
            from an answer's neighbours are hubs of the embedding space.
    """

    choice_vectors: np.ndarray
    question_vectors: np.ndarray
    question_mask: np.ndarray
    valid: np.ndarray
    answers: np.ndarray
    groups: np.ndarray
    choice_texts: Sequence[Sequence[str]] | None = None
    question_texts: Sequence[Sequence[str]] | None = None
    choice_ids: np.ndarray | None = None
    clusters: np.ndarray | None = None
    placeholder: np.ndarray | None = None
    word_weights: Mapping[str, float] | None = None
    text_pairs: dict[tuple[str, str], tuple[int, int, float, float]] | None = None
    hubness: tuple[np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return int(self.answers.shape[0])

    @property
    def n_choices(self) -> int:
        return int(self.valid.shape[1])


def within_question(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``(Q, C, 4)``: each ``(Q, C)`` value, its deviation from the question's mean, that deviation in units of
    the question's standard deviation (0 where the choices are all alike), and its rank among valid choices
    (:data:`WITHIN_KINDS`).

    The standardised deviation tells how a choice's value is *spaced* from the others' whatever their scale
    (an answer set apart from three close negatives), which neither the deviation nor the rank shows. Ranks
    count ties as half (so equal values share a rank and choice order never matters), scaled to [0, 1].
    """
    v = np.where(valid, values, 0.0)
    both = valid[:, :, None] & valid[:, None, :]
    below = ((v[:, None, :] < v[:, :, None]) & both).sum(axis=2)
    equal = ((v[:, None, :] == v[:, :, None]) & both).sum(axis=2) - 1
    n = np.maximum(valid.sum(axis=1, keepdims=True), 1)
    rank = np.where(valid, (below + 0.5 * equal) / np.maximum(n - 1, 1), 0.0)
    mean = v.sum(axis=1, keepdims=True) / n
    centred = np.where(valid, values - mean, 0.0)
    std = np.sqrt((centred**2).sum(axis=1, keepdims=True) / n)
    scaled = np.where(std > 1e-12 * np.maximum(np.abs(mean), 1.0), centred / np.where(std > 0, std, 1.0), 0.0)
    return np.stack([v, centred, scaled, rank], axis=2)


def _distance_features(batch: ChoiceBatch) -> list[np.ndarray]:
    choices = batch.choice_vectors.astype(np.float32, copy=False)
    mask = batch.question_mask.astype(np.float32)
    n_items = mask.sum(axis=1)
    qmean = np.einsum("ql,qld->qd", mask, batch.question_vectors) / np.maximum(n_items, 1)[:, None]
    to_qmean = np.linalg.norm(choices - qmean[:, None, :], axis=2)
    no_items = n_items == 0
    if no_items.any():  # e.g. coherence: the question is the other choices, as in the audit's distance probe
        to_qmean = to_qmean.astype(np.float64)
        own = choices[no_items]  # missing choices are zero rows: they add nothing to a sum
        n_others = np.maximum(batch.valid[no_items].sum(axis=1) - 1, 1)[:, None, None]
        to_qmean[no_items] = np.linalg.norm(own - (own.sum(axis=1, keepdims=True) - own) / n_others, axis=2)
    # distance to each question item via the inner product (vectors are unit length): (Q, C, L)
    sims = np.einsum("qcd,qld->qcl", choices, batch.question_vectors)
    item_dist = np.sqrt(np.maximum(2.0 - 2.0 * sims, 0.0))
    item_dist = np.where(batch.question_mask[:, None, :], item_dist, np.inf)
    nearest = np.min(item_dist, axis=2, initial=np.inf)
    nearest = np.where(np.isfinite(nearest), nearest, 0.0)
    adjacent = _adjacent_distance(item_dist, batch)
    gram = np.einsum("qcd,qed->qce", choices, choices)
    pair = np.sqrt(np.maximum(2.0 - 2.0 * gram, 0.0))
    both = _other_choices(batch.valid)
    others = np.where(both, pair, 0.0).sum(axis=2) / np.maximum(both.sum(axis=2), 1)
    gap = distance_gaps(to_qmean, batch.valid)
    central, density = (np.where(batch.valid, v.reshape(batch.valid.shape), 0.0) for v in _batch_hubness(batch))
    return [
        within_question(v.astype(np.float64), batch.valid)
        for v in (to_qmean, gap, nearest, adjacent, others, central, density)
    ]


#: A choice's density (:func:`hubness`) is its mean cosine similarity to this many nearest reference items.
HUBNESS_NEIGHBOURS = 10
#: The hubness features' reference items are at most this many (evenly spaced beyond: :func:`reference_sample`),
#: so their cost grows linearly with the set.
HUBNESS_REFERENCE = 4096


def reference_sample(vectors: np.ndarray, usable: np.ndarray | None = None) -> np.ndarray:
    """``(R, D)`` float32: at most :data:`HUBNESS_REFERENCE` of the ``usable (N,)`` rows of ``vectors (N, D)``
    (default: every row), evenly spaced."""
    rows = np.arange(len(vectors)) if usable is None else np.flatnonzero(usable)
    if len(rows) > HUBNESS_REFERENCE:
        rows = rows[np.linspace(0, len(rows) - 1, HUBNESS_REFERENCE).round().astype(np.int64)]
    return np.asarray(vectors[rows], dtype=np.float32)


def hubness(vectors: np.ndarray, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(n,)`` centrality and ``(n,)`` density of each unit vector of ``vectors (n, D)`` among the unit
    ``reference (R, D)``: its cosine similarity to the reference's centroid, and its mean cosine similarity to its
    :data:`HUBNESS_NEIGHBOURS` nearest reference items (copies of itself, similarity above 1 - 1e-6, left out).

    Hubs of a high-dimensional space (Radovanović, Nanopoulos and Ivanović 2010, "Hubs in space", JMLR 11) lie
    near its centre and in its dense regions; they are the nearest neighbours of many points, so negatives drawn
    from an answer's neighbours are hubs far more often than the answer is."""
    v = np.asarray(vectors, dtype=np.float32)
    ref = np.asarray(reference, dtype=np.float32)
    centre = ref.mean(axis=0) if len(ref) else np.zeros(v.shape[1], dtype=np.float32)
    centre = centre / max(float(np.linalg.norm(centre)), 1e-12)
    density = np.zeros(len(v))
    k = min(HUBNESS_NEIGHBOURS, max(len(ref) - 1, 1))
    for start in range(0, len(v), 1024):
        sims = v[start : start + 1024] @ ref.T
        sims[sims > 1.0 - 1e-6] = -np.inf
        top = -np.partition(-sims, k - 1, axis=1)[:, :k] if sims.shape[1] >= k else sims
        if top.size:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a row with no reference item but itself
                density[start : start + 1024] = np.nanmean(np.where(np.isfinite(top), top, np.nan), axis=1)
    return (v @ centre).astype(np.float64), np.nan_to_num(density)


class HubnessTable:
    """:func:`hubness` of the rows of ``vectors (N, D)`` (unit) against a :func:`reference_sample` of their ``usable``
    rows (default: every row), computed for the rows asked for and kept."""

    def __init__(self, vectors: np.ndarray, usable: np.ndarray | None = None) -> None:
        self.vectors = vectors
        self.reference = reference_sample(vectors, usable)
        self._values = np.full((2, len(vectors)), np.nan)

    @classmethod
    def of_shown(cls, vectors: np.ndarray, rows: np.ndarray) -> HubnessTable:
        """The table against the distinct rows of ``vectors`` that ``rows`` (a set's choices, any shape; -1: none)
        shows, as the audit's ``hubness`` measures a set."""
        shown = np.zeros(len(vectors), dtype=bool)
        shown[rows[rows >= 0]] = True
        return cls(vectors, shown)

    def __call__(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Centrality and density of ``rows`` (any shape; -1 gives 0)."""
        rows = np.asarray(rows, dtype=np.int64)
        safe = np.maximum(rows, 0)
        todo = np.unique(safe[np.isnan(self._values[0, safe])])
        if len(todo):
            self._values[:, todo] = np.stack(hubness(self.vectors[todo], self.reference))
        values = self._values[:, safe]
        return np.where(rows >= 0, values[0], 0.0), np.where(rows >= 0, values[1], 0.0)


def _batch_hubness(batch: ChoiceBatch) -> tuple[np.ndarray, np.ndarray]:
    """``(Q * C,)`` centrality and density of every choice slot of ``batch``: ``batch.hubness``, else
    :func:`hubness` against the batch's distinct choice items (each item measured once)."""
    if batch.hubness is not None:
        return tuple(np.asarray(v, dtype=np.float64).reshape(-1) for v in batch.hubness)  # type: ignore[return-value]
    flat = batch.choice_vectors.reshape(-1, batch.choice_vectors.shape[2])
    valid = batch.valid.reshape(-1)
    # without choice ids every valid slot is an item of its own
    own = np.arange(len(flat)) if batch.choice_ids is None else np.asarray(batch.choice_ids).reshape(-1)
    ids = np.where(valid, own, -1)
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    table = HubnessTable(flat[first], ids[first] >= 0)
    central, density = table(np.where(ids[first] >= 0, np.arange(len(first)), -1))
    return central[inverse.reshape(-1)], density[inverse.reshape(-1)]


def distance_gaps(distances: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``(Q, C)`` how far each choice's ``distances (Q, C)`` (to the question) is from the nearest other valid
    choice's (0 for a question with one choice).

    Negatives drawn at the answer's distance to the question leave the answer with a near neighbour in distance
    whatever its rank: on adversarial sets the answer was in the pair of choices nearest in distance in 59-64% of
    the questions (chance 50%), and "pick the choice with the smallest gap" read 0.29-0.34."""
    d = np.asarray(distances, dtype=np.float64)
    gaps = np.where(_other_choices(valid), np.abs(d[:, :, None] - d[:, None, :]), np.inf).min(axis=2)
    return np.where(np.isfinite(gaps), gaps, 0.0)


def _other_choices(valid: np.ndarray) -> np.ndarray:
    """``(Q, C, C)`` whether choice ``j`` is another valid choice of valid choice ``i``'s question."""
    both = valid[:, :, None] & valid[:, None, :]
    np.einsum("qcc->qc", both)[...] = False
    return both


def _adjacent_distance(item_dist: np.ndarray, batch: ChoiceBatch) -> np.ndarray:
    """``(Q, C)`` each choice's distance to the nearer of the question items just before and after the
    placeholder (0 where the batch has no placeholder or it has no shown neighbour).

    ``item_dist``: ``(Q, C, L)`` distances to every question item (inf where there is none).
    """
    q, c, n_items = item_dist.shape
    out = np.zeros((q, c))
    if batch.placeholder is None or n_items == 0:
        return out
    slot = np.asarray(batch.placeholder, dtype=np.int64)
    best = np.full((q, c), np.inf)
    for step in (-1, 1):
        at = slot + step
        ok = (slot >= 0) & (at >= 0) & (at < n_items)
        picked = np.take_along_axis(item_dist, np.clip(at, 0, n_items - 1)[:, None, None], axis=2)[:, :, 0]
        best = np.where(ok[:, None], np.minimum(best, picked), best)
    return np.where(np.isfinite(best), best, 0.0)


@lru_cache(maxsize=1 << 16)
def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that overlap features compare: casefolded, 3+ letters, not a stop word."""
    return frozenset(w for w in _WORD.findall(text.casefold()) if w not in _STOP)


@lru_cache(maxsize=1 << 16)
def _token_counts(text: str) -> tuple[tuple[str, int], ...]:
    """Every word token of ``text`` (function words too: phrasing repeats within a procedure) with its count."""
    tokens = _TOKEN.findall(text.casefold())
    return tuple((t, tokens.count(t)) for t in sorted(set(tokens)))


def word_weights(texts: Iterable[str]) -> dict[str, float]:
    """Smoothed inverse document frequency of every token of ``texts`` (the TF-IDF overlap feature's weights)."""
    documents = 0
    frequency: dict[str, int] = {}
    for text in texts:
        documents += 1
        for token, _ in _token_counts(text):
            frequency[token] = frequency.get(token, 0) + 1
    return {token: math.log((1 + documents) / (1 + count)) + 1.0 for token, count in frequency.items()}


def _tfidf(text: str, weights: Mapping[str, float], unseen: float) -> dict[str, float]:
    vector = {token: count * weights.get(token, unseen) for token, count in _token_counts(text)}
    norm = math.sqrt(sum(v * v for v in vector.values()))
    return {token: v / norm for token, v in vector.items()} if norm > 0 else {}


#: A shared :attr:`ChoiceBatch.text_pairs` cache is emptied past this many pairs (about 100 MB).
TEXT_PAIRS_KEPT = 500_000


def _text_features(batch: ChoiceBatch) -> list[np.ndarray]:
    q, c = batch.valid.shape
    chars = np.zeros((q, c))
    words = np.zeros((q, c))
    overlap = np.zeros((q, c))
    tfidf = np.zeros((q, c))
    if batch.choice_texts is not None:
        question_texts = batch.question_texts or [[] for _ in range(q)]
        weights = batch.word_weights
        if weights is None:
            weights = word_weights(t for texts in (*batch.choice_texts, *question_texts) for t in texts)
        unseen = max(weights.values(), default=1.0)
        vectors: dict[str, dict[str, float]] = {}  # a batch of candidate variants repeats the same texts
        # ... and the same (question, choice) pairs: a variant changes one choice of its question
        pairs = batch.text_pairs if batch.text_pairs is not None and batch.word_weights is not None else {}
        if len(pairs) > TEXT_PAIRS_KEPT:
            pairs.clear()

        def weighted(text: str) -> dict[str, float]:
            vector = vectors.get(text)
            if vector is None:
                vector = vectors[text] = _tfidf(text, weights, unseen)
            return vector

        for i, (texts, shown) in enumerate(zip(batch.choice_texts, question_texts, strict=True)):
            joined = " ".join(shown)
            seen: frozenset[str] | None = None
            for j, text in enumerate(texts[:c]):
                found = pairs.get((joined, text))
                if found is None:
                    if seen is None:
                        seen = frozenset().union(*(content_words(t) for t in shown)) if shown else frozenset()
                    vocab = content_words(text)
                    question = weighted(joined)
                    found = pairs[(joined, text)] = (
                        len(text),
                        len(text.split()),
                        len(vocab & seen) / max(len(vocab), 1),
                        sum(v * question.get(t, 0.0) for t, v in weighted(text).items()),
                    )
                chars[i, j], words[i, j], overlap[i, j], tfidf[i, j] = found
    return [within_question(v, batch.valid) for v in (chars, words, overlap, tfidf)]


def _frequency_features(batch: ChoiceBatch) -> list[np.ndarray]:
    out = []
    for ids in (batch.choice_ids, batch.clusters):
        if ids is None:
            out.append(within_question(np.zeros(batch.valid.shape), batch.valid))
            continue
        ids = np.asarray(ids, dtype=np.int64)
        present = batch.valid & (ids >= 0)
        _, inverse, counts = np.unique(ids[present], return_inverse=True, return_counts=True)
        freq = np.zeros(batch.valid.shape)
        freq[present] = np.log1p(counts[inverse])
        out.append(within_question(freq, batch.valid))
    return out


def choice_features(batch: ChoiceBatch) -> np.ndarray:
    """``(Q, C, F)`` float64 context-free features of every choice (:data:`FEATURE_NAMES` along the last axis)."""
    parts = _distance_features(batch) + _text_features(batch) + _frequency_features(batch)
    return np.concatenate(parts, axis=2)


def choice_view(vectors: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``(Q, C, 2D)`` float32: what the choice-only model sees of each choice ``vectors (Q, C, D)``: its embedding,
    then its offset from the mean of the question's valid choices.

    The offset shows how the answer differs from its own negatives under what a question's choices share (the
    topic). Measured on RecipeQA step texts as images (visual cloze ``adversarial``): filtered against a model of
    the embeddings alone, the set kept a choice-only tell that a model of the offsets read at 0.31 and the audit's
    discriminant at 0.32 (the embeddings' model: 0.24); filtered against this view, 0.21-0.28 for all three.
    Filtered against the offsets alone, textual sets kept a tell on the embeddings (0.24 -> 0.28-0.30)."""
    x = np.asarray(vectors, dtype=np.float32)
    count = np.maximum(valid.sum(axis=1), 1).astype(np.float32)[:, None, None]
    return np.concatenate([x, x - (x * valid[..., None]).sum(axis=1, keepdims=True) / count], axis=2)


#: The contrast discriminant's principal components and covariance shrinkage (the audit's ``choice_only``).
DISCRIMINANT_DIMS = 64
SHRINKAGE = 0.1


def fit_discriminant(features: np.ndarray, valid: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(d, d)`` inverse of the shrunk covariance of the valid choices ``features (Q, C, d)`` of ``rows (Q,)``
    (no labels used)."""
    flat = features[valid & rows[:, None]]
    cov = np.atleast_2d(np.cov(flat, rowvar=False))
    target = np.trace(cov) / len(cov) if np.trace(cov) > 0 else 1.0
    shrunk = (1 - SHRINKAGE) * cov + SHRINKAGE * target * np.eye(len(cov))
    return np.linalg.pinv(shrunk)


def contrasts(features: np.ndarray, valid: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """``(Q, d)`` the correct choice minus the mean of the question's wrong choices (``features (Q, C, d)``)."""
    n, k, _ = features.shape
    correct = np.arange(k)[None, :] == answers[:, None]
    wrong = valid & ~correct
    right = features[np.arange(n), np.clip(answers, 0, k - 1)]
    others = (features * wrong[..., None]).sum(axis=1) / np.maximum(wrong.sum(axis=1), 1)[:, None]
    return right - others


@dataclass(frozen=True)
class ChoiceDiscriminant:
    """A choice's score from its embedding alone: ``((x - mean) @ components) @ direction``, ``direction = S^-1 m``
    with ``m`` the mean over training questions of (correct - mean of the wrong choices) and ``S`` the shrunk
    covariance of every choice: Fisher's discriminant, the audit's ``choice_only``.

    Attributes:
        mean: ``(D,)`` mean choice vector.
        components: ``(D, d)`` principal directions of the choices.
        inverse: ``(d, d)`` inverse shrunk covariance of the projected choices.
        direction: ``(d,)`` the discriminant (zeros until :meth:`fit`).
    """

    mean: np.ndarray
    components: np.ndarray
    inverse: np.ndarray
    direction: np.ndarray

    @classmethod
    def basis(cls, vectors: np.ndarray, valid: np.ndarray, dims: int = DISCRIMINANT_DIMS) -> ChoiceDiscriminant:
        """The label-free part, from the valid choices of ``vectors (Q, C, D)``: principal components and the
        inverse shrunk covariance (shared by every fold)."""
        flat = vectors[valid].astype(np.float64)
        mean = flat.mean(axis=0) if len(flat) else np.zeros(vectors.shape[2])
        centred = flat - mean
        n, d = centred.shape
        if dims <= n < d:  # fewer choices than dimensions (e.g. 1280-d image features): the thin SVD, O(n^2 d),
            # gives the same leading directions as eigh of the d x d scatter, O(d^3) (5 s per call at d = 1280)
            components = np.linalg.svd(centred, full_matrices=False)[2][:dims].T
        else:
            _, eigenvectors = np.linalg.eigh(centred.T @ centred)
            components = eigenvectors[:, ::-1][:, : min(dims, d)]
        projected = (vectors.astype(np.float64) - mean) @ components
        inverse = fit_discriminant(projected, valid, np.ones(len(vectors), dtype=bool))
        return cls(mean, components, inverse, np.zeros(components.shape[1]))

    def project(self, vectors: np.ndarray) -> np.ndarray:
        """``(..., d)`` float64 principal-component coordinates of ``vectors (..., D)``.

        The product runs in float32, the embeddings' own precision (``x @ components - mean @ components``): a
        float64 copy of a judge's batch of candidate variants (16,384 questions x 4 choices x 384) was most of
        its cost."""
        product = np.asarray(vectors, dtype=np.float32) @ self._components32
        return product.astype(np.float64) - self._offset

    @cached_property
    def _components32(self) -> np.ndarray:
        return np.asarray(self.components, dtype=np.float32)

    @cached_property
    def _offset(self) -> np.ndarray:
        return np.asarray(self.mean @ self.components, dtype=np.float64)

    def fit(self, vectors: np.ndarray, valid: np.ndarray, answers: np.ndarray) -> ChoiceDiscriminant:
        """The discriminant of the questions ``vectors (Q, C, D)`` (answers ``(Q,)``) in this basis."""
        return self.fit_projected(self.project(vectors), valid, answers)

    def fit_projected(self, coordinates: np.ndarray, valid: np.ndarray, answers: np.ndarray) -> ChoiceDiscriminant:
        """:meth:`fit` from the questions' :meth:`project` ed ``coordinates (Q, C, d)`` (cross-fitting projects a
        batch once for all its folds)."""
        diff = contrasts(coordinates, valid, answers)
        m = diff.mean(axis=0) if len(diff) else np.zeros(self.components.shape[1])
        return ChoiceDiscriminant(self.mean, self.components, self.inverse, self.inverse @ m)

    def decision_function(self, vectors: np.ndarray) -> np.ndarray:
        """``(N,)`` scores of the choices ``vectors (N, D)`` (higher: more answer-like)."""
        return self.project(vectors) @ self.direction


#: The last few :meth:`ChoiceDiscriminant.basis` results by content: adversarial pruning fits several ensembles on
#: one batch (one per partition and repeat) and the basis (an eigendecomposition of the choices' scatter, most of an
#: ensemble's linear-algebra time) needs no labels, so it is computed once per distinct batch.
_BASES: OrderedDict[bytes, ChoiceDiscriminant] = OrderedDict()
_BASES_KEPT = 4


def _shared_basis(vectors: np.ndarray, valid: np.ndarray) -> ChoiceDiscriminant:
    """:meth:`ChoiceDiscriminant.basis` of ``vectors`` and ``valid``, reused when the same arrays come again."""
    import hashlib

    digest = hashlib.blake2b(digest_size=20)
    for array in (np.ascontiguousarray(vectors), np.ascontiguousarray(valid)):
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.data)
    key = digest.digest()
    basis = _BASES.get(key)
    if basis is None:
        basis = _BASES[key] = ChoiceDiscriminant.basis(vectors, valid)
        while len(_BASES) > _BASES_KEPT:
            _BASES.popitem(last=False)
    else:
        _BASES.move_to_end(key)
    return basis


#: The questions a fold's models are fitted on when ``max_fit_questions`` caps them.
_FIT_SAMPLE = stream("shortcuts.fit-sample")
#: The questions the contrast discriminant's label-free basis is computed from when ``max_fit_questions`` caps them.
_BASIS_SAMPLE = stream("shortcuts.basis-sample")


def group_folds(groups: np.ndarray, n_folds: int, seed: int) -> dict[int, int]:
    """A seeded fold for every group: shuffled groups dealt round-robin (fold sizes differ by at most one)."""
    unique = np.unique(np.asarray(groups, dtype=np.int64))
    order = np.random.default_rng([seed, 0x5C7]).permutation(len(unique))
    return {int(g): int(i % n_folds) for i, g in zip(range(len(unique)), unique[order].tolist(), strict=True)}


def stratified_group_folds(groups: np.ndarray, strata: np.ndarray, n_folds: int, seed: int) -> dict[int, int]:
    """A seeded fold for every group, each of ``strata (Q,)`` (a question's label, e.g. the answer's dealt distance
    rank) about as common in every fold as in the whole batch (scikit-learn's ``StratifiedGroupKFold``): on folds
    dealt without it, a set whose labels are dealt exactly evenly reads rank-aware probes below chance, since each
    training fold holds most of what its test fold lacks (the audit stratifies the same way)."""
    from sklearn.model_selection import StratifiedGroupKFold

    groups = np.asarray(groups, dtype=np.int64)
    splitter = StratifiedGroupKFold(n_splits=n_folds, shuffle=True, random_state=seed % 2**32)
    out: dict[int, int] = {}
    with warnings.catch_warnings():  # a rare label (the nearest rank under the paper's K3) is expected
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        for fold, (_, test) in enumerate(splitter.split(np.zeros(len(groups)), np.asarray(strata), groups)):
            out.update(dict.fromkeys(np.unique(groups[test]).tolist(), fold))
    return out


def _softmax_within(scores: np.ndarray, valid: np.ndarray) -> np.ndarray:
    masked = np.where(valid, scores, -np.inf)
    top = np.max(masked, axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    weights = np.where(valid, np.exp(masked - top), 0.0)
    return weights / np.maximum(weights.sum(axis=1, keepdims=True), 1e-300)


def _normalise_within(probs: np.ndarray, valid: np.ndarray) -> np.ndarray:
    probs = np.where(valid, np.clip(probs, 1e-9, 1.0), 0.0)
    return probs / np.maximum(probs.sum(axis=1, keepdims=True), 1e-300)


def distance_view(features: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``(Q, C, 3 + C)`` the question-distance probe's inputs from :func:`choice_features` ``(Q, C, F)``: each
    choice's distance to the question mean centred within the question, its square, its standardised value and
    its distance rank one-hot (the audit's ``question_distance`` features)."""
    centred = features[:, :, FEATURE_NAMES.index("qmean_centred")]
    scaled = features[:, :, FEATURE_NAMES.index("qmean_scaled")]
    n_valid = np.maximum(valid.sum(axis=1, keepdims=True), 1)
    rank = np.rint(features[:, :, FEATURE_NAMES.index("qmean_rank")] * (n_valid - 1)).astype(np.int64)
    onehot = (rank[:, :, None] == np.arange(valid.shape[1])[None, None, :]) & valid[:, :, None]
    return np.concatenate([np.stack([centred, centred**2, scaled], axis=2), onehot.astype(np.float64)], axis=2)


#: :class:`ShortcutEnsemble` fits the folds of a batch of at least this many questions side by side
#: (benchmarks/shortcut_threads.py, 2 cores: 1.2x faster at 400 questions, 1.4-1.5x at 800-1,400; slower below 200).
THREADED_FIT_QUESTIONS = 400


def fit_workers(n_questions: int) -> int:
    """Threads :class:`ShortcutEnsemble` fits the folds of ``n_questions`` questions with by default: the CPUs this
    process may use (the fits release the GIL for most of their work), at most ``OMP_NUM_THREADS`` where it is set
    (as Ray sets it for a task's CPUs), or 1 below :data:`THREADED_FIT_QUESTIONS`."""
    if n_questions < THREADED_FIT_QUESTIONS:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    allowed = os.environ.get("OMP_NUM_THREADS", "").strip()
    if allowed.isdigit() and int(allowed) > 0:
        cpus = min(cpus, int(allowed))
    return max(1, cpus)


@dataclass
class _FoldModels:
    choice_only: Any
    choice_contrast: ChoiceDiscriminant | None
    partial_input: Any
    question_distance: Any = None


@dataclass
class ShortcutEnsemble:
    """Cross-fitted context-free probes (:data:`MODELS`): choice-only (logistic regression on :func:`choice_view`),
    choice-contrast (:class:`ChoiceDiscriminant`) and partial-input (gradient-boosted trees); with
    :data:`DISTANCE_MODEL` in ``models``, also question-distance (logistic regression on :func:`distance_view`).

    ``fit`` deals the batch's procedures into ``n_folds`` folds and fits the models on every fold's
    complement; ``predict`` scores each question with the models of its procedure's fold, so no question
    is scored by a model that saw its procedure (procedures unseen at fit time use fold 0's models). The
    within-question probabilities of each model are returned, and ``ensemble``, their mean.
    """

    n_folds: int = 5
    seed: int = 0
    models: tuple[str, ...] = MODELS
    #: boosting iterations of the partial-input trees (adversarial filtering's demo policy fits fewer:
    #: :func:`procbench.generate.adversarial.policy.demo_size`)
    tree_iterations: int = 150
    #: histogram bins per feature of the partial-input trees (scikit-learn's default, 255, for the audit)
    tree_bins: int = 255
    #: at most this many questions fit each fold's models, drawn with ``seed`` (None: every question of the other
    #: folds): subsampled cross-fitting keeps a fit's cost bounded on large sets while every question is scored
    max_fit_questions: int | None = None
    #: folds fitted side by side (None: :func:`fit_workers`); the fitted models are the same for any number
    workers: int | None = None
    fold_of: dict[int, int] = field(default_factory=dict)
    _fitted: list[_FoldModels] = field(default_factory=list, repr=False)

    def folds(self, groups: np.ndarray) -> np.ndarray:
        """``(Q,)`` the fold of each question's procedure ``groups (Q,)`` in the fitted ensemble (unseen: fold 0)."""
        return np.array([self.fold_of.get(int(g), 0) for g in np.asarray(groups).tolist()], dtype=np.int64)

    def fit(
        self, batch: ChoiceBatch, features: np.ndarray | None = None, strata: np.ndarray | None = None
    ) -> ShortcutEnsemble:
        """Fit one model pair per fold on the other folds' questions (``features``: precomputed, optional;
        ``strata``: ``(Q,)`` labels the folds keep in proportion, :func:`stratified_group_folds`)."""
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from threadpoolctl import threadpool_limits

        n_folds = int(min(self.n_folds, len(np.unique(batch.groups))))
        if n_folds < 2:
            raise ValueError("cross-fitting needs questions from at least 2 procedures")
        if strata is None:
            self.fold_of = group_folds(batch.groups, n_folds, self.seed)
        else:
            self.fold_of = stratified_group_folds(batch.groups, strata, n_folds, self.seed)
        folds = self.folds(batch.groups)
        feats = choice_features(batch) if features is None else features
        labels = np.arange(batch.n_choices)[None, :] == batch.answers[:, None]
        view = choice_view(batch.choice_vectors, batch.valid) if "choice_only" in self.models else None
        distance = distance_view(feats, batch.valid) if DISTANCE_MODEL in self.models else None
        fit_rows = self._fit_rows(folds, n_folds)
        # one BLAS thread per fit, the basis's eigendecomposition included: on a busy machine a multi-threaded LAPACK
        # call on a 384 x 384 scatter spun for a second and more (18% of textual filtering, under load); the folds
        # are fitted side by side instead (independent fits of their own inputs: the same models in any order)
        with threadpool_limits(limits=1):
            basis = None
            if "choice_contrast" in self.models:
                sample = self._basis_rows(len(batch))
                basis = _shared_basis(batch.choice_vectors[sample], batch.valid[sample])
            coordinates = None if basis is None else basis.project(batch.choice_vectors)

            def fit_fold(rows: np.ndarray) -> _FoldModels:
                with threadpool_limits(limits=1):  # OpenMP's thread count is a setting of each thread
                    return fit_models(rows)

            def fit_models(rows: np.ndarray) -> _FoldModels:
                train = rows[:, None] & batch.valid
                y = labels[train].astype(np.int64)
                if len(np.unique(y)) < 2:
                    return _FoldModels(None, None, None, None)
                contrast = linear = trees = by_distance = None
                if basis is not None and coordinates is not None:
                    contrast = basis.fit_projected(coordinates[rows], batch.valid[rows], batch.answers[rows])
                if view is not None:
                    linear = LogisticRegression(C=1.0, max_iter=300, class_weight="balanced")
                    linear.fit(view[train].astype(np.float64), y)
                if "partial_input" in self.models:
                    trees = HistGradientBoostingClassifier(
                        max_iter=self.tree_iterations,
                        learning_rate=0.08,
                        max_leaf_nodes=15,
                        min_samples_leaf=20,
                        l2_regularization=1.0,
                        max_bins=self.tree_bins,
                        early_stopping=False,
                        # no class weights: they make the trees bin every feature with weighted
                        # percentiles, 7x slower in scikit-learn 1.9 (10.7 s vs 1.5 s on 1,920 rows);
                        # the answer is the argmax within a question, which the 1:3 imbalance barely moves
                        random_state=self.seed,
                    )
                    trees.fit(feats[train], y)
                if distance is not None:
                    by_distance = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=300))
                    by_distance.fit(distance[train], y)
                return _FoldModels(linear, contrast, trees, by_distance)

            workers = min(len(fit_rows), self.workers or fit_workers(len(batch)))
            if workers > 1:
                with ThreadPoolExecutor(max_workers=workers) as pool:
                    self._fitted = list(pool.map(fit_fold, fit_rows))
            else:  # already within this thread's limits (a threadpool_limits call costs about 2.5 ms)
                self._fitted = [fit_models(rows) for rows in fit_rows]
        return self

    def _basis_rows(self, n_questions: int) -> np.ndarray:
        """``(n,)`` the questions the shared basis is computed from: every one, or past ``max_fit_questions`` a
        seeded draw of that many (ascending), so its cost is bounded like a fold's fit."""
        if self.max_fit_questions is None or n_questions <= self.max_fit_questions:
            return np.arange(n_questions)
        drawn = _BASIS_SAMPLE.rng(self.seed).choice(n_questions, self.max_fit_questions, replace=False)
        return np.sort(drawn)

    def _fit_rows(self, folds: np.ndarray, n_folds: int) -> list[np.ndarray]:
        """Per fold, ``(Q,)`` the questions its models are fitted on: the other folds' (at most
        ``max_fit_questions`` of them, a seeded draw)."""
        out = []
        for fold in range(n_folds):
            rows = folds != fold
            if self.max_fit_questions is not None and rows.sum() > self.max_fit_questions:
                chosen = _FIT_SAMPLE.rng(self.seed, fold).choice(
                    np.flatnonzero(rows), self.max_fit_questions, replace=False
                )
                rows = np.zeros_like(rows)
                rows[chosen] = True
            out.append(rows)
        return out

    def predict(self, batch: ChoiceBatch, features: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """``{model: (Q, C)}`` cross-fitted within-question probabilities (rows sum to 1 over valid choices)."""
        from threadpoolctl import threadpool_limits

        if not self._fitted:
            raise ValueError("fit the ensemble first")
        feats = choice_features(batch) if features is None else features
        distance = distance_view(feats, batch.valid) if DISTANCE_MODEL in self.models else None
        folds = self.folds(batch.groups)
        q, c = batch.valid.shape
        uniform = _normalise_within(np.ones((q, c)), batch.valid)
        out = {name: uniform.copy() for name in self.models}
        with threadpool_limits(limits=1):
            # every fold's discriminant shares the ensemble's basis: the batch is projected once
            contrast = next((f.choice_contrast for f in self._fitted if f.choice_contrast is not None), None)
            coordinates = None if contrast is None else contrast.project(batch.choice_vectors)
            for fold, fitted in enumerate(self._fitted):
                rows = folds == fold
                if not rows.any():
                    continue
                cells = rows[:, None] & batch.valid
                for name, model, x in (
                    ("choice_only", fitted.choice_only, batch.choice_vectors),
                    ("choice_contrast", fitted.choice_contrast, coordinates),
                    ("partial_input", fitted.partial_input, feats),
                    (DISTANCE_MODEL, fitted.question_distance, distance),
                ):
                    if model is None or x is None or name not in out:
                        continue
                    score = np.full((q, c), -np.inf)
                    if name == "choice_only":
                        score[rows] = _choice_view_scores(model, x[rows], batch.valid[rows])
                        score[~batch.valid] = -np.inf
                    elif isinstance(model, ChoiceDiscriminant):
                        score[cells] = x[cells] @ model.direction
                    else:
                        score[cells] = model.decision_function(np.asarray(x[cells], dtype=np.float64))
                    out[name][rows] = _softmax_within(score[rows], batch.valid[rows])
        out["ensemble"] = np.mean([out[name] for name in self.models], axis=0)
        return out


def _choice_view_scores(model: Any, vectors: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``(Q, C)`` a binary linear model's decision on :func:`choice_view` of ``vectors (Q, C, D)`` without building
    the ``(Q, C, 2D)`` view: ``[x, x - m] @ [w1; w2] = x @ (w1 + w2) - m @ w2``, ``m`` the mean of the question's
    valid choices (a judge's batch of candidate variants made a 400 MB float64 view)."""
    d = vectors.shape[2]
    weights = np.asarray(model.coef_[0], dtype=np.float32)
    x = np.asarray(vectors, dtype=np.float32)
    shown = valid.astype(np.float32)
    mean = np.einsum("qcd,qc->qd", x, shown) / np.maximum(shown.sum(axis=1), 1)[:, None]
    scores = (x @ (weights[:d] + weights[d:])).astype(np.float64)
    return scores - (mean @ weights[d:]).astype(np.float64)[:, None] + float(model.intercept_[0])


def hits(probs: np.ndarray, answers: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``(Q,)`` True where the highest-probability valid choice is the answer (ties count as misses)."""
    masked = np.where(valid, probs, -np.inf)
    top = masked.max(axis=1)
    correct = masked[np.arange(len(answers)), answers]
    return (correct >= top) & ((masked >= top[:, None]).sum(axis=1) == 1)


def answer_scores(probs: dict[str, np.ndarray], answers: np.ndarray) -> np.ndarray:
    """``(Q,)`` the ensemble's cross-fitted probability of each question's answer (cleanlab-style score)."""
    ensemble = probs["ensemble"]
    return np.asarray(ensemble[np.arange(len(answers)), answers], dtype=np.float64)
