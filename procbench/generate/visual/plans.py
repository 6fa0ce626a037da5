"""K1, question plans: which steps of each procedure's image sequence each question uses.

Procedures of at least K1's minimum of steps (a ``short`` plan, ``adversarial``'s, also takes shorter ones) get
⌊n/2⌋ (K1=0) or ⌊n/3⌋ (K1=1) questions drawn from a pool of steps; after each, its anchor step leaves the pool,
plus one random pool step at K1=1. The RecipeQA style resamples freely (⌊n/2⌋ questions, at least one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from procbench.generate import policy
from procbench.generate.visual.sequences import Sequences
from procbench.qsets.columns import ranges
from procbench.rng import Stream, stream

if TYPE_CHECKING:
    from procbench.generate.visual.settings import PlanKey, VisualSetting

__all__ = ["Plan", "min_steps_knobs", "plan_questions", "plans_by_k1"]


def min_steps_knobs() -> int:
    """K1's minimum of image steps (``Policy.MIN_STEPS_KNOBS``, :mod:`procbench.generate.policy`)."""
    return policy.current().MIN_STEPS_KNOBS


#: K1 plans; a short plan's draws for its procedures under K1's minimum of steps.
_PLANS = stream("visual.plans")
_SHORT_PLANS = stream("visual.short-plans")


@dataclass
class Plan:
    """Which steps each of ``Q`` questions uses, for one K1 value (None: free resampling).

    ``proc (Q,)`` ascending; ``slots (Q, size)`` increasing sequence positions; ``anchor (Q,)`` the answer's slot
    (or the step removed from the pool); ``budget``, ``number``, ``pool`` ``(Q,)``: the procedure's budget, the
    question's number in it, the pool size before it; ``removed_positions[removed_offsets[i]:removed_offsets[i+1]]``
    left the pool after question ``i``.
    """

    key: int | None
    size: int
    proc: np.ndarray
    slots: np.ndarray
    anchor: np.ndarray
    budget: np.ndarray
    number: np.ndarray
    pool: np.ndarray
    removed_offsets: np.ndarray
    removed_positions: np.ndarray
    eligible: int
    budget_unused: int

    def window(self, start: int, stop: int) -> np.ndarray:
        """Indices of the questions of procedures ``[start, stop)``."""
        lo, hi = np.searchsorted(self.proc, [start, stop])
        return np.arange(lo, hi)

    def removed_steps(self, seqs: Sequences, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lengths (B,), steps)``: the step indices removed from the pool after each question of ``idx``."""
        lengths = self.removed_offsets[idx + 1] - self.removed_offsets[idx]
        flat = ranges(self.removed_offsets[idx], lengths)
        owner = np.repeat(self.proc[idx], lengths)
        return lengths, seqs.steps[seqs.offsets[owner] + self.removed_positions[flat]]


def plans_by_k1(
    settings: Sequence[VisualSetting], lengths: np.ndarray, *, seed: int, code: int, size: int, anchored: bool
) -> dict[PlanKey, Plan]:
    """One :func:`plan_questions` per distinct plan key of ``settings``; a short plan adds the procedures under K1's
    minimum (from a stream of its own) to its key's plan."""
    lengths = np.asarray(lengths, dtype=np.int64)
    keys = list(dict.fromkeys(s.plan_key for s in settings))
    plans: dict[PlanKey, Plan] = {}

    def plan(key: PlanKey, of: np.ndarray, stream_: Stream, min_steps: int) -> Plan:
        rng = stream_.rng(seed, code, 2 if key.k1 is None else key.k1)
        return plan_questions(of, size=size, k1=key.k1, rng=rng, anchored=anchored, min_steps=min_steps)

    least = min_steps_knobs()
    for key in keys:
        full = key._replace(short=False)
        if full not in plans:
            plans[full] = plan(full, lengths, _PLANS, least)
        if key.short:  # the plan without ``short`` itself when no short procedure holds a question
            short = np.where(lengths < least, lengths, 0)
            extra = plan(key, short, _SHORT_PLANS, size)
            plans[key] = _merged(plans[full], extra) if extra.eligible else plans[full]
    return {key: plans[key] for key in keys}


