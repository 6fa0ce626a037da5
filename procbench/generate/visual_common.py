"""What the visual tasks share (paper 001, DESIGN §6): image sequences, Control-Knob plans, kNN bands.

A procedure's **image sequence** is one image per step, in authored order: the first image of the step
that has an image embedding and was not already used by an earlier step of the procedure (steps without
such an image are left out of the sequence; they stay in the textual context). ``n_steps`` in the knob
rules is the length of this sequence.

**K1** (:func:`plan_questions`): procedures with at least 5 sequence steps; at most ⌊n/2⌋ (K1=0) or
⌊n/3⌋ (K1=1) questions; each question's items are drawn (in increasing order) from a pool of steps, and
after each question its anchor step (the answer of a cloze question, a random question step for
coherence and ordering) leaves the pool, plus one random other pool step at K1=1. The RecipeQA style
resamples freely (⌊n/2⌋ questions, at least one, no pool).

**K2** (:func:`band_bounds`, :func:`select`): the K_C nearest images of other procedures (FAISS) give
m and s of their distances; negatives come from the band (0, m−s) at K2=0 or (m−s, m+s) at K2=1,
never closer than :data:`DUPLICATE_DISTANCE` (such an image is the same picture as the correct choice,
e.g. a re-encoded copy, and would make two choices right). When the band holds too few candidates it
is widened step by step (:data:`LEVELS`: by s/2, by s, then the whole kNN set) and the widening is
recorded.

**K3** (:class:`Closeness`): one negative must be closer to a point (the question mean) than a radius
(the answer's distance to it). Candidates are looked up in the kNN of the point itself, so no candidate
vectors need to be gathered; the ladder is: the band levels, then a neighbour of the point outside the
answer's kNN (``question-knn``), then, when no image of another procedure is closer than the radius, the
image nearest the point (``relaxed``).

Every random draw comes from ``np.random.default_rng`` seeded by the seed, the task and the setting, and
procedures are processed in fixed chunks, so a setting's questions do not depend on which other settings
are generated with it. :func:`pipelined` searches a chunk's neighbours while the previous chunk's
questions are drawn, on two threads; the draws stay in chunk order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench.errors import BadInput
from procbench.generate.columns import ranges
from procbench.generate.questions import PLACEHOLDER, paused_gc
from procbench.generate.search import median_pair_distance, search_until_k
from procbench.generate.settings import Setting
from procbench.progress import Progress
from procbench.store import Store
from procbench.store.views import kept_steps

if TYPE_CHECKING:
    from procbench.embed import Embeddings, NeighborIndex

__all__ = [
    "CHUNK_PROCEDURES",
    "DEFAULT_KC",
    "DUPLICATE_DISTANCE",
    "LEVELS",
    "MIN_STEPS_KNOBS",
    "SOURCES",
    "Candidates",
    "Closeness",
    "Plan",
    "Selection",
    "Sequences",
    "Spec",
    "VisualData",
    "band_bounds",
    "chunks",
    "distances_to",
    "estimate_min_distance",
    "fmt_band",
    "load_sequences",
    "member",
    "paused_gc",
    "pipelined",
    "plan_questions",
    "plans_by_k1",
    "question_budget",
    "random_far_images",
    "recipeqa_distance",
    "resolve_settings",
    "select",
]

T = TypeVar("T")
DEFAULT_KC = 100
#: Images closer than this to the correct choice count as copies of it and are never negatives.
DUPLICATE_DISTANCE = 1e-3
MIN_STEPS_KNOBS = 5
#: Band levels, narrowest first: the K2 band, widened by s/2 and by s on both sides, the whole kNN set.
LEVELS = ("band", "band±s/2", "band±s", "knn")
#: Where a negative came from: a band level, a neighbour of the question mean, the image nearest it, or a
#: random image (RecipeQA style).
SOURCES = (*LEVELS, "question-knn", "relaxed", "random")
QUESTION_KNN, RELAXED = 4, 5
_WIDEN = np.array([0.0, 0.5, 1.0])
CHUNK_PROCEDURES = 2048
SEARCH_BATCH = 8192
GATHER_BATCH = 4096


# -- settings ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Spec:
    """A setting resolved for a visual task: ``knobs`` is None for the RecipeQA style."""

    setting: Setting
    knobs: tuple[int, int, int] | None

    @property
    def name(self) -> str:
        """The setting's folder name."""
        return self.setting.name

    @property
    def plan_key(self) -> int | None:
        """Which question plan the setting uses: K1, or None (free resampling)."""
        return None if self.knobs is None else self.knobs[0]

    def rng(self, seed: int, code: int, salt: int = 0) -> np.random.Generator:
        """The setting's own random stream."""
        key = [9, 9, 9] if self.knobs is None else list(self.knobs)
        return np.random.default_rng([seed, code, *key, salt])


