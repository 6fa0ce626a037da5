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
        choices: ``(Q, C, D)`` the choices' vectors; a choice of several items (an order of photos): ``(Q, C, S, D)``.
        question: ``(Q, L, D)`` the vectors of what the question shows (``L`` may be 0).
        question_mask: ``(Q, L)`` True where the question shows an item.
        valid: ``(Q, C)`` True where a choice exists (its vector a zero row elsewhere); None: every one.
        item_mask: ``(Q, C, S)`` True where an item of a several-item choice exists; None: every one.
    """

    choices: np.ndarray
    question: np.ndarray
    question_mask: np.ndarray
    valid: np.ndarray | None = None
    item_mask: np.ndarray | None = None

    def counted(self) -> np.ndarray:
        """``(Q, C)`` :attr:`valid`, or every choice."""
        return self.valid if self.valid is not None else np.ones(self.choices.shape[:2], dtype=bool)


class Tell(Protocol):
    """A statistic per choice: ``values(view) -> (Q, C)``; ``separable``: a choice's value ignores the others."""

    @property
    def name(self) -> str:
        """The tell's name (:data:`TELLS`)."""
        ...

    @property
    def separable(self) -> bool:
        """Whether a choice's value does not depend on the other choices."""
        ...

    def values(self, view: ChoiceView) -> np.ndarray:
        """``(Q, C)`` the statistic of each choice."""
        ...


@dataclass(frozen=True)
class QuestionDistance:
    """Each choice's Euclidean distance to the mean of the question's items (paper 001's K3 and Fig. 2)."""

    name: str = "question_distance"
    separable: bool = True

    def values(self, view: ChoiceView) -> np.ndarray:
        """``(Q, C)`` (a question that shows nothing: distances to the zero vector)."""
        mask = view.question_mask
        total = np.einsum("nl,nld->nd", mask.astype(view.question.dtype), view.question)
        point = total / np.maximum(mask.sum(axis=1), 1)[:, None].astype(view.question.dtype)
        return np.asarray(np.linalg.norm(view.choices - point[:, None, :], axis=2))


@dataclass(frozen=True)
class OddOneOut:
    """Each choice's distance to the mean of the other (valid) choices: the odd one out, coherence's K3 (``C / (C -
    1)`` times its distance to the choices' centroid, so the centroid's distance ranks alike)."""

    name: str = "odd_one_out"
    separable: bool = False

    def values(self, view: ChoiceView) -> np.ndarray:
        """``(Q, C)``."""
        vectors, valid = view.choices, view.counted()
        total = vectors.sum(axis=1)  # invalid choices are zero rows
        others = np.maximum(valid.sum(axis=1) - 1, 1).astype(vectors.dtype)
        out = np.empty(valid.shape)
        for j in range(valid.shape[1]):
            out[:, j] = np.linalg.norm(vectors[:, j] - (total - vectors[:, j]) / others[:, None], axis=1)
        return out


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
    """Each order's path length: the sum of consecutive images' distances of its items in the order shown (ordering:
    the authored order of real procedures is the smoothest); a choice is ``(S, D)`` items, or ``steps`` of them
    concatenated."""

    name: str = "path_length"
    separable: bool = True
    steps: int = 4

    def values(self, view: ChoiceView) -> np.ndarray:
        """``(Q, C)``: consecutive pairs of existing items only (``item_mask``)."""
        images = view.choices
        if images.ndim == 3:  # the items concatenated
            q, c, width = images.shape
            images = images.reshape(q, c, self.steps, width // self.steps)
        present = view.item_mask if view.item_mask is not None else np.ones(images.shape[:3], dtype=bool)
        both = present[:, :, 1:] & present[:, :, :-1]
        out = np.zeros(images.shape[:2])
        for t in range(images.shape[2] - 1):
            step = np.linalg.norm(images[:, :, t + 1] - images[:, :, t], axis=2)
            out += np.where(both[:, :, t], step, 0.0)
        return out


TELLS.add("path_length", PathLength())
