"""Checks shared by the probe families: does a probe apply to the set, and which questions are usable."""

from __future__ import annotations

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable

__all__ = ["choices_with_vectors", "require_multiple_choice"]


def require_multiple_choice(aset: AuditSet, *, needs_items: bool = True) -> None:
    """Raise :class:`NotApplicable` unless ``aset`` is multiple choice (over items, unless ``needs_items``
    is False)."""
    kind = aset.kind
    if not kind.multiple_choice:
        raise NotApplicable(
            f"{aset.task} is not multiple choice: its answer is the authored order, not one of several choices"
        )
    if needs_items and kind.label_choices:
        raise NotApplicable(
            f"{aset.task} choices are fixed labels ({', '.join(map(str, aset.choices[0]))}), not items"
        )


def choices_with_vectors(aset: AuditSet, found: np.ndarray) -> np.ndarray:
    """``(n,)`` questions whose answer index is valid and every item of every choice has a vector."""
    index = aset.index()
    choice = index.choice
    present = choice >= 0
    has = np.where(present, found[np.where(present, choice, 0)], True).all(axis=2)
    n_items = present.any(axis=2)
    ok = (has | ~index.valid).all(axis=1) & (n_items | ~index.valid).all(axis=1)
    k = index.valid.shape[1]
    in_range = (aset.answers >= 0) & (aset.answers < k)
    answer_valid = index.valid[np.arange(len(aset)), np.clip(aset.answers, 0, k - 1)] & in_range
    return ok & answer_valid & (index.valid.sum(axis=1) >= 2)
