"""Textual cloze (paper 004 §3.2-3.3, DESIGN §6): choose the missing step title of a procedure.

A question shows 4 consecutive step titles of one procedure (all 3 when it has 3 steps) with one replaced
by ``@placeholder``; ``context`` lists every step index of the procedure (models read the step texts);
``choices`` are the missing title and 3 titles of other procedures. Titles carry no step-number indicators:
a cleaned store's ``title_clean`` is used, otherwise :func:`procbench.clean.titles.strip_step_indicator` is
applied here (``counts["title_source"]`` says which). Procedures with fewer than 3 or more than 25 steps
are left out (fewer than 6 for ``debias-bB``, as in paper 004; ``debias-auto`` keeps them). Choices never
repeat a title: titles are compared normalised (:func:`normalise_title`), so a title of another procedure
that reads the same as the answer (it would also be correct) or as a title shown in the question is never
a negative.

Settings (:data:`SWEEP`, all written by ``--sweep``):

- ``recipeqa``: the biased original. Negatives uniformly at random from other procedures' title rows
  (so frequent titles are drawn often) beyond a fixed distance from the correct one (``min_distance``;
  default: the median distance between random titles of different procedures, so the rule means the same
  whatever the encoder's scale). Keeping negatives far from the answer is what makes the original biased:
  generic titles (openers, closers) are close to many answers, so they are drawn as negatives far less
  often than they are correct, and a model that sees only the choices learns to pick them; several
  questions of a procedure (``questions_per_procedure``) are drawn freely, so they
  may repeat an answer.
- ``default`` (paper 004): the k=100 nearest distinct titles of other procedures to the correct title
  (a title shared by many procedures counts once, as in Algorithm 1's set of title embeddings); those not
  farther than the mean of the k distances are dropped (they could also be correct); 3 at random.
- ``debias-bB`` (Algorithm 1, :mod:`procbench.generate.debias`): KMeans over all distinct titles, budget B
  per cluster, the same far candidates but only from clusters with budget left, each negative spending
  one. Questions are visited in a seeded random order; one whose negatives cannot be completed is skipped
  and counted (``budget_exhausted``) and spends nothing.

When the runner passes ``splits`` (``procbench generate`` does), negatives come only from procedures of
the question's own split, so a title of one split is never a choice in another.

The questions of ``recipeqa``, ``default`` and ``debias`` are paired: a procedure's window and placeholder are
drawn from a generator seeded by (seed, procedure id), so those settings differ only in their negatives.
``adversarial`` chooses each procedure's question among its first :data:`ADVERSARIAL_DRAFTS` drafts: one whose
answer title no other step shares (a generic title's count in the set gives it away), and of those the one
whose answer has the most titles of other procedures nearer the question (:func:`_pick_windows`), since an
answer nearer its question than anything else gives itself away whatever the negatives; its negatives are
then filtered against the context-free probes (:mod:`procbench.generate.adversarial`) from candidates near
the answer, the question mean, each question item, and sharing the question's words. With title items and
step-text embeddings, no candidate nearer the answer's own step text (which the context shows) than the
answer is offered (:func:`_fits_worse`): a reader of the context can tell the answer.

``meta`` of every question: ``setting``, ``n_steps``, ``window_start``, ``placeholder`` (position in
``question``), ``answer_key``, ``question_keys`` (step key per question item, None for the placeholder),
``choice_keys`` (step key per choice, in choice order), ``choice_distances`` (Euclidean distance of each
choice's title embedding to the correct one's, in choice order), ``knn_k`` (neighbours found), ``knn_mean``
(their mean distance, the "adaptive neighbourhood" cut), ``n_candidates`` (distinct usable titles beyond
it), and ``choice_clusters`` and ``answer_cluster`` (KMeans cluster ids; debias only, else None).
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from procbench.errors import BadInput
from procbench.generate.adversarial import (
    ADVERSARIAL_CLUSTERS,
    LATTICE_SPACING,
    AdversarialOptions,
    Arena,
    filter_negatives,
    initial_negatives,
    lattice_targets,
    usable_candidates,
)
from procbench.generate.debias import ClusterBudget, Clustering, cluster_titles, default_n_clusters, draw_negatives
from procbench.generate.questions import PLACEHOLDER, Question, balance_answer_positions
from procbench.generate.search import median_pair_distance, search_until_k
from procbench.generate.settings import Setting
from procbench.generate.visual.ranks import CLOZE_WANTS, balanced_ranks
from procbench.progress import SILENT, Progress
from procbench.sentences import first_sentence
from procbench.store import Store
from procbench.store.views import kept_steps
from procbench.tasks import TEXTUAL_ITEMS

if TYPE_CHECKING:
    from procbench.embed import Embeddings, NeighborIndex

__all__ = [
    "DEFAULT_BUDGET",
    "KNN_K",
    "MAX_STEPS",
    "MIN_STEPS",
    "MIN_STEPS_DEBIAS",
    "N_QUESTION",
    "SWEEP",
    "build",
    "normalise_title",
]

DEFAULT_BUDGET = 10
SWEEP = [
    Setting("recipeqa"),
    Setting("default"),
    Setting("debias", budget="auto"),
    Setting("adversarial"),
    Setting("needs-context"),
]
N_QUESTION = 4
N_NEGATIVES = 3
KNN_K = 100
MIN_STEPS = 3
MAX_STEPS = 25
MIN_STEPS_DEBIAS = 6
_STYLES = ("recipeqa", "default", "debias", "adversarial", "needs-context")
_TAG = 0x7C1
_RANDOM_BATCH = 64
_RANDOM_TRIES = 16
_KNN_BATCH = 2048
_PUNCT = re.compile(r"[^\w\s]+")
#: ``meta`` lists that hold one value per choice, in choice order.
_PER_CHOICE = ("choice_keys", "choice_distances", "choice_clusters")


def normalise_title(title: str | None) -> str | None:
    """How titles are compared: NFKC, casefolded, punctuation dropped, whitespace collapsed; None if empty."""
    if title is None:
        return None
    text = " ".join(_PUNCT.sub(" ", unicodedata.normalize("NFKC", title).casefold()).split())
    return text or None


def _stable(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


@dataclass(frozen=True)
class _Draft:
    """Where one question sits in its procedure (shared by every setting)."""

    procedure_id: str
    number: int
    n_steps: int
    context: list[int]
    start: int
    keys: list[str]
    titles: list[str]
    norms: list[str]
    position: int

    @property
    def answer_key(self) -> str:
        return self.keys[self.position]


@dataclass
class _Pool:
    """The step-title embedding rows, with the text each row's step shows and its procedure."""

    embeddings: Embeddings
    keys: list[str]
    texts: list[str | None]
    norms: list[str | None]
    norm_codes: np.ndarray  # (N,) int64 id of each row's normalised title (-1: no usable title)
    norm_counts: np.ndarray  # rows per normalised-title id
    procedures: np.ndarray
    procedure_code: dict[str, int]
    positions: dict[str, int]
    groups: np.ndarray  # (N,) split code of each row's procedure (-1: none); all 0 without splits
    group_rows: list[np.ndarray]  # rows of each split code
    group_of: dict[str, int]  # procedure id -> split code

    def distance(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Euclidean distances between the titles of rows ``i`` and ``j`` (float64)."""
        vectors = self.embeddings.vectors
        diff = np.asarray(vectors[i], dtype=np.float64) - np.asarray(vectors[j], dtype=np.float64)
        return np.linalg.norm(diff, axis=1)


#: ``--items``: what a question shows and its choices are, and the embedding field that holds their vectors.
ITEM_FIELDS = {name: choice.field for name, choice in TEXTUAL_ITEMS.items()}


def _titles(store: Store, items: str = "title") -> tuple[dict[str, list[tuple[int, str | None, str | None]]], str]:
    """Per procedure, its steps as ``(index, display item, normalised item)``, and where items came from.

    ``items`` is ``title`` (step headlines, step indicators stripped), ``text`` (the step texts, for
    corpora without headlines), ``first-sentence`` (the first sentence of each step text,
    :func:`procbench.sentences.first_sentence`, as the ``step_first_sentence`` embedding field holds it) or
    ``action`` (each step's action tuple as text, from ``procbench extract``; steps without one have no item).
    """
    if items == "action":
        from procbench.extract.pipeline import step_actions

        actions = step_actions(store)
        shown = dict(zip(actions["key"].to_pylist(), actions["payload"].to_pylist(), strict=True))
        rows: dict[str, list[tuple[int, str | None, str | None]]] = {}
        for row in kept_steps(store, ["procedure_id", "index"]).to_pylist():
            action = shown.get(f"{row['procedure_id']}#{row['index']}")
            rows.setdefault(row["procedure_id"], []).append((row["index"], action, normalise_title(action)))
        return rows, "actions.parquet (each step's first in-lexicon tuple)"
    cleaned = {"title_clean", "text_clean"} <= set(store.columns("steps"))
    shown_as: Callable[[str], str | None] | None = None  # the item a step's title or text shows
    if not cleaned and items == "title":
        from procbench.clean.titles import strip_step_indicator

        shown_as = strip_step_indicator
    elif items == "first-sentence":
        shown_as = first_sentence
    column = "title" if items == "title" else "text"
    steps: dict[str, list[tuple[int, str | None, str | None]]] = {}
    for row in kept_steps(store, ["procedure_id", "index", column]).to_pylist():
        title = row[column]
        if title is not None and shown_as is not None:
            title = shown_as(title)
        if title is not None:
            title = " ".join(title.split()) or None
        steps.setdefault(row["procedure_id"], []).append((row["index"], title, normalise_title(title)))
    if items != "title":
        read = f"{'the first sentence of ' if items == 'first-sentence' else ''}text"
        source = f"{read}_clean (--items {items})" if cleaned else f"{read} (--items {items}; store not cleaned)"
    else:
        source = "title_clean" if cleaned else "title (store not cleaned: step indicators stripped here)"
    return steps, source


def _pool(
    embeddings: Embeddings,
    steps: dict[str, list[tuple[int, str | None, str | None]]],
    splits: Mapping[str, str] | None,
) -> _Pool:
    shown = {f"{pid}#{index}": (title, norm) for pid, rows in steps.items() for index, title, norm in rows}
    keys = embeddings.keys.to_pylist()
    texts: list[str | None] = []
    norms: list[str | None] = []
    for key in keys:
        title, norm = shown.get(key, (None, None))
        texts.append(title if norm is not None else None)
        norms.append(norm)
    procedure_ids = embeddings.procedure_ids.to_pylist()
    code = {p: i for i, p in enumerate(sorted({p for p in procedure_ids if p is not None}))}
    procedures = np.array([code.get(p, -1) if p is not None else -1 for p in procedure_ids], dtype=np.int64)
    if splits is None:
        n_groups = 1
        group_of = dict.fromkeys(steps, 0)
        groups = np.zeros(len(keys), dtype=np.int64)
    else:
        names = {name: i for i, name in enumerate(sorted(set(splits.values())))}
        n_groups = len(names)
        group_of = {pid: names[split] for pid, split in splits.items()}
        groups = np.array([group_of.get(p, -1) if p is not None else -1 for p in procedure_ids], dtype=np.int64)
    group_rows = [np.flatnonzero(groups == g) for g in range(n_groups)]
    positions = {k: i for i, k in enumerate(keys)}
    ids: dict[str, int] = {}
    norm_codes = np.array([ids.setdefault(n, len(ids)) if n is not None else -1 for n in norms], dtype=np.int64)
    norm_counts = np.bincount(norm_codes[norm_codes >= 0], minlength=len(ids))
    return _Pool(
        embeddings,
        keys,
        texts,
        norms,
        norm_codes,
        norm_counts,
        procedures,
        code,
        positions,
        groups,
        group_rows,
        group_of,
    )


def _drafts(
    pid: str,
    rows: list[tuple[int, str | None, str | None]],
    *,
    per_procedure: int,
    replace: bool,
    seed: int,
    hide_window: bool = False,
    last: bool = False,
) -> list[_Draft]:
    """Questions of one procedure: windows of consecutive titled steps whose answer title is not shown too.

    The first draw is the same with and without ``replace``, so single-question settings are paired.
    With ``hide_window`` the context leaves out the question's own steps (text items: their texts would
    give the answer away). With ``last`` (next-action) the placeholder is the window's last item and the
    context is the steps before it.
    """
    n = len(rows)
    length = min(N_QUESTION, n)
    by_answer: dict[int, list[tuple[int, int]]] = {}
    for start in range(n - length + 1):
        window = rows[start : start + length]
        if any(norm is None for _, _, norm in window):
            continue
        for position in range(length - 1 if last else 0, length):
            others = {norm for i, (_, _, norm) in enumerate(window) if i != position}
            if window[position][2] not in others:
                by_answer.setdefault(start + position, []).append((start, position))
    if not by_answer:
        return []
    rng = np.random.default_rng([seed, _TAG, _stable(pid)])
    answers = sorted(by_answer)
    order = rng.permutation(len(answers))
    count = per_procedure if replace else min(per_procedure, len(answers))
    context = [index for index, _, _ in rows]
    drafts = []
    for number in range(count):
        answer = (
            answers[int(order[number])] if number == 0 or not replace else answers[int(rng.integers(len(answers)))]
        )
        windows = by_answer[answer]
        start, position = windows[int(rng.integers(len(windows)))]
        window = rows[start : start + length]
        if last:
            shown = context[: start + position]
        else:
            shown = context[:start] + context[start + length :] if hide_window else context
        drafts.append(
            _Draft(
                procedure_id=pid,
                number=number,
                n_steps=n,
                context=shown,
                start=start,
                keys=[f"{pid}#{index}" for index, _, _ in window],
                titles=[str(title) for _, title, _ in window],
                norms=[str(norm) for _, _, norm in window],
                position=position,
            )
        )
    return drafts


def _knn(
    index: NeighborIndex, pool: _Pool, keys: list[str], k: int, progress: Progress
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The ``k`` nearest distinct titles of other procedures of the same split: ``{key: (rows, distances)}``.

    Titles are distinct by normalised text, each represented by its nearest row (Algorithm 1 embeds the
    set of titles); copies of the key's own title (they would be correct too) and rows without a usable
    title are not neighbours. The persisted index is asked for more rows than ``k`` (by the split's share of
    rows, plus the copies), doubled until ``k`` distinct titles remain or the whole index was returned, so
    the result is the exact top ``k`` whenever the index is exact.
    """
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    total = len(pool.keys)
    progress.start(f"textual-cloze: {k} nearest titles", total=len(keys))
    for start in range(0, len(keys), _KNN_BATCH):
        batch = keys[start : start + _KNN_BATCH]
        groups = np.array([pool.group_of[key.rsplit("#", 1)[0]] for key in batch], dtype=np.int64)
        copies = pool.norm_counts[pool.norm_codes[[pool.positions[key] for key in batch]]]
        for group in np.unique(groups).tolist():
            share = max(1, len(pool.group_rows[group])) / total
            base = k if len(pool.group_rows) == 1 else int(np.ceil(k / share * 1.25)) + 8
            # queries whose title has many copies ask for more rows, bucketed by powers of two
            bucket = base * 2 ** np.ceil(np.log2((base + copies) / base)).astype(np.int64)
            for size in np.unique(bucket[groups == group]).tolist():
                members = [key for key, g, b in zip(batch, groups, bucket, strict=True) if g == group and b == size]
                _search_until_k(index, pool, members, group, k, min(total, size), out)
        progress.advance(len(batch))
    return out


def _search_until_k(
    index: NeighborIndex,
    pool: _Pool,
    keys: list[str],
    group: int,
    k: int,
    fetch: int,
    out: dict[str, tuple[np.ndarray, np.ndarray]],
) -> None:
    """Neighbours of ``keys`` (all of split ``group``) into ``out``: ``fetch`` rows, doubled while too few."""
    rows = np.fromiter((pool.positions[key] for key in keys), dtype=np.int64, count=len(keys))

    def usable(queries: np.ndarray, hits: np.ndarray) -> np.ndarray:
        """Rows of the split with a usable title other than the query's, the nearest row of each title."""
        codes = pool.norm_codes[np.maximum(hits, 0)]
        ok = (hits >= 0) & (pool.groups[np.maximum(hits, 0)] == group) & (codes >= 0)
        ok &= codes != pool.norm_codes[rows[queries]][:, None]
        for j in range(len(hits)):
            kept = np.flatnonzero(ok[j])
            _, first = np.unique(codes[j, kept], return_index=True)
            ok[j, np.delete(kept, first)] = False
        return ok

    vectors = np.asarray(pool.embeddings.vectors[rows])
    exclude = [key.rsplit("#", 1)[0] for key in keys]
    dist, hits = search_until_k(index, vectors, k, exclude=exclude, keep=usable, fetch=fetch, limit=len(pool.keys))
    for key, d, hit in zip(keys, dist, hits, strict=True):
        found = hit >= 0
        out[key] = (hit[found], d[found].astype(np.float64))


@dataclass
class _Drawn:
    """Negatives of one question and what decided them."""

    rows: list[int]
    distances: list[float]
    knn_k: int | None = None
    knn_mean: float | None = None
    n_candidates: int | None = None


def _random_negatives(draft: _Draft, pool: _Pool, rng: np.random.Generator, min_distance: float) -> _Drawn | None:
    """RecipeQA style: uniform over other procedures' titles farther than ``min_distance`` from the answer."""
    own = pool.procedure_code.get(draft.procedure_id, -2)
    candidates = pool.group_rows[pool.group_of[draft.procedure_id]]
    if not len(candidates):
        return None
    vectors = pool.embeddings.vectors
    query = np.asarray(vectors[pool.positions[draft.answer_key]], dtype=np.float64)
    seen = set(draft.norms)
    rows: list[int] = []
    distances: list[float] = []
    for _ in range(_RANDOM_TRIES):
        batch = candidates[rng.integers(0, len(candidates), _RANDOM_BATCH)]
        batch = batch[pool.procedures[batch] != own]
        gaps = np.linalg.norm(np.asarray(vectors[batch], dtype=np.float64) - query, axis=1)
        for row, gap in zip(batch.tolist(), gaps.tolist(), strict=True):
            norm = pool.norms[row]
            if norm is None or norm in seen or gap <= min_distance:
                continue
            seen.add(norm)
            rows.append(row)
            distances.append(gap)
            if len(rows) == N_NEGATIVES:
                return _Drawn(rows, distances)
    return None


def _far_negatives(
    draft: _Draft,
    pool: _Pool,
    knn: tuple[np.ndarray, np.ndarray],
    rng: np.random.Generator,
    *,
    clustering: Clustering | None = None,
    budget: ClusterBudget | None = None,
) -> tuple[_Drawn | None, str | None]:
    """Paper 004's sampler: 3 of the kNN titles farther than the mean distance (within budget, if any)."""
    rows, distances = knn
    if not len(rows):
        return None, "few_candidates"
    mean = float(distances.mean())
    far = distances > mean
    rows, distances = rows[far], distances[far]
    forbidden = set(draft.norms)
    texts = [pool.norms[r] for r in rows.tolist()]
    usable = {t for t in texts if t is not None} - forbidden
    clusters = clustering.labels[rows] if clustering is not None else None
    picked, reason = draw_negatives(rows, clusters, texts, rng, n=N_NEGATIVES, budget=budget, forbidden=forbidden)
    if picked is None:
        return None, reason
    gap = dict(zip(rows.tolist(), distances.tolist(), strict=True))
    drawn = _Drawn(picked, [gap[r] for r in picked], len(knn[0]), mean, len(usable))
    return drawn, None


def _question(draft: _Draft, setting: Setting, pool: _Pool, drawn: _Drawn, clustering: Clustering | None) -> Question:
    """The question with the correct choice first (``meta``'s per-choice lists in the same order)."""
    answer_row = pool.positions.get(draft.answer_key)
    choices = [draft.titles[draft.position]] + [str(pool.texts[r]) for r in drawn.rows]
    keys = [draft.answer_key] + [pool.keys[r] for r in drawn.rows]
    distances = [0.0, *drawn.distances]
    if clustering is not None:
        clusters: list[int | None] = [int(clustering.labels[answer_row])] if answer_row is not None else [None]
        clusters += [int(clustering.labels[r]) for r in drawn.rows]
    else:
        clusters = [None] * len(choices)
    question = [PLACEHOLDER if i == draft.position else title for i, title in enumerate(draft.titles)]
    meta: dict[str, Any] = {
        "setting": setting.name,
        "n_steps": draft.n_steps,
        "window_start": draft.start,
        "placeholder": draft.position,
        "answer_key": draft.answer_key,
        "question_keys": [None if i == draft.position else key for i, key in enumerate(draft.keys)],
        "choice_keys": keys,
        "choice_distances": [round(d, 6) for d in distances],
        "knn_k": drawn.knn_k,
        "knn_mean": None if drawn.knn_mean is None else round(drawn.knn_mean, 6),
        "n_candidates": drawn.n_candidates,
        "choice_clusters": clusters if clustering is not None else None,
        "answer_cluster": clusters[0],
    }
    return Question(draft.procedure_id, draft.context, question, choices, 0, meta)


def _check(settings: list[Setting], clusters: int | None, per_procedure: int, knn_k: int, items: str) -> None:
    for setting in settings:
        if setting.style not in _STYLES:
            raise BadInput(
                "textual-cloze takes --style recipeqa, the default sampler, --debias [--budget B|auto] or "
                "--adversarial; Control-Knobs are for the visual tasks"
            )
        budget = setting.budget
        if setting.style == "debias" and budget != "auto" and not (isinstance(budget, int) and budget >= 1):
            raise BadInput("--debias needs --budget B with B >= 1, or --budget auto")
    if clusters is not None and not any(s.style == "debias" for s in settings):
        raise BadInput("--clusters applies only with --debias (or --sweep)")
    if per_procedure < 1:
        raise BadInput("--questions-per-procedure must be at least 1")
    if knn_k <= N_NEGATIVES:
        raise BadInput(f"k for the nearest titles must be above {N_NEGATIVES}, not {knn_k}")
    if items not in ITEM_FIELDS:
        raise BadInput(f"--items takes {' or '.join(ITEM_FIELDS)}, not {items!r}")


def _item_embeddings(store: Store, items: str) -> Embeddings:
    from procbench.embed import load_embeddings
    from procbench.embed.fields import field_table

    field = ITEM_FIELDS[items]
    try:
        return load_embeddings(store, field)
    except BadInput as exc:
        if items in ("title", "first-sentence") and field_table(store, field).num_rows == 0:  # embedding cannot help
            if items == "title":
                raise BadInput(
                    "textual-cloze --items title needs step headlines and no kept step has one "
                    "(a corpus without step headlines): pass --items text or --items first-sentence"
                ) from None
            raise BadInput("textual-cloze --items first-sentence needs step texts and no kept step has one") from None
        if items == "first-sentence":  # a field `procbench embed` embeds only when asked
            raise BadInput(
                f"textual-cloze --items first-sentence needs {field} embeddings, which `procbench embed` makes "
                f"only when asked: run `procbench embed --store {store.root} --fields {field} "
                f"-t {_text_encoder_of(store)}`"
            ) from None
        hint = {
            "title": " (a corpus without step headlines: pass --items text or --items first-sentence)",
            "text": "",
            "action": " (run procbench extract, then procbench embed --fields action)",
        }[items]
        what = "action items (next-action)" if items == "action" else f"textual-cloze --items {items}"
        raise BadInput(f"{what} need {field} embeddings: {exc}{hint}") from None


def _step_texts(store: Store, items: str, embeddings: Embeddings) -> Embeddings | None:
    """The step-text embeddings when the context shows each answer's step text (title items) in the items' space."""
    if items != "title":
        return None
    from procbench.embed import load_embeddings

    try:
        texts = load_embeddings(store, "step_text")
    except BadInput:
        return None
    return texts if texts.encoder == embeddings.encoder else None


def _text_encoder_of(store: Store) -> str:
    """The text encoder of the store's step-text embeddings (so the items share their space), else the default."""
    from procbench.embed import list_embeddings
    from procbench.embed.registry import DEFAULT_TEXT_ENCODER
    from procbench.embed.storage import current_embeddings

    current = current_embeddings(store)
    for field in ("step_text", "step_title", "procedure_title"):
        if field in current:
            encoder = list_embeddings(store).get(current[field], {}).get("encoder")
            if encoder:
                return encoder
    return DEFAULT_TEXT_ENCODER


@dataclass
class _Outcome:
    """One setting's questions (in draft order) and what was skipped."""

    made: dict[int, Question]
    skipped_questions: Counter[str]
    budget: ClusterBudget | None = None


def _sample(
    setting: Setting,
    drafts: list[_Draft],
    pool: _Pool,
    knn: dict[str, tuple[np.ndarray, np.ndarray]],
    rng: np.random.Generator,
    *,
    clustering: Clustering | None,
    budget: int | None,
    min_distance: float,
    progress: Progress,
) -> _Outcome:
    """Negatives for every draft under ``setting`` (recipeqa, default, or debias with ``budget``)."""
    spend = ClusterBudget(clustering.n_clusters, budget) if budget is not None and clustering is not None else None
    visit = rng.permutation(len(drafts)) if spend is not None else np.arange(len(drafts))
    outcome = _Outcome({}, Counter(), spend)
    progress.start(f"textual-cloze/{setting.name}", total=len(drafts))
    for i in visit.tolist():
        progress.advance()
        draft = drafts[i]
        if draft.answer_key not in pool.positions:
            outcome.skipped_questions["no_embedding"] += 1
            continue
        reason: str | None
        if setting.style == "recipeqa":
            drawn, reason = _random_negatives(draft, pool, rng, min_distance), "few_candidates"
        else:
            drawn, reason = _far_negatives(
                draft, pool, knn[draft.answer_key], rng, clustering=clustering if spend else None, budget=spend
            )
        if drawn is None:
            outcome.skipped_questions[str(reason)] += 1
            continue
        if spend is not None and clustering is not None:  # the draw checked the budget: never below zero
            spend.spend(clustering.labels[drawn.rows])
        outcome.made[i] = _question(draft, setting, pool, drawn, clustering if spend is not None else None)
    return outcome


#: ``--budget auto``: the budget starts at the even share ``ceil(3 Q / C)`` and grows by this factor until
#: at least :data:`AUTO_YIELD` of the questions are kept (at most :data:`AUTO_STEPS` tries).
AUTO_GROWTH = 1.25
AUTO_YIELD = 0.98
AUTO_STEPS = 12


def _auto_budget(
    setting: Setting,
    drafts: list[_Draft],
    pool: _Pool,
    knn: dict[str, tuple[np.ndarray, np.ndarray]],
    clustering: Clustering,
    *,
    seed: int,
    progress: Progress,
) -> tuple[_Outcome, dict[str, Any]]:
    """Algorithm 1 with the smallest budget (from an even share per cluster, growing) that keeps nearly all."""
    need = max(1, len(drafts))
    budget = max(1, math.ceil(N_NEGATIVES * need / clustering.n_clusters))
    tried = []
    for _ in range(AUTO_STEPS):
        rng = np.random.default_rng([seed, _TAG, zlib.crc32(setting.name.encode("utf-8"))])
        outcome = _sample(
            setting,
            drafts,
            pool,
            knn,
            rng,
            clustering=clustering,
            budget=budget,
            min_distance=0.0,
            progress=progress,
        )
        kept = len(outcome.made) / need
        tried.append({"budget": budget, "yield": round(kept, 4)})
        exhausted = outcome.skipped_questions.get("budget_exhausted", 0)
        if kept >= AUTO_YIELD or not exhausted:
            break
        budget = max(budget + 1, math.ceil(budget * AUTO_GROWTH))
    return outcome, {"chosen": budget, "even_share": tried[0]["budget"], "tried": tried}


#: Adversarial negatives: candidates per question from each source (:func:`_adversarial_candidates`).
ADVERSARIAL_CANDIDATES = {"answer": 48, "question": 48, "items": 48, "words": 48}
#: Adversarial setting: questions the probes still solve after filtering are dropped down to this yield.
MIN_YIELD = 0.85


def _question_vectors(drafts: list[_Draft], pool: _Pool) -> tuple[np.ndarray, np.ndarray]:
    """``(Q, D)`` each question's normalised mean item and ``(Q, L)`` rows of its shown items (-1: none)."""
    vectors = pool.embeddings.vectors
    width = max(len(d.keys) for d in drafts)
    shown = np.full((len(drafts), width), -1, dtype=np.int64)
    means = np.zeros((len(drafts), vectors.shape[1]), dtype=np.float32)
    for i, d in enumerate(drafts):
        rows = [pool.positions.get(key, -1) for n, key in enumerate(d.keys) if n != d.position]
        rows = [r for r in rows if r >= 0]
        shown[i, : len(rows)] = rows
        mean = np.asarray(vectors[rows or [pool.positions[d.answer_key]]], dtype=np.float32).mean(axis=0)
        means[i] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return means, shown


def _split_search(vectors: Any, rows: np.ndarray) -> Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]:
    """Exact inner-product search over the pool ``rows`` (one split's usable titles): ``search(queries (B, D), k)``
    gives the ``(B, k + MAX_STEPS)`` similarities and pool rows (-1: none) nearest each query; the extra
    ``MAX_STEPS`` leave room for the titles of the query's own procedure, which callers drop."""
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors[rows], dtype=np.float32))

    def search(queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        sims, found = index.search(np.ascontiguousarray(queries, dtype=np.float32), min(len(rows), k + MAX_STEPS))
        return sims, np.where(found >= 0, rows[np.maximum(found, 0)], -1)

    return search


#: Adversarial setting: a procedure's question is chosen among this many of its drafts (distinct answers) ...
ADVERSARIAL_DRAFTS = 6
#: ... preferring one whose answer has this many titles of other procedures of its split nearer the question.
ADVERSARIAL_NEARER = 16


def _shared_answer(draft: _Draft, pool: _Pool) -> bool:
    """Whether the draft's answer shows a (normalised) title that other steps of the pool show too."""
    row = pool.positions.get(draft.answer_key, -1)
    code = int(pool.norm_codes[row]) if row >= 0 else -1
    return code < 0 or int(pool.norm_counts[code]) > 1


def _pick_windows(options: list[_Draft], pool: _Pool, per_procedure: int) -> list[_Draft]:
    """Each procedure's ``per_procedure`` drafts among ``options`` whose answers context-free probes tell least.

    An answer nearer its question's mean than every title of the other procedures gives itself away whatever
    its negatives are (no candidate can sit beside it). Each option's answer is scored by how many of the
    :data:`ADVERSARIAL_NEARER` titles of other procedures of its split nearest the question mean are nearer
    than it; a procedure keeps its best-scored options, earlier drafts first on ties (the first draft is the
    other settings' question). Options are in procedure order, as :func:`_drafts` lists them.

    Before the score, an answer whose title no other step shares is preferred: a generic title ("Ingredients",
    "Enjoy!") is the answer of many questions but rarely a near enough negative, so how often a choice occurs in
    the set would tell answers (one in four choices) from negatives.
    """

    vectors = pool.embeddings.vectors
    embedded = [i for i, d in enumerate(options) if d.answer_key in pool.positions]
    score = np.full(len(options), -1, dtype=np.int64)  # not embedded: the last choice (skipped later)
    if embedded:
        chosen = [options[i] for i in embedded]
        means, _ = _question_vectors(chosen, pool)
        answers = np.asarray(vectors[[pool.positions[d.answer_key] for d in chosen]], dtype=np.float32)
        radius = np.linalg.norm(answers - means, axis=1)
        own = np.array([pool.procedure_code.get(d.procedure_id, -2) for d in chosen], dtype=np.int64)
        group = np.array([pool.group_of[d.procedure_id] for d in chosen], dtype=np.int64)
        for g in np.unique(group).tolist():
            rows = np.flatnonzero((pool.norm_codes >= 0) & (pool.groups == g))
            members = np.flatnonzero(group == g)
            if not len(rows):
                continue
            sims, hit = _split_search(vectors, rows)(means[members], ADVERSARIAL_NEARER)
            other = (hit >= 0) & (pool.procedures[np.maximum(hit, 0)] != own[members][:, None])
            distance = np.sqrt(np.maximum(2.0 - 2.0 * sims, 0.0))  # unit vectors: from the inner product
            nearer = other & (distance < radius[members][:, None])
            first = np.cumsum(other, axis=1) <= ADVERSARIAL_NEARER  # the ADVERSARIAL_NEARER nearest others
            score[np.array(embedded)[members]] = (nearer & first).sum(axis=1)
    shared = [_shared_answer(d, pool) for d in options]
    picked: list[_Draft] = []
    start = 0
    while start < len(options):
        end = start
        while end < len(options) and options[end].procedure_id == options[start].procedure_id:
            end += 1
        best = sorted(range(start, end), key=lambda i: (shared[i], -score[i], options[i].number))[:per_procedure]
        picked.extend(options[i] for i in sorted(best))
        start = end
    return picked


def _word_vectors(pool: _Pool) -> Any:
    """``(N, V)`` sparse L2-normalised TF-IDF rows of the items' content words (the probes' word-overlap words)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from procbench.shortcuts import content_words

    texts = [text or "" for text in pool.texts]
    vectorizer = TfidfVectorizer(analyzer=lambda text: sorted(content_words(text)), binary=True, dtype=np.float32)
    try:
        return vectorizer.fit_transform(texts)
    except ValueError:  # no item has a content word
        return None


def _adversarial_candidates(drafts: list[_Draft], pool: _Pool, sizes: Mapping[str, int]) -> np.ndarray:
    """``(Q, M)`` candidate rows per draft, from each source of ``sizes`` in turn (-1: padding).

    Sources: the titles nearest its answer (``answer``), nearest its question's mean (``question``), nearest
    each of its question items (``items``, shared among them) and sharing the most content words with them
    (``words``, TF-IDF): the probes tell an answer by its distance to the question, to the nearest question
    item and by the words it shares with the question, so the pool holds negatives that match it on each.
    Candidates are titles of other procedures of the question's split, one row per normalised title. How
    often a title may be a negative is bounded by how many of its step rows are not answers (see
    :func:`_copies`), so negatives are drawn from the same population as answers: random steps.
    """

    vectors = pool.embeddings.vectors
    answer_rows = np.array([pool.positions[d.answer_key] for d in drafts], dtype=np.int64)
    # one row per distinct title (the first that is not an answer), so a candidate list holds distinct items
    usable = pool.norm_codes >= 0
    usable[answer_rows] = False
    _, first = np.unique(np.where(usable, pool.norm_codes, -1), return_index=True)
    distinct = np.zeros(len(usable), dtype=bool)
    distinct[first] = True
    usable &= distinct
    means, shown = _question_vectors(drafts, pool)
    words = _word_vectors(pool) if sizes.get("words", 0) else None
    lists: list[list[np.ndarray]] = [[] for _ in drafts]
    own = np.array([pool.procedure_code.get(d.procedure_id, -2) for d in drafts], dtype=np.int64)
    group = np.array([pool.group_of[d.procedure_id] for d in drafts], dtype=np.int64)
    for g in np.unique(group).tolist():
        rows = np.flatnonzero(usable & (pool.groups == g))
        members = np.flatnonzero(group == g)
        if not len(rows) or not len(members):
            continue
        search = _split_search(vectors, rows)

        def nearest(queries: np.ndarray, k: int, search: Callable[..., Any] = search) -> np.ndarray:
            return np.asarray(search(queries, k)[1])

        for source, k in sizes.items():
            if k <= 0:
                continue
            if source == "answer":
                hits = nearest(np.asarray(vectors[answer_rows[members]], dtype=np.float32), k)
            elif source == "question":
                hits = nearest(means[members], k)
            elif source == "items":
                items = shown[members]
                per_item = -(-k // max(1, items.shape[1]))
                found = nearest(np.asarray(vectors[np.maximum(items, 0)].reshape(-1, vectors.shape[1])), per_item)
                found = found.reshape(len(members), items.shape[1], -1)
                found = np.where(items[:, :, None] >= 0, found, -1)
                hits = found.transpose(0, 2, 1).reshape(len(members), -1)  # interleaved: each item's nearest first
            elif source == "words":
                if words is None:
                    continue
                hits = _word_neighbours(words, shown[members], rows, k + MAX_STEPS)
            else:
                raise ValueError(f"unknown candidate source {source!r}")
            for j, i in enumerate(members.tolist()):
                hit = hits[j][hits[j] >= 0]
                lists[i].append(hit[pool.procedures[hit] != own[i]][:k])
    width = sum(max(0, k) for k in sizes.values())
    out = np.full((len(drafts), width), -1, dtype=np.int64)
    for i, parts in enumerate(lists):  # a title that several sources found is listed once, where first found
        joined = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        _, first_seen = np.unique(joined, return_index=True)
        unique = joined[np.sort(first_seen)]
        out[i, : len(unique)] = unique
    return out


def _word_neighbours(words: Any, shown: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """``(B, k)`` of ``rows``, those whose content words best match the union of each question's shown items'."""
    import scipy.sparse as sp

    pool_words = words[rows]
    out = np.full((len(shown), k), -1, dtype=np.int64)
    step = max(1, min(256, (1 << 24) // max(1, len(rows))))  # a dense (step, rows) score block of <= 64 MB
    for start in range(0, len(shown), step):
        block = shown[start : start + step]
        picks = sp.csr_matrix(
            (np.ones(int((block >= 0).sum()), dtype=np.float32), (np.nonzero(block >= 0)[0], block[block >= 0])),
            shape=(len(block), words.shape[0]),
        )
        scores = np.asarray((picks @ words @ pool_words.T).todense())
        take = min(k, scores.shape[1])
        top = np.argpartition(-scores, take - 1, axis=1)[:, :take]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
        top = np.take_along_axis(top, order, axis=1)
        found = np.take_along_axis(scores, top, axis=1) > 0
        out[start : start + len(block), :take] = np.where(found, rows[top], -1)
    return out


def _copies(pool: _Pool, answers: np.ndarray) -> np.ndarray:
    """``(n_titles,)`` how many questions may show each normalised title as a negative.

    A title that ``n`` steps share is correct in about ``n * Q / N`` of the ``Q`` questions (``N`` step rows),
    so it may be a negative ``N_NEGATIVES`` times as often (at least once): negatives then follow the same
    distribution of titles as answers, and no generic title ("Enjoy!") is a typical wrong choice. Rows that
    are answers are never negatives themselves.
    """
    rows = pool.norm_codes >= 0
    share = len(answers) / max(1, int(rows.sum()))
    copies = np.bincount(pool.norm_codes[rows], minlength=len(pool.norm_counts))
    free = np.ones(len(pool.norm_codes), dtype=bool)
    free[answers] = False
    spare = np.bincount(pool.norm_codes[free & rows], minlength=len(pool.norm_counts))
    fair = np.maximum(1, np.rint(N_NEGATIVES * copies * share)).astype(np.int64)
    return np.minimum(fair, spare)


def _item_clusters(pool: _Pool, seed: int) -> np.ndarray:
    """``(N,)`` KMeans cluster of every item row (for the probes' cluster-frequency feature)."""
    embeddings = pool.embeddings
    n_clusters = min(ADVERSARIAL_CLUSTERS, len(np.unique(embeddings.hashes)))
    return cluster_titles(embeddings.vectors, n_clusters=n_clusters, seed=seed, hashes=embeddings.hashes).labels


def _question_means(arena: Arena) -> np.ndarray:
    """``(Q, D)`` the mean of each question's shown items (the point the probes measure distances to)."""
    shown = arena.question_items >= 0
    mean = np.einsum("ql,qld->qd", shown.astype(np.float32), arena.vectors[np.maximum(arena.question_items, 0)])
    mean /= np.maximum(shown.sum(axis=1), 1)[:, None]  # in place: float32, as the vectors
    return mean


def _distinct_steps(negatives: np.ndarray, arena: Arena, ceiling: float, pool: _Pool) -> np.ndarray:
    """``(Q, K)`` the negatives, each use of a title moved to a step of it not yet shown as a choice.

    Filtering picks titles (one row stands for all steps that show it, so a title may be a negative as often
    as it is correct); were every use the same step, a step key that is a choice several times would mark
    a negative (answers are choices once). A use moves to another step with the same normalised title in the
    same split, of another procedure than the question's, that keeps the negative's side of the answer's
    distance to the question and the similarity ceiling; when none is left it stays.
    """
    codes, groups = pool.norm_codes, pool.groups
    wanted = np.isin(codes, np.unique(codes[negatives[negatives >= 0]])) & (codes >= 0)
    wanted[arena.answers] = False
    spare: dict[tuple[int, int], list[int]] = {}
    for row in np.flatnonzero(wanted).tolist():
        spare.setdefault((int(groups[row]), int(codes[row])), []).append(row)
    vectors = arena.vectors
    shown = arena.question_items >= 0
    qmean = _question_means(arena)
    used: set[int] = set()
    out = negatives.copy()
    for q, row in zip(*np.nonzero(negatives >= 0), strict=True):
        original = int(negatives[q, row])
        answer = int(arena.answers[q])
        d_answer = float(np.linalg.norm(vectors[answer] - qmean[q]))
        closer = float(np.linalg.norm(vectors[original] - qmean[q])) < d_answer
        items = arena.question_items[q][shown[q]]
        for alternative in spare.get((int(groups[original]), int(codes[original])), [original]):
            if alternative in used or pool.procedures[alternative] == pool.procedures[answer]:
                continue
            vector = vectors[alternative]
            if (float(np.linalg.norm(vector - qmean[q])) < d_answer) != closer:
                continue
            if float(vector @ vectors[answer]) >= ceiling or (
                len(items) and float((vectors[items] @ vector).max()) >= ceiling
            ):
                continue
            out[q, row] = alternative
            break
        used.add(int(out[q, row]))
    return out


def _fits_worse(
    candidates: np.ndarray, answers: np.ndarray, drafts: list[_Draft], pool: _Pool, step_texts: Embeddings
) -> np.ndarray:
    """``candidates`` with those nearer the answer's own step text than the answer is set to -1 (and packed left).

    The context shows that text: a negative that fits it better than the answer would make the question
    ambiguous for a reader, not hard. Drafts whose answer step has no text embedding keep every candidate.
    """
    row_of = {k: i for i, k in enumerate(step_texts.keys.to_pylist())}
    texts = np.asarray(step_texts.vectors)
    vectors = pool.embeddings.vectors
    out = candidates.copy()
    for i, d in enumerate(drafts):
        row = row_of.get(d.answer_key)
        if row is None:
            continue
        text = np.asarray(texts[row], dtype=np.float32)
        fit = float(np.asarray(vectors[answers[i]], dtype=np.float32) @ text)
        live = candidates[i] >= 0
        sims = np.asarray(vectors[np.maximum(candidates[i], 0)], dtype=np.float32) @ text
        keep = live & (sims < fit)
        out[i] = -1
        out[i, : int(keep.sum())] = candidates[i][keep]
    return out


def _skip(outcome: _Outcome, reason: str, n: int) -> None:
    """Count ``n`` questions skipped for ``reason`` (reasons that skipped none are not listed)."""
    if n:
        outcome.skipped_questions[reason] += n


def _question_closeness(arena: Arena) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Q, M)`` class of each candidate (1: closer to the question mean than the answer, 0: not, -1: padding),
    ``(Q, M)`` its distance to the mean minus the answer's, and ``(Q,)`` the answer's distance to the mean."""
    vectors = arena.vectors
    qmean = _question_means(arena)
    to_answer = np.linalg.norm(vectors[arena.answers] - qmean, axis=1)
    to_candidate = np.linalg.norm(vectors[np.maximum(arena.candidates, 0)] - qmean[:, None, :], axis=2)
    classes = np.where(arena.candidates >= 0, (to_candidate < to_answer[:, None]).astype(np.int64), -1)
    return classes, (to_candidate - to_answer[:, None]).astype(np.float64), to_answer


def _answer_ranks(arena: Arena, options: AdversarialOptions, splits: np.ndarray, *, seed: int) -> np.ndarray:
    """``(Q,)`` a target distance rank of the answer among the choices (-1: the question is dropped).

    Ranks are balanced within each split (:func:`balanced_ranks`) among those a question's usable
    candidates can give, so "pick the choice nearest the question" (or any fixed rank) is at chance in
    every split, also for a model fitted on train and scored on test.
    """
    rng = np.random.default_rng([seed, 0x7A4])
    usable = usable_candidates(arena, options)
    classes = np.asarray(arena.candidate_class)
    available = np.stack([(usable & (classes == c)).sum(axis=1) for c in (0, 1)], axis=1)
    feasible = np.all(available[:, None, :] >= CLOZE_WANTS[None, :, :], axis=2)  # (Q, 4)
    ranks = np.full(len(splits), -1, dtype=np.int64)
    for split in np.unique(splits).tolist():
        members = np.flatnonzero(splits == split)
        ranks[members] = balanced_ranks(feasible[members], rng)
    return ranks


def _adversarial(
    setting: Setting,
    drafts: list[_Draft],
    pool: _Pool,
    options: AdversarialOptions,
    *,
    seed: int,
    progress: Progress,
    step_texts: Embeddings | None = None,
) -> tuple[_Outcome, dict[str, Any]]:
    """Adversarially filtered negatives (:mod:`procbench.generate.adversarial`) for every draft.

    ``step_texts``: the step-text embeddings (in the items' space) when the context holds the answer's own step
    text; a candidate nearer that text than the answer is then never a negative (:func:`_fits_worse`).
    """
    outcome = _Outcome({}, Counter())
    drafted = len(drafts)
    embedded = [i for i, d in enumerate(drafts) if d.answer_key in pool.positions]
    _skip(outcome, "no_embedding", len(drafts) - len(embedded))
    drafts = [drafts[i] for i in embedded]
    if not drafts:
        return outcome, {}
    progress.start(f"textual-cloze/{setting.name}: candidates", total=None)
    candidates = _adversarial_candidates(drafts, pool, ADVERSARIAL_CANDIDATES)
    answers = np.array([pool.positions[d.answer_key] for d in drafts], dtype=np.int64)
    if step_texts is not None:
        candidates = _fits_worse(candidates, answers, drafts, pool, step_texts)
    width = max(len(d.keys) for d in drafts)
    question_items = np.full((len(drafts), width), -1, dtype=np.int64)
    for i, d in enumerate(drafts):
        for n, key in enumerate(d.keys):
            if n != d.position:
                question_items[i, n] = pool.positions.get(key, -1)
    groups = np.array([pool.procedure_code.get(d.procedure_id, -1) for d in drafts], dtype=np.int64)
    arena = Arena(
        vectors=np.asarray(pool.embeddings.vectors, dtype=np.float32),
        identity=pool.norm_codes,
        answers=answers,
        question_items=question_items,
        negatives=np.full((len(drafts), N_NEGATIVES), -1, dtype=np.int64),
        candidates=candidates,
        groups=groups,
        texts=pool.texts,
        clusters=_item_clusters(pool, seed),
        copies=_copies(pool, answers),
        placeholder=np.array([d.position for d in drafts], dtype=np.int64),
    )
    arena.candidate_class, offsets, to_answer = _question_closeness(arena)
    ranks = _answer_ranks(arena, options, np.array([pool.group_of[d.procedure_id] for d in drafts]), seed=seed)
    ranked = ranks >= 0
    _skip(outcome, "rank_balance", int((~ranked).sum()))
    arena, ranks, offsets = arena.subset(ranked, negatives=arena.negatives[ranked]), ranks[ranked], offsets[ranked]
    drafts = [d for d, k in zip(drafts, ranked.tolist(), strict=True) if k]
    # the rank-r answer has r negatives closer to the question, evenly spaced in distance with it
    targets = lattice_targets(ranks, LATTICE_SPACING * float(np.std(to_answer)), N_NEGATIVES)
    start, classes, unfilled = initial_negatives(arena, options, seed=seed, offsets=offsets, targets=targets)
    _skip(outcome, "few_candidates", int(unfilled.sum()))
    keep = ~unfilled
    arena, ranks = arena.subset(keep, negatives=start[keep]), ranks[keep]
    arena.negative_class = classes[keep]
    drafts = [d for d, k in zip(drafts, keep.tolist(), strict=True) if k]
    if len(np.unique(arena.groups)) < 2:
        result = None
        final, kept = arena.negatives, np.ones(len(drafts), dtype=bool)
    else:
        result = filter_negatives(arena, options, seed=seed, drafted=drafted, progress=progress)
        final, kept = result.negatives, result.kept
        _skip(outcome, "predictable", int((~kept).sum()))
    final = _distinct_steps(final, arena, options.ceiling, pool)
    vectors = arena.vectors
    for i, draft in enumerate(drafts):
        if not kept[i]:
            continue
        rows = [int(r) for r in final[i]]
        gaps = np.linalg.norm(vectors[rows] - vectors[arena.answers[i]], axis=1).astype(np.float64).tolist()
        drawn = _Drawn(rows, gaps, n_candidates=int((arena.candidates[i] >= 0).sum()))
        question = _question(draft, setting, pool, drawn, None)
        question.meta["replacements"] = int(result.replacements[i]) if result is not None else 0
        question.meta["ceiling"] = options.ceiling
        question.meta["answer_rank"] = int(ranks[i])
        outcome.made[i] = question
    summary = result.summary() if result is not None else {**options.to_dict(), "rounds_run": 0}
    summary["rules"] = [
        f"each procedure's question is the one of its first {ADVERSARIAL_DRAFTS} drafts whose answer has the most "
        f"of the {ADVERSARIAL_NEARER} nearest titles of other procedures nearer the question than itself, "
        "answers whose title other steps share last",
        "candidates: the titles nearest the answer, the question mean and each question item, and those sharing "
        "the most words with the question items",
    ]
    if step_texts is not None:
        summary["rules"].append("no negative nearer the answer's own step text than the answer")
    return outcome, summary


def _needs_context(
    setting: Setting,
    store: Store,
    steps: dict[str, list[tuple[int, str | None, str | None]]],
    pool: _Pool,
    options: AdversarialOptions,
    *,
    seed: int,
    progress: Progress,
) -> tuple[_Outcome, dict[str, Any]]:
    """``needs-context``: decoys and lookalikes (:mod:`procbench.generate.needs_context`), the answer's distance
    rank to the question balanced, then adversarially filtered against the context-free probes."""
    from procbench.embed import load_embeddings
    from procbench.generate.needs_context import choose_questions

    outcome = _Outcome({}, Counter())
    embeddings = pool.embeddings
    vectors = np.asarray(embeddings.vectors, dtype=np.float32)
    texts = _step_texts(store, "title", embeddings)
    text_vectors = None
    if texts is not None:
        row_of = {k: i for i, k in enumerate(texts.keys.to_pylist())}
        text_vectors = np.zeros_like(vectors)
        found = [(i, row_of[k]) for i, k in enumerate(pool.keys) if k in row_of]
        if found:
            mine, theirs = (np.array(x, dtype=np.int64) for x in zip(*found, strict=True))
            text_vectors[mine] = np.asarray(texts.vectors)[theirs]
    procedure_vectors = None
    try:
        titles = load_embeddings(store, "procedure_title")
    except BadInput:
        titles = None
    if titles is not None and titles.encoder == embeddings.encoder:
        row_of = {k: i for i, k in enumerate(titles.keys.to_pylist())}
        procedure_vectors = np.zeros((len(pool.procedure_code), vectors.shape[1]), dtype=np.float32)
        for pid, code in pool.procedure_code.items():
            if pid in row_of:
                procedure_vectors[code] = titles.vectors[row_of[pid]]
    progress.start(f"textual-cloze/{setting.name}: decoys and lookalikes", total=None)
    in_split = {pid: rows for pid, rows in steps.items() if pid in pool.group_of}
    drafts, skipped, notes = choose_questions(
        in_split,
        keys=pool.keys,
        positions=pool.positions,
        vectors=vectors,
        norm_codes=pool.norm_codes,
        norm_counts=pool.norm_counts,
        titles=pool.texts,
        procedure_of_row=pool.procedures,
        procedure_code=pool.procedure_code,
        group_of=pool.group_of,
        text_vectors=text_vectors,
        procedure_vectors=procedure_vectors,
        seed=seed,
    )
    for reason, n in skipped.items():
        _skip(outcome, reason, n)
    drafted = len(drafts) + sum(skipped.values())
    if not drafts:
        return outcome, notes
    width = max(len(d.keys) for d in drafts)
    n_cand = max(len(d.decoys) + len(d.lookalikes) for d in drafts)
    question_items = np.full((len(drafts), width), -1, dtype=np.int64)
    candidates = np.full((len(drafts), n_cand), -1, dtype=np.int64)
    candidate_class = np.full((len(drafts), n_cand), -1, dtype=np.int64)
    for i, d in enumerate(drafts):
        for n, key in enumerate(d.keys):
            if n != d.position:
                question_items[i, n] = pool.positions[key]
        rows = d.decoys + d.lookalikes
        candidates[i, : len(rows)] = rows
        candidate_class[i, : len(rows)] = [1] * len(d.decoys) + [0] * len(d.lookalikes)
    answers = np.array([d.answer for d in drafts], dtype=np.int64)
    pairs = np.array(
        [
            bool(d.decoys)
            and len(d.lookalikes) >= 2
            and pool.procedures[d.lookalikes[0]] == pool.procedures[d.lookalikes[1]]
            for d in drafts
        ]
    )
    negatives, classes = _rank_balanced_start(
        vectors, answers, question_items, candidates, candidate_class, seed, pairs=pairs
    )
    arena = Arena(
        vectors=vectors,
        identity=pool.norm_codes,
        answers=answers,
        question_items=question_items,
        negatives=negatives,
        candidates=candidates,
        groups=np.array([pool.procedure_code.get(d.procedure_id, -1) for d in drafts], dtype=np.int64),
        texts=pool.texts,
        clusters=_item_clusters(pool, seed),
        candidate_class=candidate_class,
        negative_class=classes,
        placeholder=np.array([d.position for d in drafts], dtype=np.int64),
    )
    if len(np.unique(arena.groups)) < 2:
        result = None
        final, kept = negatives, np.ones(len(drafts), dtype=bool)
    else:
        result = filter_negatives(arena, options, seed=seed, drafted=drafted, progress=progress)
        final, kept = result.negatives, result.kept
        _skip(outcome, "predictable", int((~kept).sum()))
    for i, draft in enumerate(drafts):
        if not kept[i]:
            continue
        rows = [int(r) for r in final[i]]
        gaps = np.linalg.norm(vectors[rows] - vectors[draft.answer], axis=1).astype(np.float64).tolist()
        index_of = [index for index, _, _ in steps[draft.procedure_id]]
        base = _Draft(
            procedure_id=draft.procedure_id,
            number=0,
            n_steps=draft.n_steps,
            context=index_of,
            start=draft.start,
            keys=draft.keys,
            titles=draft.titles,
            norms=[str(pool.norms[pool.positions[k]]) for k in draft.keys],
            position=draft.position,
        )
        question = _question(
            base, setting, pool, _Drawn(rows, gaps, n_candidates=len(draft.decoys) + len(draft.lookalikes)), None
        )
        question.meta["window_side"] = draft.side
        question.meta["decoys"] = sum(1 for r in rows if pool.procedures[r] == pool.procedures[draft.answer])
        question.meta["replacements"] = int(result.replacements[i]) if result is not None else 0
        outcome.made[i] = question
    summary = result.summary() if result is not None else {**options.to_dict(), "rounds_run": 0}
    summary.update(notes)
    summary["rules"] = [
        "the blank is the first or last item of a window of 2-4 titles, never the procedure's first or last step "
        "nor a generic title",
        "negatives: at most one step of the same procedure (a decoy) and titles of the 25 nearest procedures "
        "(lookalikes) at a similar position, as on-topic as the answer, in its casing",
        "no negative is a paraphrase of the answer or a shown title, or nearer the answer's own step text than "
        "the answer's title",
        "the answer's distance rank to the question is balanced; adversarially filtered against the probes",
    ]
    return outcome, summary


def _rank_balanced_start(
    vectors: np.ndarray,
    answers: np.ndarray,
    question_items: np.ndarray,
    candidates: np.ndarray,
    candidate_class: np.ndarray,
    seed: int,
    pairs: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(Q, 3)`` starting negatives and their classes: the decoy (class 1) if any, then lookalikes, chosen so
    that the number of negatives nearer the question mean than the answer is drawn uniformly over the set."""
    rng = np.random.default_rng([seed, 0x5EED])
    n_q = len(answers)
    shown = question_items >= 0
    means = (vectors[np.maximum(question_items, 0)] * shown[..., None]).sum(axis=1) / np.maximum(
        shown.sum(axis=1, keepdims=True), 1
    )
    targets = rng.permutation(np.resize(np.arange(N_NEGATIVES + 1), n_q))
    negatives = np.full((n_q, N_NEGATIVES), -1, dtype=np.int64)
    classes = np.zeros((n_q, N_NEGATIVES), dtype=np.int64)
    for i in range(n_q):
        live = candidates[i] >= 0
        rows, kinds = candidates[i][live], candidate_class[i][live]
        d_answer = float(np.linalg.norm(vectors[answers[i]] - means[i]))
        nearer = np.linalg.norm(vectors[rows] - means[i], axis=1) < d_answer
        picked = [int(j) for j in np.flatnonzero(kinds == 1)[:1]]
        if picked and pairs is not None and pairs[i]:
            picked += [int(j) for j in np.flatnonzero(kinds == 0)[:2]]
            negatives[i, :3] = rows[picked]
            classes[i, :3] = kinds[picked]
            continue
        want = int(targets[i]) - int(nearer[picked].sum())
        rest = [int(j) for j in np.flatnonzero(kinds == 0)]
        near_first = [j for j in rest if nearer[j]] if want > 0 else [j for j in rest if not nearer[j]]
        others = [j for j in rest if j not in near_first]
        need = N_NEGATIVES - len(picked)
        take = near_first[: max(0, want) if want > 0 else need]
        take += others[: need - len(take)]
        take += [j for j in near_first if j not in take][: need - len(take)]
        picked += take[:need]
        negatives[i, : len(picked)] = rows[picked]
        classes[i, : len(picked)] = kinds[picked]
    return negatives, classes


def build(
    store: Store,
    settings: list[Setting],
    *,
    seed: int = 0,
    progress: Progress = SILENT,
    clusters: int | None = None,
    questions_per_procedure: int = 1,
    knn_k: int = KNN_K,
    min_distance: float | None = None,
    items: str = "title",
    rounds: int | None = None,
    ceiling: float | None = None,
    min_yield: float | None = None,
    splits: Mapping[str, str] | None = None,
    last: bool = False,
) -> tuple[dict[str, list[Question]], dict[str, Any]]:
    """Textual-cloze questions for each setting (``recipeqa``, ``default``, ``debias``, ``adversarial``).

    Args:
        clusters: KMeans clusters for debiasing (default ``round(sqrt(distinct titles))``, at most 100).
        questions_per_procedure: questions drawn per procedure (distinct answers except in RecipeQA style).
        knn_k: neighbours of the correct title the default and debiased samplers look at (paper: 100).
        min_distance: RecipeQA style's fixed distance (default: the median distance of random title pairs).
        items: ``title`` (step headlines), ``text`` (step texts, for corpora without headlines; the context
            then leaves out the question's own steps) or ``action`` (step action tuples, ``procbench extract``).
        rounds: adversarial filtering's round limit (default 15).
        ceiling: adversarial negatives' cosine-similarity ceiling to the answer and question items (default 0.8).
        min_yield: adversarial: when replacing negatives leaves the probes above chance, drop the questions they
            still solve while this share of the drafted questions stays (default 0.85; 1: drop none).
        splits: procedure id -> split (the runner passes the split it writes). Negatives are then drawn
            only from procedures of the question's own split, so no title of one split is a choice in
            another; without it (library use) they come from any other procedure, as in Algorithm 1.
        last: the placeholder is always the window's last item and the context the steps before it
            (the next-action task).

    Returns:
        ``({setting name: questions}, counts)``; counts hold, per setting, ``questions``,
        ``skipped_procedures`` and ``skipped_questions`` by reason, for debiasing the clustering
        (clusters, inertia) and budget usage (spent in total and per cluster, exhausted clusters, and for
        ``--budget auto`` the budgets tried and their yield), for the adversarial setting the filtering
        account (rounds, replacements, probe accuracy per round, the ceiling).

    Raises:
        BadInput: a setting or option that does not apply; no embeddings of the items (run ``procbench embed``).
    """
    from procbench.embed import load_index

    _check(settings, clusters, questions_per_procedure, knn_k, items)
    if (items != "title" or last) and any(s.style == "needs-context" for s in settings):
        if len(settings) == 1:
            raise BadInput("the needs-context setting applies to textual cloze over step titles (--items title)")
        settings = [s for s in settings if s.style != "needs-context"]  # a sweep over other items leaves it out
    styles = {s.style for s in settings}
    if (rounds is not None or ceiling is not None or min_yield is not None) and not styles & {
        "adversarial",
        "needs-context",
    }:
        raise BadInput("--rounds, --ceiling and --min-yield apply only with --adversarial (or --sweep)")
    options = AdversarialOptions(
        rounds=AdversarialOptions.rounds if rounds is None else rounds,
        ceiling=AdversarialOptions.ceiling if ceiling is None else ceiling,
        min_yield=MIN_YIELD if min_yield is None else min_yield,
    )
    if options.rounds < 0 or not 0.0 < options.ceiling <= 1.0 or not 0.0 < options.min_yield <= 1.0:
        raise BadInput("--rounds must be >= 0, --ceiling and --min-yield in (0, 1]")
    steps, title_source = _titles(store, items)
    embeddings = _item_embeddings(store, items)
    pool = _pool(embeddings, steps, splits)
    counts: dict[str, Any] = {
        "items": items,
        "title_source": title_source,
        "titles": len(pool.keys),
        "encoder": embeddings.encoder,
        "negatives_from": "other procedures of the same split" if splits is not None else "any other procedure",
    }

    if min_distance is None:  # only the RecipeQA style reads it
        pairs = np.random.default_rng([seed, _TAG, 0xD15])
        min_distance = median_pair_distance(pool.procedures, pool.distance, pairs) if "recipeqa" in styles else 0.0
    in_range = {pid: rows for pid, rows in steps.items() if MIN_STEPS <= len(rows) <= MAX_STEPS}
    drafts_by: dict[bool | str, dict[str, list[_Draft]]] = {}
    for replace in sorted({s.style == "recipeqa" for s in settings}):
        drafts_by[replace] = {
            pid: _drafts(
                pid,
                rows,
                per_procedure=questions_per_procedure,
                replace=replace,
                seed=seed,
                hide_window=items != "title" and not last,
                last=last,
            )
            for pid, rows in sorted(in_range.items())
        }

    if "adversarial" in styles:  # the adversarial setting chooses among several drafts of each procedure
        drafts_by["adversarial"] = {
            pid: _drafts(
                pid,
                rows,
                per_procedure=max(ADVERSARIAL_DRAFTS, questions_per_procedure),
                replace=False,
                seed=seed,
                hide_window=items != "title" and not last,
                last=last,
            )
            for pid, rows in sorted(in_range.items())
        }

    knn: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if styles & {"default", "debias"}:
        index = load_index(store, ITEM_FIELDS[items])
        wanted = sorted(
            {
                d.answer_key
                for ds in drafts_by[False].values()
                for d in ds
                if d.answer_key in pool.positions and d.procedure_id in pool.group_of
            }
        )
        knn = _knn(index, pool, wanted, knn_k, progress)

    clustering: Clustering | None = None
    if "debias" in styles:
        n_distinct = len(np.unique(embeddings.hashes))
        n_clusters = clusters if clusters is not None else default_n_clusters(n_distinct)
        progress.start(f"textual-cloze: KMeans ({n_clusters} clusters)", total=None)
        clustering = cluster_titles(embeddings.vectors, n_clusters=n_clusters, seed=seed, hashes=embeddings.hashes)
        counts["clustering"] = {
            "clusters": clustering.n_clusters,
            "inertia": round(clustering.inertia, 4),
            "n_iter": clustering.n_iter,
            "largest": int(clustering.sizes().max()),
            "smallest": int(clustering.sizes().min()),
        }

    sets: dict[str, list[Question]] = {}
    for setting in settings:
        rng = np.random.default_rng([seed, _TAG, zlib.crc32(setting.name.encode("utf-8"))])
        # paper 004 drops procedures under 6 steps when debiasing; --budget auto aims at full yield and
        # keeps them (its yield is over the same drafts as the default setting)
        min_steps = MIN_STEPS_DEBIAS if setting.style == "debias" and setting.budget != "auto" else MIN_STEPS
        skipped_procedures: Counter[str] = Counter()
        skipped_procedures["step_count"] = len(steps) - len(in_range)
        drafts: list[_Draft] = []
        source = "adversarial" if setting.style == "adversarial" else setting.style == "recipeqa"
        for pid, found in drafts_by[source].items():
            if len(in_range[pid]) < min_steps:
                skipped_procedures["step_count"] += 1
            elif pid not in pool.group_of:
                skipped_procedures["no_split"] += 1
            elif not found:
                skipped_procedures["no_titled_window"] += 1
            else:
                drafts.extend(found)
        entry: dict[str, Any] = {}
        if setting.style == "adversarial":
            drafts = _pick_windows(drafts, pool, questions_per_procedure)
            outcome, entry["adversarial"] = _adversarial(
                setting,
                drafts,
                pool,
                options,
                seed=seed,
                progress=progress,
                step_texts=_step_texts(store, items, embeddings),
            )
        elif setting.style == "needs-context":
            outcome, entry["needs_context"] = _needs_context(
                setting, store, in_range, pool, options, seed=seed, progress=progress
            )
        elif setting.style == "debias" and setting.budget == "auto" and clustering is not None:
            outcome, entry["auto_budget"] = _auto_budget(
                setting, drafts, pool, knn, clustering, seed=seed, progress=progress
            )
        else:
            outcome = _sample(
                setting,
                drafts,
                pool,
                knn,
                rng,
                clustering=clustering,
                budget=int(setting.budget) if setting.style == "debias" and setting.budget is not None else None,
                min_distance=min_distance,
                progress=progress,
            )
        questions = [outcome.made[i] for i in sorted(outcome.made)]
        if setting.style == "recipeqa":
            for question in questions:
                question.meta["min_distance"] = round(min_distance, 6)
        balance_answer_positions(questions, rng, per_choice=_PER_CHOICE)
        sets[setting.name] = questions
        if setting.style in ("debias", "adversarial"):
            entry["drafted"] = len(drafts)
            entry["yield"] = round(len(questions) / max(1, len(drafts)), 4)
        entry = {
            "questions": len(questions),
            "procedures": len({q.procedure_id for q in questions}),
            "skipped_procedures": dict(sorted((k, v) for k, v in skipped_procedures.items() if v)),
            "skipped_questions": dict(sorted(outcome.skipped_questions.items())),
            **entry,
        }
        if setting.style == "recipeqa":
            entry["min_distance"] = round(min_distance, 4)
        elif setting.style != "adversarial":
            entry["knn_k"] = knn_k
        if outcome.budget is not None:
            entry["budget"] = outcome.budget.summary()
        counts[setting.name] = entry
    return sets, counts
