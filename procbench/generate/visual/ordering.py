"""Visual ordering (paper 001, RecipeQA): which of four orders of a procedure's images is the authored one?

Four images of one procedure's image sequence (see :mod:`.sequences`) are drawn in increasing order
from the K1 pool. ``choices`` are four orders of them, each a list of image ids: the authored order and
three of the 23 other permutations; ``answer`` indexes the authored order. ``question`` is empty (the
images are in the choices, as in RecipeQA's ordering task); ``context`` lists every step index of the
procedure.

Knobs (DESIGN §6, paper 001 App. B.2): K1 as for cloze, the anchor removed from the pool being a random
question step. K2=0: the three wrong orders are drawn uniformly from the 23; K2=1: drawn without
replacement with probability proportional to their score, the sum of the distances between consecutive
images (paper 001's metric). Ordering has no K3 (the sweep is the 4 settings K1, K2 with K3=0).
``--style recipeqa``: free resampling and uniform wrong orders. ``default`` = knobs (0,1,0).

``meta``: ``setting``, ``k1 k2 k3`` (not for RecipeQA style), ``n_steps``, ``budget``,
``question_number``, ``pool_size``, ``removed_steps`` (knob settings), ``question_steps``,
``answer_score`` (the authored order's score), ``negatives`` (one per wrong order, in choice order:
``order`` (positions 0-3 of the authored order), ``score``, ``probability``: its chance on a single
draw) and ``fallbacks``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from procbench.generate.adversarial import AdversarialOptions
from procbench.generate.columns import dictionary, fixed_lists, ragged_lists, struct
from procbench.generate.questions import answer_orders, place_answers
from procbench.generate.settings import Setting
from procbench.generate.visual.adversarial import IMAGE_OPTIONS, filter_orders, order_ceiling
from procbench.generate.visual.columns import QuestionColumns
from procbench.generate.visual.driver import Draw, Items, TableParts, VisualTask, Window, run
from procbench.generate.visual.ranks import _take, balanced_ranks
from procbench.generate.visual.sequences import VisualData
from procbench.progress import SILENT, Progress
from procbench.store import Store

__all__ = ["DEFAULT_KNOBS", "PERMUTATIONS", "SWEEP", "TASK", "build", "order_scores"]

TASK = "visual-ordering"
DEFAULT_KNOBS = (0, 1, 0)
SWEEP = [*Setting.all_knobs(with_k3=False), Setting("adversarial")]
_SIZE = 4
#: Every order of four items; the first is the authored order, the other 23 are the wrong ones.
PERMUTATIONS = np.array(list(itertools.permutations(range(_SIZE))), dtype=np.int64)
_WRONG = PERMUTATIONS[1:]


def order_scores(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scores of the 24 orders of ``vectors (B, 4, D)``: sums of consecutive Euclidean distances.

    Returns:
        ``(authored (B,), wrong (B, 23))``.
    """
    diff = vectors[:, :, None, :] - vectors[:, None, :, :]
    pair = np.sqrt(np.einsum("bijd,bijd->bij", diff, diff))
    scores = pair[:, PERMUTATIONS[:, :-1], PERMUTATIONS[:, 1:]].sum(axis=2)
    return scores[:, 0], scores[:, 1:]


