"""Visual cloze (paper 001, RecipeQA): which image fills the ``@placeholder`` in a sequence of four?

A question holds four images of one procedure's image sequence (see :mod:`visual_common`) in authored
order, drawn in increasing order from the K1 pool (so not necessarily adjacent steps), with one replaced
by ``@placeholder``. ``choices`` are the missing image and three images of other procedures; ``answer``
indexes it. ``context`` lists every step index of the procedure (the textual context).

Settings: ``--knobs K1,K2,K3`` (the sweep writes all 8), ``--style recipeqa`` (free resampling, negatives
drawn at random from other procedures beyond a fixed distance, by default the median distance between
random images of different procedures; ``--min-distance`` sets it), and ``default`` = knobs (0,1,1), the
set paper 001 reports as hardest.

``meta`` of a knob question: ``setting``, ``k1 k2 k3 k_c``, ``k_found`` (neighbours found), ``m`` and ``s``,
``band`` (the K2 band), ``band_level`` and ``band_used`` (after widening), ``n_steps``, ``budget``,
``question_number``, ``pool_size``, ``removed_steps``, ``question_steps``, ``answer_step``,
``d_answer_question`` (the answer's distance to the question mean: the mean vector of the three question
images), ``negatives`` (one per wrong choice, in choice order: ``image``, ``source`` (a band level,
``question-knn``, ``relaxed``), ``k3`` (the K3 pick), ``d_answer``, ``d_question``) and ``fallbacks``
(what was widened, in words). RecipeQA-style questions have ``min_distance`` instead of the knob and band
fields (and no pool fields).

Questions are built as Arrow columns, a chunk of procedures at a time, never as Python objects: image
ids are indices into one array of ids shared by every setting, so a sweep of millions of questions costs
a few hundred bytes per question.
"""

from __future__ import annotations

