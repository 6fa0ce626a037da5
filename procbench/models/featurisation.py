"""Question sets as arrays over the store's frozen embeddings: what every model reads.

A question set is turned into lookup tables of vectors (unique items, context steps, procedure titles) and
integer index arrays into them, so a 20,000-question set costs a few megabytes of indices, not a copy of
its vectors per question. Row 0 of every table is a zero vector used for padding; masks tell real
positions from padding.

Items resolve by task (DESIGN §5): textual-cloze items are titles whose step keys sit in ``meta``
(``question_keys``, ``choice_keys``) and read the ``step_title`` embedding; visual items are image ids
(``image``); sequencing and pair-order items are step keys read as text (``step_title`` + ``step_text``),
image (the step's first embedded image) or both. The context is the step texts of ``context`` (plus the
step images with ``context="both"``).

When a question lists no items and its choices are single items (visual coherence: the four images are
the choices), the choices as shown are also the question. For every choice the featuriser builds the
*query* the context-reading scorers compare with the context (paper 001 §3.4 and App. C): the question
with the candidate in the placeholder (cloze), the question without the candidate (coherence: the other
three images), or the candidate order itself (ordering).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from procbench.errors import BadInput
from procbench.features import ItemVectors, step_key
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.models.registry import task_family
from procbench.qsets.files import QuestionSet
from procbench.store import Store
from procbench.tasks import get_task

__all__ = ["FeatureConfig", "Featurised", "featurise", "qset_fingerprint", "step_pairs", "store_of"]

_ITEM_PARTS = {
    "text": ("step_title", "step_text"),
    "image": ("step_image",),
    "both": ("step_title", "step_text", "step_image"),
}


@dataclass(frozen=True)
class FeatureConfig:
    """Which frozen features a model reads.

    Attributes:
        context: MC tasks: ``text`` (step texts, as paper 001) or ``both`` (step texts + step images).
        features: sequencing / pair-order items: ``text``, ``image`` or ``both``.
        max_context: context steps kept per question (the first ones).
    """

    context: str = "text"
    features: str = "both"
    max_context: int = 25

    def __post_init__(self) -> None:
        if self.context not in ("text", "both"):
            raise BadInput(f"context takes 'text' or 'both', not {self.context!r}")
        if self.features not in _ITEM_PARTS:
            raise BadInput(f"features takes 'text', 'image' or 'both', not {self.features!r}")
        if self.max_context < 1:
            raise BadInput("max_context must be at least 1")


@dataclass
class Featurised:
    """A question set as index arrays into frozen vector tables (N questions, K choices).

    Attributes:
        items: ``(M, D)`` float32 item vectors; row 0 is zeros.
        contexts: ``(Mc, Dc)`` float32 context-step vectors; row 0 is zeros.
        procedures: ``(Mp, Dp)`` float32 procedure-title vectors; row 0 is zeros.
        context: ``(N, Lc)`` int64 into ``contexts``; ``context_mask`` marks real steps.
        question: ``(N, Lq)`` int64 into ``items``; ``question_mask`` marks real positions (the placeholder
            included), ``placeholder`` marks the blank.
        choices: ``(N, K, Lch)`` int64 into ``items`` (MC only; ``Lch`` is 1 unless choices are orders);
            ``choice_mask``; ``choice_valid`` ``(N, K)`` marks real choices.
        query: ``(N, K, Lu)`` int64 into ``items``, left-aligned; ``query_mask``.
        procedure: ``(N,)`` int64 into ``procedures``.
        answer: ``(N,)`` int64 (pair-order: the label; sequencing: 0).
        order: ``(N, Lq)`` int64: question positions in the order of the answer's reference, -1 padded
            (sequencing only).
        keys: the question's item keys per question.
        references: per question, the acceptable orders as lists of question positions (sequencing).
    """

    task: str
    family: str
    qset: str
    path: Path
    qids: list[str]
    splits: np.ndarray
    items: np.ndarray
    contexts: np.ndarray
    procedures: np.ndarray
    context: np.ndarray
    context_mask: np.ndarray
    question: np.ndarray
    question_mask: np.ndarray
    placeholder: np.ndarray
    choices: np.ndarray
    choice_mask: np.ndarray
    choice_valid: np.ndarray
    query: np.ndarray
    query_mask: np.ndarray
    procedure: np.ndarray
    answer: np.ndarray
    order: np.ndarray
    keys: list[list[str | None]]
    references: list[list[list[int]]]
    missing: dict[str, int] = field(default_factory=dict)
    encoders: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.qids)

    def rows(self, split: str) -> np.ndarray:
        """``(n,)`` int64 indices of the questions of ``split``."""
        return np.flatnonzero(self.splits == split).astype(np.int64)

    @property
    def dims(self) -> dict[str, int]:
        """Vector sizes the model's input layers are built for."""
        return {"item": self.items.shape[1], "context": self.contexts.shape[1], "procedure": self.procedures.shape[1]}