def plan_questions(
    lengths: np.ndarray, *, size: int, k1: int | None, rng: np.random.Generator, anchored: bool, min_steps: int
) -> Plan:
    """Every procedure's questions under K1 (``k1`` 0 or 1; procedures of at least ``min_steps`` steps), or free
    resampling (``k1`` None), which never repeats a question (``anchored``: the anchor tells two apart)."""
    if k1 is not None:
        return _pooled_plan(lengths, size=size, k1=k1, rng=rng, min_steps=max(min_steps, size))
    picked: list[tuple[int, ...]] = []  # per question: procedure, anchor, budget, number, then its slots
    eligible = unused = 0
    for p, n in enumerate(lengths.tolist()):
        if n < size:
            continue
        eligible += 1
        allowed = max(1, n // 2)
        drawn = 0
        seen: set[tuple[int, ...]] = set()
        for u in rng.random((4 * allowed, n + 1)).tolist():
            if drawn == allowed:
                break
            chosen = sorted(sorted(range(n), key=u.__getitem__)[:size])
            a = min(size - 1, int(u[n] * size))
            key = (*chosen, a) if anchored else tuple(chosen)
            if key in seen:
                continue
            seen.add(key)
            picked.append((p, a, allowed, drawn, *chosen))
            drawn += 1
        unused += allowed - drawn
    table = np.array(picked, dtype=np.int64).reshape(-1, 4 + size)
    proc, anchor, budget, number = table[:, :4].T.copy()
    n_q = len(table)
    pool, removed_offsets, removed = np.zeros(n_q, np.int64), np.zeros(n_q + 1, np.int64), np.zeros(0, np.int64)
    slots = table[:, 4:].copy()
    return Plan(
        None,
        size,
        proc,
        slots,
        anchor,
        budget,
        number,
        pool,
        removed_offsets,
        removed_positions=removed,
        eligible=eligible,
        budget_unused=unused,
    )


def _pooled_plan(lengths: np.ndarray, *, size: int, k1: int, rng: np.random.Generator, min_steps: int) -> Plan:
    """K1 planning, vectorised over the procedures of each sequence length (their pools shrink alike): each
    eligible procedure takes ``budget × (n + 2)`` uniform numbers, per question ``n`` keys whose ``size`` smallest
    pick its steps, one for the anchor and one for K1=1's extra step."""
    lengths = np.asarray(lengths, dtype=np.int64)
    eligible = np.flatnonzero(lengths >= min_steps)
    n_of = lengths[eligible]
    allowed_of = n_of // (2 if k1 == 0 else 3)
    widths = allowed_of * (n_of + 2)
    offsets = np.r_[0, np.cumsum(widths)]
    draws = rng.random(int(offsets[-1]))
    parts = {k: [np.zeros(0, np.int64)] for k in ("proc", "anchor", "budget", "number", "pool")}
    parts["slots"], parts["gone"] = [np.zeros((0, size), np.int64)], [np.zeros((0, 2 if k1 == 1 else 1), np.int64)]
    unused = 0
    for n in np.unique(n_of).tolist():
        group = np.flatnonzero(n_of == n)
        allowed = int(allowed_of[group[0]])
        u_all = draws[ranges(offsets[group], widths[group])].reshape(len(group), allowed, n + 2)
        pool = np.tile(np.arange(n, dtype=np.int64), (len(group), 1))
        rows = np.arange(len(group))
        drawn = 0
        while drawn < allowed and pool.shape[1] >= size:
            u = u_all[:, drawn]
            size_now = pool.shape[1]
            picked = np.sort(np.argsort(u[:, :size_now], axis=1, kind="stable")[:, :size], axis=1)
            chosen = np.take_along_axis(pool, picked, axis=1)
            a = np.minimum(size - 1, (u[:, n] * size).astype(np.int64))
            gone = [chosen[rows, a]]
            pool = _without(pool, picked[rows, a])
            if k1 == 1 and pool.shape[1]:
                extra = np.minimum(pool.shape[1] - 1, (u[:, n + 1] * pool.shape[1]).astype(np.int64))
                gone.append(pool[rows, extra])
                pool = _without(pool, extra)
            for key, value in (
                ("proc", eligible[group]), ("slots", chosen), ("anchor", a), ("budget", np.full(len(group), allowed)),
                ("number", np.full(len(group), drawn)), ("pool", np.full(len(group), size_now)),
                ("gone", np.stack(gone, axis=1)),
            ):  # fmt: skip
                parts[key].append(value)
            drawn += 1
        unused += (allowed - drawn) * len(group)
    col = {key: np.concatenate(value) for key, value in parts.items()}
    order = np.lexsort((col["number"], col["proc"]))
    removed = col.pop("gone")[order]
    ordered = {key: value[order].astype(np.int64) for key, value in col.items()}
    ordered["removed_offsets"] = np.arange(len(removed) + 1, dtype=np.int64) * removed.shape[1]
    ordered["removed_positions"] = removed.reshape(-1)
    return Plan(k1, size, **ordered, eligible=len(eligible), budget_unused=int(unused))


def _merged(a: Plan, b: Plan) -> Plan:
    """The questions of two plans of one K1 value over disjoint procedures, ordered by procedure and number."""
    proc = np.concatenate([a.proc, b.proc])
    order = np.lexsort((np.concatenate([a.number, b.number]), proc))
    width = max(1, *(len(p.removed_positions) // max(len(p.proc), 1) for p in (a, b)))
    removed = np.concatenate([a.removed_positions.reshape(-1, width), b.removed_positions.reshape(-1, width)])
    joined = {k: np.concatenate([getattr(a, k), getattr(b, k)])[order] for k in _PER_QUESTION}
    joined["removed_offsets"] = np.arange(len(order) + 1, dtype=np.int64) * width
    joined["removed_positions"] = removed[order].reshape(-1)
    return Plan(
        a.key, a.size, **joined, eligible=a.eligible + b.eligible, budget_unused=a.budget_unused + b.budget_unused
    )


#: A plan's ``(Q, ...)`` columns.
_PER_QUESTION = ("proc", "slots", "anchor", "budget", "number", "pool")


def _without(pool: np.ndarray, column: np.ndarray) -> np.ndarray:
    """``pool (G, L)`` without ``column[g]`` in each row (order kept)."""
    keep = np.ones(pool.shape, dtype=bool)
    keep[np.arange(len(pool)), column] = False
    return pool[keep].reshape(len(pool), -1)
