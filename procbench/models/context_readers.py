"""Zero-shot readers of the context: reference models that answer by matching each choice with the context.

A set's *headroom* is what people with the context score minus the best model with it (issue 55); these
readers give the model side without training. They answer multiple-choice questions whose items are text
(textual cloze, next action).

A choice's score is the context step it explains best, net of what the question's shown items already explain::

    s(c) = max_j [ sim(c, x_j) - max_t sim(q_t, x_j) ]

for context steps ``x_j`` and question items ``q_t`` (the blank left out); with no question items (the
``needs-context`` settings show the blank alone) the second term is 0. The highest score is the answer; a tie
goes to the first choice, which the sets' balanced answer positions make worth chance. ``sim`` is

- ``context-tfidf``: cosine of TF-IDF vectors (word unigrams and bigrams, sublinear tf), the vocabulary and idf
  fitted on the texts of the split being scored (no answers read);
- ``context-embedding``: cosine of the store's embeddings (the items' field and the step texts), which must come
  from one encoder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from procbench.errors import BadInput
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.models.featurisation import Featurised, store_of
from procbench.qsets.files import QuestionSet

__all__ = ["CONTEXT_READERS", "context_scores", "embedding_predictions", "tfidf_predictions"]

#: Reference model name -> similarity it reads.
CONTEXT_READERS = {"context-tfidf": "tfidf", "context-embedding": "embedding"}


def context_scores(choice_sim: np.ndarray, question_sim: np.ndarray | None) -> np.ndarray:
    """``(K,)`` scores from ``choice_sim`` ``(K, J)`` (choice x context step) and ``question_sim`` ``(T, J)``
    (shown question item x context step; None or T = 0 when the question shows none)."""
    if question_sim is None or question_sim.shape[0] == 0:
        explained = np.zeros(choice_sim.shape[1])
    else:
        explained = question_sim.max(axis=0)
    return (choice_sim - explained[None, :]).max(axis=1)


def _argmax_valid(scores: np.ndarray, valid: np.ndarray) -> int:
    return int(np.argmax(np.where(valid, scores, -np.inf)))


def embedding_predictions(feats: Featurised, rows: np.ndarray) -> list[int]:
    """A choice index per question of ``rows`` from the featurised embeddings (``feats.items`` against
    ``feats.contexts``: both unit-normalised here)."""
    if feats.items.shape[1] != feats.contexts.shape[1] or len(set(feats.encoders.values())) > 1:
        raise BadInput(
            f"context-embedding compares choices with the context in one embedding space, but {feats.qset} reads "
            f"them with {feats.encoders}: embed the items and the step texts with one encoder"
        )
    items = _unit(feats.items)
    contexts = _unit(feats.contexts)
    predictions = []
    for row in rows:
        steps = contexts[feats.context[row][feats.context_mask[row]]]
        shown = feats.question_mask[row] & ~feats.placeholder[row]
        question = items[feats.question[row][shown]]
        choices = items[feats.choices[row, :, 0]]
        scores = context_scores(choices @ steps.T, question @ steps.T if len(question) else None)
        predictions.append(_argmax_valid(scores, feats.choice_valid[row]))
    return predictions


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


@dataclass
class _Texts:
    """One question's texts: shown question items, choices (in the set's order) and context steps."""

    question: list[str]
    choices: list[str]
    context: list[str]


def _item_text(item: dict[str, Any]) -> str:
    return " ".join(part for part in (item.get("title"), item.get("text")) if part)


def _question_texts(qset: QuestionSet, split: str) -> dict[str, _Texts]:
    """qid -> texts of every question of ``split``, read from the store as a person reads them."""
    from procbench.export.inline import Inliner

    table = qset.split(split)
    inliner = Inliner(store_of(qset), set(table.column("procedure_id").to_pylist()))
    out = {}
    for record in inliner.records(qset, split):
        question = [_item_text(i) for i in record["question"] if i["key"] != PLACEHOLDER]
        out[record["qid"]] = _Texts(
            question=[t for t in question if t],
            choices=[_item_text(c) for c in record["choices"]],
            context=[_item_text(c) for c in record["context"]],
        )
    return out


def tfidf_predictions(feats: Featurised, rows: np.ndarray, qset: QuestionSet, split: str) -> list[int]:
    """A choice index per question of ``rows`` (all of ``split``) by TF-IDF cosine (see the module docstring)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = _question_texts(qset, split)
    wanted = [texts[feats.qids[row]] for row in rows]
    corpus = [t for q in wanted for t in (*q.question, *q.choices, *q.context)]
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    try:
        vectorizer.fit(corpus)
    except ValueError:  # no word at all in the split's texts
        return [0] * len(rows)
    predictions = []
    for row, q in zip(rows, wanted, strict=True):
        if not q.context or not q.choices:
            predictions.append(0)
            continue
        steps = vectorizer.transform(q.context)
        choice_sim = (vectorizer.transform(q.choices) @ steps.T).toarray()
        question_sim = (vectorizer.transform(q.question) @ steps.T).toarray() if q.question else None
        valid = feats.choice_valid[row][: len(q.choices)]
        predictions.append(_argmax_valid(context_scores(choice_sim, question_sim), valid))
    return predictions