def store_of(qset: QuestionSet) -> Store:
    """The store a question set lives in (``STORE/questions/TASK/SETTING``)."""
    root = qset.path.resolve().parents[2]
    return Store.open(root)


def qset_fingerprint(qset: QuestionSet) -> str:
    """sha256 over the set's split files: a run remembers which exact questions it was trained on."""
    digest = hashlib.sha256()
    for name in ("train", "val", "test"):
        path = qset.path / f"{name}.parquet"
        if path.is_file():
            digest.update(name.encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


class _Lookup:
    """Vectors for keys of one kind (a tuple of parts, concatenated), gathered once into a table."""

    def __init__(self, vectors: _Vectors, parts: tuple[str, ...]) -> None:
        self.vectors = vectors
        self.parts = parts
        self.index: dict[Any, int] = {}

    def __call__(self, key: str | None) -> int:
        """Row of ``key`` in the table (1-based; None keys get their own zero row too)."""
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.index) + 1
        return found

    def table(self, *, with_vectors: bool = True) -> np.ndarray:
        keys = list(self.index)
        if not with_vectors:
            return np.zeros((len(keys) + 1, 0), np.float32)
        blocks = [self.vectors.part(p, keys) for p in self.parts]
        matrix = np.concatenate(blocks, axis=1) if blocks else np.zeros((len(keys), 0), np.float32)
        return np.concatenate([np.zeros((1, matrix.shape[1]), np.float32), matrix]).astype(np.float32)


class _Vectors:
    """The store's embeddings by part: step_title, step_text, step_image, image, procedure_title."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._fields: dict[str, ItemVectors] = {}
        self._step_images: dict[str, str] | None = None
        self.missing: dict[str, int] = {}
        #: Fields the store has no rows for (no step headlines, no stored images): they add no columns.
        self.absent: list[str] = []

    def has_rows(self, name: str) -> bool:
        """Whether the store has anything to embed in field ``name`` (e.g. any step headline)."""
        from procbench.embed.fields import field_table

        return bool(field_table(self.store, name).num_rows)

    def field(self, name: str) -> ItemVectors | None:
        """The field's vectors; None when the store has no rows for it (so nothing could be embedded)."""
        if name in self.absent:
            return None
        if name not in self._fields:
            vectors = ItemVectors(self.store, name)
            try:
                vectors.dim  # noqa: B018  (opens the file: a store without it fails here, clearly)
            except BadInput:
                if not self.has_rows(name):
                    self.absent.append(name)
                    return None
                raise
            self._fields[name] = vectors
        return self._fields[name]

    def step_images(self) -> dict[str, str]:
        """Step key -> the first of its images that has an embedding."""
        if self._step_images is None:
            from procbench.store.views import kept_steps

            images = self.field("image")
            self._step_images = {}
            if images is None:
                return self._step_images
            steps = kept_steps(self.store, ["procedure_id", "index", "image_ids"]).to_pylist()
            for row in steps:
                for image_id in row["image_ids"]:
                    if images.has(image_id):
                        self._step_images[step_key(row["procedure_id"], row["index"])] = image_id
                        break
        return self._step_images

    def part(self, part: str, keys: list[Any]) -> np.ndarray:
        if part == "step_image":
            images = self.step_images()
            field, lookup = "image", [images.get(k) if k is not None else None for k in keys]
        else:
            field, lookup = part, keys
        vectors = self.field(field)
        if vectors is None:
            return np.zeros((len(keys), 0), np.float32)
        before = vectors.missing
        out = vectors.get(lookup)
        self.missing[part] = self.missing.get(part, 0) + vectors.missing - before
        return out

    def encoders(self) -> dict[str, str]:
        return {name: v.encoder for name, v in sorted(self._fields.items())}


def _pad(rows: list[list[int]], width: int | None = None, fill: int = 0) -> tuple[np.ndarray, np.ndarray]:
    width = max([len(r) for r in rows] + [1]) if width is None else width
    out = np.full((len(rows), width), fill, np.int64)
    mask = np.zeros((len(rows), width), bool)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
        mask[i, : len(r)] = True
    return out, mask