def resolve_settings(
    settings: Sequence[Setting], *, task: str, with_k3: bool, default: tuple[int, int, int]
) -> list[Spec]:
    """Check ``settings`` for a visual task; ``default`` stands for the knobs of ``Setting("default")``.

    Raises:
        BadInput: ``--debias``, an unknown style, or K3=1 for a task without K3.
    """
    specs = []
    for setting in settings:
        if setting.style == "recipeqa":
            specs.append(Spec(setting, None))
        elif setting.style == "default":
            specs.append(Spec(setting, default))
        elif setting.style == "knobs" and setting.knobs is not None:
            if not with_k3 and setting.knobs[2]:
                raise BadInput(f"{task} has no K3 (question-closeness); use --knobs K1,K2,0")
            specs.append(Spec(setting, setting.knobs))
        else:
            raise BadInput(f"{task} takes --knobs K1,K2,K3, --style recipeqa or --sweep, not --{setting.style}")
    return specs


def chunks(n: int, size: int = CHUNK_PROCEDURES) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` windows over ``range(n)`` (fixed, so random streams never depend on the data size)."""
    for start in range(0, n, size):
        yield start, min(n, start + size)


def pipelined(
    n_procedures: int,
    search: Callable[[int, int], T],
    draw: Callable[[T], None],
    progress: Progress,
) -> None:
    """For each chunk of procedures, ``search(start, stop)`` on this thread, then ``draw`` its result on another
    thread while the next chunk is searched (FAISS releases the GIL, so the two overlap). ``draw`` sees the
    chunks one at a time and in order, so its random streams are those of a plain loop."""
    with ThreadPoolExecutor(max_workers=1) as drawer:
        drawing: Future[None] | None = None
        for start, stop in chunks(n_procedures):
            searched = search(start, stop)
            if drawing is not None:
                drawing.result()
            drawing = drawer.submit(draw, searched)
            progress.advance(stop - start)
        if drawing is not None:
            drawing.result()


# -- image sequences --------------------------------------------------------------------------------------
@dataclass
class Sequences:
    """Each procedure's image sequence (see the module docstring), flat with offsets.

    Attributes:
        names: ``(P,)`` procedure ids (kept procedures with steps), sorted.
        offsets: ``(P+1,)`` int64; procedure ``p``'s sequence is ``[offsets[p], offsets[p+1])``.
        steps: ``(M,)`` int64 step index of each sequence item.
        rows: ``(M,)`` int64 row of its image in the image embedding.
        context_offsets: ``(P+1,)`` int64 into ``context_steps``.
        context_steps: every kept step index of each procedure (the textual context).
    """

    names: list[str]
    offsets: np.ndarray
    steps: np.ndarray
    rows: np.ndarray
    context_offsets: np.ndarray
    context_steps: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        """``(P,)`` sequence length of each procedure."""
        return np.diff(self.offsets)

    @functools.cached_property
    def name_array(self) -> pa.Array:
        """:attr:`names` as an Arrow array."""
        return pa.array(self.names, pa.string())

    def context_lists(self) -> pa.ListArray:
        """Every procedure's context (all its kept step indices) as an Arrow list array (int32)."""
        offsets = pa.array(self.context_offsets.astype(np.int32))
        return pa.ListArray.from_arrays(offsets, pa.array(self.context_steps.astype(np.int32)))


def load_sequences(store: Store, embeddings: Embeddings) -> Sequences:
    """Build the image sequence of every kept procedure from ``steps.image_ids`` and the image embedding."""
    steps = kept_steps(store, ["procedure_id", "index", "image_ids"]).combine_chunks()
    encoded = pc.dictionary_encode(steps["procedure_id"]).combine_chunks()
    names = [str(x) for x in encoded.dictionary.to_pylist()]
    step_proc = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    step_index = steps["index"].to_numpy(zero_copy_only=False).astype(np.int64)
    lists = steps["image_ids"].combine_chunks()
    parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    found = pc.index_in(pc.list_flatten(lists), value_set=embeddings.keys)
    has = found.is_valid().to_numpy(zero_copy_only=False)
    parents = parents[has]
    rows = found.filter(pa.array(has)).to_numpy(zero_copy_only=False).astype(np.int64)
    seq_step_rows, seq_rows = _first_unused(step_proc, parents, rows, max(1, len(embeddings)))
    seq_proc = step_proc[seq_step_rows]
    procs = np.arange(len(names) + 1)
    return Sequences(
        names=names,
        offsets=np.searchsorted(seq_proc, procs).astype(np.int64),
        steps=step_index[seq_step_rows],
        rows=seq_rows,
        context_offsets=np.searchsorted(step_proc, procs).astype(np.int64),
        context_steps=step_index,
    )


def _first_unused(
    step_proc: np.ndarray, parents: np.ndarray, rows: np.ndarray, n_rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per step (``parents``: the step of each ``rows`` entry, in order), its first image not chosen by an
    earlier step of the procedure. Vectorised; procedures that use an image twice are resolved in order."""
    codes = step_proc[parents] * n_rows + rows
    uniq, counts = np.unique(codes, return_counts=True)
    repeats = member(step_proc[parents], np.unique(uniq[counts > 1] // n_rows))
    simple = np.flatnonzero(~repeats)
    _, first = np.unique(parents[simple], return_index=True)
    picked = [simple[first]]
    chosen: dict[int, set[int]] = {}
    done: set[int] = set()
    for j in np.flatnonzero(repeats).tolist():
        step, row, proc = int(parents[j]), int(rows[j]), int(step_proc[parents[j]])
        used = chosen.setdefault(proc, set())
        if step in done or row in used:
            continue
        used.add(row)
        done.add(step)
        picked.append(np.array([j]))
    order = np.sort(np.concatenate(picked))
    return parents[order], rows[order]


class VisualData:
    """The image embedding, its FAISS index and the image sequences of a store, loaded once per build."""

    def __init__(self, store: Store, *, with_index: bool) -> None:
        from procbench.embed import load_embeddings, load_index

        self.embeddings: Embeddings = load_embeddings(store, "image")
        with ThreadPoolExecutor(max_workers=1) as loader:  # FAISS reads the index without holding the GIL
            index = loader.submit(load_index, store, "image") if with_index else None
            self.vectors: np.ndarray = self.embeddings.vectors
            self.n_rows = len(self.embeddings)
            self.seqs = load_sequences(store, self.embeddings)
            self.queries = {"answer": 0, "question_mean": 0}
            self._own_codes, self.extra = self._shared_images(store)
            owner = pc.index_in(pc.fill_null(self.embeddings.procedure_ids, ""), value_set=pa.array(self.seqs.names))
            self.owner = pc.fill_null(owner, -1).to_numpy(zero_copy_only=False).astype(np.int64)
            self.index: NeighborIndex | None = index.result() if index else None

    def _shared_images(self, store: Store) -> tuple[np.ndarray, int]:
        """Codes ``procedure * N + row`` of images a procedure uses but the embedding files under another one."""
        images = store.table("images", ["id", "procedure_id", "stored"])
        images = images.filter(pc.fill_null(images["stored"], False))
        proc = pc.index_in(images["procedure_id"], value_set=pa.array(self.seqs.names))
        row = pc.index_in(images["id"], value_set=self.embeddings.keys)
        ok = pc.and_(proc.is_valid(), row.is_valid())
        proc_np = proc.filter(ok).to_numpy(zero_copy_only=False).astype(np.int64)
        row_np = row.filter(ok).to_numpy(zero_copy_only=False).astype(np.int64)
        if not len(row_np):
            return np.zeros(0, np.int64), 0
        owners = self.embeddings.procedure_ids.take(pa.array(row_np)).to_pylist()
        names = self.seqs.names
        foreign = np.array([o != names[p] for o, p in zip(owners, proc_np.tolist(), strict=True)], dtype=bool)
        codes = np.unique(proc_np[foreign] * self.n_rows + row_np[foreign])
        extra = int(np.bincount(codes // self.n_rows).max()) if len(codes) else 0
        return codes, extra

    @functools.cached_property
    def image_dictionary(self) -> pa.Array:
        """The image id of each embedding row, then :data:`PLACEHOLDER` (row ``n_rows``), as an Arrow array."""
        return pa.concat_arrays([self.embeddings.keys.cast(pa.string()), pa.array([PLACEHOLDER], pa.string())])

    def is_own(self, proc: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``(B, R)`` whether image ``rows[b, j]`` belongs to procedure ``proc[b]`` (filed under it or shared)."""
        own = self.owner[np.maximum(rows, 0)] == proc[:, None]
        if len(self._own_codes):
            own |= member(proc[:, None] * self.n_rows + rows, self._own_codes)
        return own

    def search(self, queries: np.ndarray, proc: np.ndarray, k: int, *, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest images of other procedures than ``proc[b]`` for each query.

        Returns:
            ``(distances (B, k) float32 ascending, inf where none; rows (B, k) int64, -1 where none)``.
        """
        if self.index is None:  # pragma: no cover - the tasks that search load the index
            raise RuntimeError("VisualData was loaded without its index")
        n = len(queries)
        out_d = np.empty((n, k), dtype=np.float32)
        out_r = np.empty((n, k), dtype=np.int64)
        names = self.seqs.names
        for start in range(0, n, SEARCH_BATCH):
            stop = min(n, start + SEARCH_BATCH)
            part = proc[start:stop]

            def foreign(queries: np.ndarray, rows: np.ndarray, part: np.ndarray = part) -> np.ndarray:
                if not len(self._own_codes):
                    return np.ones(rows.shape, dtype=bool)
                return ~member(part[queries, None] * self.n_rows + rows, self._own_codes)

            # k + extra neighbours always hold k of other procedures: never searched again
            out_d[start:stop], out_r[start:stop] = search_until_k(
                self.index,
                queries[start:stop],
                k,
                exclude=[names[p] for p in part.tolist()],
                keep=foreign,
                fetch=k + self.extra,
                limit=k + self.extra,
            )
        self.queries[kind] += n
        return out_d, out_r

    def gather(self, rows: np.ndarray) -> np.ndarray:
        """Vectors of ``rows`` (any shape), float32; rows < 0 give zero vectors."""
        flat = rows.reshape(-1)
        missing = flat < 0
        out = np.asarray(self.vectors[np.where(missing, 0, flat) if missing.any() else flat], dtype=np.float32)
        if missing.any():
            out[missing] = 0
        return out.reshape(*rows.shape, self.vectors.shape[1])

    def sum_of(self, rows: np.ndarray) -> np.ndarray:
        """``(B, D)`` float32: the sum of the vectors of each row of ``rows (B, n)`` (a column at a time, so no
        ``(B, n, D)`` copy is made)."""
        total = self.gather(rows[:, 0])
        for j in range(1, rows.shape[1]):
            total += self.gather(rows[:, j])
        return total


def distances_to(data: VisualData, rows: np.ndarray, *points: np.ndarray) -> np.ndarray:
    """``(P, B, n)`` Euclidean distances from images ``rows (B, n)`` to each of ``points`` (each ``(B, D)``).

    FAISS reads each image's vector in place (no gathered copies); nan where a row is < 0. With one point,
    ``(B, n)``.
    """
    import faiss

    rows = np.ascontiguousarray(rows, dtype=np.int64)
    missing = rows < 0
    ids = np.where(missing, 0, rows) if missing.any() else rows
    vectors = np.ascontiguousarray(data.vectors, dtype=np.float32)
    out = np.empty((len(points), *rows.shape), dtype=np.float32)
    n_q, width = rows.shape
    for i, point in enumerate(points):
        x = np.ascontiguousarray(point, dtype=np.float32)
        if n_q and width:
            faiss.fvec_L2sqr_by_idx(
                faiss.swig_ptr(out[i]), faiss.swig_ptr(x), faiss.swig_ptr(vectors), faiss.swig_ptr(ids),
                x.shape[1], n_q, width,
            )  # fmt: skip
    np.sqrt(np.maximum(out, 0.0, out=out), out=out)
    out[:, missing] = np.nan
    return out[0] if len(points) == 1 else out


# -- K1: question plans -----------------------------------------------------------------------------------
def question_budget(n_steps: int, k1: int | None) -> int:
    """Questions allowed for a procedure of ``n_steps`` sequence steps: ⌊n/2⌋ (K1=0, RecipeQA), ⌊n/3⌋ (K1=1)."""
    if k1 is None:
        return max(1, n_steps // 2)
    return n_steps // (2 if k1 == 0 else 3)


@dataclass
class Plan:
    """Which steps each question uses, for one K1 value (or free resampling): ``Q`` questions, ``size`` slots.

    Attributes:
        proc: ``(Q,)`` procedure of each question (ascending).
        slots: ``(Q, size)`` positions in the procedure's image sequence, increasing.
        anchor: ``(Q,)`` the slot of the answer (cloze) or of the question step removed from the pool.
        budget, number, pool: ``(Q,)`` the procedure's budget, the question's number in it, the pool size
            before it was drawn (0 for free resampling).
        removed_offsets, removed_positions: the sequence positions removed from the pool after question
            ``i`` are ``removed_positions[removed_offsets[i]:removed_offsets[i + 1]]`` (none for free
            resampling).
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
    specs: Sequence[Spec], lengths: np.ndarray, *, seed: int, code: int, size: int, anchored: bool
) -> dict[int | None, Plan]:
    """One :func:`plan_questions` per distinct K1 value of ``specs`` (None: free resampling), seeded per value."""
    plans: dict[int | None, Plan] = {}
    for spec in specs:
        key = spec.plan_key
        if key not in plans:
            rng = np.random.default_rng([seed, code, 0xB0 + (2 if key is None else key)])
            plans[key] = plan_questions(lengths, size=size, k1=key, rng=rng, anchored=anchored)
    return plans


def plan_questions(
    lengths: np.ndarray, *, size: int, k1: int | None, rng: np.random.Generator, anchored: bool
) -> Plan:
    """Draw every procedure's questions under K1 (``k1`` 0 or 1) or free resampling (``k1`` None).

    ``anchored``: whether the anchor is part of what makes two free-resampled questions different (the
    placeholder of a cloze question); free resampling never repeats an identical question.
    """
    if k1 is not None:
        return _pooled_plan(lengths, size=size, k1=k1, rng=rng)
    proc: list[int] = []
    slots: list[list[int]] = []
    anchor: list[int] = []
    budget: list[int] = []
    number: list[int] = []
    eligible = unused = 0
    for p, n in enumerate(lengths.tolist()):
        if n < size:
            continue
        eligible += 1
        allowed = question_budget(n, None)
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
            proc.append(p)
            slots.append(chosen)
            anchor.append(a)
            budget.append(allowed)
            number.append(drawn)
            drawn += 1
        unused += allowed - drawn
    as_int = {"dtype": np.int64}
    return Plan(
        key=None,
        size=size,
        proc=np.array(proc, **as_int),
        slots=np.array(slots, **as_int).reshape(-1, size),
        anchor=np.array(anchor, **as_int),
        budget=np.array(budget, **as_int),
        number=np.array(number, **as_int),
        pool=np.zeros(len(proc), **as_int),
        removed_offsets=np.zeros(len(proc) + 1, **as_int),
        removed_positions=np.zeros(0, **as_int),
        eligible=eligible,
        budget_unused=unused,
    )


def _pooled_plan(lengths: np.ndarray, *, size: int, k1: int, rng: np.random.Generator) -> Plan:
    """K1 planning, vectorised over the procedures of each sequence length (their pools shrink alike).

    Each eligible procedure, in order, takes ``budget × (n + 2)`` uniform numbers: per question, ``n`` keys
    whose ``size`` smallest among the pool's positions pick the question's steps, one for the anchor and
    one for the extra step K1=1 removes.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    eligible = np.flatnonzero(lengths >= MIN_STEPS_KNOBS)
    n_of = lengths[eligible]
    allowed_of = n_of // (2 if k1 == 0 else 3)
    widths = allowed_of * (n_of + 2)
    offsets = np.r_[0, np.cumsum(widths)]
    draws = rng.random(int(offsets[-1]))
    parts: dict[str, list[np.ndarray]] = {
        k: [] for k in ("proc", "slots", "anchor", "budget", "number", "pool", "gone")
    }
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
            drop = [picked[rows, a]]
            gone = [chosen[rows, a]]
            pool = _without(pool, drop[0])
            if k1 == 1 and pool.shape[1]:
                drop.append(np.minimum(pool.shape[1] - 1, (u[:, n + 1] * pool.shape[1]).astype(np.int64)))
                gone.append(pool[rows, drop[1]])
                pool = _without(pool, drop[1])
            for key, value in (
                ("proc", eligible[group]), ("slots", chosen), ("anchor", a), ("budget", np.full(len(group), allowed)),
                ("number", np.full(len(group), drawn)), ("pool", np.full(len(group), size_now)),
                ("gone", np.stack(gone, axis=1)),
            ):  # fmt: skip
                parts[key].append(value)
            drawn += 1
        unused += (allowed - drawn) * len(group)
    if not parts["proc"]:
        empty = np.zeros(0, dtype=np.int64)
        return Plan(k1, size, empty, empty.reshape(0, size), empty, empty, empty, empty, np.zeros(1, np.int64), empty,
                    len(eligible), unused)  # fmt: skip
    col = {key: np.concatenate(value) for key, value in parts.items()}
    order = np.lexsort((col["number"], col["proc"]))
    gone = col["gone"][order]
    return Plan(
        key=k1,
        size=size,
        proc=col["proc"][order],
        slots=col["slots"][order],
        anchor=col["anchor"][order],
        budget=col["budget"][order].astype(np.int64),
        number=col["number"][order].astype(np.int64),
        pool=col["pool"][order].astype(np.int64),
        removed_offsets=np.arange(len(gone) + 1, dtype=np.int64) * gone.shape[1],
        removed_positions=gone.reshape(-1),
        eligible=len(eligible),
        budget_unused=int(unused),
    )


def _without(pool: np.ndarray, column: np.ndarray) -> np.ndarray:
    """``pool (G, L)`` without ``column[g]`` in each row (order kept)."""
    keep = np.ones(pool.shape, dtype=bool)
    keep[np.arange(len(pool)), column] = False
    return pool[keep].reshape(len(pool), -1)


# -- K2: candidates and bands -----------------------------------------------------------------------------
@dataclass
class Candidates:
    """A question's K2 candidates: kNN rows of other procedures and the distances bands apply to.

    Attributes:
        rows: ``(B, K)`` int64 image rows, -1 where none.
        dist: ``(B, K)`` float32 distances (to the correct choice), ascending along each row as kNN results
            come, inf where none (last).
        m, s: ``(B,)`` mean and (population) standard deviation of the valid distances; nan when none.
        found: ``(B,)`` number of valid candidates.
    """

    rows: np.ndarray
    dist: np.ndarray
    m: np.ndarray
    s: np.ndarray
    found: np.ndarray

    @classmethod
    def from_rows(cls, dist: np.ndarray, rows: np.ndarray) -> Candidates:
        """Candidates from kNN results, computing m and s over the valid entries."""
        valid = rows >= 0
        found = valid.sum(axis=1)
        d = np.where(valid, dist, 0).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = d.sum(axis=1) / found
            s = np.sqrt((np.where(valid, d - m[:, None], 0) ** 2).sum(axis=1) / found)
        return cls(rows, np.where(valid, dist, np.inf).astype(np.float32), m, s, found)


def band_bounds(m: np.ndarray, s: np.ndarray, k2: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``, each ``(B, len(LEVELS))``: the K2 band and its widenings (the last level is ``(0, inf)``)."""
    m2, s2 = m[:, None], s[:, None]
    if k2 == 0:
        hi = m2 - s2 + _WIDEN * s2
        lo = np.zeros_like(hi)
    else:
        lo = np.maximum(0.0, m2 - s2 - _WIDEN * s2)
        hi = m2 + s2 + _WIDEN * s2
    lo = np.concatenate([lo, np.zeros((len(m), 1))], axis=1)
    hi = np.concatenate([hi, np.full((len(m), 1), np.inf)], axis=1)
    return lo, hi


def member(values: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """``np.isin(values, pool)`` for int64 codes, by sorting ``pool`` once and binary search."""
    if not len(pool):
        return np.zeros(values.shape, dtype=bool)
    ordered = np.sort(pool)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return ordered[at] == values


# -- K3: closeness to the question --------------------------------------------------------------------------
@dataclass
class Closeness:
    """Which candidates satisfy the K3 rule: closer to ``points`` than ``radius``.

    Attributes:
        radius: ``(B,)`` the distance to beat.
        ok: ``(B, K)`` candidate (column of :class:`Candidates`) closer than ``radius``.
        q_rows, q_dist: ``(B, Kq)`` the nearest images of other procedures to the point.
        q_extra: ``(B, Kq)`` neighbours of the point closer than ``radius`` that are not among the candidates.
        q_usable: ``(B, Kq)`` neighbours of the point that are not copies of the correct choice.
    """

    radius: np.ndarray
    ok: np.ndarray
    q_rows: np.ndarray
    q_dist: np.ndarray
    q_extra: np.ndarray
    q_usable: np.ndarray

    @classmethod
    def mark(
        cls,
        data: VisualData,
        cands: Candidates,
        points: np.ndarray,
        radius: np.ndarray,
        q_dist: np.ndarray,
        q_rows: np.ndarray,
    ) -> Closeness:
        """Mark the candidates within ``radius`` of ``points``, given the points' neighbours ``q_dist, q_rows``.

        When a point's neighbours are all within the radius, candidates beyond them may be too: their
        distances are then computed directly.
        """
        b = np.arange(len(points), dtype=np.int64)[:, None] * data.n_rows
        q_close = (q_rows >= 0) & (q_dist < radius[:, None])
        c_valid = cands.rows >= 0
        c_codes = np.where(c_valid, b + cands.rows, -1)
        q_codes = np.where(q_close, b + q_rows, -2)
        ok = c_valid & member(c_codes, q_codes[q_close])
        copies = c_valid & (cands.dist <= DUPLICATE_DISTANCE)
        q_usable = (q_rows >= 0) & ~member(np.where(q_rows >= 0, b + q_rows, -2), c_codes[copies])
        q_extra = q_close & q_usable & ~member(q_codes, c_codes[c_valid])
        incomplete = np.flatnonzero((q_rows[:, -1] >= 0) & (q_dist[:, -1] < radius))
        if len(incomplete):
            exact = distances_to(data, cands.rows[incomplete], points[incomplete])
            ok[incomplete] = c_valid[incomplete] & (np.nan_to_num(exact, nan=np.inf) < radius[incomplete, None])
        return cls(radius, ok, q_rows, q_dist, q_extra, q_usable)


# -- selection ----------------------------------------------------------------------------------------------
@dataclass
class Selection:
    """Chosen images for ``B`` questions.

    Attributes:
        rows: ``(B, need)`` int64 image rows (the K3 pick first when K3 is on), -1 where it failed.
        cols: ``(B, need)`` the column of each pick in :class:`Candidates` (-1 when it is not a candidate).
        source: ``(B, need)`` index into :data:`SOURCES`.
        level: ``(B,)`` the band level of the K2 picks (the source of a single K3 pick).
        base_count: ``(B,)`` how many K2 candidates the unwidened band held.
        lo, hi: ``(B, len(LEVELS))`` the band bounds.
        ok: ``(B,)`` False when too few images of other procedures exist (the question is skipped).
    """

    rows: np.ndarray
    cols: np.ndarray
    source: np.ndarray
    level: np.ndarray
    base_count: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    ok: np.ndarray


def _row_search(keys: np.ndarray, width: int, targets: np.ndarray, side: str) -> np.ndarray:
    """Per-row ``searchsorted``: ``keys`` are ``(B, width)`` rows of ``row << 32 | value`` flattened (so
    globally ascending) and ``targets (B, T)`` values; returns column positions ``(B, T)``."""
    base = np.arange(len(targets), dtype=np.int64)[:, None]
    return np.searchsorted(keys, (base << 32) | targets, side=side) - base * width  # type: ignore[call-overload]


def _band_ranges(cands: Candidates, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(start, end)``, each ``(B, L)``: the candidate columns with ``max(lo, DUPLICATE_DISTANCE) < d < hi``.

    Candidate distances ascend along a row, so each band is a run of columns, found by binary search on
    the exact float32 distances (thresholds are rounded to the float32 that keeps the strict comparison).
    """
    n_q, k = cands.dist.shape
    bits = np.abs(cands.dist).astype(np.float32).view(np.int32).astype(np.int64)
    keys = ((np.arange(n_q, dtype=np.int64)[:, None] << 32) | bits).ravel()
    low = np.maximum(np.where(np.isnan(lo), np.inf, lo), DUPLICATE_DISTANCE)  # nan: no band
    high = np.where(np.isnan(hi), 0.0, hi)
    below = low.astype(np.float32)  # d > low  <=>  d > the largest float32 <= low
    below = np.where(below > low, np.nextafter(below, np.float32(-np.inf)), below)
    above = high.astype(np.float32)  # d < high  <=>  d < the smallest float32 >= high
    above = np.where(above < high, np.nextafter(above, np.float32(np.inf)), above)
    start = _row_search(keys, k, below.view(np.int32).astype(np.int64), "right")
    end = _row_search(keys, k, np.abs(np.maximum(above, 0)).view(np.int32).astype(np.int64), "left")
    return start, np.maximum(start, end)


def _first(hit: np.ndarray) -> np.ndarray:
    """Per row of ``(B, L)``, the first column that is True; ``L`` where none."""
    return np.where(hit.any(axis=1), hit.argmax(axis=1), hit.shape[1])


def _running_count(mask: np.ndarray) -> np.ndarray:
    """``(B, K+1)`` int32: ``[:, c]`` is how many of ``mask[:, :c]`` are True."""
    seen = np.zeros((mask.shape[0], mask.shape[1] + 1), dtype=np.int32)
    np.cumsum(mask, axis=1, dtype=np.int32, out=seen[:, 1:])
    return seen


def _random_true(seen: np.ndarray, start: np.ndarray, end: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per row, a uniformly drawn column ``c`` in ``[start, end)`` of a mask whose :func:`_running_count` is
    ``seen`` (``u`` uniform in [0, 1)); -1 where the mask has no True there."""
    n_q, k = seen.shape[0], seen.shape[1] - 1
    b = np.arange(n_q)
    before = seen[b, np.minimum(start, k)].astype(np.int64)
    count = seen[b, np.minimum(end, k)] - before
    j = np.minimum((u * count).astype(np.int64), np.maximum(count - 1, 0))
    keys = ((b.astype(np.int64)[:, None] << 32) | seen[:, 1:]).ravel()
    col = _row_search(keys, k, (before + j + 1)[:, None], "left")[:, 0]
    return np.where(count > 0, col, -1)


def _distinct(n: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``(B, m)`` distinct integers drawn uniformly from ``[0, n)`` in draw order (``u (B, m)`` uniform)."""
    picks = np.zeros(u.shape, dtype=np.int64)
    for i in range(u.shape[1]):
        j = np.minimum((u[:, i] * np.maximum(n - i, 0)).astype(np.int64), np.maximum(n - i - 1, 0))
        for p in np.sort(picks[:, :i], axis=1).T:  # skip the earlier picks, smallest first
            j += j >= p
        picks[:, i] = j
    return picks


def select(
    cands: Candidates, *, k2: int, need: int, closeness: Closeness | None, rng: np.random.Generator
) -> Selection:
    """Draw ``need`` distinct images per question from the K2 band (widened when short).

    With ``closeness`` (K3 on), the first pick must also satisfy it: it comes from the narrowest band level
    holding such a candidate, else from the question point's own neighbours, else (``relaxed``) it is the
    image nearest the point. The other picks come from the narrowest level with enough candidates left.
    Every draw is uniform; vectorised over questions (bands are runs of the distance-sorted candidates).
    """
    n_q, k = cands.rows.shape
    n_levels = len(LEVELS)
    lo, hi = band_bounds(cands.m, cands.s, k2)
    start, end = _band_ranges(cands, lo, hi)
    first = 1 if closeness is not None else 0
    u = rng.random((n_q, 2 + need - first))
    rows = np.full((n_q, need), -1, dtype=np.int64)
    cols = np.full((n_q, need), -1, dtype=np.int64)
    source = np.full((n_q, need), -1, dtype=np.int64)
    ok = np.ones(n_q, dtype=bool)
    b = np.arange(n_q)
    taken = np.full(n_q, -1, dtype=np.int64)  # the K3 pick's candidate column
    if closeness is not None:
        seen = _running_count(closeness.ok)
        fits = np.take_along_axis(seen, end, axis=1) - np.take_along_axis(seen, start, axis=1)  # (B, L)
        level = _first(fits > 0)
        at = level < n_levels
        lv = np.minimum(level, n_levels - 1)
        col = _random_true(seen, start[b, lv], end[b, lv], u[:, 0])
        cols[at, 0] = col[at]
        rows[at, 0] = cands.rows[at, col[at]]
        source[at, 0] = level[at]
        q_k = closeness.q_rows.shape[1]
        q_col = _random_true(_running_count(closeness.q_extra), np.zeros(n_q, np.int64), np.full(n_q, q_k), u[:, 1])
        extra = ~at & (q_col >= 0)
        rows[extra, 0] = closeness.q_rows[extra, q_col[extra]]
        source[extra, 0] = QUESTION_KNN
        relaxed = np.flatnonzero(~at & ~extra & closeness.q_usable.any(axis=1))
        rows[relaxed, 0] = closeness.q_rows[relaxed, closeness.q_usable[relaxed].argmax(axis=1)]
        source[relaxed, 0] = RELAXED
        same = cands.rows[relaxed] == rows[relaxed, :1]  # the image nearest the point may be a candidate
        cols[relaxed, 0] = np.where(same.any(axis=1), same.argmax(axis=1), -1)
        ok[~at & ~extra] = False
        ok[relaxed] = True
        taken = cols[:, 0]
        level_out = source[:, 0].copy()
        base_count = fits[:, 0]
    others = need - first
    if others:
        inside = (taken[:, None] >= start) & (taken[:, None] < end)
        avail = end - start - inside  # (B, L)
        level = _first(avail >= others)
        good = level < n_levels
        lv = np.minimum(level, n_levels - 1)
        picks = _distinct(avail[b, lv], u[:, 2:]) + start[b, lv][:, None]
        picks += inside[b, lv][:, None] & (picks >= taken[:, None])  # step over the K3 pick
        picks = np.where(good[:, None], np.minimum(picks, k - 1), -1)
        cols[:, first:] = picks
        rows[:, first:] = np.where(good[:, None], np.take_along_axis(cands.rows, np.maximum(picks, 0), axis=1), -1)
        source[:, first:] = np.where(good, level, -1)[:, None]
        ok &= good
        level_out = level
        base_count = avail[:, 0]
    return Selection(rows, cols, source, level_out, base_count, lo, hi, ok)


# -- RecipeQA style -------------------------------------------------------------------------------------------
def estimate_min_distance(data: VisualData, rng: np.random.Generator) -> float:
    """The median distance between random images of different procedures (the RecipeQA style's fixed distance)."""
    n = data.n_rows
    groups = np.where(data.owner < 0, -1 - np.arange(n), data.owner)  # an image of no procedure: its own

    def distance(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        diff = data.gather(i) - data.gather(j)
        return np.sqrt(np.einsum("nd,nd->n", diff, diff))

    return median_pair_distance(groups, distance, rng)


def recipeqa_distance(
    data: VisualData, plans: dict[int | None, Plan], min_distance: float | None, *, seed: int, code: int
) -> float:
    """The RecipeQA style's fixed distance when a plan resamples freely: ``min_distance`` if given, else the
    median distance of random image pairs (:func:`estimate_min_distance`); 0.0 when no setting needs it."""
    if None not in plans:
        return 0.0
    if min_distance is not None:
        return min_distance
    return estimate_min_distance(data, np.random.default_rng([seed, code, 0x7A0]))


def random_far_images(
    data: VisualData,
    proc: np.ndarray,
    anchors: np.ndarray,
    need: int,
    min_distance: float,
    rng: np.random.Generator,
    *,
    rounds: int = 8,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """RecipeQA-style negatives: images of other procedures drawn uniformly, beyond ``min_distance``.

    The distance of a candidate is its smallest distance to the ``anchors (B, A)`` images. Draws ``8·need``
    candidates per round for the questions still short, at most ``rounds`` rounds; a question still short
    then takes the farthest distinct candidates it drew.

    Returns:
        ``(rows (B, need), distances (B, need), short (B,) bool: the fallback was taken)``; rows -1 only
        when fewer than ``need`` images of other procedures were drawn at all.
    """
    n_q = len(proc)
    per_round = 8 * need
    chosen = np.full((n_q, need), -1, dtype=np.int64)
    chosen_d = np.full((n_q, need), np.nan, dtype=np.float32)
    n_chosen = np.zeros(n_q, dtype=np.int64)
    hist_rows = np.full((n_q, rounds * per_round), -1, dtype=np.int64)
    hist_d = np.full((n_q, rounds * per_round), -np.inf, dtype=np.float32)
    anchor_vecs = data.gather(anchors)
    for r in range(rounds):
        todo = np.flatnonzero(n_chosen < need)
        if not len(todo) or data.n_rows == 0:
            break
        draw = rng.integers(0, data.n_rows, (len(todo), per_round))
        dist = np.empty(draw.shape, dtype=np.float32)
        for start in range(0, len(todo), GATHER_BATCH // 4):
            part = slice(start, start + GATHER_BATCH // 4)
            dots = np.einsum("brd,bad->bra", data.gather(draw[part]), anchor_vecs[todo[part]])
            dist[part] = np.sqrt(np.maximum(0.0, 2.0 - 2.0 * dots)).min(axis=2)  # unit vectors
        usable = ~data.is_own(proc[todo], draw)
        order = np.argsort(draw, axis=1, kind="stable")  # first occurrence of each image in the row
        sorted_draw = np.take_along_axis(draw, order, axis=1)
        dup_sorted = np.zeros_like(usable)
        dup_sorted[:, 1:] = sorted_draw[:, 1:] == sorted_draw[:, :-1]
        dup = np.zeros_like(usable)
        np.put_along_axis(dup, order, dup_sorted, axis=1)
        usable &= ~dup & ~(draw[:, :, None] == chosen[todo][:, None, :]).any(axis=2)
        hist_rows[todo, r * per_round : (r + 1) * per_round] = np.where(usable, draw, -1)
        hist_d[todo, r * per_round : (r + 1) * per_round] = np.where(usable, dist, -np.inf)
        usable &= dist > DUPLICATE_DISTANCE
        far = usable & (dist > min_distance)
        rank = np.cumsum(far, axis=1) + n_chosen[todo][:, None]
        accept = far & (rank <= need)
        qi, cj = np.nonzero(accept)
        slot = rank[qi, cj] - 1
        chosen[todo[qi], slot] = draw[qi, cj]
        chosen_d[todo[qi], slot] = dist[qi, cj]
        n_chosen[todo] = np.minimum(need, n_chosen[todo] + far.sum(axis=1))
    short = n_chosen < need
    for q in np.flatnonzero(short).tolist():  # rare: only questions whose draws all fell near the answer
        have = set(chosen[q, : n_chosen[q]].tolist())
        order = np.argsort(-hist_d[q], kind="stable")
        for j in order.tolist():
            row = int(hist_rows[q, j])
            if n_chosen[q] == need or row < 0:
                break
            if row in have:
                continue
            have.add(row)
            chosen[q, n_chosen[q]] = row
            chosen_d[q, n_chosen[q]] = hist_d[q, j]
            n_chosen[q] += 1
    return chosen, chosen_d, short


def fmt_band(lo: float, hi: float) -> str:
    """``(0.1234, 0.5678)``."""
    return f"({lo:.4f}, {hi:.4f})"
