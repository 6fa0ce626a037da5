"""Visual cloze (paper 001, RecipeQA): which image fills the ``@placeholder`` in a sequence of four?

A question shows four images of one procedure in authored order, one replaced by ``@placeholder``; the choices
are the missing image and three images of other procedures. Settings: docs/concepts/question-sets.md.

``meta`` (knob settings): the head of :func:`.columns.meta_head`, ``question_steps``, ``answer_step``,
``d_answer_question`` (answer to question mean), ``answer_rank`` (negatives closer to the question mean),
``negatives`` (per wrong choice: ``image``, ``source``, ``k3``, ``d_answer``, ``d_question``) and ``fallbacks``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from procbench.generate.adversarial import AdversarialPolicy
from procbench.generate.answers import answer_orders, place_answers
from procbench.generate.options import VisualClozeOptions
from procbench.generate.recipes import Recipe
from procbench.generate.search import Searcher
from procbench.generate.settings import Setting
from procbench.generate.visual.adversarial import filter_image_negatives
from procbench.generate.visual.bands import ADVERSARIAL, LEVELS, QUESTION_KNN, RANDOM, SOURCES, Candidates, fmt_band
from procbench.generate.visual.closeness import Closeness
from procbench.generate.visual.columns import SOURCE_NAMES, QuestionColumns, TableParts, band_columns
from procbench.generate.visual.dealer import Classed, rank_notes, tell_classes
from procbench.generate.visual.needs_context import STYLE, run_with_needs_context
from procbench.generate.visual.selection import Selection
from procbench.generate.visual.sequences import VisualData, distances_to
from procbench.generate.visual.task import Draw, Items, VisualTask, Window
from procbench.progress import SILENT, Progress
from procbench.qsets.columns import dictionary, fixed_lists, struct
from procbench.store import Store
from procbench.tells import Tell

__all__ = ["DEFAULT_KNOBS", "SWEEP", "TASK", "build"]

TASK = "visual-cloze"
DEFAULT_KNOBS = (0, 1, 1)
SWEEP = [*Setting.all_knobs(with_k3=True), Setting("adversarial"), Setting(STYLE)]
_SIZE = 4


@dataclass(kw_only=True)
class _Window(Window):
    """Cloze questions: ``anchors`` the answers, ``point`` the question mean, ``radius`` the answer's distance."""

    answer_vec: np.ndarray  # (B, D)


def _window(items: Items, data: VisualData) -> _Window:
    rows, anchor = items.rows, items.anchor
    b = np.arange(len(anchor))
    answer_row = rows[b, anchor]
    answer_vec = data.gather(answer_row)
    point = (data.gather(rows).sum(axis=1) - answer_vec) / (_SIZE - 1)
    diff = answer_vec - point
    radius = np.sqrt(np.einsum("bd,bd->b", diff, diff))
    shown = rows.copy()
    shown[b, anchor] = data.n_rows  # the placeholder's row in the image dictionary
    columns = {
        **items.columns,
        "items": shown,
        "answer_row": answer_row,
        "d_answer_question": radius,
        "question_steps": items.steps,
        "answer_step": items.steps[b, anchor],
    }
    anchors = answer_row[:, None]
    return _Window(
        proc=items.proc, columns=columns, ragged=items.ragged, anchors=anchors, point=point, radius=radius,
        answer_vec=answer_vec,
    )  # fmt: skip


def _add(out: QuestionColumns, w: _Window, drawn: Draw) -> None:
    """Add a window's questions: a knob setting's negatives with their band facts, else the RecipeQA style's."""
    sel, cands, tally = drawn.selection, drawn.candidates, drawn.tally
    unranked = 0
    if sel is None or cands is None:  # RecipeQA style: random images beyond the fixed distance
        rows, short = drawn.rows, drawn.farthest
        ok = (rows >= 0).all(axis=1)
        d_answer, d_question = distances_to(drawn.data, rows, w.answer_vec, w.point)
        source, k3_flags, band = np.full(rows.shape, RANDOM, dtype=np.int64), np.zeros(rows.shape, dtype=bool), {}
        note = [
            f"recipeqa: fewer than 3 random images of other procedures lay beyond {drawn.min_distance:.4f}; "
            "took the farthest drawn"
        ]
        notes = {b: note for b in np.flatnonzero(short).tolist()} if short is not None else {}
        tally["recipeqa:farthest"] += int(short[ok].sum()) if short is not None else 0
    else:
        rows, ok, source, band = sel.rows, sel.ok, sel.source, band_columns(sel, cands)
        d_answer, d_question = _negative_distances(drawn.data, w, cands, sel)
        if sel.pick_class is not None and drawn.dealt is not None:  # K3=2: the picks closer to the question
            notes = rank_notes(sel, sel.ok, drawn.dealt, tally)
            k3_flags = d_question < w.radius[:, None]
        else:
            k3 = drawn.setting.k3
            notes = _fallbacks(sel, cands, w, d_question[:, 0], k3, tally)
            k3_flags = np.zeros((len(w), 3), dtype=bool)
            k3_flags[:, 0] = k3
        unranked = int((sel.rank < 0).sum()) if sel.rank is not None else 0
        tally["skipped_rank_balance"] += unranked
    keep = np.flatnonzero(ok)
    tally["skipped_no_candidates"] += len(w) - len(keep) - unranked
    columns = {
        "neg_rows": rows,
        "neg_source": source,
        "neg_k3": k3_flags,
        "neg_d_answer": d_answer,
        "neg_d_question": d_question,
        **band,
    }
    out.add(keep, {**w.columns, **columns}, ragged=w.ragged, notes=notes)