def _pad3(rows: list[list[list[int]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = max([len(r) for r in rows] + [1])
    length = max([len(c) for r in rows for c in r] + [1])
    out = np.zeros((len(rows), k, length), np.int64)
    mask = np.zeros((len(rows), k, length), bool)
    valid = np.zeros((len(rows), k), bool)
    for i, r in enumerate(rows):
        for j, c in enumerate(r):
            out[i, j, : len(c)] = c
            mask[i, j, : len(c)] = True
            valid[i, j] = True
    return out, mask, valid


def _mc_keys(task: str, row: dict[str, Any]) -> tuple[list[str | None], list[list[str | None]]]:
    """Question and choice item keys of one MC question (textual-cloze: step keys from ``meta``)."""
    question, choices = row["question"], row["choices"]
    if get_task(task).items == "text":  # texts keyed by step in meta (textual cloze, next action)
        meta = row.get("meta") or {}
        q_keys, c_keys = meta.get("question_keys"), meta.get("choice_keys")
        if q_keys is None or c_keys is None or len(q_keys) != len(question) or len(c_keys) != len(choices):
            raise BadInput(f"{task} question {row['qid']} lacks meta.question_keys/choice_keys matching its items")
        keys = [None if item == PLACEHOLDER else key for item, key in zip(question, q_keys, strict=True)]
        return keys, [list(k) if isinstance(k, list) else [k] for k in c_keys]
    keys = [None if item == PLACEHOLDER else item for item in question]
    return keys, [list(c) if isinstance(c, list) else [c] for c in choices]


def _query(
    q_keys: list[str | None], q_rows: list[int], is_blank: list[bool], choice: list[int], key: Any
) -> list[int]:
    """The item rows the context is read against for one candidate (see the module docstring)."""
    if len(choice) > 1:
        return list(choice)
    if any(is_blank):
        return [choice[0] if blank else r for r, blank in zip(q_rows, is_blank, strict=True)]
    if key in q_keys:
        drop = q_keys.index(key)
        return [r for i, r in enumerate(q_rows) if i != drop]
    return [*q_rows, choice[0]]


@dataclass
class _Gathered:
    """Per question, the table rows its arrays are padded from (see :class:`Featurised`)."""

    context: list[list[int]] = field(default_factory=list)
    question: list[list[int]] = field(default_factory=list)
    placeholder: list[list[bool]] = field(default_factory=list)
    choices: list[list[list[int]]] = field(default_factory=list)
    query: list[list[list[int]]] = field(default_factory=list)
    keys: list[list[str | None]] = field(default_factory=list)
    references: list[list[list[int]]] = field(default_factory=list)
    order: list[list[int]] = field(default_factory=list)


def step_pairs(store: Store, procedures: set[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every kept step of ``procedures`` with both a text and a photo embedding: ``texts (n, Dt)``,
    ``photos (n, Di)`` (the step's first embedded image) and ``groups (n,)`` (the procedure's number)."""
    vectors = _Vectors(store)
    text = vectors.field("step_text")
    # step_images() walks the kept steps once, in order: its keys are the steps with an embedded photo
    owner = {key: key.rsplit("#", 1)[0] for key in vectors.step_images()}
    keys = [key for key, pid in owner.items() if pid in procedures and text is not None and text.has(key)]
    if not keys or text is None:
        return np.zeros((0, 0), np.float32), np.zeros((0, 0), np.float32), np.zeros(0, np.int64)
    _, numbers = np.unique(np.array([owner[key] for key in keys], dtype=object), return_inverse=True)
    return text.get(keys), vectors.part("step_image", keys), numbers.astype(np.int64)


def featurise(
    qset: QuestionSet, config: FeatureConfig | None = None, *, store: Store | None = None, vectors: bool = True
) -> Featurised:
    """Featurise every question of ``qset`` (all splits) from ``store``'s frozen embeddings.

    ``store`` defaults to the store the set lives in. Keys the store has no vector for become zero vectors
    and are counted in ``missing`` (by part), so coverage can be reported instead of failing. A field the
    store has no rows for at all (a corpus without step headlines, a store without stored images) adds no
    columns. With ``vectors=False`` only the structure is built (every vector table has 0 columns): what
    the chance reference needs, on a store that was never embedded.

    Raises:
        BadInput: an empty set, a field that has rows but was not embedded, or no item features at all.
    """
    config = config or FeatureConfig()
    store = store or store_of(qset)
    family = task_family(qset.task)
    table = qset.table()
    if table.num_rows == 0:
        raise BadInput(f"question set {qset.path} has no questions")
    rows = table.to_pylist()
    lookups = _Vectors(store)
    item_parts = _item_parts(qset, family, config)
    context_parts = ("step_text", "step_image") if config.context == "both" else ("step_text",)
    items = _Lookup(lookups, item_parts)
    contexts = _Lookup(lookups, context_parts)
    procedures = _Lookup(lookups, ("procedure_title",))

    gathered = _gather(rows, qset.task, family, config, items, contexts)
    context, context_mask = _pad(gathered.context)
    question, question_mask = _pad(gathered.question)
    placeholder = np.zeros_like(question_mask)
    for i, blanks in enumerate(gathered.placeholder):
        placeholder[i, : len(blanks)] = blanks
    choices, choice_mask, choice_valid = _pad3(gathered.choices)
    query, query_mask, _ = _pad3(gathered.query)
    order, _ = _pad(gathered.order, width=question.shape[1], fill=-1)
    procedure = np.array([procedures(r["procedure_id"]) for r in rows], np.int64)
    item_table = items.table(with_vectors=vectors)
    if vectors and item_table.shape[1] == 0:
        raise BadInput(_no_items_message(qset, family, config, item_parts))
    return Featurised(
        task=qset.task,
        family=family,
        qset=qset.name,
        path=qset.path,
        qids=[r["qid"] for r in rows],
        splits=np.array([r["split"] for r in rows], dtype=object),
        items=item_table,
        contexts=contexts.table(with_vectors=vectors),
        procedures=procedures.table(with_vectors=vectors),
        context=context,
        context_mask=context_mask,
        question=question,
        question_mask=question_mask,
        placeholder=placeholder,
        choices=choices,
        choice_mask=choice_mask,
        choice_valid=choice_valid,
        query=query,
        query_mask=query_mask,
        procedure=procedure,
        answer=np.array([r["answer"] for r in rows], np.int64),
        order=order,
        keys=gathered.keys,
        references=gathered.references,
        missing=dict(lookups.missing),
        encoders=lookups.encoders(),
    )


def _item_parts(qset: QuestionSet, family: str, config: FeatureConfig) -> tuple[str, ...]:
    """The embedding parts an item reads: MC text items the field of the set's items (step_title, action,
    ...), MC visual items the image; sequencing and pair-order items those ``config.features`` names."""
    if family == "mc":
        spec = get_task(qset.task)
        return (str(spec.field_for(qset.items)),) if spec.kind.items == "text" else ("image",)
    return _ITEM_PARTS[config.features]


def _gather(
    rows: list[dict[str, Any]], task: str, family: str, config: FeatureConfig, items: _Lookup, contexts: _Lookup
) -> _Gathered:
    """Every question's rows into the lookup tables: context steps, question items (0 for the blank),
    choices and their queries (MC), and reference orders (sequencing)."""
    out = _Gathered()
    for row in rows:
        pid = row["procedure_id"]
        out.context.append([contexts(step_key(pid, i)) for i in row["context"][: config.max_context]])
        q_keys, c_keys, shown = _question_items(task, family, row)
        is_blank = [item == PLACEHOLDER for item in shown]
        q_idx = [0 if blank else items(k) for k, blank in zip(q_keys, is_blank, strict=True)]
        out.question.append(q_idx)
        out.placeholder.append(is_blank)
        out.keys.append(q_keys)
        if family == "mc":
            c_idx = [[items(k) for k in c] for c in c_keys]
            out.choices.append(c_idx)
            out.query.append(
                [_query(q_keys, q_idx, is_blank, c, c_k[0]) for c, c_k in zip(c_idx, c_keys, strict=True)]
            )
        else:
            out.choices.append([])
            out.query.append([])
        if family == "sequencing":
            refs = _references(row, q_keys)
            out.references.append(refs)
            out.order.append(refs[row["answer"]])
        else:
            out.references.append([])
            out.order.append([])
    return out


def _question_items(
    task: str, family: str, row: dict[str, Any]
) -> tuple[list[str | None], list[list[str | None]], list[Any]]:
    """The question's item keys, its choices' item keys (MC) and its items as shown."""
    shown = list(row["question"])
    if family != "mc":
        return shown, [], shown
    q_keys, c_keys = _mc_keys(task, row)
    if not shown and c_keys and all(len(c) == 1 for c in c_keys):
        # coherence: the choices are the question's images, as shown (RecipeQA's layout)
        q_keys, shown = [c[0] for c in c_keys], [c[0] for c in c_keys]
    return q_keys, c_keys, shown


def _references(row: dict[str, Any], q_keys: list[str | None]) -> list[list[int]]:
    """A sequencing question's acceptable orders as lists of question positions, each checked to be an order
    of its items."""
    position = {k: i for i, k in enumerate(q_keys)}
    try:
        refs = [[position[k] for k in order] for order in row["choices"]]
    except (KeyError, TypeError) as exc:
        raise BadInput(
            f"sequencing question {row['qid']}: a reference order names an item the question does not hold ({exc})"
        ) from exc
    if any(sorted(r) != list(range(len(q_keys))) for r in refs):
        raise BadInput(f"sequencing question {row['qid']}: a reference is not an order of its items")
    return refs


def _no_items_message(qset: QuestionSet, family: str, config: FeatureConfig, item_parts: tuple[str, ...]) -> str:
    """Why a set has no item features, and what to do about it."""
    images = any("image" in part for part in item_parts)
    fix = "fetch its images (`procbench fetch-images`) and embed them" if images else "no step has that text"
    other = ", or use --features text" if family != "mc" and config.features != "text" else ""
    return f"{qset.name}: the store has nothing for its items ({', '.join(item_parts)}): {fix}{other}"
