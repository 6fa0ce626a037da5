"""Reading question sets for the audit: procbench set folders (:func:`load_question_set`) and RecipeQA
JSON files (:func:`load_recipeqa`, one set per task in the file)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable, VectorLookup, task_kind
from procbench.audit.vectors import fitted_text_vectors, image_vectors, store_vectors
from procbench.errors import BadInput, InputFileNotFound
from procbench.features import step_key
from procbench.formats.recipeqa import PLACEHOLDER, context_bodies, context_images, read_entries
from procbench.store import Store
from procbench.tasks import TASKS

__all__ = ["default_report_path", "load_question_set", "load_recipeqa", "load_sets", "set_store"]


def _check_answers(where: Path, answers: Any, choices: list[list[Any]]) -> None:
    """Every answer indexes one of its question's choices."""
    for number, (answer, options) in enumerate(zip(answers.tolist(), choices, strict=True), 1):
        if not 0 <= answer < len(options):
            raise BadInput(f"{where}: question {number} has answer {answer}, not one of its {len(options)} choices")


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


def set_store(folder: Path | None, store: Store | str | Path | None = None) -> Store | None:
    """The store a set folder lives in, else ``store`` (None when neither is a store)."""
    home = _store_of(folder) if folder is not None and folder.is_dir() else None
    return home or _open_store(store)


def _store_contexts(store: Store, procedure_ids: list[str], contexts: list[list[int]]) -> list[list[str]]:
    """The text of every context step of every question."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from procbench.store.views import kept_steps

    steps = kept_steps(store, ["procedure_id", "index", "text"])
    steps = steps.filter(pc.is_in(steps["procedure_id"], value_set=pa.array(sorted(set(procedure_ids)))))
    text = {(r["procedure_id"], r["index"]): r["text"] or "" for r in steps.to_pylist()}
    return [[text.get((p, i), "") for i in idx] for p, idx in zip(procedure_ids, contexts, strict=True)]


def _step_text_vectors(store: Store, encoder: str, items: str) -> tuple[VectorLookup | None, str | None]:
    """The store's ``step_text`` embeddings when they share a space with the items (made by ``encoder``)."""
    try:
        lookup, text_encoder = store_vectors(store, "step_text")
    except NotApplicable as exc:
        return None, f"no context reference: {exc}"
    if text_encoder.split(".", 1)[1] != encoder.split(".", 1)[1]:
        return None, (
            f"no context reference: {items} embeddings ({encoder}) and step_text embeddings ({text_encoder})"
            " are not in one space (embed both with the same encoder; for images, a CLIP model embeds both)"
        )
    return lookup, None


def _json_contexts(path: Path, qids: list[str]) -> list[list[str]] | None:
    """The body of every context step of every question, from the set's ``recipeqa.json``."""
    if not path.is_file():
        return None
    try:
        entries = read_entries(path)
    except (OSError, BadInput):
        return None
    by_qid = {str(e.get("qid")): context_bodies(e) for e in entries if isinstance(e, dict)}
    return [by_qid.get(q, []) for q in qids]


