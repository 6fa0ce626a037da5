"""Visual ordering (paper 001, RecipeQA): which of four orders of a procedure's images is the authored one?

The choices are the authored order of four of a procedure's images and three of the 23 other permutations;
``question`` is empty. K2=0 draws wrong orders uniformly, K2=1 ∝ their score (path length, the sum of
consecutive-image distances); K3=2 deals the authored order's path-length rank, each side by the K2 rule, never
showing the authored order's reverse (it ties the authored path length).
Settings: docs/concepts/question-sets.md.

``meta``: the head of :func:`.columns.meta_head`, ``question_steps``, ``answer_score``, ``negatives`` (per wrong
order: ``order``, ``score``, ``probability`` on one draw, NaN for ``adversarial``), ``fallbacks``; K3=2 and
``adversarial``: ``answer_rank`` (wrong orders shown that are shorter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from procbench.generate import policy
from procbench.generate.adversarial import AdversarialPolicy
from procbench.generate.answers import answer_orders, place_answers
from procbench.generate.options import VisualOrderingOptions
from procbench.generate.settings import Setting
from procbench.generate.visual.columns import QuestionColumns, TableParts
from procbench.generate.visual.dealer import deal_ranks, evened
from procbench.generate.visual.driver import run
from procbench.generate.visual.orders import ORDERS, dealable, filter_orders, path_lengths, shorter_orders
from procbench.generate.visual.sequences import VisualData
from procbench.generate.visual.task import Draw, Items, VisualTask, Window
from procbench.progress import SILENT, Progress
from procbench.qsets.columns import dictionary, fixed_lists, struct
from procbench.store import Store

__all__ = ["DEFAULT_KNOBS", "SWEEP", "TASK", "build", "order_scores"]

TASK = "visual-ordering"
DEFAULT_KNOBS = (0, 1, 0)
#: The paper's 4 knob settings, the 4 rank-uniform ones (K3=2), then ``adversarial``.
SWEEP = [*Setting.all_knobs(with_k3=False), Setting("adversarial")]
_SIZE = 4
#: The 23 wrong orders of :data:`.orders.ORDERS` (the first is the authored order).
_WRONG = ORDERS[1:]


def order_scores(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Path lengths of the 24 orders of ``vectors (B, 4, D)``: ``authored (B,)``, ``wrong (B, 23)``."""
    scores = path_lengths(vectors)
    return scores[:, 0], scores[:, 1:]


