"""RecipeQA's JSON layout, read (:func:`read_entries`) and written (:class:`RecipeQAWriter`, ``recipeqa.json``).

Reading: ingest takes the recipes of a RecipeQA file as procedures, the audit takes its questions; both get
the entries through :func:`read_entries`, and a question's context step texts through :func:`context_bodies`.

Writing: a question set in RecipeQA's JSON layout, so existing RecipeQA readers can load it.

``{"version": ..., "data": [{"qid", "recipe_id", "task", "split", "question_text", "context": [{"id",
"title", "body", "images"}], "question", "choice_list", "answer"}]}``; visual items are image paths
relative to ``STORE/images`` (``ab/abcd….jpg``). The context never shows what the choices are made of:
step titles are the items of textual cloze and step images those of the visual tasks, so either would
give answers away.

The document is assembled with Arrow string kernels, a batch of questions at a time: each distinct
string is escaped once, each distinct context is rendered once, and no Python object is made per
question (a sweep of two million questions writes several gigabytes of JSON).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench import __version__
from procbench.arrays import ragged_lists, ranges
from procbench.errors import BadInput
from procbench.tasks import TASKS

__all__ = [
    "PLACEHOLDER",
    "QUESTION_TEXT",
    "VISUAL_TASKS",
    "RecipeQAWriter",
    "StepDocuments",
    "context_bodies",
    "context_images",
    "json_strings",
    "read_entries",
]

#: What RecipeQA puts in a question where the missing item goes.
PLACEHOLDER = "@placeholder"
#: Tasks whose items are images (RecipeQA JSON names them by file).
VISUAL_TASKS = frozenset(spec.name for spec in TASKS.values() if spec.items == "image")
#: Task -> its question's instruction (RecipeQA JSON's ``question``).
QUESTION_TEXT = {spec.name: spec.recipeqa_instruction() for spec in TASKS.values()}
#: Questions rendered at once (small enough that a batch of long contexts stays far below 2 GB of text).
_BATCH = 16_384
#: JSON escapes Arrow can apply with plain substring replacement (backslash first).
_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))
_OTHER_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f]"


def read_entries(path: Path) -> list[Any]:
    """The entries of a RecipeQA JSON file (``{"data": [entry, ...]}``, or a bare list), unchecked.

    Raises:
        BadInput: the file is not JSON, or holds no ``data`` list.
    """
    try:
        document = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"{path} is not RecipeQA JSON: {exc}") from exc
    except RecursionError as exc:
        raise BadInput(f"{path} is not RecipeQA JSON: nested too deeply") from exc
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise BadInput(f"{path} is not RecipeQA JSON: {str(exc)[:80]}") from exc
    entries = document.get("data") if isinstance(document, dict) else document
    if not isinstance(entries, list):
        raise BadInput(f"{path} is not RecipeQA JSON: expected an object with a 'data' list")
    return entries


def context_bodies(entry: dict[str, Any]) -> list[str]:
    """The body text of each of a question's context steps."""
    return [str(step.get("body") or "") for step in entry.get("context") or [] if isinstance(step, dict)]


def context_images(entry: dict[str, Any]) -> list[str]:
    """The image names of a question's context steps (RecipeQA's own files show them; procbench's hide them)."""
    steps = [step for step in entry.get("context") or [] if isinstance(step, dict)]
    return [str(name) for step in steps for name in step.get("images") or [] if str(name).strip()]


def _join(*parts: pa.Array | str) -> pa.Array:
    """Concatenate string arrays and literals element-wise."""
    return pc.binary_join_element_wise(*[pa.scalar(p) if isinstance(p, str) else p for p in parts], "")


