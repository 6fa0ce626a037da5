"""Language identification with py3langid (its model ships in the wheel, so it works offline).

97 languages, probabilities normalised. py3langid walks its byte automaton in a Python loop (about
150 µs for a 300-character text); :func:`detect_languages` runs the same model on a batch of texts at
once: the automaton advances every text of the batch one byte per NumPy step, and the naive Bayes
scores are one sparse matrix product. Results equal ``LanguageIdentifier.classify`` (a test checks it);
if py3langid's model attributes ever change, it falls back to calling ``classify`` text by text.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

from procbench.errors import MissingDependency
from procbench.progress import SILENT, Progress

__all__ = ["MAX_CHARS", "detect_languages"]

#: Characters of a procedure's text the detector reads (more adds time, not accuracy).
MAX_CHARS = 300
_BATCH = 4096


@functools.cache
def _identifier() -> Any:
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError as exc:
        raise MissingDependency("language filtering needs py3langid: pip install py3langid") from exc
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@functools.cache
def _arrays() -> (
    tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str], list[tuple[int, int]]] | None
):
    """The model as arrays for batch scoring, or None when py3langid's internals are not as expected."""
    ident = _identifier()
    try:
        table = ident.tk_nextmove
        nextmove = np.frombuffer(table, dtype=np.uint32 if table.itemsize == 4 else np.uint64)  # zero-copy
        rowbase = np.asarray(ident._rowbase, dtype=np.int64)
        output = np.asarray(ident.tk_output, dtype=np.int64)
        ptc = np.asarray(ident.nb_ptc)
        pc = np.asarray(ident.nb_pc, dtype=np.float32)
        classes = list(ident.nb_classes)
        aliases = [(int(i), int(j)) for i, j in ident._alias_pairs]
    except (AttributeError, TypeError, ValueError):
        return None
    if output.ndim != 1 or ptc.ndim != 2 or ptc.shape[1] != len(classes) or not ident._norm_probs:
        return None
    return nextmove, rowbase, output, ptc, pc, classes, aliases


def _encode(text: str) -> bytes:
    if text.isupper():
        text = text.lower()
    return unicodedata.normalize("NFC", text).encode("utf8", errors="surrogatepass")


def _classify_batch(texts: list[str], model: tuple[Any, ...]) -> list[tuple[str, float]]:
    from scipy.sparse import csr_matrix

    nextmove, rowbase, output, ptc, pc, classes, aliases = model
    encoded = [_encode(t) for t in texts]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
    order = np.argsort(-lengths, kind="stable")
    lengths_sorted = lengths[order]
    width = int(lengths_sorted[0]) if len(order) else 0
    flat = np.frombuffer(b"".join(encoded[i] for i in order), dtype=np.uint8).astype(np.int64)
    rows_of = np.repeat(np.arange(len(order)), lengths_sorted)
    starts = np.concatenate(([0], np.cumsum(lengths_sorted)[:-1]))
    matrix = np.zeros((max(width, 1), len(order)), dtype=np.int64)  # position-major: one row per byte position
    matrix[np.arange(len(flat)) - np.repeat(starts, lengths_sorted), rows_of] = flat
    state = np.zeros(len(order), dtype=np.int64)
    hit_rows, hit_features = [], []
    for k in range(width):
        n = int(np.searchsorted(-lengths_sorted, -(k + 1), side="right"))  # rows with length > k
        if n == 0:
            break
        current = nextmove[rowbase[state[:n]] + matrix[k, :n]]
        state[:n] = current
        feature = output[current]
        found = np.flatnonzero(feature >= 0)
        if len(found):
            hit_rows.append(found)
            hit_features.append(feature[found])
    n_features = ptc.shape[0]
    scores = np.zeros((len(order), len(classes)), dtype=np.float32)
    if hit_rows:
        keys = np.concatenate(hit_rows) * n_features + np.concatenate(hit_features)
        unique, counts = np.unique(keys, return_counts=True)
        features, columns = np.unique(unique % n_features, return_inverse=True)
        sparse = csr_matrix(
            (np.log1p(counts.astype(np.float32)), (unique // n_features, columns)),
            shape=(len(order), len(features)),
        )
        with_features = np.zeros(len(order), dtype=bool)
        with_features[unique // n_features] = True
        # only the rows of the features this batch uses, in float32 (the model stores float16)
        scores = np.asarray(sparse @ ptc[features].astype(np.float32), dtype=np.float32) + pc
        scores[~with_features] = 0.0
    scores *= (1.0 / np.sqrt(np.maximum(lengths_sorted, 1))).astype(np.float32)[:, None]
    scores = np.exp(scores - scores.max(axis=1, keepdims=True))
    scores /= scores.sum(axis=1, keepdims=True)
    for i, j in aliases:
        scores[:, i] += scores[:, j]
        scores[:, j] = 0.0
    best = scores.argmax(axis=1)
    out: list[tuple[str, float]] = [("", 0.0)] * len(order)
    for pos, original in enumerate(order.tolist()):
        out[original] = (classes[int(best[pos])], float(scores[pos, best[pos]]))
    return out


def detect_languages(texts: Sequence[str | None], *, progress: Progress = SILENT) -> list[tuple[str | None, float]]:
    """``(language, probability)`` of each text; ``(None, 0.0)`` for empty texts."""
    model = _arrays()
    out: list[tuple[str | None, float]] = [(None, 0.0)] * len(texts)
    progress.start("clean: detecting languages", total=len(texts))
    todo = [i for i, t in enumerate(texts) if t and t.strip()]
    for start in range(0, len(todo), _BATCH):
        batch = todo[start : start + _BATCH]
        if model is not None:
            results = _classify_batch([texts[i] for i in batch], model)  # type: ignore[misc]  # all str: see todo
        else:
            identifier = _identifier()
            results = [identifier.classify(texts[i]) for i in batch]
        for i, (lang, prob) in zip(batch, results, strict=True):
            out[i] = (str(lang), float(prob) if math.isfinite(prob) else 0.0)
        progress.advance(len(batch))
    progress.advance(len(texts) - len(todo))
    return out
