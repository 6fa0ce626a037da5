"""Question sets as the probes see them: items, answers, procedures, contexts and item vectors.

An :class:`AuditSet` is built from a procbench question-set folder or a RecipeQA JSON file (see
:mod:`procbench.audit.loaders`), or directly from lists (tests, other tools). Items are identified by
*keys*: a step key ``PROCEDURE_ID#INDEX`` (textual-cloze titles through ``meta.question_keys`` /
``meta.choice_keys``), an image id, or, when no key is known, the item itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from procbench.errors import ProcbenchError
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.tasks import TASKS, TaskKind

__all__ = [
    "ArrayVectors",
    "AuditSet",
    "ItemIndex",
    "NotApplicable",
    "TaskKind",
    "VectorLookup",
    "task_kind",
]


class NotApplicable(Exception):  # noqa: N818  (a verdict, not a failure)
    """A probe does not apply to a set, or cannot be computed on it; the message says why.

    Raised by the set's views (no item vectors), the probe context (too few questions for cross-validation)
    and the probes themselves; the audit loop catches it once and reports the probe as not applicable.
    """


def task_kind(task: str, choices: Sequence[Sequence[Any]]) -> TaskKind:
    """The kind of ``task``; for a task procbench does not know, inferred from the shape of its choices."""
    known = TASKS.find(task)
    if known is not None:
        return known.kind
    first = next((c for cs in choices for c in cs), None)
    return TaskKind("unknown", None, ordering=isinstance(first, (list, tuple)))


class VectorLookup(Protocol):
    """Anything that maps item keys to vectors (``procbench.features.ItemVectors`` is one)."""

    def get(self, keys: Sequence[str | None]) -> np.ndarray:
        """``(len(keys), D)`` float32, zero rows for unknown keys."""
        ...


class ArrayVectors:
    """Vectors held in memory, by key; unknown keys get zero rows."""

    def __init__(self, keys: Sequence[str], matrix: np.ndarray, *, encoder: str = "") -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.positions = {k: i for i, k in enumerate(keys)}
        self.encoder = encoder
        self.missing = 0

    @property
    def dim(self) -> int:
        """Vector length."""
        return int(self.matrix.shape[1])

    def get(self, keys: Sequence[str | None]) -> np.ndarray:
        """``(len(keys), D)`` float32; zero rows for None or unknown keys (counted in ``missing``)."""
        rows = np.array([self.positions.get(k, -1) if k is not None else -1 for k in keys], dtype=np.int64)
        out = np.zeros((len(keys), self.dim), dtype=np.float32)
        found = rows >= 0
        self.missing += int((~found).sum())
        out[found] = self.matrix[rows[found]]
        return out


@dataclass
class ItemIndex:
    """Items of a set as integer ids into ``keys``.

    Attributes:
        keys: ``(u,)`` distinct item keys.
        question: ``(n, Lq)`` item ids of the question items; -1 for the placeholder and padding.
        has_question: ``(n,)`` whether the question shows any item at all (coherence/ordering may not).
        choice: ``(n, k, L)`` item ids of each choice (``L`` = 1 unless choices are orders); -1 padding.
        valid: ``(n, k)`` whether the choice exists (questions may have fewer than ``k``).
    """

    keys: list[str]
    question: np.ndarray
    has_question: np.ndarray
    choice: np.ndarray
    valid: np.ndarray


@dataclass(eq=False)
class AuditSet:
    """One question set to audit (``n`` questions), as plain lists and arrays.

    ``questions[i]`` are the displayed question items (``@placeholder`` marks the blank), ``choices[i]`` the
    choices (items, or orders of items), ``answers[i]`` the index of the correct choice.
    ``question_keys`` / ``choice_keys`` identify the items (default: the items themselves); ``contexts[i]``
    is the context text (text tasks; None when unknown); ``vectors`` looks keys up (None when there are
    no embeddings, with ``vectors_note`` saying why). ``qids`` and ``splits`` identify questions in the
    per-question shortcut scores (default: the question's position, no split). ``context_keys[i]`` are the
    keys of question ``i``'s context units (its steps' texts, or its steps' images), looked up in
    ``context_vectors`` (default: ``vectors``) in the same space as the choices; None, with
    ``context_note`` saying why, when the set has no such vectors.
    """

    name: str
    task: str
    procedure_ids: list[str]
    questions: list[list[str]]
    choices: list[list[Any]]
    answers: np.ndarray
    question_keys: list[list[str | None]] | None = None
    choice_keys: list[list[Any]] | None = None
    contexts: list[str] | None = None
    vectors: VectorLookup | None = None
    vectors_note: str | None = None
    encoder: str = ""
    source: Path | None = None
    qids: list[str] | None = None
    splits: list[str] | None = None
    context_keys: list[list[str]] | None = None
    context_vectors: VectorLookup | None = None
    context_note: str | None = None
    context_what: str = ""
    kind: TaskKind = field(init=False)
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.answers = np.asarray(self.answers, dtype=np.int64).reshape(-1)
        n = len(self.answers)
        if not (len(self.procedure_ids) == len(self.questions) == len(self.choices) == n):
            raise ValueError("procedure_ids, questions, choices and answers must have one entry per question")
        self.kind = task_kind(self.task, self.choices)

    def __len__(self) -> int:
        return len(self.answers)

    # -- keys --------------------------------------------------------------------------------------------
    def qkeys(self) -> list[list[str | None]]:
        """Key of every question item (None for the placeholder)."""
        if self.question_keys is not None:
            return [
                [None if item == PLACEHOLDER else key for item, key in zip(items, keys, strict=False)]
                for items, keys in zip(self.questions, self.question_keys, strict=True)
            ]
        return [[None if item == PLACEHOLDER else item for item in items] for items in self.questions]

    def ckeys(self) -> list[list[Any]]:
        """Key of every choice (a list of keys for orders)."""
        if self.choice_keys is not None:
            return self.choice_keys
        return self.choices

    def display(self) -> dict[str, str]:
        """Item key -> how the item reads (the title for textual items, else the key)."""
        cached = self._cache.get("display")
        if cached is None:
            cached = {}
            if self.choice_keys is not None and not self.kind.ordering:
                for items, keys in zip(self.choices, self.choice_keys, strict=True):
                    for item, key in zip(items, keys, strict=False):
                        if key is not None:
                            cached.setdefault(str(key), str(item))
            self._cache["display"] = cached
        return cached

    # -- encoded views -------------------------------------------------------------------------------------
    def index(self) -> ItemIndex:
        """Item ids of every question and choice (computed once)."""
        cached = self._cache.get("index")
        if cached is not None:
            return cached
        positions: dict[str, int] = {}

        def pid(key: Any) -> int:
            if key is None:
                return -1
            return positions.setdefault(str(key), len(positions))

        qkeys = self.qkeys()
        ckeys = self.ckeys()
        n = len(self)
        lq = max((len(q) for q in qkeys), default=0) or 1
        k = max((len(c) for c in ckeys), default=0) or 1
        ordering = self.kind.ordering
        length = max((len(c) for cs in ckeys for c in cs), default=1) if ordering else 1
        question = np.full((n, lq), -1, dtype=np.int64)
        has_question = np.zeros(n, dtype=bool)
        choice = np.full((n, k, max(1, length)), -1, dtype=np.int64)
        valid = np.zeros((n, k), dtype=bool)
        for i in range(n):
            items = self.questions[i]
            has_question[i] = len(items) > 0
            for j, key in enumerate(qkeys[i]):
                question[i, j] = pid(key)
            for j, key in enumerate(ckeys[i]):
                valid[i, j] = True
                if ordering:
                    for t, part in enumerate(key):
                        choice[i, j, t] = pid(part)
                else:
                    choice[i, j, 0] = pid(key)
        cached = ItemIndex(list(positions), question, has_question, choice, valid)
        self._cache["index"] = cached
        return cached

    def item_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """``(u, D)`` float32 vectors of every item key and the ``(u,)`` mask of keys that have one.

        Raises:
            NotApplicable: the set has no item vectors (the reason is kept and raised again on later calls).
        """
        cached = self._cache.get("vectors")
        if cached is None:
            cached = self._cache["vectors"] = self._load_vectors()
        if isinstance(cached, NotApplicable):
            raise NotApplicable(str(cached))
        return cached

    def _load_vectors(self) -> tuple[np.ndarray, np.ndarray] | NotApplicable:
        if self.vectors is None:
            return NotApplicable(self.vectors_note or "the set has no item embeddings")
        keys = self.index().keys
        try:
            matrix = np.asarray(self.vectors.get(keys), dtype=np.float32)
        except ProcbenchError as exc:
            return NotApplicable(f"no item embeddings: {exc}")
        found = np.linalg.norm(matrix, axis=1) > 0 if len(keys) else np.zeros(0, dtype=bool)
        return (matrix, found) if found.any() else NotApplicable("none of the set's items has an embedding")