def _draw_wrong(scores: np.ndarray, k2: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pick 3 of the 23 wrong orders per question: uniformly (K2=0) or ∝ score without replacement (K2=1).

    Weighted draws use exponential races (key = Exp(1) / weight; the 3 smallest keys are a draw without
    replacement proportional to the weights); orders of score 0 come last, drawn uniformly, and only when
    fewer than 3 orders have a positive score.

    Returns:
        ``(picked (B, 3) indices into the wrong orders, probability (B, 23) of each on one draw,
        positive (B,) how many wrong orders have a positive score)``.
    """
    n_q, n_wrong = scores.shape
    u = rng.random((n_q, n_wrong))
    if k2 == 0:
        return np.argsort(u, axis=1, kind="stable")[:, :3], np.full((n_q, n_wrong), 1 / n_wrong), np.full(n_q, n_wrong)
    positive = scores > 0
    with np.errstate(divide="ignore"):
        race = np.where(positive, -np.log1p(-u) / np.where(positive, scores, 1.0), u)
    order = np.lexsort((race, ~positive), axis=1)
    total = scores.sum(axis=1, keepdims=True)
    probability = np.divide(scores, total, out=np.full_like(scores, 1 / n_wrong), where=total > 0)
    return order[:, :3], probability, positive.sum(axis=1)


@dataclass(kw_only=True)
class _Window(Window):
    """Ordering questions with the scores of their orders (no neighbours)."""

    authored: np.ndarray  # (B,)
    wrong: np.ndarray  # (B, 23)


def _window(items: Items, data: VisualData) -> _Window:
    columns = {**items.columns, "rows": items.rows, "question_steps": items.steps}
    authored, wrong = order_scores(data.gather(items.rows))
    return _Window(proc=items.proc, columns=columns, ragged=items.ragged, authored=authored, wrong=wrong)


def _rank_uniform(w: _Window, drawn: Draw) -> tuple[np.ndarray, np.ndarray]:
    """The ``adversarial`` setting's start: wrong orders that put the authored order at a balanced rank ``r``
    by path length (``r`` of them shorter, ``3 - r`` not), uniformly within each side, among the orders that
    can be told from the authored one (:func:`.adversarial.order_ceiling`).

    Returns:
        ``(picked (B, 3) indices into the wrong orders, -1 where a question has no balanced rank; rank (B,))``.
    """
    usable = order_ceiling(drawn.data.gather(w.columns["rows"]), IMAGE_OPTIONS.ceiling)[:, 1:]
    shorter = w.wrong < w.authored[:, None]
    n_short, n_long = (usable & shorter).sum(axis=1), (usable & ~shorter).sum(axis=1)
    ranks = np.arange(_SIZE)
    rank = balanced_ranks((n_short[:, None] >= ranks) & (n_long[:, None] >= _SIZE - 1 - ranks), drawn.rng)
    short = _take(usable & shorter, np.maximum(rank, 0), 3, drawn.rng)
    long = _take(usable & ~shorter, np.where(rank >= 0, _SIZE - 1 - rank, 0), 3, drawn.rng)
    both = np.concatenate([short, long], axis=1)
    picked = np.take_along_axis(both, np.argsort(both < 0, axis=1, kind="stable")[:, :3], axis=1)
    return np.where(rank[:, None] >= 0, picked, -1), rank


def _add(out: QuestionColumns, w: _Window, drawn: Draw) -> None:
    """Draw the wrong orders of a window's questions (K2: uniformly or by score; ``adversarial``: rank-uniform)
    and add them."""
    if drawn.setting.setting.style == "adversarial":
        picked, rank = _rank_uniform(w, drawn)
        keep = np.flatnonzero(rank >= 0)
        drawn.tally["skipped_rank_balance"] += len(w) - len(keep)
        safe = np.maximum(picked, 0)
        own = {
            "answer_score": w.authored,
            "neg_order": safe,
            "neg_score": np.take_along_axis(w.wrong, safe, axis=1),
            "neg_probability": np.full(picked.shape, np.nan),
        }
        out.add(keep, {**w.columns, **own}, ragged=w.ragged)
        return
    k2 = 0 if drawn.setting.knobs is None else drawn.setting.knobs[1]
    picked, probability, positive = _draw_wrong(w.wrong, k2, drawn.rng)
    notes: dict[int, list[str]] = {}
    if k2 == 1:
        for b in np.flatnonzero(positive < 3).tolist():
            notes[b] = [
                f"k2: only {int(positive[b])} of the 23 wrong orders have a positive score (identical "
                "images); the rest were drawn uniformly"
            ]
        drawn.tally["k2:uniform"] += len(notes)
    own = {
        "answer_score": w.authored,
        "neg_order": picked,
        "neg_score": np.take_along_axis(w.wrong, picked, axis=1),
        "neg_probability": np.take_along_axis(probability, picked, axis=1),
    }
    out.add(np.arange(len(w)), {**w.columns, **own}, ragged=w.ragged, notes=notes)


def _adversarial(
    cols: QuestionColumns,
    data: VisualData,
    *,
    seed: int,
    progress: Progress = SILENT,
    options: AdversarialOptions = IMAGE_OPTIONS,
) -> dict[str, Any]:
    """The ``adversarial`` setting: filter the rank-uniform wrong orders (:func:`.adversarial.filter_orders`,
    which keeps each one's side of the authored path length) and recompute their scores."""
    rows, start = cols.get("rows"), cols.get("neg_order")
    proc = cols.get("proc")
    picked, replacements, kept, summary = filter_orders(
        data, proc, rows, start + 1, seed=seed, progress=progress, options=options
    )
    _, wrong = order_scores(data.gather(rows))
    cols.set("neg_order", picked - 1)
    cols.set("neg_score", np.take_along_axis(wrong, picked - 1, axis=1))
    cols.set("replacements", replacements)
    cols.keep(kept)
    return summary


def _table(cols: QuestionColumns, data: VisualData, rng: np.random.Generator) -> TableParts:
    """The setting's question table: the authored order at a balanced position, ``meta`` as the module says."""
    n = len(cols)
    positions, shuffle = answer_orders(n, _SIZE, rng)

    def shuffled(name: str) -> np.ndarray:  # a negatives column in choice order
        return np.take_along_axis(cols.get(name), shuffle, axis=1)

    picked = shuffled("neg_order")
    negatives = struct(
        {
            "order": fixed_lists(_WRONG[picked].reshape(-1), _SIZE),
            "score": shuffled("neg_score").astype(np.float64).reshape(-1),
            "probability": shuffled("neg_probability").astype(np.float64).reshape(-1),
        }
    )
    meta = {
        "question_steps": fixed_lists(cols.get("question_steps").astype(np.int64), _SIZE),
        "answer_score": cols.get("answer_score").astype(np.float64),
        "negatives": fixed_lists(negatives, 3),
        "fallbacks": cols.fallbacks(),
    }
    if "replacements" in cols.parts:  # the adversarial setting: the authored order's path-length rank
        meta["answer_rank"] = (cols.get("neg_score") < cols.get("answer_score")[:, None]).sum(axis=1).astype(np.int64)
        meta["replacements"] = cols.get("replacements").astype(np.int64)
    orders = place_answers(np.zeros(n, dtype=np.int64), picked + 1, positions)  # indices into PERMUTATIONS
    rows = np.take_along_axis(cols.get("rows")[:, None, :], PERMUTATIONS[orders], axis=2)  # (n, 4 orders, 4)
    images = dictionary(rows.reshape(-1), data.image_dictionary)
    return TableParts(
        question=ragged_lists(pa.array([], pa.string()), np.zeros(n, dtype=np.int64)),
        choices=fixed_lists(fixed_lists(images, _SIZE), _SIZE),
        answer=positions,
        meta=meta,
    )


#: The task: its constants and hooks (no neighbours: ``need`` 0); run by the visual driver.
ORDERING = VisualTask(
    TASK, code=0xC3, size=_SIZE, default_knobs=DEFAULT_KNOBS, with_k3=False, anchored=False, need=0,
    window=_window, add=_add, table=_table, adversarial=_adversarial,
)  # fmt: skip


def build(
    store: Store,
    settings: list[Setting],
    *,
    seed: int = 0,
    progress: Progress = SILENT,
    rounds: int | None = None,
    ceiling: float | None = None,
    min_yield: float | None = None,
) -> tuple[dict[str, pa.Table], dict[str, Any]]:
    """Visual ordering questions (a question table per setting; no neighbour search: only the question's
    own images); ``rounds``, ``ceiling`` and ``min_yield`` tune the ``adversarial`` setting."""
    return run(
        ORDERING, store, settings, seed=seed, progress=progress, rounds=rounds, ceiling=ceiling, min_yield=min_yield
    )
