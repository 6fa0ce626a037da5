"""Visual coherence (paper 001, RecipeQA): which of four images does not belong to the procedure?

``choices`` are three images of one procedure's image sequence (see :mod:`visual_common`), drawn in
increasing order from the K1 pool and kept in authored order, plus one incoherent image of another
procedure inserted at a balanced position; ``answer`` indexes the incoherent image. ``question`` is empty
(the choices are the sequence, as in RecipeQA's coherence task); ``context`` lists every step index of
the procedure.

Knobs (DESIGN §6, paper 001 App. B.1): K1 as for cloze, the anchor removed from the pool being a random
coherent step. K2: the candidates are the union of the K_C-nearest images of other procedures of the
three coherent images, each with its smallest distance to a coherent image whose kNN it is in; m and s
are taken over the union and the incoherent image is drawn from its band. K3: the incoherent image's
distance to the mean of the coherent images must be below their smallest pairwise distance.
``--style recipeqa``: free resampling, the incoherent image random among other procedures' images whose
distance to every coherent image exceeds a fixed distance. ``default`` = knobs (0,1,1).

``meta``: ``setting``, ``k1 k2 k3 k_c``, ``k_found`` (union size), ``m``, ``s``, ``band``,
``band_level`` (where the incoherent image came from: a band level, ``question-knn`` or ``relaxed``),
``band_used``, ``n_steps``, ``budget``, ``question_number``, ``pool_size``, ``removed_steps``,
``coherent_steps``, ``answer_d_coherent`` (to each coherent image), ``d_answer_question`` (to the
coherent mean), ``min_pairwise``, ``negatives`` (the coherent images, in choice order: ``image``,
``step``, ``d_answer``, ``d_question``) and ``fallbacks``. RecipeQA-style questions have
``min_distance`` instead of the knob and band fields (and no pool fields).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from procbench.errors import BadInput
from procbench.generate.columns import dictionary, fixed_lists, questions_table, ragged_lists, struct
from procbench.generate.questions import answer_orders, place_answers
from procbench.generate.settings import Setting
from procbench.generate.visual_columns import (
    QuestionColumns,
    band_columns,
    build_counts,
    meta_head,
    planned_columns,
    question_table,
)
from procbench.generate.visual_common import (
    DEFAULT_KC,
    LEVELS,
    QUESTION_KNN,
    SOURCES,
    Candidates,
    Closeness,
    Plan,
    Selection,
    Spec,
    VisualData,
    distances_to,
    fmt_band,
    paused_gc,
    pipelined,
    plans_by_k1,
    random_far_images,
    recipeqa_distance,
    resolve_settings,
    select,
)
from procbench.progress import SILENT, Progress
from procbench.store import Store

__all__ = ["DEFAULT_KNOBS", "SWEEP", "TASK", "build"]

TASK = "visual-coherence"
SWEEP = Setting.all_knobs(with_k3=True)
DEFAULT_KNOBS = (0, 1, 1)
_CODE = 0xC2
_SIZE = 3
_PAIRS = ((0, 1), (0, 2), (1, 2))


@dataclass
class _Window:
    """The questions of one plan that fall in a chunk of procedures, with their vectors."""

    proc: np.ndarray
    rows: np.ndarray  # (B, 3)
    mean: np.ndarray  # (B, D)
    min_pairwise: np.ndarray  # (B,)
    columns: dict[str, np.ndarray]  # per-question columns every setting of the plan shares
    ragged: dict[str, tuple[np.ndarray, np.ndarray]]

    @classmethod
    def of(cls, plan: Plan, start: int, stop: int, data: VisualData) -> _Window:
        idx = plan.window(start, stop)
        proc = plan.proc[idx]
        seq = data.seqs.offsets[proc][:, None] + plan.slots[idx]
        rows = data.seqs.rows[seq]
        vecs = data.gather(rows)
        pairwise = np.stack([np.linalg.norm(vecs[:, i] - vecs[:, j], axis=1) for i, j in _PAIRS], axis=1)
        min_pairwise = pairwise.min(axis=1) if len(idx) else np.zeros(0, np.float32)
        planned, ragged = planned_columns(plan, data.seqs, idx)
        columns = {
            "proc": proc,
            "coherent_rows": rows,
            "coherent_steps": data.seqs.steps[seq],
            "min_pairwise": min_pairwise,
            **planned,
        }
        return cls(proc, rows, vecs.mean(axis=1), min_pairwise, columns, ragged)

    def __len__(self) -> int:
        return len(self.proc)


def _union(dist: np.ndarray, rows: np.ndarray) -> Candidates:
    """Candidates from ``(B, 3, K)`` kNN lists: each image once, with its smallest distance."""
    n_q = len(rows)
    d = dist.reshape(n_q, -1)
    r = rows.reshape(n_q, -1)
    order = np.argsort(d, axis=1, kind="stable")
    d, r = np.take_along_axis(d, order, axis=1), np.take_along_axis(r, order, axis=1)
    by_row = np.argsort(np.where(r < 0, np.iinfo(np.int64).max, r), axis=1, kind="stable")
    sorted_rows = np.take_along_axis(r, by_row, axis=1)
    dup_sorted = np.zeros(r.shape, dtype=bool)
    dup_sorted[:, 1:] = (sorted_rows[:, 1:] == sorted_rows[:, :-1]) & (sorted_rows[:, 1:] >= 0)
    dup = np.zeros_like(dup_sorted)
    np.put_along_axis(dup, by_row, dup_sorted, axis=1)
    r = np.where(dup, -1, r)
    d = np.where(dup, np.inf, d)
    keep = np.argsort(r < 0, axis=1, kind="stable")
    return Candidates.from_rows(np.take_along_axis(d, keep, axis=1), np.take_along_axis(r, keep, axis=1))


def _neighbours(data: VisualData, windows: dict[int, _Window], kc: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``(dist, rows)``, each ``(B, 3, K_C)``, per K1 plan: one kNN search per distinct (procedure, coherent
    image) across the windows of every plan."""
    if not windows:
        return {}
    n = data.n_rows
    codes = np.concatenate([(w.proc[:, None] * n + w.rows).reshape(-1) for w in windows.values()])
    uniq, inverse = np.unique(codes, return_inverse=True)
    dist, rows = data.search(data.gather(uniq % n), uniq // n, kc, kind="answer")
    out = {}
    start = 0
    for key, w in windows.items():
        part = inverse[start : start + _SIZE * len(w)].reshape(len(w), _SIZE)
        out[key] = (dist[part], rows[part])
        start += _SIZE * len(w)
    return out


@paused_gc()
def build(
    store: Store,
    settings: list[Setting],
    *,
    seed: int = 0,
    progress: Progress = SILENT,
    kc: int = DEFAULT_KC,
    min_distance: float | None = None,
) -> tuple[dict[str, pa.Table], dict[str, Any]]:
    """Visual coherence questions (a question table per setting); neighbour searches are shared by all settings.

    Args:
        kc: K_C, the neighbours of each coherent image (and of their mean, for K3).
        min_distance: the RecipeQA style's fixed distance (default: median distance of random image pairs).
    """
    if kc < 1:
        raise BadInput("--kc must be at least 1")
    specs = resolve_settings(settings, task=TASK, with_k3=True, default=DEFAULT_KNOBS)
    data = VisualData(store, with_index=any(s.knobs is not None for s in specs))
    seqs = data.seqs
    plans = plans_by_k1(specs, seqs.lengths, seed=seed, code=_CODE, size=_SIZE, anchored=False)
    tau = recipeqa_distance(data, plans, min_distance, seed=seed, code=_CODE)
    rngs = {s.name: s.rng(seed, _CODE) for s in specs}
    columns = {s.name: QuestionColumns() for s in specs}
    tally: dict[str, Counter[str]] = {s.name: Counter() for s in specs}
    progress.start(TASK, total=len(seqs.names))
    k3_plans = {s.plan_key for s in specs if s.knobs and s.knobs[2]}

    def search(start: int, stop: int) -> tuple[dict[int | None, _Window], dict[int, Any], dict[int, Any]]:
        windows = {key: _Window.of(plan, start, stop, data) for key, plan in plans.items()}
        knob_windows = {k: w for k, w in windows.items() if k is not None and len(w)}
        knn = _neighbours(data, knob_windows, kc)  # type: ignore[arg-type]
        near = {  # the neighbours of each coherent mean (K3), searched once per plan
            key: data.search(windows[key].mean, windows[key].proc, kc, kind="question_mean")
            for key in k3_plans & set(knn)
        }
        return windows, knn, near

    def draw(searched: tuple[dict[int | None, _Window], dict[int, Any], dict[int, Any]]) -> None:
        windows, knn, near = searched
        cands = {key: _union(*found) for key, found in knn.items()}
        close = {
            key: Closeness.mark(data, cands[key], w.mean, w.min_pairwise, *near[key])  # type: ignore[index]
            for key, w in windows.items()
            if key in near
        }
        for spec in specs:
            w = windows[spec.plan_key]
            if not len(w):
                continue
            rng = rngs[spec.name]
            if spec.knobs is None:
                rows, _, short = random_far_images(data, w.proc, w.rows, 1, tau, rng)
                _add(columns[spec.name], spec, w, data, rows[:, 0], tally[spec.name], tau=tau, short=short)
            else:
                key, k2, k3 = spec.knobs
                sel = select(cands[key], k2=k2, need=1, closeness=close[key] if k3 else None, rng=rng)
                _add(columns[spec.name], spec, w, data, sel.rows[:, 0], tally[spec.name], sel=sel, cands=cands[key])

    pipelined(len(seqs.names), search, draw, progress)
    out = {s.name: _table(s, columns[s.name], data, kc=kc, tau=tau, rng=s.rng(seed, _CODE, salt=1)) for s in specs}
    counts = build_counts(specs, plans, out, tally, procedures=len(seqs.names), kc=kc, queries=data.queries, tau=tau)
    return out, counts


def _add(
    out: QuestionColumns,
    spec: Spec,
    w: _Window,
    data: VisualData,
    picks: np.ndarray,
    tally: Counter[str],
    *,
    sel: Selection | None = None,
    cands: Candidates | None = None,
    tau: float = 0.0,
    short: np.ndarray | None = None,
) -> None:
    """Add a window's questions whose incoherent images are ``picks (B,)`` (from ``sel`` or RecipeQA draws)."""
    ok = picks >= 0
    if sel is not None:
        ok &= sel.ok
    keep = np.flatnonzero(ok)
    tally["skipped_no_candidates"] += len(w) - len(keep)
    both = distances_to(data, w.rows, data.gather(picks), w.mean)
    d_mean = distances_to(data, picks[:, None], w.mean)[:, 0]
    columns = {
        "pick": picks,
        "answer_d_coherent": both[0],
        "coherent_d_mean": both[1],
        "d_answer_question": d_mean,
    }
    if sel is not None and cands is not None:
        columns.update(band_columns(sel, cands))
        notes = _fallbacks(sel, cands, w, d_mean, ok, bool(spec.knobs and spec.knobs[2]), tally)
    else:
        notes = {}
        if short is not None:
            farthest = [
                f"recipeqa: no random image of another procedure lay beyond {tau:.4f} of every "
                "coherent image; took the farthest drawn"
            ]
            notes = {b: farthest for b in np.flatnonzero(short & ok).tolist()}
            tally["recipeqa:farthest"] += len(notes)
    out.add(keep, {**w.columns, **columns}, ragged=w.ragged, notes=notes)


def _fallbacks(
    sel: Selection,
    cands: Candidates,
    w: _Window,
    d_mean: np.ndarray,
    ok: np.ndarray,
    k3: bool,
    tally: Counter[str],
) -> dict[int, list[str]]:
    """The widening recorded for each kept question that needed one (by question index)."""
    notes: dict[int, list[str]] = {}
    for b in np.flatnonzero(ok & (sel.level > 0)).tolist():
        level = int(sel.level[b])
        lo, hi = sel.lo[b].tolist(), sel.hi[b].tolist()
        tally[f"{'k3' if k3 else 'k2'}:{SOURCES[level]}"] += 1
        rule = (
            "is closer to the mean of the coherent images than their smallest pairwise distance "
            f"({float(w.min_pairwise[b]):.4f})"
        )
        if level < len(LEVELS):
            note = (
                f"k3: no candidate in the band {fmt_band(lo[0], hi[0])} {rule}"
                if k3
                else f"k2: the band {fmt_band(lo[0], hi[0])} held no candidate"
            ) + f"; widened to {LEVELS[level]} {fmt_band(lo[level], hi[level])}"
        elif level == QUESTION_KNN:
            note = (
                f"k3: none of the {int(cands.found[b])} union candidates {rule}; "
                f"took a neighbour of the mean ({float(d_mean[b]):.4f})"
            )
        else:
            note = (
                f"k3: no image of another procedure {rule}; took the image nearest the mean ({float(d_mean[b]):.4f})"
            )
        notes[b] = [note]
    return notes


def _table(
    spec: Spec, cols: QuestionColumns, data: VisualData, *, kc: int, tau: float, rng: np.random.Generator
) -> pa.Table:
    """The setting's question table: the incoherent image at a balanced position among the coherent ones
    (kept in authored order), ``meta`` as the module says."""
    n = len(cols)
    if not n:
        return questions_table([])
    images = data.image_dictionary
    positions = answer_orders(n, _SIZE + 1, rng)[0]
    coherent = cols.get("coherent_rows")
    steps = cols.get("coherent_steps").astype(np.int64)
    answer_d = cols.get("answer_d_coherent").astype(np.float64)
    negatives = struct(
        {
            "image": dictionary(coherent.reshape(-1), images),
            "step": steps.reshape(-1),
            "d_answer": answer_d.reshape(-1),
            "d_question": cols.get("coherent_d_mean").astype(np.float64).reshape(-1),
        }
    )
    meta = {
        **meta_head(spec, cols, kc=kc, tau=tau),
        "coherent_steps": fixed_lists(steps, _SIZE),
        "answer_d_coherent": fixed_lists(answer_d, _SIZE),
        "d_answer_question": cols.get("d_answer_question").astype(np.float64),
        "min_pairwise": cols.get("min_pairwise").astype(np.float64),
        "negatives": fixed_lists(negatives, _SIZE),
        "fallbacks": cols.fallbacks(),
    }
    choices = place_answers(cols.get("pick"), coherent, positions)
    return question_table(
        data,
        cols,
        question=ragged_lists(pa.array([], pa.string()), np.zeros(n, dtype=np.int64)),
        choices=fixed_lists(dictionary(choices.reshape(-1), images), _SIZE + 1),
        answer=positions,
        meta=meta,
    )
