"""Visual coherence (paper 001, RecipeQA): which of four images does not belong to the procedure?

The choices are three images of one procedure in authored order and one image of another procedure (the answer)
at a balanced position; ``question`` is empty. The knobs are cloze's, on the union of the coherent images'
neighbours (K3: an intruder nearer their mean than their smallest pairwise distance). Settings:
docs/concepts/question-sets.md.

``meta``: the head of :func:`.columns.meta_head`, ``coherent_steps``, ``answer_d_coherent`` (to each coherent
image), ``d_answer_question`` (to their mean), ``answer_rank``, ``min_pairwise``, ``negatives`` (the coherent
images in choice order: ``image``, ``step``, ``d_answer``, ``d_question``) and ``fallbacks``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa

from procbench.generate.adversarial import AdversarialPolicy
from procbench.generate.answers import answer_orders, place_answers
from procbench.generate.options import VisualCoherenceOptions
from procbench.generate.recipes import Recipe
from procbench.generate.search import Searcher
from procbench.generate.settings import Setting
from procbench.generate.visual.adversarial import filter_intruders
from procbench.generate.visual.bands import ADVERSARIAL, LEVELS, QUESTION_KNN, SOURCES, Candidates, fmt_band
from procbench.generate.visual.closeness import Closeness
from procbench.generate.visual.columns import QuestionColumns, TableParts, band_columns
from procbench.generate.visual.dealer import Classed, evened, rank_notes, tell_classes
from procbench.generate.visual.needs_context import STYLE, run_with_needs_context
from procbench.generate.visual.selection import Selection
from procbench.generate.visual.sequences import VisualData, distances_to
from procbench.generate.visual.task import Draw, Items, VisualTask, Window
from procbench.progress import SILENT, Progress
from procbench.qsets.columns import dictionary, fixed_lists, struct
from procbench.store import Store
from procbench.tells import ChoiceView, OddOneOut, Tell, answer_ranks

__all__ = ["DEFAULT_KNOBS", "SWEEP", "TASK", "build"]

TASK = "visual-coherence"
DEFAULT_KNOBS = (0, 1, 1)
SWEEP = [*Setting.all_knobs(with_k3=True), Setting("adversarial"), Setting(STYLE)]
_SIZE = 3
_PAIRS = ((0, 1), (0, 2), (1, 2))


def _window(items: Items, data: VisualData) -> Window:
    """Coherence questions: ``anchors`` are the coherent images, ``point`` their mean and ``radius`` their smallest
    pairwise distance."""
    rows = items.rows
    vecs = data.gather(rows)
    pairwise = np.stack([np.linalg.norm(vecs[:, i] - vecs[:, j], axis=1) for i, j in _PAIRS], axis=1)
    min_pairwise = pairwise.min(axis=1) if len(rows) else np.zeros(0, np.float32)
    columns = {**items.columns, "coherent_rows": rows, "coherent_steps": items.steps, "min_pairwise": min_pairwise}
    point = vecs.mean(axis=1)
    return Window(
        proc=items.proc, columns=columns, ragged=items.ragged, anchors=rows, point=point, radius=min_pairwise
    )


def _add(out: QuestionColumns, w: Window, drawn: Draw) -> None:
    """Add a window's questions, whose incoherent images are the drawn negatives."""
    data, tally, picks = drawn.data, drawn.tally, drawn.rows[:, 0]
    sel, cands, short = drawn.selection, drawn.candidates, drawn.farthest
    ok = picks >= 0
    if sel is not None:
        ok &= sel.ok
    keep = np.flatnonzero(ok)
    unranked = int((sel.rank < 0).sum()) if sel is not None and sel.rank is not None else 0
    tally["skipped_rank_balance"] += unranked
    tally["skipped_no_candidates"] += len(w) - len(keep) - unranked
    both = distances_to(data, w.anchors, data.gather(picks), w.point)
    d_mean = distances_to(data, picks[:, None], w.point)[:, 0]
    columns = {
        "pick": picks,
        "answer_d_coherent": both[0],
        "coherent_d_mean": both[1],
        "d_answer_question": d_mean,
        "answer_rank": _intruder_ranks(data, w.anchors, picks),
    }
    if sel is not None and cands is not None:
        columns.update(band_columns(sel, cands))
        if sel.rank is not None and drawn.dealt is not None:
            notes = rank_notes(sel, ok, drawn.dealt, tally)
        else:
            notes = _fallbacks(sel, cands, w, d_mean, ok, drawn.setting.k3, tally)
    else:
        notes = {}
        if short is not None:
            farthest = [
                f"recipeqa: no random image of another procedure lay beyond {drawn.min_distance:.4f} of every "
                "coherent image; took the farthest drawn"
            ]
            notes = {b: farthest for b in np.flatnonzero(short & ok).tolist()}
            tally["recipeqa:farthest"] += len(notes)
    out.add(keep, {**w.columns, **columns}, ragged=w.ragged, notes=notes)


def _rank_rule(
    w: Window, cands: Candidates, close: Closeness, data: VisualData, tells: list[Tell], recipe: Recipe
) -> Classed:
    """K3=2 and ``adversarial``'s start: each candidate's class is the rank it would take as the intruder among the
    four choices on each of the recipe's tells (``odd_one_out``: its distance to the mean of the other three)."""
    none = np.zeros((len(w), 0), dtype=np.int64)
    classes, radix = tell_classes(tells, data.gather, cands.rows, fixed=w.anchors, question=none, answer=None)
    return Classed(classes, radix, False, none, none)