def json_strings(values: pa.Array) -> pa.Array:
    """Each string as a JSON string literal (quoted, escaped; non-ASCII kept); null stays null.

    A dictionary array is escaped through its dictionary, so each distinct string is escaped once.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        return json_strings(values.dictionary).take(values.indices)
    escaped = values
    for plain, escape in _ESCAPES:
        escaped = pc.replace_substring(escaped, plain, escape)
    odd = pc.fill_null(pc.match_substring_regex(values, _OTHER_CONTROL), False)
    if pc.any(odd).as_py():  # rare control characters: let json spell them
        fixed = [json.dumps(v, ensure_ascii=False)[1:-1] if v is not None else None for v in values.to_pylist()]
        escaped = pc.if_else(odd, pa.array(fixed, pa.string()), escaped)
    return _join('"', escaped, '"')


def _image_names(values: pa.Array) -> pa.Array:
    """How RecipeQA readers name images (``ab/ID.jpg``); the placeholder stays as it is."""
    named = _join(pc.utf8_slice_codeunits(values, 0, 2), "/", values, ".jpg")
    return pc.if_else(pc.equal(values, PLACEHOLDER), values, named)


def _json_lists(lists: pa.Array) -> pa.Array:
    """Each list of strings as a JSON array of them."""
    rendered = json_strings(pc.list_flatten(lists))
    return _join("[", pc.binary_join(ragged_lists(rendered, _lengths(lists)), ", "), "]")


class StepDocuments:
    """The JSON context entry of every step of some procedures, rendered once for all questions of a task.

    A question whose context is its procedure's every step (the usual case) takes the procedure's whole
    context, also rendered once; other contexts are rendered per batch, each distinct one once.

    Args:
        steps: ``procedure_id, index, title, text, image_ids`` of the steps (kept steps of the procedures used).
        task: decides what the entries hide (titles for textual cloze, images for the visual tasks).
    """

    def __init__(self, steps: pa.Table, task: str) -> None:
        ordered = steps.sort_by([("procedure_id", "ascending"), ("index", "ascending")])
        column = {name: ordered[name].combine_chunks() for name in ordered.column_names}
        encoded = pc.dictionary_encode(column["procedure_id"])
        self.procedures = encoded.dictionary
        proc = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        index = column["index"].to_numpy(zero_copy_only=False).astype(np.int64)
        self._width = int(index.max()) + 1 if len(index) else 1
        self._keys = proc * self._width + index  # ascending
        self._first = np.searchsorted(proc, np.arange(len(self.procedures) + 1))
        if task == "textual-cloze":
            title: pa.Array | str = '""'
        else:
            title = json_strings(pc.fill_null(column["title"], ""))
        if task in VISUAL_TASKS:
            images: pa.Array | str = "[]"
        else:
            images = _json_lists(_map_lists(column["image_ids"], _image_names))
        body = pc.fill_null(json_strings(column["text"]), "null")
        ids = pc.cast(column["index"], pa.string())
        self.rendered = _join('{"id": ', ids, ', "title": ', title, ', "body": ', body, ', "images": ', images, "}")
        whole = pa.ListArray.from_arrays(pa.array(self._first.astype(np.int32)), self.rendered)
        self._whole = pc.binary_join(whole, ", ")

    def _codes(self, procedure_ids: pa.Array) -> np.ndarray:
        """Position of each procedure id among :attr:`procedures` (-1 when absent)."""
        if pa.types.is_dictionary(procedure_ids.type):
            codes = self._codes(procedure_ids.dictionary)
            return codes[procedure_ids.indices.to_numpy(zero_copy_only=False)]
        found = pc.index_in(procedure_ids, value_set=self.procedures)
        return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)

    def contexts(self, procedure_ids: pa.Array, contexts: pa.Array) -> pa.Array:
        """Each question's ``context`` (step indices of its procedure) as the inside of a JSON array of step
        entries (no brackets).

        Raises:
            KeyError: a context names a step these documents do not hold.
        """
        if isinstance(contexts, pa.ChunkedArray):
            contexts = contexts.combine_chunks()
        proc = self._codes(procedure_ids)
        lengths = _lengths(contexts)
        index = pc.list_flatten(contexts).to_numpy(zero_copy_only=False).astype(np.int64)
        owner = np.repeat(proc, lengths)
        keys = owner * self._width + index
        at = np.minimum(np.searchsorted(self._keys, keys), max(0, len(self._keys) - 1))
        if len(keys) and (not len(self._keys) or (self._keys[at] != keys).any() or (owner < 0).any()):
            raise KeyError("a question's context names a step that is not among the kept steps")
        offsets = np.r_[0, np.cumsum(lengths)]
        in_order = (at - self._first[owner]) == np.arange(len(at)) - np.repeat(offsets[:-1], lengths)
        whole = lengths == np.diff(self._first)[np.maximum(proc, 0)]
        whole[np.repeat(np.arange(len(proc)), lengths)[~in_order]] = False
        if whole.all():
            return self._whole.take(pa.array(proc))
        # Other contexts: render each distinct one once.
        other = np.flatnonzero(~whole)
        other_lengths = lengths[other]
        rows = at[ranges(offsets[other], other_lengths)]
        signature = pc.binary_join(ragged_lists(pc.cast(pa.array(rows), pa.string()), other_lengths), ",")
        signature = signature.dictionary_encode()
        codes = signature.indices.to_numpy(zero_copy_only=False)
        first = np.empty(len(signature.dictionary), dtype=np.int64)
        first[codes[::-1]] = np.arange(len(codes))[::-1]
        unique_lengths = other_lengths[first]
        picked = ranges((np.cumsum(other_lengths) - other_lengths)[first], unique_lengths)
        unique = ragged_lists(self.rendered.take(pa.array(rows[picked])), unique_lengths)
        pieces = pa.concat_arrays([self._whole, pc.binary_join(unique, ", ")])
        choice = proc.copy()
        choice[other] = len(self._whole) + codes
        return pieces.take(pa.array(choice))


def _map_lists(lists: pa.Array, item: Callable[[pa.Array], pa.Array]) -> pa.Array:
    """``lists`` with every value mapped by ``item``."""
    return ragged_lists(item(pc.list_flatten(lists)), _lengths(lists))


def _lengths(lists: pa.Array) -> np.ndarray:
    """The length of each list (0 for a null list), int64."""
    return pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def _write_strings(fh: BinaryIO, rows: pa.Array, skip: int = 0) -> None:
    """Write the strings of ``rows`` back to back straight from Arrow's buffer, less ``skip`` leading bytes."""
    offsets = np.frombuffer(rows.buffers()[1], dtype=np.int32, count=len(rows) + 1, offset=4 * rows.offset)
    start, stop = int(offsets[0]) + skip, int(offsets[-1])
    fh.write(rows.buffers()[2].slice(start, stop - start))


