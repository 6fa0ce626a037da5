"""Tells: a statistic per choice of a question that a reader who ignores the context could rank the answer by.

A :class:`Tell` maps a :class:`ChoiceView` (the choices' and the question's vectors) to an array ``(Q, C)``; the
answer's rank by it (:func:`answer_ranks`) is what the generators deal evenly (:mod:`procbench.generate.dealer`)
and what the audit's distance probes read. A tell is *separable* when a choice's value does not depend on the
other choices (then a candidate's value can be read beside the answer alone). :data:`TELLS` names them; a
recipe (:mod:`procbench.generate.recipes`) lists the ones its setting deals. Paper 001 (Fig. 2) is the first:
the choices' distance to the question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from procbench.registry import Registry

__all__ = ["TELLS", "ChoiceView", "OddOneOut", "PathLength", "QuestionDistance", "Tell", "answer_ranks"]


@dataclass(frozen=True)
class ChoiceView:
    """What a tell reads of ``Q`` questions.

    Attributes:
        choices: ``(Q, C, D)`` the choices' vectors.
        question: ``(Q, L, D)`` the vectors of what the question shows (``L`` may be 0).
        question_mask: ``(Q, L)`` True where the question shows an item.
    """

    choices: np.ndarray
    question: np.ndarray
    question_mask: np.ndarray


class Tell(Protocol):
    """A statistic per choice: ``values(view) -> (Q, C)``."""

    name: str
    separable: bool

    def values(self, view: ChoiceView) -> np.ndarray:
        """``(Q, C)`` the statistic of each choice."""
        ...


@dataclass(frozen=True)
class QuestionDistance:
    """Each choice's Euclidean distance to the mean of the question's items (paper 001's K3 and Fig. 2)."""

    name: str = "question_distance"
    separable: bool = True

    def values(self, view: ChoiceView) -> np.ndarray:
        """``(Q, C)``."""
        mask = view.question_mask[:, :, None]
        point = (view.question * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1)
        return np.asarray(np.linalg.norm(view.choices - point[:, None, :], axis=2))


@dataclass(frozen=True)
class OddOneOut:
    """Each choice's distance to the mean of the other choices (the odd one out; coherence's K3): ``C / (C - 1)``
    times its distance to the choices' centroid, so the centroid's distance ranks alike."""

    name: str = "odd_one_out"
    separable: bool = False

    def values(self, view: ChoiceView) -> np.ndarray:
        """``(Q, C)``."""
        n = view.choices.shape[1]
        centroid = view.choices.mean(axis=1, keepdims=True)
        return np.asarray(np.linalg.norm(view.choices - centroid, axis=2) * n / max(n - 1, 1))


def answer_ranks(values: np.ndarray, answer: np.ndarray) -> np.ndarray:
    """``(Q,)`` how many choices have a smaller value than the answer's (``values (Q, C)``, ``answer (Q,)``)."""
    own = np.take_along_axis(values, np.asarray(answer)[:, None], axis=1)
    return np.asarray((values < own).sum(axis=1), dtype=np.int64)


#: The tells by name (a test's toy tell registers here too).
TELLS: Registry[Tell] = Registry("tell")
TELLS.add("question_distance", QuestionDistance())
TELLS.add("odd_one_out", OddOneOut())


@dataclass(frozen=True)
class PathLength:
    """Each order's path length: its choice vector is ``steps`` image vectors in the order shown, concatenated, and
    the value is the sum of consecutive images' distances (ordering: the authored order of real procedures is the
    smoothest)."""

    name: str = "path_length"
    separable: bool = True
    steps: int = 4

    def values(self, view: ChoiceView) -> np.ndarray:
        """``(Q, C)``."""
        q, c, width = view.choices.shape
        images = view.choices.reshape(q, c, self.steps, width // self.steps)
        return np.asarray(np.linalg.norm(np.diff(images, axis=2), axis=3).sum(axis=2))


TELLS.add("path_length", PathLength())
