"""Question sets as the probes see them: items, answers, procedures, contexts and item vectors.

An :class:`AuditSet` is built from a procbench question-set folder (:func:`load_question_set`), from a
RecipeQA JSON file (:func:`load_recipeqa`, one set per task in the file), or directly from lists (tests,
other tools). Items are identified by *keys*: a step key ``PROCEDURE_ID#INDEX`` (textual-cloze titles
through ``meta.question_keys`` / ``meta.choice_keys``), an image id, or, when no key is known, the item
itself. Vectors come from the store's frozen embeddings, or are computed for sets that have no store:
the ``hashed`` text encoder fitted on the file's own texts, the ``colour-layout`` descriptor for image
files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from procbench.errors import BadInput, InputFileNotFound, ProcbenchError
from procbench.formats.recipeqa import PLACEHOLDER, context_text, read_entries
from procbench.store import Store

__all__ = [
    "TASK_KINDS",
    "ArrayVectors",
    "AuditSet",
    "ItemIndex",
    "TaskKind",
    "VectorLookup",
    "default_report_path",
    "load_question_set",
    "load_recipeqa",
    "load_sets",
]


@dataclass(frozen=True)
class TaskKind:
    """How a task's questions are built, as far as the probes care.

    Attributes:
        items: ``text`` (choices are texts), ``image`` (image ids) or ``step`` (step keys).
        field: the store embedding field holding the items' vectors (None: no vectors needed).
        ordering: every choice is an order of items rather than one item.
        multiple_choice: one of several alternative choices is correct.
        label_choices: the choices are fixed labels (e.g. ``inverted`` / ``in order``), not items.
        coherence: the answer is the odd one out among the choices (visual coherence).
    """

    items: str
    field: str | None
    ordering: bool = False
    multiple_choice: bool = True
    label_choices: bool = False
    coherence: bool = False


TASK_KINDS: dict[str, TaskKind] = {
    "textual-cloze": TaskKind("text", "step_title"),
    "visual-cloze": TaskKind("image", "image"),
    "visual-coherence": TaskKind("image", "image", coherence=True),
    "visual-ordering": TaskKind("image", "image", ordering=True),
    "sequencing": TaskKind("step", None, ordering=True, multiple_choice=False),
    "pair-order": TaskKind("step", None, label_choices=True),
}


def task_kind(task: str, choices: Sequence[Sequence[Any]]) -> TaskKind:
    """The kind of ``task``; for a task procbench does not know, inferred from the shape of its choices."""
    known = TASK_KINDS.get(task.replace("_", "-"))
    if known is not None:
        return known
    first = next((c for cs in choices for c in cs), None)
    return TaskKind("unknown", None, ordering=isinstance(first, (list, tuple)))


class VectorLookup(Protocol):
    """Anything that maps item keys to vectors (``procbench.features.ItemVectors`` is one)."""

    def get(self, keys: Sequence[str | None]) -> np.ndarray:
        """``(len(keys), D)`` float32, zero rows for unknown keys."""
        ...


class ArrayVectors:
    """Vectors held in memory, by key; unknown keys get zero rows."""

    def __init__(self, keys: Sequence[str], matrix: np.ndarray, *, encoder: str = "") -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.positions = {k: i for i, k in enumerate(keys)}
        self.encoder = encoder
        self.missing = 0

    @property
    def dim(self) -> int:
        """Vector length."""
        return int(self.matrix.shape[1])

    def get(self, keys: Sequence[str | None]) -> np.ndarray:
        """``(len(keys), D)`` float32; zero rows for None or unknown keys (counted in ``missing``)."""
        rows = np.array([self.positions.get(k, -1) if k is not None else -1 for k in keys], dtype=np.int64)
        out = np.zeros((len(keys), self.dim), dtype=np.float32)
        found = rows >= 0
        self.missing += int((~found).sum())
        out[found] = self.matrix[rows[found]]
        return out


@dataclass
class ItemIndex:
    """Items of a set as integer ids into ``keys``.

    Attributes:
        keys: ``(u,)`` distinct item keys.
        question: ``(n, Lq)`` item ids of the question items; -1 for the placeholder and padding.
        has_question: ``(n,)`` whether the question shows any item at all (coherence/ordering may not).
        choice: ``(n, k, L)`` item ids of each choice (``L`` = 1 unless choices are orders); -1 padding.
        valid: ``(n, k)`` whether the choice exists (questions may have fewer than ``k``).
    """

    keys: list[str]
    question: np.ndarray
    has_question: np.ndarray
    choice: np.ndarray
    valid: np.ndarray


@dataclass(eq=False)
class AuditSet:
    """One question set to audit (``n`` questions), as plain lists and arrays.

    ``questions[i]`` are the displayed question items (``@placeholder`` marks the blank), ``choices[i]`` the
    choices (items, or orders of items), ``answers[i]`` the index of the correct choice.
    ``question_keys`` / ``choice_keys`` identify the items (default: the items themselves); ``contexts[i]``
    is the context text (text tasks; None when unknown); ``vectors`` looks keys up (None when there are
    no embeddings, with ``vectors_note`` saying why).
    """

    name: str
    task: str
    procedure_ids: list[str]
    questions: list[list[str]]
    choices: list[list[Any]]
    answers: np.ndarray
    question_keys: list[list[str | None]] | None = None
    choice_keys: list[list[Any]] | None = None
    contexts: list[str] | None = None
    vectors: VectorLookup | None = None
    vectors_note: str | None = None
    encoder: str = ""
    source: Path | None = None
    kind: TaskKind = field(init=False)
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.answers = np.asarray(self.answers, dtype=np.int64).reshape(-1)
        n = len(self.answers)
        if not (len(self.procedure_ids) == len(self.questions) == len(self.choices) == n):
            raise ValueError("procedure_ids, questions, choices and answers must have one entry per question")
        self.kind = task_kind(self.task, self.choices)

    def __len__(self) -> int:
        return len(self.answers)

    # -- keys --------------------------------------------------------------------------------------------
    def qkeys(self) -> list[list[str | None]]:
        """Key of every question item (None for the placeholder)."""
        if self.question_keys is not None:
            return [
                [None if item == PLACEHOLDER else key for item, key in zip(items, keys, strict=False)]
                for items, keys in zip(self.questions, self.question_keys, strict=True)
            ]
        return [[None if item == PLACEHOLDER else item for item in items] for items in self.questions]

    def ckeys(self) -> list[list[Any]]:
        """Key of every choice (a list of keys for orders)."""
        if self.choice_keys is not None:
            return self.choice_keys
        return self.choices

    def display(self) -> dict[str, str]:
        """Item key -> how the item reads (the title for textual items, else the key)."""
        cached = self._cache.get("display")
        if cached is None:
            cached = {}
            if self.choice_keys is not None and not self.kind.ordering:
                for items, keys in zip(self.choices, self.choice_keys, strict=True):
                    for item, key in zip(items, keys, strict=False):
                        if key is not None:
                            cached.setdefault(str(key), str(item))
            self._cache["display"] = cached
        return cached  # type: ignore[no-any-return]

    # -- encoded views -------------------------------------------------------------------------------------
    def index(self) -> ItemIndex:
        """Item ids of every question and choice (computed once)."""
        cached = self._cache.get("index")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        positions: dict[str, int] = {}

        def pid(key: Any) -> int:
            if key is None:
                return -1
            return positions.setdefault(str(key), len(positions))

        qkeys = self.qkeys()
        ckeys = self.ckeys()
        n = len(self)
        lq = max((len(q) for q in qkeys), default=0) or 1
        k = max((len(c) for c in ckeys), default=0) or 1
        ordering = self.kind.ordering
        length = max((len(c) for cs in ckeys for c in cs), default=1) if ordering else 1
        question = np.full((n, lq), -1, dtype=np.int64)
        has_question = np.zeros(n, dtype=bool)
        choice = np.full((n, k, max(1, length)), -1, dtype=np.int64)
        valid = np.zeros((n, k), dtype=bool)
        for i in range(n):
            items = self.questions[i]
            has_question[i] = len(items) > 0
            for j, key in enumerate(qkeys[i]):
                question[i, j] = pid(key)
            for j, key in enumerate(ckeys[i]):
                valid[i, j] = True
                if ordering:
                    for t, part in enumerate(key):
                        choice[i, j, t] = pid(part)
                else:
                    choice[i, j, 0] = pid(key)
        cached = ItemIndex(list(positions), question, has_question, choice, valid)
        self._cache["index"] = cached
        return cached

    def item_vectors(self) -> tuple[np.ndarray, np.ndarray] | str:
        """``((u, D) float32 vectors of every item key, (u,) found mask)``, or why there are none."""
        cached = self._cache.get("vectors")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        if self.vectors is None:
            result: tuple[np.ndarray, np.ndarray] | str = self.vectors_note or "the set has no item embeddings"
        else:
            keys = self.index().keys
            try:
                matrix = np.asarray(self.vectors.get(keys), dtype=np.float32)
            except ProcbenchError as exc:
                result = f"no item embeddings: {exc}"
            else:
                found = np.linalg.norm(matrix, axis=1) > 0 if len(keys) else np.zeros(0, dtype=bool)
                result = (matrix, found) if found.any() else "none of the set's items has an embedding"
        self._cache["vectors"] = result
        return result


# -- loading procbench question sets ---------------------------------------------------------------------
def _open_store(store: Store | str | Path | None) -> Store | None:
    if store is None or isinstance(store, Store):
        return store
    path = Path(store)
    return Store.open(path) if (path / "store.json").is_file() else None


def _store_of(folder: Path) -> Store | None:
    """The store a set folder ``STORE/questions/TASK/SETTING`` lives in, if it does."""
    try:
        root = folder.resolve().parents[2]
    except IndexError:
        return None
    if folder.resolve().parent.parent.name == "questions" and (root / "store.json").is_file():
        return Store.open(root)
    return None


def _item_vectors(store: Store, fieldname: str) -> tuple[VectorLookup | None, str | None, str]:
    from procbench.features import ItemVectors

    vectors = ItemVectors(store, fieldname)
    try:
        encoder = vectors.encoder
    except ProcbenchError as exc:
        return None, f"no {fieldname} embeddings in the store ({exc}); run `procbench embed`", ""
    return vectors, None, f"{fieldname}.{encoder}"


def fitted_text_vectors(
    items: Iterable[str], corpus: Iterable[str], *, seed: int, keys: Iterable[str | None] | None = None
) -> tuple[VectorLookup | None, str | None, str]:
    """Vectors of ``items`` from the ``hashed`` encoder fitted on ``corpus`` and the items themselves, looked
    up by ``keys`` (aligned with ``items``; default: the items themselves)."""
    from procbench.embed.hashed import HashedParams, HashedTextEncoder

    texts = [str(t) for t in items]
    by_key: dict[str, str] = {}
    for key, text in zip(texts if keys is None else keys, texts, strict=True):
        if key is not None and text != PLACEHOLDER:
            by_key.setdefault(str(key), text)
    unique = sorted(set(by_key.values()))
    try:
        encoder = HashedTextEncoder.fit(
            [*corpus, *unique], params=HashedParams(dim=128, sample_size=30_000, seed=seed)
        )
    except BadInput as exc:
        return None, f"cannot fit a text encoder on this set: {exc}", ""
    matrix = encoder.encode(unique, batch_size=4096)
    row = {text: i for i, text in enumerate(unique)}
    rows = np.array([row[text] for text in by_key.values()], dtype=np.int64)
    vectors = ArrayVectors(list(by_key), matrix[rows] if len(rows) else matrix, encoder="hashed")
    return vectors, None, f"hashed (fitted on the set, {encoder.dim}-d)"


def _store_contexts(store: Store, procedure_ids: list[str], contexts: list[list[int]]) -> list[str]:
    import pyarrow as pa
    import pyarrow.compute as pc

    from procbench.store.views import kept_steps

    steps = kept_steps(store, ["procedure_id", "index", "text"])
    steps = steps.filter(pc.is_in(steps["procedure_id"], value_set=pa.array(sorted(set(procedure_ids)))))
    text = {(r["procedure_id"], r["index"]): r["text"] or "" for r in steps.to_pylist()}
    return [" ".join(text.get((p, i), "") for i in idx) for p, idx in zip(procedure_ids, contexts, strict=True)]


def _json_contexts(path: Path, qids: list[str]) -> list[str] | None:
    if not path.is_file():
        return None
    try:
        entries = read_entries(path)
    except (OSError, BadInput):
        return None
    by_qid = {str(e.get("qid")): context_text(e) for e in entries if isinstance(e, dict)}
    return [by_qid.get(q, "") for q in qids]


def _resolve_folder(spec: str | Path, store: Store | None) -> Path:
    path = Path(spec)
    if path.is_dir():
        return path
    if store is not None:
        candidate = store.root / "questions" / str(spec)
        if candidate.is_dir():
            return candidate
    where = f" in {store.root / 'questions'}" if store is not None else " (no store given: use --store)"
    raise InputFileNotFound(f"no question set {str(spec)!r}: give a set folder, or TASK/SETTING{where}")


def load_question_set(
    spec: Any, *, store: Store | str | Path | None = None, seed: int = 0, name: str | None = None
) -> AuditSet:
    """Read a procbench question set: a ``QuestionSet``, a set folder, or ``TASK/SETTING`` inside ``store``.

    Vectors come from the store the folder lives in (else ``store``): ``step_title`` embeddings of the
    textual-cloze step keys, ``image`` embeddings of image ids. Text sets without step keys (or without a
    store holding title embeddings) fall back to the ``hashed`` encoder fitted on the set's own texts.

    Raises:
        InputFileNotFound: no such set.
        BadInput: the folder holds no question parquet files.
    """
    from procbench.generate.qset import QuestionSet

    given = _open_store(store)
    folder = spec.path if isinstance(spec, QuestionSet) else _resolve_folder(spec, given)
    qset = spec if isinstance(spec, QuestionSet) else QuestionSet(folder)
    if not any(folder.glob("*.parquet")):
        raise BadInput(f"{folder} holds no question parquet files (train/val/test.parquet)")
    home = _store_of(folder) or given
    table = qset.table()
    n = table.num_rows
    procedure_ids = [str(p) for p in table["procedure_id"].to_pylist()]
    questions = [list(q or []) for q in table["question"].to_pylist()]
    choices = [list(c or []) for c in table["choices"].to_pylist()]
    answers = np.asarray(table["answer"].to_pylist(), dtype=np.int64) if n else np.zeros(0, dtype=np.int64)
    task = str(table["task"][0]) if n else qset.task
    kind = task_kind(task, choices)
    question_keys = choice_keys = None
    if "meta" in table.column_names and n:
        meta_fields = {f.name for f in table.schema.field("meta").type}
        if {"question_keys", "choice_keys"} <= meta_fields:
            meta = table["meta"].combine_chunks()
            qk = meta.field("question_keys").to_pylist()
            ck = meta.field("choice_keys").to_pylist()
            if all(a is not None for a in qk) and all(b is not None for b in ck):
                question_keys, choice_keys = qk, ck
    contexts = None
    if kind.items == "text" and n:
        context_idx = [list(c or []) for c in table["context"].to_pylist()]
        if home is not None:
            contexts = _store_contexts(home, procedure_ids, context_idx)
        else:
            contexts = _json_contexts(folder / "recipeqa.json", [str(q) for q in table["qid"].to_pylist()])
    vectors: VectorLookup | None = None
    note: str | None = None
    encoder = ""
    if kind.field is None:
        note = "the task's choices need no embeddings"
    elif home is None:
        note = f"no store to read {kind.field} embeddings from: pass --store"
    elif kind.items != "text" or question_keys is not None:
        vectors, note, encoder = _item_vectors(home, kind.field)
    if vectors is None and kind.items == "text" and n:
        # titles without step keys, or a store without title embeddings: embed the set's own texts
        items = [x for q in questions for x in q] + [x for c in choices for x in c]
        keys = None
        if question_keys is not None and choice_keys is not None:
            aligned = all(len(a) == len(b) for a, b in zip(questions, question_keys, strict=True))
            aligned &= all(len(a) == len(b) for a, b in zip(choices, choice_keys, strict=True))
            if aligned:
                keys = [k for ks in question_keys for k in ks] + [k for ks in choice_keys for k in ks]
            else:  # keys that do not line up with the items: identify items by their text
                question_keys = choice_keys = None
        vectors, note, encoder = fitted_text_vectors(items, contexts or [], seed=seed, keys=keys)
    return AuditSet(
        name=name or f"{task}/{folder.name}",
        task=task,
        procedure_ids=procedure_ids,
        questions=questions,
        choices=choices,
        answers=answers,
        question_keys=question_keys,
        choice_keys=choice_keys,
        contexts=contexts,
        vectors=vectors,
        vectors_note=note,
        encoder=encoder,
        source=folder,
    )


# -- loading RecipeQA JSON -------------------------------------------------------------------------------
def _image_vectors(
    names: list[str], *, store: Store | None, images: Path | None, base: Path
) -> tuple[VectorLookup | None, str | None, str]:
    """Vectors of image names: the store's image embeddings by id (the file stem), else the files themselves."""
    unique = sorted(set(names))
    matrix = np.zeros((0, 0), dtype=np.float32)
    found = np.zeros(len(unique), dtype=bool)
    encoders = []
    if store is not None:
        lookup, note, encoder = _item_vectors(store, "image")
        if lookup is not None:
            matrix = np.asarray(lookup.get([Path(n).stem for n in unique]), dtype=np.float32)
            found = np.linalg.norm(matrix, axis=1) > 0
            encoders.append(encoder)
    roots = [images] if images is not None else [base, base / "images"]
    if store is not None:
        roots.append(store.root / "images")
    todo = [i for i in range(len(unique)) if not found[i]]
    files = {}
    for i in todo:
        for root in roots:
            if root is not None and (root / unique[i]).is_file():
                files[i] = root / unique[i]
                break
    if files:
        from PIL import Image

        from procbench.embed.colour import ColourLayoutEncoder

        colour = ColourLayoutEncoder()
        if matrix.shape[1] not in (0, colour.dim):
            return (
                (ArrayVectors(unique, matrix, encoder=encoders[0]), None, encoders[0])
                if found.any()
                else (None, "image embeddings and files disagree in dimension", "")
            )
        if matrix.shape[1] == 0:
            matrix = np.zeros((len(unique), colour.dim), dtype=np.float32)
        for i, path in files.items():
            try:
                with Image.open(path) as im:
                    matrix[i] = colour.encode([im.convert("RGB")], batch_size=1)[0]
            except OSError:
                continue
        encoders.append("colour-layout (image files)")
    if not matrix.size or not np.linalg.norm(matrix, axis=1).any():
        where = str(images) if images is not None else f"{base} or {base / 'images'}"
        return (
            None,
            f"no image embeddings: the images are neither in a store (--store) nor under {where} (--images)",
            "",
        )
    return ArrayVectors(unique, matrix, encoder=" + ".join(encoders)), None, " + ".join(encoders)


