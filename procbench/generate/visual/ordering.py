"""Visual ordering (paper 001, RecipeQA): which of four orders of a procedure's images is the authored one?

Four images of one procedure's image sequence (see :mod:`.sequences`) are drawn in increasing order
from the K1 pool. ``choices`` are four orders of them, each a list of image ids: the authored order and
three of the 23 other permutations; ``answer`` indexes the authored order. ``question`` is empty (the
images are in the choices, as in RecipeQA's ordering task); ``context`` lists every step index of the
procedure.

Knobs (DESIGN §6, paper 001 App. B.2): K1 as for cloze, the anchor removed from the pool being a random
question step. K2=0: the three wrong orders are drawn uniformly from the 23; K2=1: drawn without
replacement with probability proportional to their score, the sum of the distances between consecutive
images (paper 001's metric). Ordering has no K3 in the paper (its 4 settings are K1, K2 with K3=0). With the
authored order smoother than most (real procedures) both K2 rules leave it the shortest or second-shortest
of the four orders often, so "pick the order of path-length rank r" beats chance. K3=2 is the rank-uniform
variant, as for cloze and coherence: each question gets a target rank ``r`` of the authored order's path
length among the four orders (balanced over the set among the ranks its orders allow, :func:`.ranks.balanced_ranks`),
and its wrong orders are ``r`` strictly shorter ones and ``3 - r`` not shorter, each side drawn by the K2 rule
(uniformly, or ∝ score without replacement) within that side; every question is drawn at every rank it allows
and the ranks are then dealt so that the four path lengths are shaped alike at every rank
(:func:`.ranks.layout_ranks`, as cloze and coherence deal theirs). At each rank, the K3=2 knob settings take the
wrong orders from the first of :data:`FIT_DRAWS` such draws that puts the authored order's position fit
(:func:`position_fits`) at a target rank among the four orders', dealt evenly (else from one nearest it).
``--sweep`` writes the paper's 4, the 4 K3=2 settings and ``adversarial``. ``--style recipeqa``: free resampling
and uniform wrong orders. ``default`` = knobs (0,1,0).

``meta``: ``setting``, ``k1 k2 k3`` (not for RecipeQA style), ``n_steps``, ``budget``,
``question_number``, ``pool_size``, ``removed_steps`` (knob settings), ``question_steps``,
``answer_score`` (the authored order's score), ``negatives`` (one per wrong order, in choice order:
``order`` (positions 0-3 of the authored order), ``score``, ``probability``: its chance on a single
draw; K3=2: on a single draw from its side of the authored order's path length; ``adversarial``: NaN) and
``fallbacks`` (K3=2: a ``fit:`` note where no draw met the fit target); K3=2 and ``adversarial``: ``answer_rank``
(how many wrong orders shown are shorter; the reversed authored order, of the same path length, is not).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from procbench.generate.adversarial import AdversarialPolicy
from procbench.generate.answers import answer_orders, place_answers
from procbench.generate.options import VisualOrderingOptions
from procbench.generate.settings import Setting
from procbench.generate.visual.adversarial import IMAGE_POLICY, filter_orders, order_ceiling, shorter_orders
from procbench.generate.visual.columns import QuestionColumns
from procbench.generate.visual.driver import Draw, Items, TableParts, VisualTask, Window, run
from procbench.generate.visual.pruning import prune_ordering
from procbench.generate.visual.ranks import _take, balanced_ranks, layout_ranks
from procbench.generate.visual.sequences import VisualData
from procbench.progress import SILENT, Progress
from procbench.qsets.columns import dictionary, fixed_lists, ragged_lists, struct
from procbench.store import Store

__all__ = ["DEFAULT_KNOBS", "FIT_DRAWS", "PERMUTATIONS", "SWEEP", "TASK", "build", "order_scores", "position_fits"]

TASK = "visual-ordering"
DEFAULT_KNOBS = (0, 1, 0)
#: The paper's 4 knob settings, the 4 rank-uniform ones (K3=2), then ``adversarial``.
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


def _race_order(u: np.ndarray, weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``(B, K)`` column order of an exponential race (key = Exp(1) / weight, from uniforms ``u (B, K)``): the
    first n columns are a draw without replacement ∝ ``weights`` among the ``mask``ed positive ones; weight-0
    columns of ``mask`` follow in the order of ``u``, columns outside ``mask`` come last."""
    positive = mask & (weights > 0)
    with np.errstate(divide="ignore"):
        race = np.where(positive, -np.log1p(-u) / np.where(positive, weights, 1.0), u)
    return np.lexsort((race, ~positive, ~mask), axis=1)


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


