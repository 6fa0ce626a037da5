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
fields (and no pool fields). Objects a sweep's settings have in common are shared between their
questions, so a sweep costs little more memory than one setting.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from procbench.errors import BadInput
from procbench.generate.questions import PLACEHOLDER, Question, balance_answer_positions
from procbench.generate.settings import Setting
from procbench.generate.visual_common import (
    DEFAULT_KC,
    LEVELS,
    QUESTION_KNN,
    SOURCE_NAMES,
    SOURCES,
    Candidates,
    Closeness,
    Plan,
    Selection,
    Spec,
    VisualData,
    band_lists,
    chunks,
    distances_to,
    estimate_min_distance,
    fmt_band,
    paused_gc,
    plans_by_k1,
    random_far_images,
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
#: One empty fallback list shared by every question that needed none (never mutated).
_NONE: list[str] = []


@dataclass
class _Window:
    """The questions of one plan that fall in a chunk of procedures, with their vectors.

    ``shared`` holds, per question, the Python objects every setting of the plan reuses (question items,
    step lists, ints and floats), so a sweep builds them once and its questions share them.
    """

    plan: Plan
    idx: np.ndarray
    proc: np.ndarray
    answer_row: np.ndarray
    answer_vec: np.ndarray
    qmean: np.ndarray  # (B, D)
    radius: np.ndarray  # (B,) answer to question mean
    shared: dict[str, list[Any]]

    @classmethod
    def of(cls, plan: Plan, start: int, stop: int, data: VisualData, contexts: list[list[int]]) -> _Window:
        idx = plan.window(start, stop)
        proc = plan.proc[idx]
        seqs = data.seqs
        seq = seqs.offsets[proc][:, None] + plan.slots[idx]
        rows = seqs.rows[seq]
        anchor = plan.anchor[idx]
        vecs = data.gather(rows)
        b = np.arange(len(idx))
        answer_vec = vecs[b, anchor]
        qmean = (vecs.sum(axis=1) - answer_vec) / (_SIZE - 1)
        radius = np.linalg.norm(answer_vec - qmean, axis=1)
        steps = seqs.steps[seq].tolist()
        items = [[seqs.images[s] for s in row] for row in seq.tolist()]
        anchors = anchor.tolist()
        for row, a in zip(items, anchors, strict=True):
            row[a] = PLACEHOLDER
        offsets = seqs.offsets[proc].tolist()
        seq_steps = seqs.steps
        shared = {
            "procedure": [seqs.names[p] for p in proc.tolist()],
            "context": [contexts[p] for p in proc.tolist()],
            "question": items,
            "question_steps": steps,
            "answer_step": [row[a] for row, a in zip(steps, anchors, strict=True)],
            "answer_image": [seqs.images[s] for s in seq[b, anchor].tolist()],
            "n_steps": (seqs.offsets[proc + 1] - seqs.offsets[proc]).tolist(),
            "budget": plan.budget[idx].tolist(),
            "question_number": plan.number[idx].tolist(),
            "pool_size": plan.pool[idx].tolist(),
            "removed_steps": [
                [int(seq_steps[o + r]) for r in plan.removed[i]] for o, i in zip(offsets, idx.tolist(), strict=True)
            ],
            "d_answer_question": radius.tolist(),
        }
        return cls(plan, idx, proc, rows[b, anchor], answer_vec, qmean, radius, shared)

    def __len__(self) -> int:
        return len(self.idx)


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
) -> tuple[dict[str, list[Question]], dict[str, Any]]:
    """Visual cloze questions for each setting; neighbour searches are shared by all settings.

    Args:
        kc: K_C, the neighbours of the correct choice that define the K2 band (and of the question mean, K3).
        min_distance: the RecipeQA style's fixed distance (default: median distance of random image pairs).
    """
    if kc < 1:
        raise BadInput("--kc must be at least 1")
    specs = resolve_settings(settings, task=TASK, with_k3=True, default=DEFAULT_KNOBS)
    data = VisualData(store, with_index=any(s.knobs is not None for s in specs))
    seqs = data.seqs
    contexts = seqs.contexts()
    plans = plans_by_k1(specs, seqs.lengths, seed=seed, code=_CODE, size=_SIZE, anchored=True)
    tau = 0.0
    if any(s.knobs is None for s in specs):
        tau = (
            min_distance
            if min_distance is not None
            else estimate_min_distance(data, np.random.default_rng([seed, _CODE, 0x7A0]))
        )
    rngs = {s.name: s.rng(seed, _CODE) for s in specs}
    out: dict[str, list[Question]] = {s.name: [] for s in specs}
    tally: dict[str, Counter[str]] = {s.name: Counter() for s in specs}
    progress.start(TASK, total=len(seqs.names))
    for start, stop in chunks(len(seqs.names)):
        windows = {key: _Window.of(plan, start, stop, data, contexts) for key, plan in plans.items()}
        knob_windows = {k: w for k, w in windows.items() if k is not None and len(w)}
        cands = _answer_candidates(data, knob_windows, kc)  # type: ignore[arg-type]
        close: dict[int, Closeness] = {}
        for spec in specs:
            key = spec.plan_key
            if spec.knobs and spec.knobs[2] and key in cands and key not in close:
                w = windows[key]
                close[key] = Closeness.build(data, cands[key], w.qmean, w.radius, w.proc, kc)  # type: ignore[index]
        for spec in specs:
            w = windows[spec.plan_key]
            if not len(w):
                continue
            if spec.knobs is None:
                questions = _recipeqa_questions(spec, w, data, tau, rngs[spec.name], tally[spec.name])
            else:
                key = spec.knobs[0]
                k3 = spec.knobs[2]
                sel = select(
                    cands[key], k2=spec.knobs[1], need=3, closeness=close[key] if k3 else None, rng=rngs[spec.name]
                )
                questions = _knob_questions(spec, w, cands[key], sel, data, kc, tally[spec.name])
            out[spec.name].extend(questions)
        progress.advance(stop - start)
    for spec in specs:
        balance_answer_positions(out[spec.name], spec.rng(seed, _CODE, salt=1))
    counts: dict[str, Any] = {
        "k_c": kc,
        "procedures": len(seqs.names),
        "eligible": {("recipeqa" if k is None else f"k1={k}"): p.eligible for k, p in plans.items()},
        "queries": dict(data.queries),
        "per_setting": {
            s.name: {
                "questions": len(out[s.name]),
                "budget_unused": plans[s.plan_key].budget_unused,
                **dict(sorted(tally[s.name].items())),
            }
            for s in specs
        },
    }
    if None in plans:
        counts["min_distance"] = tau
    return out, counts