def _race_order(u: np.ndarray, weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``(B, K)`` column order of an exponential race (Exp(1) / weight from uniforms ``u``): a draw without
    replacement ∝ ``weights`` among the ``mask``ed positive columns, then the weight-0 ones, then the rest."""
    positive = mask & (weights > 0)
    with np.errstate(divide="ignore"):
        race = np.where(positive, -np.log1p(-u) / np.where(positive, weights, 1.0), u)
    return np.lexsort((race, ~positive, ~mask), axis=1)


def _draw_wrong(scores: np.ndarray, k2: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """3 of the 23 wrong orders per question, uniformly (K2=0) or ∝ score without replacement (K2=1): ``picked
    (B, 3)``, ``probability (B, 23)`` on one draw, ``positive (B,)`` wrong orders of a positive score."""
    n_q, n_wrong = scores.shape
    u = rng.random((n_q, n_wrong))
    if k2 == 0:
        return np.argsort(u, axis=1, kind="stable")[:, :3], np.full((n_q, n_wrong), 1 / n_wrong), np.full(n_q, n_wrong)
    positive = scores > 0
    order = _race_order(u, scores, np.ones(scores.shape, dtype=bool))
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


def _take(mask: np.ndarray, count: np.ndarray, rng: np.random.Generator, weights: np.ndarray | None) -> np.ndarray:
    """``(B, 3)``: ``count[b]`` True columns of ``mask (B, K)`` drawn without replacement, uniformly (``weights``
    None) or ∝ ``weights``, then -1."""
    u = rng.random(mask.shape)
    if weights is None:
        order = np.argsort(np.where(mask, u, np.inf), axis=1, kind="stable")
    else:
        order = _race_order(u, weights, mask)
    return np.where(np.arange(3)[None, :] < count[:, None], order[:, :3], -1)


def _dealt_orders(
    w: _Window, usable: np.ndarray, k2: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Wrong orders among ``usable (B, 23)`` that put the authored order at a path-length rank ``r`` (``r`` shorter,
    ``3 - r`` not) the dealer deals (:func:`.dealer.deal_ranks`: only questions that allow every rank), each side by
    the K2 rule: ``picked (B, 3)`` (-1: skipped), ``rank (B,)``, ``probability (B, 3)`` on one draw from its side."""
    shorter = shorter_orders(w.wrong, w.authored)
    sides = (usable & shorter, usable & ~shorter)
    n_short, n_long = (side.sum(axis=1) for side in sides)
    ranks = np.arange(_SIZE)
    feasible = (n_short[:, None] >= ranks) & (n_long[:, None] >= _SIZE - 1 - ranks)
    rank = deal_ranks(feasible, ranks[:, None], rng).option
    wants = (np.maximum(rank, 0), np.where(rank >= 0, _SIZE - 1 - rank, 0))
    weights = None if k2 == 0 else w.wrong
    short, long = (_take(side, want, rng, weights) for side, want in zip(sides, wants, strict=True))
    both = np.concatenate([short, long], axis=1)
    picked = np.take_along_axis(both, np.argsort(both < 0, axis=1, kind="stable")[:, :3], axis=1)
    picked = np.where(rank[:, None] >= 0, picked, -1)
    safe = np.maximum(picked, 0)
    side = np.take_along_axis(shorter, safe, axis=1)  # each pick's side
    probability = 1 / np.maximum(np.where(side, n_short[:, None], n_long[:, None]), 1)
    if k2 == 1:
        short_total, long_total = (np.where(mask, w.wrong, 0.0).sum(axis=1, keepdims=True) for mask in sides)
        total = np.where(side, short_total, long_total)
        score = np.take_along_axis(w.wrong, safe, axis=1)
        probability = np.where(total > 0, score / np.where(total > 0, total, 1.0), probability)
    return picked, rank, probability


def _add(out: QuestionColumns, w: _Window, drawn: Draw) -> None:
    """Draw a window's wrong orders (K3=2 and ``adversarial``: at a dealt path-length rank) and add them."""
    adversarial = drawn.setting.setting.style == "adversarial"
    knobs = drawn.setting.knobs
    k2 = 0 if adversarial or knobs is None else knobs[1]
    notes: dict[int, list[str]] = {}
    if adversarial or (knobs is not None and knobs[2] == 2):
        # adversarial: uniformly among the orders under the ceiling; K3=2: every wrong order, by its K2 rule
        ceiling = policy.current().IMAGE_CEILING if adversarial else None
        usable = dealable(drawn.data.gather(w.columns["rows"]), ceiling)
        picked, rank, probability = _dealt_orders(w, usable, k2, drawn.rng)
        keep = np.flatnonzero(rank >= 0)
        drawn.tally["skipped_rank_balance"] += len(w) - len(keep)
        picked = np.maximum(picked, 0)
        own = {"neg_probability": np.full(picked.shape, np.nan) if adversarial else probability, "rank": rank}
    else:
        picked, probability, positive = _draw_wrong(w.wrong, k2, drawn.rng)
        keep = np.arange(len(w))
        if k2 == 1:
            for b in np.flatnonzero(positive < 3).tolist():
                notes[b] = [
                    f"k2: only {int(positive[b])} of the 23 wrong orders have a positive score (identical "
                    "images); the rest were drawn uniformly"
                ]
            drawn.tally["k2:uniform"] += len(notes)
        own = {"neg_probability": np.take_along_axis(probability, picked, axis=1)}
    own.update(answer_score=w.authored, neg_order=picked, neg_score=np.take_along_axis(w.wrong, picked, axis=1))
    out.add(keep, {**w.columns, **own}, ragged=w.ragged, notes=notes)


def _adversarial(
    cols: QuestionColumns, data: VisualData, *, seed: int, progress: Progress, options: AdversarialPolicy
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Filter the dealt wrong orders in place (:func:`.orders.filter_orders`) and recompute their scores; questions
    pruning drops are not kept, nor as many more of the fuller dealt ranks as keep every rank even
    (:func:`.dealer.evened`)."""
    rows, start = cols.get("rows"), cols.get("neg_order")
    proc = cols.get("proc")
    picked, replacements, kept, summary = filter_orders(
        data, proc, rows, start + 1, seed=seed, progress=progress, options=options
    )
    authored, wrong = order_scores(data.gather(rows))
    cols.set("neg_order", picked - 1)
    cols.set("neg_score", np.take_along_axis(wrong, picked - 1, axis=1))
    ranks = shorter_orders(cols.get("neg_score"), authored).sum(axis=1)
    return replacements, evened(kept, ranks, seed, summary, "path-length"), summary


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
    if "rank" in cols.parts:  # K3=2 and adversarial: the authored order's path-length rank
        shorter = shorter_orders(cols.get("neg_score"), cols.get("answer_score"))
        meta["answer_rank"] = shorter.sum(axis=1).astype(np.int64)
    orders = place_answers(np.zeros(n, dtype=np.int64), picked + 1, positions)  # indices into ORDERS
    rows = np.take_along_axis(cols.get("rows")[:, None, :], ORDERS[orders], axis=2)  # (n, 4 orders, 4)
    images = dictionary(rows.reshape(-1), data.image_dictionary)
    return TableParts(
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
    store: Store, settings: list[Setting], options: VisualOrderingOptions | None = None, *, progress: Progress = SILENT
) -> tuple[dict[str, pa.Table], dict[str, Any]]:
    """Visual ordering's sets and counts (:func:`~.driver.run`; no neighbour search)."""
    return run(ORDERING, store, settings, options or VisualOrderingOptions(), progress=progress)