def _resolve_folder(spec: str | Path, store: Store | None) -> Path:
    path = Path(spec)
    if path.is_dir():
        return path
    if store is not None:
        candidate = store.root / "questions" / str(spec)
        if candidate.is_dir() and store.contains(candidate):  # a link out of the store is not followed
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
    from procbench.qsets.files import QuestionSet

    given = _open_store(store)
    folder = spec.path if isinstance(spec, QuestionSet) else _resolve_folder(spec, given)
    qset = spec if isinstance(spec, QuestionSet) else QuestionSet(folder)
    if not any(folder.glob("*.parquet")):
        raise BadInput(f"{folder} holds no question parquet files (train/val/test.parquet)")
    home = _store_of(folder) or given
    try:
        table = qset.table()
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise BadInput(f"{folder} holds unreadable question files: {str(exc).splitlines()[0]}") from exc
    missing = sorted({"procedure_id", "question", "choices", "answer", "context"} - set(table.column_names))
    if missing:
        raise BadInput(f"{folder} is not a procbench question set (no column {', '.join(missing)})")
    n = table.num_rows
    procedure_ids = [str(p) for p in table["procedure_id"].to_pylist()]
    questions = [list(q or []) for q in table["question"].to_pylist()]
    choices = [list(c or []) for c in table["choices"].to_pylist()]
    try:
        answers = np.asarray(table["answer"].to_pylist(), dtype=np.int64) if n else np.zeros(0, dtype=np.int64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise BadInput(f"{folder}: a question has no integer answer ({exc})") from exc
    task = str(table["task"][0]) if n and "task" in table.column_names else qset.task
    _check_answers(folder, answers, choices)
    kind = task_kind(task, choices)
    spec_of_task = TASKS.find(task)  # textual cloze: the items' field by the set's --items
    field = spec_of_task.field_for(qset.items) if spec_of_task is not None else kind.field
    question_keys = choice_keys = None
    if "meta" in table.column_names and n:
        meta_fields = {f.name for f in table.schema.field("meta").type}
        if {"question_keys", "choice_keys"} <= meta_fields:
            meta = table["meta"].combine_chunks()
            qk = meta.field("question_keys").to_pylist()
            ck = meta.field("choice_keys").to_pylist()
            if all(a is not None for a in qk) and all(b is not None for b in ck):
                question_keys, choice_keys = qk, ck
    steps: list[list[str]] | None = None  # the text of each context step
    context_idx = [list(c or []) for c in table["context"].to_pylist()] if n else []
    if kind.items == "text" and n:
        if home is not None:
            steps = _store_contexts(home, procedure_ids, context_idx)
        else:
            steps = _json_contexts(folder / "recipeqa.json", [str(q) for q in table["qid"].to_pylist()])
    contexts = [" ".join(s) for s in steps] if steps is not None else None
    context_keys: list[list[str]] | None = None
    context_vectors: VectorLookup | None = None
    context_note: str | None = "the set's questions have no context steps" if not n else None
    vectors: VectorLookup | None = None
    note: str | None = None
    encoder = ""
    if field is None:
        note = "the task's choices need no embeddings"
    elif home is None:
        note = f"no store to read {field} embeddings from: pass --store"
    elif kind.items != "text" or question_keys is not None:
        try:
            vectors, encoder = store_vectors(home, field)
        except NotApplicable as exc:
            note = str(exc)
        else:  # the context's step texts, in the items' space
            context_vectors, context_note = _step_text_vectors(home, encoder, kind.items)
            if context_vectors is not None:
                pairs = zip(procedure_ids, context_idx, strict=True)
                context_keys = [[step_key(p, i) for i in idx] for p, idx in pairs]
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
        extra = [t for s in steps or [] for t in s]
        try:
            vectors, encoder = fitted_text_vectors(items, contexts or [], seed=seed, keys=keys, extra=extra)
            note = None
        except NotApplicable as exc:
            note = context_note = str(exc)
        else:
            context_keys, context_vectors = steps, None
            context_note = None if steps is not None else "the set's context step texts are not available"
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
        context_keys=context_keys,
        context_vectors=context_vectors,
        context_note=context_note or (None if context_keys is not None else "the set has no context embeddings"),
        context_what="context step texts",
        qids=[str(q) for q in table["qid"].to_pylist()],
        splits=[str(s or "") for s in table["split"].to_pylist()],
    )


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
        _check_answers(path, answers, choices)
        kind = task_kind(task, choices)
        bodies = [context_bodies(e) for e in rows]
        contexts = [" ".join(b) for b in bodies]
        items = [x for q in questions for x in q if x != PLACEHOLDER]
        items += [x for cs in choices for c in cs for x in (c if isinstance(c, list) else [c])]
        vectors: VectorLookup | None = None
        note: str | None = None
        encoder = ""
        textual = kind.items == "text" or (kind.items == "unknown" and not kind.ordering)
        # what the context shows in the items' space: step texts for text items, step images for images
        context_keys = bodies if textual else [context_images(e) for e in rows]
        what = "context step texts" if textual else "context step images"
        try:
            if textual:
                extra = [t for b in bodies for t in b]
                vectors, encoder = fitted_text_vectors(items, contexts, seed=seed, extra=extra)
            else:
                folder = Path(images) if images is not None else None
                shown = [x for keys in context_keys for x in keys]
                vectors, encoder = image_vectors([*items, *shown], store=home, images=folder, base=path.parent)
        except NotApplicable as exc:
            note = str(exc)
        context_note = note
        if not any(context_keys):
            context_note = f"the file's contexts show no {what.split()[-1]}"
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
                qids=[str(e.get("qid", number)) for number, e in enumerate(rows)],
                splits=[str(e.get("split") or "") for e in rows],
                context_keys=context_keys if vectors is not None and context_note is None else None,
                context_note=context_note,
                context_what=what,
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
