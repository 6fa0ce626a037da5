"""Visual questions as numpy columns (:class:`QuestionColumns`, gathered a chunk at a time), turned into a question
table whose ``meta`` opens with the fields every visual task shares (:func:`meta_head`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from procbench.generate.visual.bands import LEVELS, SOURCES, Candidates
from procbench.generate.visual.plans import Plan
from procbench.generate.visual.selection import Selection
from procbench.generate.visual.sequences import VisualData
from procbench.generate.visual.settings import PlanKey
from procbench.qsets.columns import dictionary, fixed_lists, ragged_lists, ranges, struct

if TYPE_CHECKING:
    from procbench.generate.visual.settings import VisualSetting

__all__ = ["QuestionColumns", "Ragged", "TableParts", "band_columns", "build_counts", "meta_head", "question_table"]

#: Source names as an Arrow dictionary (``band_level`` and a negative's ``source`` index it).
SOURCE_NAMES = pa.array(SOURCES, pa.string())
#: Ragged columns, ``name: (lengths (B,), values)``, and fallback notes by question index.
Ragged = dict[str, tuple[np.ndarray, np.ndarray]]
Notes = dict[int, list[str]]


@dataclass(kw_only=True)
class TableParts:
    """A task's part of a question table: ``choices``, ``answer``, ``meta`` after the head, and ``question`` (None:
    the question shows nothing)."""

    choices: pa.Array
    answer: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)
    question: pa.Array | None = None


@dataclass
class QuestionColumns:
    """One setting's questions as numpy columns, gathered a chunk at a time, with their fallback notes."""

    parts: dict[str, list[np.ndarray]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # in question order

    def add(
        self, keep: np.ndarray, columns: dict[str, np.ndarray], *, ragged: Ragged, notes: Notes | None = None
    ) -> None:
        """Add the questions ``keep`` (ascending) of a window's ``(B, ...)`` ``columns``; ``ragged``: ``name:
        (lengths (B,), values)``; ``notes``: fallback notes by question index."""
        for name, value in columns.items():
            self.parts.setdefault(name, []).append(value[keep])
        for name, (lengths, values) in ragged.items():
            starts = np.cumsum(lengths) - lengths
            self.parts.setdefault(f"{name}.lengths", []).append(lengths[keep])
            self.parts.setdefault(name, []).append(values[ranges(starts[keep], lengths[keep])])
        kept_notes = [(notes or {}).get(b, []) for b in keep.tolist()]
        self.parts.setdefault("fallbacks.lengths", []).append(np.array([len(n) for n in kept_notes], dtype=np.int64))
        self.notes.extend(note for group in kept_notes for note in group)

    def get(self, name: str) -> np.ndarray:
        """The column ``name`` over every chunk."""
        return np.concatenate(self.parts[name])

    def set(self, name: str, value: np.ndarray) -> None:
        """Replace (or add) the column ``name``: one value or row per question, over every chunk."""
        self.parts[name] = [value]

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the questions where ``mask (Q,)`` is True (every column, ragged column and note)."""
        mask = np.asarray(mask, dtype=bool)
        ragged = {name[: -len(".lengths")] for name in self.parts if name.endswith(".lengths")}
        for name in ragged:
            lengths = self.get(f"{name}.lengths")
            starts = np.cumsum(lengths) - lengths
            if name == "fallbacks":
                notes = [self.notes[a : a + n] for a, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
                self.notes = [note for kept, group in zip(mask.tolist(), notes, strict=True) if kept for note in group]
            else:
                self.parts[name] = [self.get(name)[ranges(starts[mask], lengths[mask])]]
            self.parts[f"{name}.lengths"] = [lengths[mask]]
        for name in list(self.parts):
            if name.endswith(".lengths") or name in ragged:
                continue
            self.parts[name] = [self.get(name)[mask]]

    def lists(self, name: str) -> pa.ListArray:
        """A ragged column as an Arrow list array (int64 values)."""
        return ragged_lists(self.get(name).astype(np.int64), self.get(f"{name}.lengths"))

    def fallbacks(self) -> pa.ListArray:
        """Each question's fallback notes."""
        return ragged_lists(pa.array(self.notes, pa.string()), self.get("fallbacks.lengths"))

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts.get("fallbacks.lengths", []))


