"""Per-question shortcut scores (``audit --per-question``): for every question, the cross-fitted
probability that the context-free probes pick its answer, cleanlab-style, so a user can inspect or drop
the questions a shortcut solves.

``shortcut_scores.parquet`` (one row per question, in the set's order) has the columns of
:data:`SCORE_COLUMNS`:

- ``qid``, ``split``, ``procedure_id``: which question;
- ``n_choices`` and ``chance`` (``1 / n_choices``);
- ``choice_only``, ``choice_contrast``, ``partial_input``: the cross-fitted probability each probe of
  :data:`procbench.shortcuts.MODELS` gives the answer (the probabilities of a question's choices sum to 1);
- ``shortcut_score``: their mean, the ensemble's probability of the answer;
- ``shortcut_pick``: whether the ensemble's most probable choice is the answer.

Every question is scored by models that never saw its procedure (procedure-grouped cross-fitting,
:class:`procbench.shortcuts.ShortcutEnsemble`). Questions the probes cannot score (a choice without a
vector) have nulls in the score columns.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa

from procbench.audit.auditset import AuditSet
from procbench.audit.context import ProbeContext
from procbench.audit.probes.shortcut import shortcut_probabilities
from procbench.shortcuts import MODELS
from procbench.store.atomic import atomic_write_bytes

__all__ = ["SCORE_COLUMNS", "SCORES_FILE", "score_path", "shortcut_scores", "write_scores"]

SCORES_FILE = "shortcut_scores.parquet"
SCORE_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("split", pa.string()),
        ("procedure_id", pa.string()),
        ("n_choices", pa.int32()),
        ("chance", pa.float64()),
        ("choice_only", pa.float64()),
        ("choice_contrast", pa.float64()),
        ("partial_input", pa.float64()),
        ("shortcut_score", pa.float64()),
        ("shortcut_pick", pa.bool_()),
    ]
)
#: The columns of ``shortcut_scores.parquet``, in order (a stable contract: reports filter on them).
SCORE_COLUMNS = tuple(SCORE_SCHEMA.names)


def shortcut_scores(aset: AuditSet, ctx: ProbeContext) -> pa.Table:
    """One row per question of ``aset`` (:data:`SCORE_COLUMNS`).

    Raises:
        NotApplicable: the set does not allow context-free per-choice probes (orders, labels, no vectors,
            too few questions).
    """
    scored = shortcut_probabilities(aset, ctx, MODELS)
    valid = aset.index().valid
    n, k = valid.shape
    answers = np.clip(aset.answers, 0, k - 1)
    rows = scored.rows
    at_answer = {name: scored.probs[name][np.arange(n), answers] for name in (*MODELS, "ensemble")}
    ensemble = np.where(valid, np.nan_to_num(scored.probs["ensemble"], nan=-1.0), -np.inf)
    top = ensemble.max(axis=1)
    pick = (ensemble[np.arange(n), answers] >= top) & ((ensemble >= top[:, None]).sum(axis=1) == 1)
    n_choices = valid.sum(axis=1)

    def column(values: np.ndarray) -> pa.Array:
        return pa.array(values, mask=~rows)

    return pa.Table.from_arrays(
        [
            pa.array(aset.qids if aset.qids is not None else [str(i) for i in range(n)], pa.string()),
            pa.array(aset.splits if aset.splits is not None else [""] * n, pa.string()),
            pa.array(aset.procedure_ids, pa.string()),
            pa.array(n_choices.astype(np.int32)),
            pa.array(1.0 / np.maximum(n_choices, 1)),
            *(column(at_answer[name]) for name in MODELS),
            column(at_answer["ensemble"]),
            column(pick),
        ],
        schema=SCORE_SCHEMA,
    )


def score_path(aset: AuditSet) -> Path | None:
    """Where a set's scores go: ``SET_FOLDER/shortcut_scores.parquet``, or ``FILE.TASK.shortcut_scores.parquet``
    next to a RecipeQA JSON file; None for a set without a source."""
    if aset.source is None:
        return None
    if aset.source.is_dir():
        return aset.source / SCORES_FILE
    return aset.source.parent / f"{aset.source.stem}.{aset.task}.{SCORES_FILE}"


def write_scores(table: pa.Table, path: Path) -> Path:
    """Write ``table`` as Parquet to ``path`` atomically (same table, same bytes)."""
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    atomic_write_bytes(path, buffer.getvalue())
    return path
