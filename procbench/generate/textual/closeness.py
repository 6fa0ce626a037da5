"""Difficulty levels of textual ``needs-context`` (``--closeness``): sets of close calls, kept by a rule symmetric
in the four choices (issue 55; paper 001's datasets of increasing difficulty from one meta-dataset).

Level 0 is the setting's draw among a procedure's readable sets (:func:`~.needs_context.readable_sets`). Level
``L`` keeps those whose *fit margin* is at most ``CLOSENESS_MARGINS[L - 1]`` (:mod:`procbench.generate.policy`)::

    margin(S) = mean over i in S and both sims of [ sim(text_i, title_i) - max_{j in S, j != i} sim(text_i, title_j) ]

``sim`` is the embedding cosine and the cosine of word TF-IDF vectors (unigrams and bigrams, sublinear tf, fitted
on every title and step text of the store's kept steps). The mean runs over the four steps because the answer is
uniform among them: it is the set's expected margin, whichever step is asked. The rule reads the set, never which
step is the answer, so the choices stay exchangeable and a reader without the context reads chance at every level;
level 0's readability floor still holds (no paraphrased titles, no text more than ``TEXT_SLACK`` nearer a rival
title than its own), so each text still fits its own title, but the rivals come close. Measured on the RecipeQA
development slice in ``benchmarks/closeness_levels.md``.
"""

from __future__ import annotations

import numpy as np

from procbench.generate import policy
from procbench.generate.exchangeable import fit_margins
from procbench.store import Store

__all__ = ["LexicalFit", "close_sets", "levels"]


def levels() -> int:
    """The highest closeness level (level 0 is the setting's draw)."""
    return len(policy.current().CLOSENESS_MARGINS)


def close_sets(sets: np.ndarray, fits: list[np.ndarray], level: int) -> np.ndarray:
    """``(K', s)`` the sets of ``level`` (all of them at level 0): mean margin over steps and ``fits`` within the
    level's bound (``fits``: ``(n, n)`` text-by-title similarities; margins as
    :func:`~procbench.generate.exchangeable.fit_margins`)."""
    if level == 0 or not len(sets):
        return sets
    margin = np.mean([fit_margins(fit, sets).mean(axis=1) for fit in fits], axis=0)
    return sets[margin <= policy.current().CLOSENESS_MARGINS[level - 1]]


class LexicalFit:
    """Word TF-IDF similarity between step texts and titles, fitted on every kept title and step text of a store."""

    def __init__(self, store: Store) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        from procbench.features import step_key
        from procbench.store.views import kept_steps

        steps = kept_steps(store, ["procedure_id", "index", "title", "text"])
        ids, indices = steps["procedure_id"].to_pylist(), steps["index"].to_pylist()
        keys = [step_key(p, i) for p, i in zip(ids, indices, strict=True)]
        self.titles = dict(zip(keys, (t or "" for t in steps["title"].to_pylist()), strict=True))
        self.texts = dict(zip(keys, (t or "" for t in steps["text"].to_pylist()), strict=True))
        self.vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
        self.vectorizer.fit([*self.titles.values(), *self.texts.values()])

    def fit(self, keys: list[str]) -> np.ndarray:
        """``(n, n)`` cosine of step ``i``'s text and step ``j``'s title, for the steps ``keys`` (``pid#index``)."""
        titles = self.vectorizer.transform([self.titles.get(k, "") for k in keys])
        texts = self.vectorizer.transform([self.texts.get(k, "") for k in keys])
        return np.asarray((texts @ titles.T).toarray(), dtype=np.float64)