def load_recipeqa(
    path: str | Path,
    *,
    store: Store | str | Path | None = None,
    images: str | Path | None = None,
    seed: int = 0,
) -> list[AuditSet]:
    """Read a RecipeQA JSON file (``{"data": [...]}``) as one :class:`AuditSet` per task it holds.

    Text items (textual cloze) get vectors from the ``hashed`` encoder fitted on the file's texts; image
    items from the store's image embeddings (by file stem, as procbench writes them) or, failing that,
    from the image files under ``images`` (default: next to the JSON file) with ``colour-layout``.

    Raises:
        InputFileNotFound: no such file.
        BadInput: not RecipeQA JSON.
    """
    path = Path(path)
    if not path.is_file():
        raise InputFileNotFound(f"no such RecipeQA JSON file: {path}")
    entries = read_entries(path)
    by_task: dict[str, list[dict[str, Any]]] = {}
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("choice_list"), list):
            raise BadInput(f"{path}: entry {number} is not a RecipeQA question (no 'choice_list')")
        task = str(entry.get("task") or "unknown").replace("_", "-")
        by_task.setdefault(task, []).append(entry)
    home = _open_store(store) or (_store_of(path.parent) if path.name == "recipeqa.json" else None)
    in_set = path.name == "recipeqa.json" and path.parent.parent.name
    label = f"{path.parent.parent.name}/{path.parent.name}" if in_set else path.stem
    sets = []
    for task, rows in by_task.items():
        try:
            answers = np.asarray([int(e["answer"]) for e in rows], dtype=np.int64)
        except (KeyError, TypeError, ValueError) as exc:
            raise BadInput(f"{path}: a {task} question has no integer 'answer' ({exc})") from exc
        procedure_ids = [str(e.get("recipe_id", "")) for e in rows]
        questions = [[str(x) for x in e.get("question") or []] for e in rows]
        choices = [[[str(x) for x in c] if isinstance(c, list) else str(c) for c in e["choice_list"]] for e in rows]
        kind = task_kind(task, choices)
        contexts = [context_text(e) for e in rows]
        items = [x for q in questions for x in q if x != PLACEHOLDER]
        items += [x for cs in choices for c in cs for x in (c if isinstance(c, list) else [c])]
        if kind.items == "text" or (kind.items == "unknown" and not kind.ordering):
            vectors, note, encoder = fitted_text_vectors(items, contexts, seed=seed)
        else:
            vectors, note, encoder = _image_vectors(
                items, store=home, images=Path(images) if images is not None else None, base=path.parent
            )
        name = label if len(by_task) == 1 and in_set else f"{label}:{task}"
        sets.append(
            AuditSet(
                name=name,
                task=task,
                procedure_ids=procedure_ids,
                questions=questions,
                choices=choices,
                answers=answers,
                contexts=contexts if kind.items != "image" else None,
                vectors=vectors,
                vectors_note=note,
                encoder=encoder,
                source=path,
            )
        )
    return sets