def _question_text(instruction: str) -> str:
    """The JSON between a question's split and its context entries."""
    return f', "question_text": {json.dumps(instruction, ensure_ascii=False)}, "context": ['


class RecipeQAWriter:
    """Writes question sets of one task in RecipeQA's layout.

    Step entries are rendered once per writer, and so is every dictionary the question tables share (the
    image ids of a visual sweep): a sweep's settings escape each image id once.

    Args:
        task: the task of every set written.
        steps: ``procedure_id, index, title, text, image_ids`` of the steps of the procedures asked about.
        instruction: the ``question_text`` of every question (default: the task's, :data:`QUESTION_TEXT`); a set
            :meth:`write` may word its own.
    """

    def __init__(self, task: str, steps: pa.Table, *, instruction: str | None = None) -> None:
        self.task = task
        self.steps = StepDocuments(steps, task)
        self._item = _image_names if task in VISUAL_TASKS else None
        self._rendered: dict[tuple[int, ...], tuple[pa.Array, pa.Array]] = {}
        self._head = f', "task": {json.dumps(task.replace("-", "_"))}, "split": '
        instruction = QUESTION_TEXT.get(task, "") if instruction is None else instruction
        self._text = _question_text(instruction)

    def write(self, path: Path, table: pa.Table, *, instruction: str | None = None) -> None:
        """Write ``table`` (questions with ``qid`` and ``split``) to ``path`` (``instruction``: its questions'
        ``question_text``, if not the writer's)."""
        text = self._text if instruction is None else _question_text(instruction)
        with open(path, "wb") as fh:
            fh.write(f'{{"version": "procbench-{__version__}", "data": ['.encode())
            for start in range(0, table.num_rows, _BATCH):  # every row starts with ", " but the first
                _write_strings(fh, self._rows(table.slice(start, _BATCH), text), skip=0 if start else 2)
            fh.write(b"]}")

    def _rows(self, table: pa.Table, text: str) -> pa.Array:
        """One JSON object per question of ``table`` (``text``: from its ``question_text`` to its context)."""
        column = {name: table[name].combine_chunks() for name in table.column_names}
        return _join(
            ', {"qid": ', json_strings(column["qid"]), ', "recipe_id": ', self._strings(column["procedure_id"]),
            self._head, self._strings(column["split"]),
            text, self.steps.contexts(column["procedure_id"], column["context"]),
            '], "question": [', self._lists(column["question"]),
            '], "choice_list": [', self._lists(column["choices"]),
            '], "answer": ', pc.cast(column["answer"], pa.string()), "}",
        )  # fmt: skip

    def _strings(self, values: pa.Array, item: Callable[[pa.Array], pa.Array] | None = None) -> pa.Array:
        """JSON literals of ``values`` (mapped by ``item`` first); a dictionary is rendered once per writer."""
        if not pa.types.is_dictionary(values.type):  # distinct strings of this batch only: not kept
            values = pc.dictionary_encode(values)
            return json_strings(item(values.dictionary) if item else values.dictionary).take(values.indices)
        dictionary = values.dictionary
        # The cache holds the dictionary itself, so its buffers (the key) are never reused by another array.
        key = (item is None, dictionary.offset, len(dictionary), *(b.address for b in dictionary.buffers() if b))
        if key not in self._rendered:
            self._rendered[key] = (dictionary, json_strings(item(dictionary) if item else dictionary))
        return self._rendered[key][1].take(values.indices)

    def _lists(self, lists: pa.Array) -> pa.Array:
        """Each list of items (or list of lists, for ordering choices) as the inside of a JSON array."""
        values = pc.list_flatten(lists)
        if pa.types.is_list(values.type):
            rendered = _join("[", self._lists(values), "]")
        else:
            rendered = self._strings(values, self._item)
        return pc.binary_join(ragged_lists(rendered, _lengths(lists)), ", ")
