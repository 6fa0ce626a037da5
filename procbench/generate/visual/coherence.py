"""Visual coherence (paper 001, RecipeQA): which of four images does not belong to the procedure?

``choices`` are three images of one procedure's image sequence (see :mod:`.sequences`), drawn in
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

import weakref
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from procbench.generate.adversarial import AdversarialPolicy
from procbench.generate.answers import answer_orders, place_answers
from procbench.generate.options import VisualCoherenceOptions
from procbench.generate.search import Searcher
from procbench.generate.settings import Setting
from procbench.generate.visual.adversarial import (
    IMAGE_FAMILIES,
    IMAGE_POLICY,
    ImageRelations,
    filter_intruders,
)
from procbench.generate.visual.bands import (
    ADVERSARIAL,
    DUPLICATE_DISTANCE,
    LEVELS,
    QUESTION_KNN,
    SOURCES,
    Candidates,
    fmt_band,
)
from procbench.generate.visual.closeness import Closeness
from procbench.generate.visual.columns import QuestionColumns, band_columns
from procbench.generate.visual.driver import Draw, Items, TableParts, VisualTask, Window
from procbench.generate.visual.needs_context import STYLE, run_with_needs_context
from procbench.generate.visual.pruning import prune_coherence
from procbench.generate.visual.ranks import (
    RankRule,
    coherence_misfits,
    coherence_ranks,
    odd_one_out,
    own_layouts,
    rank_notes,
)
from procbench.generate.visual.selection import Selection
from procbench.generate.visual.sequences import VisualData, distances_to
from procbench.progress import SILENT, Progress
from procbench.qsets.columns import dictionary, fixed_lists, ragged_lists, struct
from procbench.rng import stream
from procbench.store import Store

__all__ = ["DEFAULT_KNOBS", "SWEEP", "TASK", "build"]

TASK = "visual-coherence"
DEFAULT_KNOBS = (0, 1, 1)
SWEEP = [*Setting.all_knobs(with_k3=True), Setting("adversarial"), Setting(STYLE)]
_SIZE = 3
_PAIRS = ((0, 1), (0, 2), (1, 2))


@dataclass(kw_only=True)
class _Window(Window):
    """Coherence questions: ``anchors`` are the coherent images, ``point`` their mean and ``radius`` their
    smallest pairwise distance."""

    anchors: np.ndarray
    point: np.ndarray
    radius: np.ndarray


def _window(items: Items, data: VisualData) -> _Window:
    rows = items.rows
    vecs = data.gather(rows)
    pairwise = np.stack([np.linalg.norm(vecs[:, i] - vecs[:, j], axis=1) for i, j in _PAIRS], axis=1)
    min_pairwise = pairwise.min(axis=1) if len(rows) else np.zeros(0, np.float32)
    columns = {**items.columns, "coherent_rows": rows, "coherent_steps": items.steps, "min_pairwise": min_pairwise}
    point = vecs.mean(axis=1)
    return _Window(
        proc=items.proc, columns=columns, ragged=items.ragged, anchors=rows, point=point, radius=min_pairwise
    )


def _add(out: QuestionColumns, w: _Window, drawn: Draw) -> None:
    """Add a window's questions, whose incoherent images are the drawn negatives."""
    data, tally, picks = drawn.data, drawn.tally, drawn.negatives()[:, 0]
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
        "answer_rank": coherence_ranks(np.moveaxis(both[0], 1, 0)[:, :, None], d_mean[:, None], both[1])[:, 0],
    }
    if sel is not None and cands is not None:
        columns.update(band_columns(sel, cands))
        if sel.rank is not None:
            notes = rank_notes(sel, ok, tally)
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


_LAYOUTS: weakref.WeakKeyDictionary[VisualData, np.ndarray] = weakref.WeakKeyDictionary()


def _own_layouts(data: VisualData) -> np.ndarray:
    """:func:`.ranks.own_layouts` of the store's sequences, computed once per loaded store."""
    if data not in _LAYOUTS:
        _LAYOUTS[data] = own_layouts(data.vectors, data.seqs.offsets, data.seqs.rows)
    return _LAYOUTS[data]


#: Random images of other procedures each K3=2 question may also draw its intruder from: the kNN sets hold no image
#: far enough above the coherent images for rank 3, where four images of one procedure would put it.
FAR_EXTRAS = 64
#: A band level holds a K3=2 candidate only where it lies within this share of the coherent spread of its target.
FIT_TOLERANCE = 0.1