def load_sets(
    specs: Sequence[Any],
    *,
    format: str = "procbench",
    store: Store | str | Path | None = None,
    images: str | Path | None = None,
    seed: int = 0,
) -> list[AuditSet]:
    """Every set named by ``specs`` (folders, ``TASK/SETTING``, or RecipeQA JSON files with ``format="recipeqa"``).

    Raises:
        BadInput: unknown format, or a spec that names no set.
    """
    if format not in ("procbench", "recipeqa"):
        raise BadInput(f"--format takes 'procbench' or 'recipeqa', not {format!r}")
    sets: list[AuditSet] = []
    for spec in specs:
        if isinstance(spec, AuditSet):
            sets.append(spec)
        elif format == "recipeqa":
            sets.extend(load_recipeqa(spec, store=store, images=images, seed=seed))
        else:
            sets.append(load_question_set(spec, store=store, seed=seed))
    return sets


def default_report_path(sets: Sequence[AuditSet]) -> Path | None:
    """Where ``audit.json`` goes by default: inside the set folder for one set, else the sets' common folder."""
    import os

    folders = [(s.source if s.source.is_dir() else s.source.parent) for s in sets if s.source is not None]
    if not folders:
        return None
    unique = sorted({f.resolve() for f in folders})
    base = unique[0] if len(unique) == 1 else Path(os.path.commonpath([str(f) for f in unique]))
    return base / "audit.json"
