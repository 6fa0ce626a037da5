"""Textual items, the :class:`Pool` of item rows (one per embedded step item) and the :class:`Draft` s (windows and
placeholders seeded by (seed, procedure id)) that every setting reads, so settings differ only in their negatives."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from procbench.errors import BadInput
from procbench.rng import stream
from procbench.sentences import first_sentence
from procbench.store import Store
from procbench.store.views import kept_steps
from procbench.tasks import TEXTUAL_ITEMS

if TYPE_CHECKING:
    from procbench.embed import Embeddings

__all__ = [
    "ITEM_FIELDS",
    "N_NEGATIVES",
    "N_QUESTION",
    "DRAFTS",
    "Draft",
    "Pool",
    "StepRows",
    "item_embeddings",
    "make_drafts",
    "make_pool",
    "normalise_title",
    "question_vectors",
    "read_items",
    "stable_hash",
    "step_text_embeddings",
]

N_QUESTION = 4
N_NEGATIVES = 3
#: A procedure's drafts (its questions' windows).
DRAFTS = stream("textual.drafts")
_PUNCT = re.compile(r"[^\w\s]+")
#: A procedure's steps as ``(index, display item, normalised item)``.
StepRows = list[tuple[int, str | None, str | None]]


def normalise_title(title: str | None) -> str | None:
    """How titles are compared: NFKC, casefolded, punctuation dropped, whitespace collapsed; None if empty."""
    if title is None:
        return None
    text = " ".join(_PUNCT.sub(" ", unicodedata.normalize("NFKC", title).casefold()).split())
    return text or None


def stable_hash(text: str) -> int:
    """A 64-bit hash of ``text`` that is the same in every process (seeds per procedure id)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


@dataclass(frozen=True)
class Draft:
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
class Pool:
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


def read_items(store: Store, items: str = "title") -> tuple[dict[str, StepRows], str]:
    """Per procedure, its steps as ``(index, display item, normalised item)`` for ``items`` ``title``, ``text``,
    ``first-sentence`` or ``action``, and where items came from."""
    if items == "action":
        from procbench.extract.pipeline import step_actions

        actions = step_actions(store)
        shown = dict(zip(actions["key"].to_pylist(), actions["payload"].to_pylist(), strict=True))
        rows: dict[str, StepRows] = {}
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
    steps: dict[str, StepRows] = {}
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


def make_pool(embeddings: Embeddings, steps: dict[str, StepRows], splits: Mapping[str, str] | None) -> Pool:
    shown = {f"{pid}#{index}": (title, norm) for pid, rows in steps.items() for index, title, norm in rows}
    keys = embeddings.keys.to_pylist()
    found = [shown.get(key, (None, None)) for key in keys]
    texts = [title if norm is not None else None for title, norm in found]
    norms = [norm for _, norm in found]
    procedure_ids = embeddings.procedure_ids.to_pylist()
    code = {p: i for i, p in enumerate(sorted({p for p in procedure_ids if p is not None}))}
    procedures = np.array([code.get(p, -1) for p in procedure_ids], dtype=np.int64)
    if splits is None:
        n_groups = 1
        group_of = dict.fromkeys(steps, 0)
        groups = np.zeros(len(keys), dtype=np.int64)
    else:
        names = {name: i for i, name in enumerate(sorted(set(splits.values())))}
        n_groups = len(names)
        group_of = {pid: names[split] for pid, split in splits.items()}
        groups = np.array([group_of.get(p, -1) for p in procedure_ids], dtype=np.int64)
    group_rows = [np.flatnonzero(groups == g) for g in range(n_groups)]
    positions = {k: i for i, k in enumerate(keys)}
    ids: dict[str, int] = {}
    norm_codes = np.array([ids.setdefault(n, len(ids)) if n is not None else -1 for n in norms], dtype=np.int64)
    counts = np.bincount(norm_codes[norm_codes >= 0], minlength=len(ids))
    return Pool(
        embeddings=embeddings,
        keys=keys,
        texts=texts,
        norms=norms,
        norm_codes=norm_codes,
        norm_counts=counts,
        procedures=procedures,
        procedure_code=code,
        positions=positions,
        groups=groups,
        group_rows=group_rows,
        group_of=group_of,
    )


def make_drafts(
    pid: str,
    rows: StepRows,
    *,
    per_procedure: int,
    replace: bool,
    seed: int,
    hide_window: bool = False,
    last: bool = False,
) -> list[Draft]:
    """Windows of consecutive titled steps of one procedure whose answer title is not shown too (the first draw the
    same with or without ``replace``); ``hide_window``: the context leaves out the window; ``last``: next-action."""
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
    rng = DRAFTS.rng(seed, stable_hash(pid))
    answers = sorted(by_answer)
    order = rng.permutation(len(answers))
    count = per_procedure if replace else min(per_procedure, len(answers))
    context = [index for index, _, _ in rows]
    drafts = []
    for number in range(count):
        pick = int(order[number]) if number == 0 or not replace else int(rng.integers(len(answers)))
        windows = by_answer[answers[pick]]
        start, position = windows[int(rng.integers(len(windows)))]
        window = rows[start : start + length]
        if last:
            shown = context[: start + position]
        else:
            shown = context[:start] + context[start + length :] if hide_window else context
        keys = [f"{pid}#{index}" for index, _, _ in window]
        titles = [str(title) for _, title, _ in window]
        norms = [str(norm) for _, _, norm in window]
        drafts.append(
            Draft(pid, number, n, context=shown, start=start, keys=keys, titles=titles, norms=norms, position=position)
        )
    return drafts


def question_vectors(drafts: list[Draft], pool: Pool) -> tuple[np.ndarray, np.ndarray]:
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


def item_embeddings(store: Store, items: str) -> Embeddings:
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


def step_text_embeddings(store: Store, items: str, embeddings: Embeddings) -> Embeddings | None:
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