def _negatives(
    data: VisualData, rows: np.ndarray, w: _Window, sources: list[str], k3: bool
) -> list[list[dict[str, Any]]]:
    """Per question, its three negatives as meta records (image, source, k3, d_answer, d_question)."""
    ids = data.ids(rows)
    both = distances_to(data, rows, w.answer_vec, w.qmean)
    d_answer, d_question = both[0].reshape(-1).tolist(), both[1].reshape(-1).tolist()
    flags = [k3, False, False] * len(rows)
    records = [
        {"image": i, "source": s, "k3": k, "d_answer": a, "d_question": q}
        for i, s, k, a, q in zip(ids, sources, flags, d_answer, d_question, strict=True)
    ]
    return [records[j : j + 3] for j in range(0, len(records), 3)]


def _knob_questions(
    spec: Spec,
    w: _Window,
    cands: Candidates,
    sel: Selection,
    data: VisualData,
    kc: int,
    tally: Counter[str],
) -> list[Question]:
    k1, k2, k3 = spec.knobs or (0, 0, 0)
    need_k2 = 2 if k3 else 3
    negatives = _negatives(data, sel.rows, w, SOURCE_NAMES[sel.source.reshape(-1)].tolist(), bool(k3))
    level_names = SOURCE_NAMES[sel.level].tolist()
    bands, used = band_lists(sel)
    fallbacks = _fallbacks(sel, cands, w, negatives, bool(k3), need_k2, tally)
    sh = w.shared
    ms, ss, found = cands.m.tolist(), cands.s.tolist(), cands.found.tolist()
    name = spec.name
    questions = []
    for b in np.flatnonzero(sel.ok).tolist():
        negs = negatives[b]
        meta = {
            "setting": name, "k1": k1, "k2": k2, "k3": k3, "k_c": kc, "k_found": found[b], "m": ms[b], "s": ss[b],
            "band": bands[b], "band_level": level_names[b], "band_used": used[b],
            "n_steps": sh["n_steps"][b], "budget": sh["budget"][b], "question_number": sh["question_number"][b],
            "pool_size": sh["pool_size"][b], "removed_steps": sh["removed_steps"][b],
            "question_steps": sh["question_steps"][b], "answer_step": sh["answer_step"][b],
            "d_answer_question": sh["d_answer_question"][b], "negatives": negs, "fallbacks": fallbacks.get(b, _NONE),
        }  # fmt: skip
        choices = [sh["answer_image"][b], negs[0]["image"], negs[1]["image"], negs[2]["image"]]
        questions.append(Question(sh["procedure"][b], sh["context"][b], sh["question"][b], choices, 0, meta))
    tally["skipped_no_candidates"] += len(w) - len(questions)
    return questions


def _fallbacks(
    sel: Selection,
    cands: Candidates,
    w: _Window,
    negatives: list[list[dict[str, Any]]],
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
            d_q = negatives[b][0]["d_question"]
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


def _recipeqa_questions(
    spec: Spec,
    w: _Window,
    data: VisualData,
    tau: float,
    rng: np.random.Generator,
    tally: Counter[str],
) -> list[Question]:
    rows, _, short = random_far_images(data, w.proc, w.answer_row[:, None], 3, tau, rng)
    negatives = _negatives(data, rows, w, ["random"] * rows.size, False)
    sh = w.shared
    questions = []
    for b in range(len(w)):
        if (rows[b] < 0).any():
            tally["skipped_no_candidates"] += 1
            continue
        fallbacks = _NONE
        if short[b]:
            tally["recipeqa:farthest"] += 1
            fallbacks = [
                f"recipeqa: fewer than 3 random images of other procedures lay beyond {tau:.4f}; "
                "took the farthest drawn"
            ]
        negs = negatives[b]
        meta = {
            "setting": spec.name, "min_distance": tau, "n_steps": sh["n_steps"][b], "budget": sh["budget"][b],
            "question_number": sh["question_number"][b], "question_steps": sh["question_steps"][b],
            "answer_step": sh["answer_step"][b], "d_answer_question": sh["d_answer_question"][b],
            "negatives": negs, "fallbacks": fallbacks,
        }  # fmt: skip
        choices = [sh["answer_image"][b], negs[0]["image"], negs[1]["image"], negs[2]["image"]]
        questions.append(Question(sh["procedure"][b], sh["context"][b], sh["question"][b], choices, 0, meta))
    return questions
