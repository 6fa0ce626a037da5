"""``context_reference``: what the context gives, as a yardstick for what the shortcuts give.

Each choice is scored by its best cosine similarity to the question's context units in the choices'
embedding space, and the best-scoring choice is the answer. No model is fitted: the reference reads the
context and nothing else. The context units are, for textual cloze, the context steps' texts (the store's
``step_text`` embeddings, when the same encoder made the titles; for sets without a store, the ``hashed``
encoder fitted on the set embeds both); for the visual tasks, the step texts when the image encoder and the
text encoder share a space (a CLIP model embedded both fields), else the context's step images when the set
shows them (RecipeQA's own files), else the probe does not apply and says why.

``value`` is the accuracy, ``chance`` the mean of 1/#choices, the interval a procedure bootstrap. The
result is marked ``reference``: above chance is what it should be, so it is never flagged as a bias; the
gap between it and the shortcut probes is what the audit shows.
"""

from __future__ import annotations

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.context import ProbeContext
from procbench.audit.probes.common import choices_with_vectors, require_multiple_choice
from procbench.audit.registry import register
from procbench.audit.report import ProbeResult
from procbench.audit.stats import mc_hits

__all__ = ["context_reference", "context_similarities"]

_BLOCK = 2048


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.where(norms > 0, matrix / np.maximum(norms, 1e-12), 0.0).astype(np.float32)


def context_similarities(aset: AuditSet) -> tuple[np.ndarray, np.ndarray]:
    """``(n, k)`` each choice's best cosine similarity to its question's context units (NaN where a choice
    or the whole context has no vector) and the ``(n,)`` questions where every choice has one.

    Raises:
        NotApplicable: the set has no context vectors in the choices' space.
    """
    if aset.context_keys is None:
        raise NotApplicable(aset.context_note or "the set has no context embeddings in the choices' space")
    matrix, found = aset.item_vectors()
    lookup = aset.context_vectors if aset.context_vectors is not None else aset.vectors
    if lookup is None:
        raise NotApplicable("the set has no context embeddings")
    keys = sorted({k for ks in aset.context_keys for k in ks})
    position = {k: i for i, k in enumerate(keys)}
    context = _unit(np.asarray(lookup.get(keys), dtype=np.float32)) if keys else np.zeros((0, matrix.shape[1]))
    if context.shape[1] != matrix.shape[1]:
        raise NotApplicable(
            f"context vectors ({context.shape[1]}-d) and choice vectors ({matrix.shape[1]}-d) are not in one space"
        )
    index = aset.index()
    valid = index.valid
    n, k = valid.shape
    width = max((len(ks) for ks in aset.context_keys), default=0)
    if width == 0:
        raise NotApplicable("the set's questions have empty contexts")
    ids = np.full((n, width), -1, dtype=np.int64)
    for i, ks in enumerate(aset.context_keys):
        ids[i, : len(ks)] = [position[x] for x in ks]
    has = (ids >= 0) & (np.linalg.norm(context, axis=1) > 0)[np.maximum(ids, 0)]
    padded_items = np.vstack([_unit(matrix), np.zeros((1, matrix.shape[1]), dtype=np.float32)])
    padded_context = np.vstack([context, np.zeros((1, context.shape[1]), dtype=np.float32)])
    choice = np.where(valid, index.choice[:, :, 0], -1)
    best = np.full((n, k), np.nan)
    for start in range(0, n, _BLOCK):
        rows = slice(start, start + _BLOCK)
        units = padded_context[np.where(has[rows], ids[rows], -1)]
        sims = np.einsum("nkd,nld->nkl", padded_items[choice[rows]], units)
        sims = np.where(has[rows][:, None, :], sims, -np.inf)
        best[rows] = sims.max(axis=2)
    best[~np.isfinite(best)] = np.nan
    usable = choices_with_vectors(aset, found) & has.any(axis=1)
    return np.where(valid, best, np.nan), usable


@register(
    "context_reference",
    kind="accuracy",
    summary="reference: the choice most similar to a context step (what the context gives)",
)
def context_reference(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Accuracy of picking the choice most similar to any of the question's context units."""
    require_multiple_choice(aset)
    if aset.kind.ordering:
        raise NotApplicable(f"{aset.task} choices are orders of items, not items to match to the context")
    sims, rows = context_similarities(aset)
    if rows.sum() < 2:
        raise NotApplicable(f"too few questions with context and choice vectors ({int(rows.sum())})")
    valid = aset.index().valid
    hits = mc_hits(sims, aset.answers, valid)
    return ctx.accuracy(
        hits,
        rows,
        valid,
        details={
            "model": "no training: the choice with the highest cosine similarity to any context unit",
            "context": aset.context_what,
            "encoder": aset.encoder,
            "n_skipped": int(len(aset) - rows.sum()),
        },
        reference=True,
    )
