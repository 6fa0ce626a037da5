"""Vectors for the items of question sets, read from the store's frozen embeddings.

Audit probes and baseline models both need, for a question, the vectors of its context steps, question
items and choices. Items are resolved by key: a step is ``PROCEDURE_ID#INDEX`` (its title or text
embedding), an image is its id. Textual-cloze items are title strings; their step keys are recorded in
each question's ``meta`` (``question_keys``, ``choice_keys``), so they resolve the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from procbench.store import Store

if TYPE_CHECKING:
    from procbench.embed.storage import Embeddings

__all__ = ["ItemVectors", "step_key"]


def step_key(procedure_id: str, index: int) -> str:
    """The key of a step: ``PROCEDURE_ID#INDEX``."""
    return f"{procedure_id}#{index}"


class ItemVectors:
    """Look up embedding vectors by key for one field of a store (memory-mapped, loaded on first use).

    Keys the field does not hold (a step without a headline, an image never fetched) get a zero vector,
    and ``missing`` counts them, so callers can report coverage instead of failing.
    """

    def __init__(self, store: Store, field: str) -> None:
        self.store = store
        self.field = field
        self.missing = 0

    @cached_property
    def _embeddings(self) -> Embeddings:
        from procbench.embed import load_embeddings

        return load_embeddings(self.store, self.field)

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {key: i for i, key in enumerate(self._embeddings.keys.to_pylist())}

    @property
    def dim(self) -> int:
        """Vector length of the field's current embedding."""
        return int(self._embeddings.dim)

    @property
    def encoder(self) -> str:
        """Name of the encoder that made the vectors."""
        return str(self._embeddings.encoder)

    def has(self, key: str) -> bool:
        """Whether ``key`` has a vector."""
        return key in self._positions

    def get(self, keys: Sequence[str | None]) -> np.ndarray:
        """``(len(keys), D)`` float32; zero rows for None or unknown keys (counted in ``missing``)."""
        out = np.zeros((len(keys), self.dim), dtype=np.float32)
        positions = self._positions
        rows = np.array([positions.get(k, -1) if k is not None else -1 for k in keys], dtype=np.int64)
        found = rows >= 0
        self.missing += int((~found).sum())
        if found.any():
            out[found] = self._embeddings.vectors[rows[found]]
        return out