def _negative_distances(
    data: VisualData, w: _Window, cands: Candidates, sel: Selection
) -> tuple[np.ndarray, np.ndarray]:
    """Each drawn negative's distance to the answer and the question mean, ``(B, 3)`` each (a candidate's is the one
    its band was judged by)."""
    rows, cols = sel.rows, sel.cols
    d_answer = np.take_along_axis(cands.dist, np.maximum(cols, 0), axis=1)
    other = np.flatnonzero((cols < 0).any(axis=1))
    if len(other):
        d_answer[other] = np.where(
            cols[other] < 0, distances_to(data, rows[other], w.answer_vec[other]), d_answer[other]
        )
    d_answer[rows < 0] = np.nan
    return d_answer, distances_to(data, rows, w.point)


def _fallbacks(
    sel: Selection, cands: Candidates, w: _Window, k3_d_question: np.ndarray, k3: bool, tally: Counter[str]
) -> dict[int, list[str]]:
    """The widening recorded for each question that needed one (by question index)."""
    out: dict[int, list[str]] = {}
    need_k2 = 2 if k3 else 3
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
                none = f"no candidate in the band {fmt_band(lo[0], hi[0])}"
                took = f"took one from {LEVELS[src]} {fmt_band(lo[src], hi[src])}"
            elif src == QUESTION_KNN:
                none = f"none of the answer's {int(cands.found[b])} neighbours"
                took = f"took a neighbour of the question mean ({d_q:.4f})"
            else:
                none, took = "no image of another procedure", f"took the image nearest to it ({d_q:.4f})"
            notes.append(f"k3: {none} is closer to the question mean than the answer ({radius:.4f}); {took}")
        level = int(sel.level[b])
        if level:
            tally[f"k2:{LEVELS[level]}"] += 1
            notes.append(
                f"k2: the band {fmt_band(lo[0], hi[0])} held {int(sel.base_count[b])} of the {need_k2} negatives "
                f"needed; widened to {LEVELS[level]} {fmt_band(lo[level], hi[level])}"
            )
        out[b] = notes
    return out


def _rank_rule(
    w: _Window, cands: Candidates, close: Closeness, data: VisualData, tells: list[Tell], recipe: Recipe
) -> Classed:
    """The K2 candidates classed by the recipe's tells; its ``question-knn`` source adds the question mean's own
    neighbours to the last pool."""
    shown = np.where(w.columns["items"] >= data.n_rows, -1, w.columns["items"])
    answer, fixed = w.columns["answer_row"], np.zeros((len(w), 0), dtype=np.int64)
    classes, radix = tell_classes(tells, data.gather, cands.rows, fixed=fixed, question=shown, answer=answer)
    extra = np.where(close.q_new, close.q_rows, -1)[:, : dict(recipe.sources).get("question-knn", 0)]
    extra_classes, _ = tell_classes(tells, data.gather, extra, fixed=fixed, question=shown, answer=answer)
    return Classed(classes, radix, True, extra, extra_classes)


def _adversarial(
    cols: QuestionColumns, data: VisualData, *, seed: int, progress: Progress, options: AdversarialPolicy
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Filter the drawn negatives in place (:mod:`.adversarial`), recomputing their distances and K3 flags."""
    answers, items, start = cols.get("answer_row"), cols.get("items"), cols.get("neg_rows")
    shown = np.where(items >= data.n_rows, -1, items)
    negatives, replacements, kept, summary = filter_image_negatives(
        data, cols.get("proc"), answers, shown, start, seed=seed, progress=progress, options=options
    )
    mask = shown >= 0
    point = (data.gather(shown) * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1)[:, None]
    d_answer, d_question = distances_to(data, negatives, data.gather(answers), point)
    cols.set("neg_rows", negatives)
    cols.set("neg_source", np.where(negatives != start, ADVERSARIAL, cols.get("neg_source")))
    cols.set("neg_k3", d_question < cols.get("d_answer_question")[:, None])
    cols.set("neg_d_answer", d_answer)
    cols.set("neg_d_question", d_question)
    return replacements, kept, summary


def _table(cols: QuestionColumns, data: VisualData, rng: np.random.Generator) -> TableParts:
    """The setting's question table: answers at balanced positions, ``meta`` as the module says."""
    n = len(cols)
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
    d_answer_question = cols.get("d_answer_question")
    meta = {
        "question_steps": fixed_lists(cols.get("question_steps").astype(np.int64), _SIZE),
        "answer_step": cols.get("answer_step").astype(np.int64),
        "d_answer_question": d_answer_question.astype(np.float64),
        "answer_rank": (cols.get("neg_d_question") < d_answer_question[:, None]).sum(axis=1).astype(np.int64),
        "negatives": fixed_lists(negatives, 3),
        "fallbacks": cols.fallbacks(),
    }
    choices = place_answers(cols.get("answer_row"), neg_rows.reshape(n, 3), positions)
    return TableParts(
        question=fixed_lists(dictionary(cols.get("items").reshape(-1), images), _SIZE),
        choices=fixed_lists(dictionary(choices.reshape(-1), images), _SIZE),
        answer=positions,
        meta=meta,
    )


#: The task: its constants and hooks.
CLOZE = VisualTask(
    TASK, code=0xC1, size=_SIZE, default_knobs=DEFAULT_KNOBS, with_k3=True, anchored=True, need=3,
    window=_window, add=_add, table=_table, rank_rule=_rank_rule, adversarial=_adversarial,
)  # fmt: skip


def build(
    store: Store,
    settings: list[Setting],
    options: VisualClozeOptions | None = None,
    *,
    progress: Progress = SILENT,
    searcher: Searcher | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Visual cloze's sets and counts (:func:`~.driver.run`; ``needs-context``: :mod:`.needs_context`)."""
    return run_with_needs_context(
        CLOZE, store, settings, options or VisualClozeOptions(), progress=progress, searcher=searcher
    )