def band_columns(sel: Selection, cands: Candidates) -> dict[str, np.ndarray]:
    """The K2 facts of each question: neighbours found, m, s, the band, the level used and its bounds."""
    b = np.arange(len(sel.level))
    level = np.minimum(sel.level, len(LEVELS) - 1)
    beyond = sel.level >= len(LEVELS)  # the whole kNN set or a K3 fallback: no band
    used_lo, used_hi = sel.lo[b, level], sel.hi[b, level]
    return {
        "k_found": cands.found,
        "m": cands.m,
        "s": cands.s,
        "band": np.stack([sel.lo[:, 0], sel.hi[:, 0]], axis=1),
        "band_level": sel.level,
        "band_used": np.stack([np.where(beyond, 0.0, used_lo), np.where(beyond, np.inf, used_hi)], axis=1),
    }


def meta_head(
    setting: VisualSetting, cols: QuestionColumns, *, kc: int, min_distance: float | None, bands: bool
) -> dict[str, Any]:
    """The ``meta`` head: ``setting``; knob settings ``k1 k2 k3`` (``bands``: ``k_c k_found m s band band_level
    band_used``), RecipeQA style its ``min_distance``; ``n_steps budget question_number``; knob settings
    ``pool_size removed_steps``."""
    n = len(cols)
    head: dict[str, Any] = {"setting": dictionary(np.zeros(n, dtype=np.int32), pa.array([setting.name]))}
    if setting.knobs is None:
        if min_distance is not None:
            head["min_distance"] = np.full(n, min_distance)
    else:
        knobs = zip(("k1", "k2", "k3"), setting.knobs, strict=True)
        head.update({name: np.full(n, value, dtype=np.int64) for name, value in knobs})
    if setting.knobs is not None and bands:
        head.update(
            {
                "k_c": np.full(n, kc, dtype=np.int64),
                "k_found": cols.get("k_found").astype(np.int64),
                "m": cols.get("m"),
                "s": cols.get("s"),
                "band": fixed_lists(cols.get("band").astype(np.float64), 2),
                "band_level": dictionary(cols.get("band_level"), SOURCE_NAMES),
                "band_used": fixed_lists(cols.get("band_used").astype(np.float64), 2),
            }
        )
    head.update({name: cols.get(name).astype(np.int64) for name in ("n_steps", "budget", "question_number")})
    if setting.knobs is not None:
        head["pool_size"] = cols.get("pool_size").astype(np.int64)
        head["removed_steps"] = cols.lists("removed_steps")
    return head


def question_table(data: VisualData, cols: QuestionColumns, parts: TableParts, head: dict[str, Any]) -> pa.Table:
    """The question table of ``cols`` (whose ``proc`` column names each question's procedure); ``meta``: ``head``,
    the task's own fields, then the ``adversarial`` setting's ``replacements``."""
    proc = cols.get("proc")
    meta = {**head, **parts.meta}
    if "replacements" in cols.parts:
        meta["replacements"] = cols.get("replacements").astype(np.int64)
    no_question = ragged_lists(pa.array([], pa.string()), np.zeros(len(proc), dtype=np.int64))
    return pa.table(
        {
            "procedure_id": dictionary(proc, data.seqs.name_array),
            "context": data.seqs.context_lists().take(pa.array(proc)),
            "question": no_question if parts.question is None else parts.question,
            "choices": parts.choices,
            "answer": pa.array(parts.answer.astype(np.int32)),
            "meta": struct(meta),
        }
    )


def build_counts(
    settings: list[VisualSetting],
    plans: Mapping[PlanKey, Plan],
    out: dict[str, pa.Table],
    tally: dict[str, Counter[str]],
    data: VisualData,
    *,
    kc: int | None,
    min_distance: float | None,
) -> dict[str, Any]:
    """A visual task's ``counts``: K_C and kNN queries (``kc`` None: no neighbour search), procedures, eligible ones
    per plan, per setting the questions, unused budget and every tally, and the RecipeQA style's fixed distance."""
    counts: dict[str, Any] = {} if kc is None else {"k_c": kc}
    counts["procedures"] = len(data.seqs.names)
    plan_label = {key: ("recipeqa" if key.k1 is None else f"k1={key.k1}") + ",short" * key.short for key in plans}
    counts["eligible"] = {plan_label[k]: p.eligible for k, p in plans.items()}
    if kc is not None:
        counts["queries"] = dict(data.queries)
    counts["per_setting"] = {
        s.name: {
            "questions": out[s.name].num_rows,
            "budget_unused": plans[s.plan_key].budget_unused,
            **dict(sorted(tally[s.name].items())),
        }
        for s in settings
    }
    if PlanKey(None) in plans and min_distance is not None:
        counts["min_distance"] = min_distance
    return counts