import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from procbench.errors import BadInput
from procbench.generate.columns import dictionary, fixed_lists, questions_table, struct
from procbench.generate.questions import answer_orders, place_answers
from procbench.generate.settings import Setting
from procbench.generate.visual_columns import (
    SOURCE_NAMES,
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

TASK = "visual-cloze"
SWEEP = Setting.all_knobs(with_k3=True)
DEFAULT_KNOBS = (0, 1, 1)
_CODE = 0xC1
_SIZE = 4
_RANDOM = SOURCES.index("random")


@dataclass
class _Window:
    """The questions of one plan that fall in a chunk of procedures: their items, vectors and K1 facts."""

    proc: np.ndarray  # (B,)
    answer_row: np.ndarray  # (B,)
    answer_vec: np.ndarray  # (B, D)
    qmean: np.ndarray  # (B, D) mean of the three question images
    radius: np.ndarray  # (B,) answer to question mean
    columns: dict[str, np.ndarray]  # per-question columns every setting of the plan shares
    ragged: dict[str, tuple[np.ndarray, np.ndarray]]

    @classmethod
    def of(cls, plan: Plan, start: int, stop: int, data: VisualData) -> _Window:
        idx = plan.window(start, stop)
        proc = plan.proc[idx]
        seqs = data.seqs
        seq = seqs.offsets[proc][:, None] + plan.slots[idx]
        rows = seqs.rows[seq]
        anchor = plan.anchor[idx]
        b = np.arange(len(idx))
        answer_vec = data.gather(rows[b, anchor])
        qmean = (data.sum_of(rows) - answer_vec) / (_SIZE - 1)
        diff = answer_vec - qmean
        radius = np.sqrt(np.einsum("bd,bd->b", diff, diff))
        items = rows.copy()
        items[b, anchor] = data.n_rows  # the placeholder's row in the image dictionary
        steps = seqs.steps[seq]
        planned, ragged = planned_columns(plan, seqs, idx)
        columns = {
            "proc": proc,
            "items": items,
            "answer_row": rows[b, anchor],
            "d_answer_question": radius,
            "question_steps": steps,
            "answer_step": steps[b, anchor],
            **planned,
        }
        return cls(proc, rows[b, anchor], answer_vec, qmean, radius, columns, ragged)

    def __len__(self) -> int:
        return len(self.proc)

    def add(
        self, out: QuestionColumns, keep: np.ndarray, columns: dict[str, np.ndarray], notes: dict[int, list[str]]
    ) -> None:
        """Add the questions ``keep`` of this window, with a setting's own ``columns``, to ``out``."""
        out.add(keep, {**self.columns, **columns}, ragged=self.ragged, notes=notes)


def _answer_candidates(data: VisualData, windows: dict[int, _Window], kc: int) -> dict[int, Candidates]:
    """One kNN search per distinct (procedure, answer image) across the windows of every K1 plan."""
    if not windows:
        return {}
    n = data.n_rows
    codes = np.concatenate([w.proc * n + w.answer_row for w in windows.values()])
    uniq, inverse = np.unique(codes, return_inverse=True)
    dist, rows = data.search(data.gather(uniq % n), uniq // n, kc, kind="answer")
    out = {}
    start = 0
    for key, w in windows.items():
        part = inverse[start : start + len(w)]
        out[key] = Candidates.from_rows(dist[part], rows[part])
        start += len(w)
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
    """Visual cloze questions (a question table per setting); neighbour searches are shared by all settings.

    Args:
        kc: K_C, the neighbours of the correct choice that define the K2 band (and of the question mean, K3).
        min_distance: the RecipeQA style's fixed distance (default: median distance of random image pairs).
    """
    if kc < 1:
        raise BadInput("--kc must be at least 1")
    specs = resolve_settings(settings, task=TASK, with_k3=True, default=DEFAULT_KNOBS)
    data = VisualData(store, with_index=any(s.knobs is not None for s in specs))
    seqs = data.seqs
    plans = plans_by_k1(specs, seqs.lengths, seed=seed, code=_CODE, size=_SIZE, anchored=True)
    tau = recipeqa_distance(data, plans, min_distance, seed=seed, code=_CODE)
    rngs = {s.name: s.rng(seed, _CODE) for s in specs}
    columns = {s.name: QuestionColumns() for s in specs}
    tally: dict[str, Counter[str]] = {s.name: Counter() for s in specs}
    progress.start(TASK, total=len(seqs.names))

    k3_plans = {s.plan_key for s in specs if s.knobs and s.knobs[2]}

    def search(start: int, stop: int) -> tuple[dict[int | None, _Window], dict[int, Candidates], dict[int, Any]]:
        windows = {key: _Window.of(plan, start, stop, data) for key, plan in plans.items()}
        knob_windows = {k: w for k, w in windows.items() if k is not None and len(w)}
        cands = _answer_candidates(data, knob_windows, kc)  # type: ignore[arg-type]
        near = {  # the neighbours of each question mean (K3), searched once per plan
            key: data.search(windows[key].qmean, windows[key].proc, kc, kind="question_mean")
            for key in k3_plans & set(cands)
        }
        return windows, cands, near

    def draw(searched: tuple[dict[int | None, _Window], dict[int, Candidates], dict[int, Any]]) -> None:
        windows, cands, near = searched
        close = {
            key: Closeness.mark(data, cands[key], w.qmean, w.radius, *near[key])
            for key, w in windows.items()
            if key in near
        }  # type: ignore[index]
        for spec in specs:
            w = windows[spec.plan_key]
            if not len(w):
                continue
            if spec.knobs is None:
                _add_recipeqa(columns[spec.name], w, data, tau, rngs[spec.name], tally[spec.name])
            else:
                key, k2, k3 = spec.knobs
                sel = select(cands[key], k2=k2, need=3, closeness=close[key] if k3 else None, rng=rngs[spec.name])
                _add_knobs(columns[spec.name], spec, w, cands[key], sel, data, tally[spec.name])

    pipelined(len(seqs.names), search, draw, progress)
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        tables = {
            s.name: pool.submit(_table, s, columns[s.name], data, kc=kc, tau=tau, rng=s.rng(seed, _CODE, salt=1))
            for s in specs
        }
        out = {name: table.result() for name, table in tables.items()}
    counts = build_counts(specs, plans, out, tally, procedures=len(seqs.names), kc=kc, queries=data.queries, tau=tau)
    return out, counts


def _negative_distances(
    data: VisualData, rows: np.ndarray, w: _Window, cands: Candidates | None = None, cols: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Each negative's distance to the answer and to the question mean, ``(B, 3)`` each.

    A negative drawn from the answer's candidates (``cols`` >= 0) keeps the distance its band was judged by.
    """
    if cands is None or cols is None:
        both = distances_to(data, rows, w.answer_vec, w.qmean)
        return {"d_answer": both[0], "d_question": both[1]}
    d_answer = np.take_along_axis(cands.dist, np.maximum(cols, 0), axis=1)
    other = np.flatnonzero((cols < 0).any(axis=1))
    if len(other):
        d_answer[other] = np.where(
            cols[other] < 0, distances_to(data, rows[other], w.answer_vec[other]), d_answer[other]
        )
    d_answer[rows < 0] = np.nan
    return {"d_answer": d_answer, "d_question": distances_to(data, rows, w.qmean)}


def _add_knobs(
    out: QuestionColumns,
    spec: Spec,
    w: _Window,
    cands: Candidates,
    sel: Selection,
    data: VisualData,
    tally: Counter[str],
) -> None:
    k3 = bool(spec.knobs and spec.knobs[2])
    distances = _negative_distances(data, sel.rows, w, cands, sel.cols)
    keep = np.flatnonzero(sel.ok)
    notes = _fallbacks(sel, cands, w, distances["d_question"][:, 0], k3, 2 if k3 else 3, tally)
    k3_flags = np.zeros((len(w), 3), dtype=bool)
    k3_flags[:, 0] = k3
    columns = {
        "neg_rows": sel.rows,
        "neg_source": sel.source,
        "neg_k3": k3_flags,
        **{f"neg_{name}": value for name, value in distances.items()},
        **band_columns(sel, cands),
    }
    w.add(out, keep, columns, notes)
    tally["skipped_no_candidates"] += len(w) - len(keep)


def _fallbacks(
    sel: Selection,
    cands: Candidates,
    w: _Window,
    k3_d_question: np.ndarray,
    k3: bool,
    need_k2: int,
    tally: Counter[str],
) -> dict[int, list[str]]:
    """The widening recorded for each question that needed one (by question index)."""
    out: dict[int, list[str]] = {}
    first = sel.source[:, 0] if k3 else np.zeros(len(sel.level), dtype=np.int64)
    todo = np.flatnonzero(sel.ok & ((sel.level > 0) | (first > 0)))
    los, his, radii = sel.lo[todo].tolist(), sel.hi[todo].tolist(), w.radius[todo].tolist()
    for b, lo, hi, radius in zip(todo.tolist(), los, his, radii, strict=True):
        notes = []
        src = int(first[b])
        if src:
            tally[f"k3:{SOURCES[src]}"] += 1
            d_q = float(k3_d_question[b])
            if src < len(LEVELS):
                notes.append(
                    f"k3: no candidate in the band {fmt_band(lo[0], hi[0])} is closer to the question mean than "
                    f"the answer ({radius:.4f}); took one from {LEVELS[src]} {fmt_band(lo[src], hi[src])}"
                )
            elif src == QUESTION_KNN:
                notes.append(
                    f"k3: none of the answer's {int(cands.found[b])} neighbours is closer to the question mean than "
                    f"the answer ({radius:.4f}); took a neighbour of the question mean ({d_q:.4f})"
                )
            else:
                notes.append(
                    "k3: no image of another procedure is closer to the question mean than the answer "
                    f"({radius:.4f}); took the image nearest to it ({d_q:.4f})"
                )
        level = int(sel.level[b])
        if level:
            tally[f"k2:{LEVELS[level]}"] += 1
            notes.append(
                f"k2: the band {fmt_band(lo[0], hi[0])} held {int(sel.base_count[b])} of the {need_k2} negatives "
                f"needed; widened to {LEVELS[level]} {fmt_band(lo[level], hi[level])}"
            )
        out[b] = notes
    return out


def _add_recipeqa(
    out: QuestionColumns,
    w: _Window,
    data: VisualData,
    tau: float,
    rng: np.random.Generator,
    tally: Counter[str],
) -> None:
    rows, _, short = random_far_images(data, w.proc, w.answer_row[:, None], 3, tau, rng)
    keep = np.flatnonzero((rows >= 0).all(axis=1))
    tally["skipped_no_candidates"] += len(w) - len(keep)
    note = [f"recipeqa: fewer than 3 random images of other procedures lay beyond {tau:.4f}; took the farthest drawn"]
    notes = {b: note for b in np.flatnonzero(short).tolist()}
    tally["recipeqa:farthest"] += int(short[keep].sum())
    columns = {
        "neg_rows": rows,
        "neg_source": np.full(rows.shape, _RANDOM, dtype=np.int64),
        "neg_k3": np.zeros(rows.shape, dtype=bool),
        **{f"neg_{name}": value for name, value in _negative_distances(data, rows, w).items()},
    }
    w.add(out, keep, columns, notes)


def _table(
    spec: Spec, cols: QuestionColumns, data: VisualData, *, kc: int, tau: float, rng: np.random.Generator
) -> pa.Table:
    """The setting's question table: answers placed at balanced positions, ``meta`` as the module says."""
    n = len(cols)
    if not n:
        return questions_table([])
    images = data.image_dictionary
    positions, wrong = answer_orders(n, _SIZE, rng)

    def shuffled(name: str) -> np.ndarray:  # a negatives column in choice order, flat
        return np.take_along_axis(cols.get(name), wrong, axis=1).reshape(-1)

    neg_rows = shuffled("neg_rows")
    negatives = struct(
        {
            "image": dictionary(neg_rows, images),
            "source": dictionary(shuffled("neg_source"), SOURCE_NAMES),
            "k3": shuffled("neg_k3"),
            "d_answer": shuffled("neg_d_answer").astype(np.float64),
            "d_question": shuffled("neg_d_question").astype(np.float64),
        }
    )
    meta = {
        **meta_head(spec, cols, kc=kc, tau=tau),
        "question_steps": fixed_lists(cols.get("question_steps").astype(np.int64), _SIZE),
        "answer_step": cols.get("answer_step").astype(np.int64),
        "d_answer_question": cols.get("d_answer_question").astype(np.float64),
        "negatives": fixed_lists(negatives, 3),
        "fallbacks": cols.fallbacks(),
    }
    choices = place_answers(cols.get("answer_row"), neg_rows.reshape(n, 3), positions)
    return question_table(
        data,
        cols,
        question=fixed_lists(dictionary(cols.get("items").reshape(-1), images), _SIZE),
        choices=fixed_lists(dictionary(choices.reshape(-1), images), _SIZE),
        answer=positions,
        meta=meta,
    )