def _intruder_ranks(data: VisualData, coherent: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """``(B,)`` each intruder's rank (0: closest) among the four choices by distance to the mean of the other three."""
    rows = np.concatenate([picks[:, None], coherent], axis=1)
    no_question = np.zeros((len(rows), 0, 1), dtype=np.float32), np.zeros((len(rows), 0), dtype=bool)
    values = OddOneOut().values(ChoiceView(data.gather(np.maximum(rows, 0)), *no_question))
    return answer_ranks(values, np.zeros(len(rows), dtype=np.int64))


def _adversarial(
    cols: QuestionColumns, data: VisualData, *, seed: int, progress: Progress, options: AdversarialPolicy
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The ``adversarial`` setting: filter the drawn incoherent images (:func:`.adversarial.filter_intruders`,
    which keeps each one's K3=2 rank); a replaced one gets ``band_level`` ``adversarial`` and its distances are
    recomputed; questions pruning drops are not kept, nor as many more of the fuller dealt ranks as keep every rank
    even (:func:`.dealer.evened`)."""
    coherent, start, ranks = cols.get("coherent_rows"), cols.get("pick"), cols.get("answer_rank")
    picks, replacements, kept, summary = filter_intruders(
        data, cols.get("proc"), coherent, start, ranks, seed=seed, progress=progress, options=options
    )
    mean = data.gather(coherent).mean(axis=1)
    cols.set("pick", picks)
    cols.set("answer_d_coherent", distances_to(data, coherent, data.gather(picks)))
    cols.set("d_answer_question", distances_to(data, picks[:, None], mean)[:, 0])
    cols.set("answer_rank", _intruder_ranks(data, coherent, picks))
    cols.set("band_level", np.where(picks != start, ADVERSARIAL, cols.get("band_level")))
    return replacements, evened(kept, cols.get("answer_rank"), seed, summary, "answer"), summary


def _fallbacks(
    sel: Selection, cands: Candidates, w: Window, d_mean: np.ndarray, ok: np.ndarray, k3: bool, tally: Counter[str]
) -> dict[int, list[str]]:
    """The widening recorded for each kept question that needed one (by question index)."""
    notes: dict[int, list[str]] = {}
    for b in np.flatnonzero(ok & (sel.level > 0)).tolist():
        level = int(sel.level[b])
        lo, hi = sel.lo[b].tolist(), sel.hi[b].tolist()
        tally[f"{'k3' if k3 else 'k2'}:{SOURCES[level]}"] += 1
        band, d, radius = fmt_band(lo[0], hi[0]), float(d_mean[b]), float(w.radius[b])
        if level < len(LEVELS):
            none = f"no candidate in the band {band}"
            took = f"widened to {LEVELS[level]} {fmt_band(lo[level], hi[level])}"
        elif level == QUESTION_KNN:
            none = f"none of the {int(cands.found[b])} union candidates"
            took = f"took a neighbour of the mean ({d:.4f})"
        else:
            none, took = "no image of another procedure", f"took the image nearest the mean ({d:.4f})"
        rule = f"is closer to the mean of the coherent images than their smallest pairwise distance ({radius:.4f})"
        k2_note = f"k2: the band {band} held no candidate; {took}"
        notes[b] = [f"k3: {none} {rule}; {took}" if k3 or level >= len(LEVELS) else k2_note]
    return notes


def _table(cols: QuestionColumns, data: VisualData, rng: np.random.Generator) -> TableParts:
    """The setting's question table: the incoherent image at a balanced position among the coherent ones
    (kept in authored order), ``meta`` as the module says."""
    n = len(cols)
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
        "coherent_steps": fixed_lists(steps, _SIZE),
        "answer_d_coherent": fixed_lists(answer_d, _SIZE),
        "d_answer_question": cols.get("d_answer_question").astype(np.float64),
        "answer_rank": cols.get("answer_rank").astype(np.int64),
        "min_pairwise": cols.get("min_pairwise").astype(np.float64),
        "negatives": fixed_lists(negatives, _SIZE),
        "fallbacks": cols.fallbacks(),
    }
    choices = place_answers(cols.get("pick"), coherent, positions)
    return TableParts(
        choices=fixed_lists(dictionary(choices.reshape(-1), images), _SIZE + 1),
        answer=positions,
        meta=meta,
    )


#: The task: its constants and hooks.
COHERENCE = VisualTask(
    TASK, code=0xC2, size=_SIZE, default_knobs=DEFAULT_KNOBS, with_k3=True, anchored=False, need=1,
    window=_window, add=_add, table=_table, rank_rule=_rank_rule, adversarial=_adversarial,
)  # fmt: skip


def build(
    store: Store,
    settings: list[Setting],
    options: VisualCoherenceOptions | None = None,
    *,
    progress: Progress = SILENT,
    searcher: Searcher | None = None,
) -> tuple[dict[str, pa.Table], dict[str, Any]]:
    """Visual coherence's sets and counts: the knob, RecipeQA-style and adversarial settings through the visual
    driver (:func:`~.driver.run`; ``searcher``: where its neighbour searches run), ``needs-context`` through
    :mod:`.needs_context`."""
    return run_with_needs_context(
        COHERENCE, store, settings, options or VisualCoherenceOptions(), progress=progress, searcher=searcher
    )