def _rank_rule(
    w: _Window, cands: Candidates, close: Closeness, data: VisualData, rng: np.random.Generator
) -> RankRule:
    """K3=2: each candidate's class is the rank it would have, by distance to the mean of the other three
    choices (0: closest); one candidate of the target rank is drawn, the one nearest where it would lie were the
    four choices spaced like four images of one procedure, a layout drawn per question
    (:func:`.ranks.coherence_misfits`). The narrowest band level with a candidate within :data:`FIT_TOLERANCE`
    of its target gives it, else the kNN set and :data:`FAR_EXTRAS` random images of other procedures."""
    vecs = data.gather(w.anchors)  # (B, 3, D)
    coherent_mean = np.linalg.norm(vecs - w.point[:, None, :], axis=2)
    layouts = _own_layouts(data)
    gaps = layouts[rng.integers(len(layouts), size=len(w))]
    seq_rows = data.seqs.rows
    far = seq_rows[rng.integers(len(seq_rows), size=(len(w), FAR_EXTRAS))] if len(seq_rows) else None
    if far is not None:
        far = np.where(data.is_own(w.proc, far), -1, far)

    def to_coherent_of(rows: np.ndarray) -> np.ndarray:
        return distances_to(data, rows, *(vecs[:, i] for i in range(_SIZE)))  # (3, B, n)

    def classes_and_misfits(rows: np.ndarray, to_coherent: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        to_mean = distances_to(data, rows, w.point)
        classes = coherence_ranks(to_coherent, to_mean, coherent_mean)
        odd = odd_one_out(to_coherent, to_mean, coherent_mean)
        return np.where(rows >= 0, classes, -1), coherence_misfits(odd, gaps), odd

    classes, misfits, odd = classes_and_misfits(cands.rows, to_coherent_of(cands.rows))
    extra_classes, extra_misfits = None, None
    if far is not None:
        # a copy of a coherent image (a re-encoded picture filed under another procedure) is never the intruder;
        # the kNN candidates leave copies out by their band bounds
        far_coherent = to_coherent_of(far)
        copy = np.nan_to_num(far_coherent, nan=np.inf).min(axis=0) <= DUPLICATE_DISTANCE
        far, far_coherent = np.where(copy, -1, far), np.where(copy[None], np.nan, far_coherent)
        extra_classes, extra_misfits, far_odd = classes_and_misfits(far, far_coherent)
        odd = np.concatenate([odd, far_odd], axis=2)  # (4, B, K + Kq)

    def layout(picked: np.ndarray) -> np.ndarray:
        """``(B, 4)`` the odd-one-out distances of the drawn intruder, then of the coherent images."""
        at = np.maximum(picked[:, 0], 0)
        out = odd[:, np.arange(len(at)), at].T
        return np.where(picked[:, :1] >= 0, out, np.nan)

    secondary, extra_secondary = _image_secondary(data, w.anchors, cands.rows, far, misfits, rng)
    return RankRule(
        classes,
        np.eye(_SIZE + 1, dtype=np.int64),
        extra_rows=far,
        extra_classes=extra_classes,
        preference=misfits,
        extra_preference=extra_misfits,
        tolerance=np.full(len(w), FIT_TOLERANCE),
        layout=layout,
        secondary=secondary,
        extra_secondary=extra_secondary,
    )


#: K3=2's weight of each image family's gap (:func:`_image_secondary`) in units of the question's spread of misfits.
#: Measured on the build guides' K3=2 (generation seeds 0-2, benchmarks/real_photos.md): at 0.5, 1 and 2 the
#: audit's colour_layout read 0.34, 0.34, 0.25 and near_duplicate 0.26, 0.21, 0.20, the distance probes at or
#: below chance throughout; the three values tried, no others.
COHERENCE_IMAGE_WEIGHT = 2.0
#: Foursomes of one procedure's images (at most; drawn once per loaded store) whose members' image relations a
#: K3=2 intruder's are matched to (:func:`_image_secondary`).
OWN_FOURSOMES = 512
_FOURSOMES = stream("visual.image-foursomes")


def _standardised(values: np.ndarray, axis: int) -> np.ndarray:
    """``values`` minus their mean along ``axis``, over their standard deviation there (NaN: undefined)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        centred = values - np.mean(values, axis=axis, keepdims=True)
        std = np.std(values, axis=axis, keepdims=True)
        return centred / np.where(std > 1e-12, std, np.nan)


def _own_foursomes(data: VisualData) -> np.ndarray:
    """``(N, 4)`` image rows of up to :data:`OWN_FOURSOMES` foursomes, each four images of one procedure (from the
    procedures with four or more), drawn once per loaded store; ``(0, 4)`` with no such procedure."""
    offsets, rows = data.seqs.offsets, data.seqs.rows
    lengths = np.diff(offsets)
    big = np.flatnonzero(lengths >= 4)
    if not len(big):
        return np.zeros((0, 4), dtype=np.int64)
    rng = _FOURSOMES.rng(0)
    procs = big[rng.integers(len(big), size=OWN_FOURSOMES)]
    picks = np.stack([offsets[p] + rng.choice(lengths[p], 4, replace=False) for p in procs.tolist()])
    return np.asarray(rows[picks], dtype=np.int64)


def _image_secondary(
    data: VisualData,
    coherent: np.ndarray,
    rows: np.ndarray,
    far: np.ndarray | None,
    misfits: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """K3=2's ordering within a rank beside the misfit (not for the tolerance): how far a candidate intruder's
    :data:`.adversarial.IMAGE_RELATIONS` to the three coherent photos, standardised among the four choices'
    relations to the other three (what the audit's image probes read: each choice against the others), lie from
    those of a member of four photos of one procedure (:func:`_own_foursomes`, one drawn per question): the
    intruder then stands among the coherent photos as one more photo of their procedure would (same light, same
    desk, as near a copy), neither apart nor always in the middle. Per family (:data:`.adversarial.IMAGE_FAMILIES`)
    the mean absolute difference, in units of the question's spread of misfits (:data:`COHERENCE_IMAGE_WEIGHT`
    each family); None when no file is read.

    The photos' relations to each other alone were the target before: the intruder, related to three photos
    where each coherent photo is related to two of its own and the intruder, still stood apart, and the audit's
    ``near_duplicate`` probe read 0.43 on the build guides' K3=2 (benchmarks/real_photos.md)."""
    extra = far if far is not None else np.zeros((len(rows), 0), dtype=np.int64)
    own = _own_foursomes(data)
    relations = ImageRelations(data, np.concatenate([coherent.reshape(-1), rows.reshape(-1), extra.reshape(-1),
                                                     own.reshape(-1)]))  # fmt: skip
    if not relations.any:
        return None, None
    if len(own):
        members = _standardised(relations.foursome(own[:, 1:], own[:, :1])[:, 0], axis=1)[:, 0]  # (N, R)
        members = members[np.isfinite(members).all(axis=1)]
    if not len(own) or not len(members):
        return None, None
    target = members[rng.integers(len(members), size=len(rows))]  # (B, R)
    with np.errstate(invalid="ignore"):
        unit = np.nan_to_num(np.nanstd(np.where(rows >= 0, misfits, np.nan), axis=1), nan=0.0)[:, None]
    weight = COHERENCE_IMAGE_WEIGHT * unit

    def gaps(candidates: np.ndarray) -> np.ndarray:
        mine = _standardised(relations.foursome(coherent, candidates), axis=2)[:, :, 0]  # (B, K, R)
        gap = np.nan_to_num(np.abs(mine - target[:, None, :]), nan=0.0)
        return sum((gap[:, :, list(family)].mean(axis=2) for family in IMAGE_FAMILIES), np.zeros(candidates.shape))

    return weight * gaps(rows), (weight * gaps(far) if far is not None else None)


def _adversarial(
    cols: QuestionColumns,
    data: VisualData,
    *,
    seed: int,
    progress: Progress = SILENT,
    options: AdversarialPolicy = IMAGE_POLICY,
) -> dict[str, Any]:
    """The ``adversarial`` setting: filter the drawn incoherent images (:func:`.adversarial.filter_intruders`,
    which keeps each one's K3=2 rank); a replaced one gets ``band_level`` ``adversarial`` and its distances are
    recomputed; questions pruning drops are removed."""
    coherent, start = cols.get("coherent_rows"), cols.get("pick")
    picks, replacements, kept, summary = filter_intruders(
        data, cols.get("proc"), coherent, start, cols.get("answer_rank"), seed=seed, progress=progress, options=options
    )
    vecs = data.gather(coherent)
    mean = vecs.mean(axis=1)
    both = distances_to(data, coherent, data.gather(picks), mean)
    d_mean = distances_to(data, picks[:, None], mean)[:, 0]
    cols.set("pick", picks)
    cols.set("answer_d_coherent", both[0])
    cols.set("d_answer_question", d_mean)
    cols.set("answer_rank", coherence_ranks(np.moveaxis(both[0], 1, 0)[:, :, None], d_mean[:, None], both[1])[:, 0])
    cols.set("band_level", np.where(picks != start, ADVERSARIAL, cols.get("band_level")))
    cols.set("replacements", replacements)
    cols.keep(kept)
    return summary


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
            f"({float(w.radius[b]):.4f})"
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
    if "replacements" in cols.parts:  # the adversarial setting
        meta["replacements"] = cols.get("replacements").astype(np.int64)
    choices = place_answers(cols.get("pick"), coherent, positions)
    return TableParts(
        question=ragged_lists(pa.array([], pa.string()), np.zeros(n, dtype=np.int64)),
        choices=fixed_lists(dictionary(choices.reshape(-1), images), _SIZE + 1),
        answer=positions,
        meta=meta,
    )


#: The task: its constants and hooks.
COHERENCE = VisualTask(
    TASK, code=0xC2, size=_SIZE, default_knobs=DEFAULT_KNOBS, with_k3=True, anchored=False, need=1,
    window=_window, add=_add, table=_table, rank_rule=_rank_rule, adversarial=_adversarial, prune=prune_coherence,
    balanced_adversarial=True,  # its filter ends with more questions and nearer chance from them (measured, README)
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