def _take_weighted(mask: np.ndarray, weights: np.ndarray, count: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(B, 3)`` columns of ``mask (B, K)``: ``count[b]`` of its True columns drawn without replacement with
    probability ∝ ``weights`` (exponential races, as :func:`_draw_wrong`; weight-0 columns last, uniformly),
    then -1."""
    order = _race_order(rng.random(mask.shape), weights, mask)[:, :3]
    return np.where(np.arange(3)[None, :] < count[:, None], order, -1)


#: K3=2 knob settings: at each path-length rank, the wrong orders are the best of this many draws by the K2 rule
#: for the authored order's position-fit rank (:func:`position_fits`).
FIT_DRAWS = 16


def position_fits(vectors: np.ndarray, proc: np.ndarray) -> np.ndarray:
    """``(B, 24)`` how well each order of a question's photos ``vectors (B, 4, D)`` (the authored order first, then
    :data:`PERMUTATIONS`) puts them where the other procedures' questions have photos like them: the sum over
    positions of the photo's unit vector times the position's mean photo over the questions of other procedures
    (``proc (B,)``), centred over the positions.

    This is what a choice-only probe learns of an order (which kind of photo comes first, which last: the parts laid
    out, the finished build), estimated without the question's own procedure."""
    v = vectors.astype(np.float64)
    v = v / np.maximum(np.linalg.norm(v, axis=2, keepdims=True), 1e-12)
    codes, inverse = np.unique(proc, return_inverse=True)
    own = np.zeros((len(codes), *v.shape[1:]))
    np.add.at(own, inverse, v)
    n_others = len(v) - np.bincount(inverse, minlength=len(codes))[inverse]
    others = (v.sum(axis=0)[None] - own[inverse]) / np.maximum(n_others, 1)[:, None, None]  # (B, 4, D)
    others = others - others.mean(axis=1, keepdims=True)
    at = np.einsum("bid,bpd->bip", v, others)  # photo i at position p
    return np.asarray(at[:, PERMUTATIONS, np.arange(_SIZE)[None, :]].sum(axis=2))


