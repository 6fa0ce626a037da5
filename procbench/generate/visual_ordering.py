"""Visual ordering (paper 001, RecipeQA): which of four orders of a procedure's images is the authored one?

Four images of one procedure's image sequence (see :mod:`visual_common`) are drawn in increasing order
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
from collections import Counter
from typing import Any

import numpy as np

from procbench.generate.questions import Question, balance_answer_positions
from procbench.generate.settings import Setting
from procbench.generate.visual_common import (
    Plan,
    Spec,
    VisualData,
    chunks,
    paused_gc,
    plan_meta,
    plans_by_k1,
    resolve_settings,
)
from procbench.progress import SILENT, Progress
from procbench.store import Store

__all__ = ["DEFAULT_KNOBS", "PERMUTATIONS", "SWEEP", "TASK", "build", "order_scores"]

TASK = "visual-ordering"
SWEEP = Setting.all_knobs(with_k3=False)
DEFAULT_KNOBS = (0, 1, 0)
_CODE = 0xC3
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


@paused_gc()
def build(
    store: Store,
    settings: list[Setting],
    *,
    seed: int = 0,
    progress: Progress = SILENT,
) -> tuple[dict[str, list[Question]], dict[str, Any]]:
    """Visual ordering questions for each setting (no neighbour search: only the question's own images)."""
    specs = resolve_settings(settings, task=TASK, with_k3=False, default=DEFAULT_KNOBS)
    data = VisualData(store, with_index=False)
    seqs = data.seqs
    contexts = seqs.contexts()
    plans = plans_by_k1(specs, seqs.lengths, seed=seed, code=_CODE, size=_SIZE, anchored=False)
    rngs = {s.name: s.rng(seed, _CODE) for s in specs}
    out: dict[str, list[Question]] = {s.name: [] for s in specs}
    tally: dict[str, Counter[str]] = {s.name: Counter() for s in specs}
    progress.start(TASK, total=len(seqs.names))
    for start, stop in chunks(len(seqs.names)):
        scored = {}
        for key, plan in plans.items():
            idx = plan.window(start, stop)
            seq = seqs.offsets[plan.proc[idx]][:, None] + plan.slots[idx]
            scored[key] = (idx, seq, *order_scores(data.gather(seqs.rows[seq])))
        for spec in specs:
            idx, seq, authored, wrong = scored[spec.plan_key]
            if not len(idx):
                continue
            k2 = 0 if spec.knobs is None else spec.knobs[1]
            picked, probability, positive = _draw_wrong(wrong, k2, rngs[spec.name])
            out[spec.name].extend(
                _questions(
                    spec,
                    plans[spec.plan_key],
                    idx,
                    seq,
                    authored,
                    wrong,
                    picked,
                    probability,
                    positive,
                    data,
                    contexts,
                    tally[spec.name],
                )
            )
        progress.advance(stop - start)
    for spec in specs:
        balance_answer_positions(out[spec.name], spec.rng(seed, _CODE, salt=1))
    counts: dict[str, Any] = {
        "procedures": len(seqs.names),
        "eligible": {("recipeqa" if k is None else f"k1={k}"): p.eligible for k, p in plans.items()},
        "per_setting": {
            s.name: {
                "questions": len(out[s.name]),
                "budget_unused": plans[s.plan_key].budget_unused,
                **dict(sorted(tally[s.name].items())),
            }
            for s in specs
        },
    }
    return out, counts


def _questions(
    spec: Spec,
    plan: Plan,
    idx: np.ndarray,
    seq: np.ndarray,
    authored: np.ndarray,
    wrong: np.ndarray,
    picked: np.ndarray,
    probability: np.ndarray,
    positive: np.ndarray,
    data: VisualData,
    contexts: list[list[int]],
    tally: Counter[str],
) -> list[Question]:
    seqs = data.seqs
    wrong_orders = _WRONG.tolist()
    authored_l, wrong_l, prob_l = authored.tolist(), wrong.tolist(), probability.tolist()
    picked_l = picked.tolist()
    if spec.knobs is None:
        fixed: dict[str, Any] = {"setting": spec.name}
    else:
        k1, k2, k3 = spec.knobs
        fixed = {"setting": spec.name, "k1": k1, "k2": k2, "k3": k3}
    questions = []
    for b, i in enumerate(idx.tolist()):
        p = int(plan.proc[i])
        positions = seq[b].tolist()
        images = [seqs.images[s] for s in positions]
        fallbacks: list[str] = []
        if fixed.get("k2") == 1 and positive[b] < 3:
            tally["k2:uniform"] += 1
            fallbacks.append(
                f"k2: only {int(positive[b])} of the 23 wrong orders have a positive score (identical images); "
                "the rest were drawn uniformly"
            )
        meta: dict[str, Any] = {**fixed, **plan_meta(seqs, plan, i, p, knobs=spec.knobs is not None)}
        meta.update(
            {
                "question_steps": [int(seqs.steps[s]) for s in positions],
                "answer_score": authored_l[b],
                "negatives": [
                    {"order": wrong_orders[j], "score": wrong_l[b][j], "probability": prob_l[b][j]}
                    for j in picked_l[b]
                ],
                "fallbacks": fallbacks,
            }
        )
        questions.append(
            Question(
                procedure_id=seqs.names[p],
                context=contexts[p],
                question=[],
                choices=[images, *([images[k] for k in wrong_orders[j]] for j in picked_l[b])],
                answer=0,
                meta=meta,
            )
        )
    return questions
