"""Questions as a person reads them: every item resolved to its title, text and image from the store.

A question set holds keys (step keys ``PROCEDURE_ID#INDEX``, image ids, step titles); :class:`Inliner`
turns each row into a self-contained record that the export writes (images as bytes) and the report shows
(images as files). Items are classified by what they are, not by task name: a step key of the store, an
image id of the store, the placeholder, or free text (a title or a label).

Record layout (one schema for every task and setting):

- ``question``/``choices``: lists of items ``{key, title, text, image}`` (``image`` an image id or None);
  free-text items are a ``title`` when the set's items are step titles (textual cloze's default ``--items``),
  else a ``text`` (step texts, first sentences, actions, pair order's labels);
- ``instruction``: the task's instruction worded for the procedure's domain (``recipe`` for cooking categories,
  ``procedure`` otherwise: :func:`procbench.tasks.domain_noun`);
- ``choice_orders``: for tasks whose choices are orders (sequencing, visual ordering), each choice as
  positions into ``question``; ``choices`` is then empty. Visual ordering has no question items in the set:
  the images to order become the question, sorted by id (which says nothing about their order);
- ``context``: the context steps ``{index, title, text}``; titles are left out when the question's items
  are titles (textual cloze), as RecipeQA does, so the context never holds the answer;
- ``meta``: the set's ``meta`` as a JSON string (it differs per setting; one schema across a sweep).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from procbench.formats.recipeqa import PLACEHOLDER
from procbench.qsets.files import QuestionSet
from procbench.store import Store, is_image_id
from procbench.store.views import kept_procedures, kept_steps
from procbench.tasks import TASKS, domain_noun

__all__ = ["Inliner", "meta_json"]

_STEP_KEY = re.compile(r"^(.+)#(\d+)$")


@dataclass
class _Step:
    title: str | None
    text: str | None
    image: str | None


def _clean_floats(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_floats(v) for v in value]
    return value


def meta_json(meta: Any) -> str:
    """``meta`` as canonical JSON (sorted keys; NaN and infinities as null)."""
    return json.dumps(_clean_floats(meta), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


class Inliner:
    """Resolves the items of questions about ``procedure_ids`` against ``store``."""

    def __init__(self, store: Store, procedure_ids: set[str]) -> None:
        self.store = store
        used = pa.array(sorted(procedure_ids), pa.string())
        wanted = ("id", "title", "source", "url", "license", "language", "category")
        columns = [c for c in wanted if c in _columns(store)]
        procs = kept_procedures(store, columns)
        procs = procs.filter(pc.is_in(procs["id"], value_set=used))
        self.procedures = {row["id"]: row for row in procs.to_pylist()}
        steps = kept_steps(store, ["procedure_id", "index", "title", "text", "image_ids"])
        steps = steps.filter(pc.is_in(steps["procedure_id"], value_set=used))
        self.steps: dict[str, _Step] = {}
        #: procedure id -> its kept steps' indices (ascending)
        self.step_indices: dict[str, list[int]] = {}
        for row in steps.to_pylist():
            self.step_indices.setdefault(row["procedure_id"], []).append(int(row["index"]))
            images = row["image_ids"] or []
            self.steps[f"{row['procedure_id']}#{row['index']}"] = _Step(
                row["title"] or None, row["text"] or None, images[0] if images else None
            )
        self.images = self._stored_images()

    def whole_context(self, record: dict[str, Any]) -> bool:
        """Whether ``record``'s context is every kept step of its procedure (else a part of it: e.g. the
        ``needs-context`` settings', which a step number would locate in the procedure)."""
        shown = [c["index"] for c in record["context"]]
        return bool(shown) and shown == sorted(self.step_indices.get(record["procedure_id"], []))

    def _stored_images(self) -> set[str]:
        if not self.store.has_table("images"):
            return set()
        table = self.store.table("images", ["id", "stored"])
        stored = table.filter(pc.fill_null(table["stored"], False))
        return {i for i in stored["id"].to_pylist() if is_image_id(i)}  # an id is a file name: nothing else

    def item(self, key: str, *, titles: bool = False) -> dict[str, Any]:
        """One item ``{key, title, text, image}``; free text (not a step key, an image id or the placeholder) is
        the item's ``title`` when ``titles`` (the set's items are step titles), else its ``text``."""
        if key == PLACEHOLDER:
            return {"key": key, "title": None, "text": None, "image": None}
        step = self.steps.get(key)
        if step is not None:
            return {"key": key, "title": step.title, "text": step.text, "image": self._image(step.image)}
        if key in self.images:
            return {"key": key, "title": None, "text": None, "image": key}
        if titles:
            return {"key": key, "title": key, "text": None, "image": None}
        return {"key": key, "title": None, "text": key, "image": None}

    def _free_text(self, key: str) -> bool:
        return key != PLACEHOLDER and key not in self.steps and key not in self.images

    def _image(self, image_id: str | None) -> str | None:
        return image_id if image_id is not None and image_id in self.images else None

    def records(self, qset: QuestionSet, split: str, *, batch_size: int = 1024) -> Iterator[dict[str, Any]]:
        """The inlined records of one split of ``qset``, in file order."""
        path = qset.path / f"{split}.parquet"
        if not path.is_file():
            return
        table = qset.split(split)
        spec = TASKS.find(qset.task)
        items = qset.items
        titles = qset.task == "textual-cloze" and items in (None, "title")
        instructions: dict[str, str] = {}
        for batch in table.to_batches(max_chunksize=batch_size):
            for row in batch.to_pylist():
                procedure = self.procedures.get(row["procedure_id"], {})
                noun = domain_noun(procedure.get("category"), procedure.get("source"))
                if noun not in instructions:
                    instructions[noun] = (
                        spec.instruction_for(items, noun=noun, setting=qset.setting) if spec is not None else ""
                    )
                yield self._record(row, qset.setting, instructions[noun], titles=titles)

    def _record(self, row: dict[str, Any], setting: str, instruction: str, *, titles: bool = False) -> dict[str, Any]:
        procedure = self.procedures.get(row["procedure_id"], {})
        question_keys: list[str] = list(row.get("question") or [])
        raw_choices: list[Any] = list(row.get("choices") or [])
        orders = bool(raw_choices) and isinstance(raw_choices[0], list)
        choice_orders: list[list[int]] = []
        if orders:
            if not question_keys:  # visual ordering: the items to order, in an order that tells nothing
                question_keys = sorted({key for order in raw_choices for key in order})
            position = {key: i for i, key in enumerate(question_keys)}
            choice_orders = [[position[key] for key in order] for order in raw_choices]
            choices: list[dict[str, Any]] = []
        else:
            choices = [self.item(str(c), titles=titles) for c in raw_choices]
        question = [self.item(k, titles=titles) for k in question_keys]
        # free-text items (titles, texts, actions): the context leaves step titles out, so it never holds the answer
        free = question_keys if orders else [*question_keys, *map(str, raw_choices)]
        titles_are_items = titles or any(self._free_text(k) for k in free)
        context = []
        for index in row.get("context") or []:
            step = self.steps.get(f"{row['procedure_id']}#{index}")
            context.append(
                {
                    "index": int(index),
                    "title": None if step is None or titles_are_items else step.title,
                    "text": None if step is None else step.text,
                }
            )
        meta = row.get("meta")
        return {
            "qid": row["qid"],
            "task": row["task"],
            "setting": setting,
            "split": row.get("split"),
            "procedure_id": row["procedure_id"],
            "procedure_title": procedure.get("title"),
            "source": procedure.get("source"),
            "url": procedure.get("url"),
            "license": procedure.get("license"),
            "category": list(procedure.get("category") or []),
            "instruction": instruction,
            "context": context,
            "question": question,
            "choices": choices,
            "choice_orders": choice_orders,
            "answer": int(row["answer"]),
            "meta": meta_json(meta if meta is not None else {}),
        }


def _columns(store: Store) -> list[str]:
    return store.columns("procedures") if store.has_table("procedures") else []