def _rank_balanced(
    w: _Window,
    usable: np.ndarray,
    k2: int,
    rng: np.random.Generator,
    *,
    layout: bool = False,
    fits: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Wrong orders that put the authored order at a balanced rank ``r`` by path length: ``r`` of them strictly
    shorter, ``3 - r`` not, among the ``usable (B, 23)`` wrong orders, each side drawn by the K2 rule (0:
    uniformly; 1: ∝ score without replacement) within that side.

    With ``layout`` every question is drawn at every rank it allows and the ranks, as many of each as
    :func:`.ranks.balanced_ranks` dealt, are dealt again so that the four path lengths are shaped alike at every
    rank (:func:`.ranks.layout_ranks`): drawn ∝ score, the longer side's orders lie far above the authored one
    and the shorter side's just below it, so the authored order's deviation from the four's mean told its rank
    (the audit's ``question_distance`` read 0.37 on the build guides' K3=2 with ranks balanced).

    With ``fits (B, 24)`` (:func:`position_fits`) each question also gets a target rank of the authored order's fit
    among its four orders' (how many wrong orders fit better), dealt equally often at each rank, and at every
    path-length rank its wrong orders are the first of :data:`FIT_DRAWS` draws by the K2 rule that meets it (else
    one nearest it). The authored order is then no more often the order whose photos stand where such photos
    usually stand (a choice-only probe read that: 0.37-0.39 on the build guides).

    Returns:
        ``(picked (B, 3) indices into the wrong orders, -1 where a question has no balanced rank; rank (B,);
        probability (B, 3) of each pick on a single draw from its side; missed (B,) the fit target was not met)``.
    """
    shorter = shorter_orders(w.wrong, w.authored)
    sides = (usable & shorter, usable & ~shorter)
    n_short, n_long = (side.sum(axis=1) for side in sides)
    ranks = np.arange(_SIZE)
    feasible = (n_short[:, None] >= ranks) & (n_long[:, None] >= _SIZE - 1 - ranks)
    rank = balanced_ranks(feasible, rng)

    def draw(rank: np.ndarray) -> np.ndarray:
        """``(B, 3)`` the wrong orders that put each authored order at ``rank (B,)`` (-1: none)."""
        wants = (np.maximum(rank, 0), np.where(rank >= 0, _SIZE - 1 - rank, 0))
        if k2 == 0:
            short, long = (_take(side, want, 3, rng) for side, want in zip(sides, wants, strict=True))
        else:
            short, long = (_take_weighted(side, w.wrong, want, rng) for side, want in zip(sides, wants, strict=True))
        both = np.concatenate([short, long], axis=1)
        picked = np.take_along_axis(both, np.argsort(both < 0, axis=1, kind="stable")[:, :3], axis=1)
        return np.where(rank[:, None] >= 0, picked, -1)

    target = None
    if fits is not None:
        target = np.full(len(w), -1)
        dealt = np.flatnonzero(rank >= 0)
        target[dealt] = rng.permutation(np.arange(len(dealt)) % _SIZE)

    def fit_draw(rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(picked (B, 3), missed (B,))``: :func:`draw`, or the best of :data:`FIT_DRAWS` for the fit target."""
        if target is None or fits is None:
            return draw(rank), np.zeros(len(w), dtype=bool)
        tries = np.stack([draw(rank) for _ in range(FIT_DRAWS)], axis=1)  # (B, T, 3)
        better = np.take_along_axis(fits[:, 1:][:, None, :], np.maximum(tries, 0), axis=2) > fits[:, :1, None]
        miss = np.abs(better.sum(axis=2) - target[:, None])  # (B, T)
        best = np.argmin(miss, axis=1)
        return tries[np.arange(len(w)), best], (miss.min(axis=1) > 0) & (rank >= 0)

    if layout:
        drawn = [fit_draw(np.where((rank >= 0) & feasible[:, r], r, -1)) for r in ranks]
        by_rank = np.stack([d[0] for d in drawn], axis=1)  # (B, R, 3)
        missed_by_rank = np.stack([d[1] for d in drawn], axis=1)  # (B, R)
        lengths = np.take_along_axis(w.wrong[:, None, :], np.maximum(by_rank, 0), axis=2)
        layouts = np.concatenate(
            [np.broadcast_to(w.authored[:, None, None], (len(w), _SIZE, 1)), np.where(by_rank >= 0, lengths, np.nan)],
            axis=2,
        )  # (B, R, 4): the authored order's path length first
        rank = layout_ranks(layouts.astype(np.float64), rank, rng)
        picked = np.where(rank[:, None] >= 0, by_rank[np.arange(len(w)), np.maximum(rank, 0)], -1)
        missed = missed_by_rank[np.arange(len(w)), np.maximum(rank, 0)] & (rank >= 0)
    else:
        picked, missed = fit_draw(rank)
    safe = np.maximum(picked, 0)
    side = np.take_along_axis(shorter, safe, axis=1)  # each pick's side
    probability = 1 / np.maximum(np.where(side, n_short[:, None], n_long[:, None]), 1)
    if k2 == 1:
        short_total, long_total = (np.where(mask, w.wrong, 0.0).sum(axis=1, keepdims=True) for mask in sides)
        total = np.where(side, short_total, long_total)
        score = np.take_along_axis(w.wrong, safe, axis=1)
        probability = np.where(total > 0, score / np.where(total > 0, total, 1.0), probability)
    return picked, rank, probability, missed


def _add(out: QuestionColumns, w: _Window, drawn: Draw) -> None:
    """Draw the wrong orders of a window's questions (K2: uniformly or by score; K3=2 and ``adversarial``: at a
    balanced path-length rank) and add them."""
    adversarial = drawn.setting.setting.style == "adversarial"
    knobs = drawn.setting.knobs
    if adversarial or (knobs is not None and knobs[2] == 2):
        # adversarial: uniformly within the sides, among the orders that can be told from the authored one
        # (:func:`.adversarial.order_ceiling`); K3=2: every wrong order, by the setting's K2 rule
        if adversarial:
            usable = order_ceiling(drawn.data.gather(w.columns["rows"]), IMAGE_POLICY.ceiling)[:, 1:]
        else:
            usable = np.ones(w.wrong.shape, dtype=bool)
        k2 = 0 if adversarial or knobs is None else knobs[1]
        fits = None if adversarial else position_fits(drawn.data.gather(w.columns["rows"]), w.proc)
        picked, rank, probability, missed = _rank_balanced(w, usable, k2, drawn.rng, layout=not adversarial, fits=fits)
        keep = np.flatnonzero(rank >= 0)
        note = [
            f"fit: none of {FIT_DRAWS} draws put the authored order's position fit at its dealt rank among the "
            "four orders; took one nearest it"
        ]
        fit_notes = {int(b): note for b in np.flatnonzero(missed).tolist()}
        drawn.tally["fit:nearest-rank"] += len(fit_notes)
        drawn.tally["skipped_rank_balance"] += len(w) - len(keep)
        safe = np.maximum(picked, 0)
        own = {
            "answer_score": w.authored,
            "neg_order": safe,
            "neg_score": np.take_along_axis(w.wrong, safe, axis=1),
            "neg_probability": np.full(picked.shape, np.nan) if adversarial else probability,
            "rank": rank,
        }
        out.add(keep, {**w.columns, **own}, ragged=w.ragged, notes=fit_notes)
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
    options: AdversarialPolicy = IMAGE_POLICY,
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
    if "rank" in cols.parts:  # K3=2 and adversarial: the authored order's path-length rank
        shorter = shorter_orders(cols.get("neg_score"), cols.get("answer_score"))
        meta["answer_rank"] = shorter.sum(axis=1).astype(np.int64)
    if "replacements" in cols.parts:
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
    window=_window, add=_add, table=_table, adversarial=_adversarial, prune=prune_ordering,
)  # fmt: skip


def build(
    store: Store,
    settings: list[Setting],
    options: VisualOrderingOptions | None = None,
    *,
    progress: Progress = SILENT,
) -> tuple[dict[str, pa.Table], dict[str, Any]]:
    """Visual ordering questions (a question table per setting; no neighbour search: only the question's
    own images); ``options`` holds the seed and the ``adversarial`` setting's filter options."""
    return run(ORDERING, store, settings, options or VisualOrderingOptions(), progress=progress)
