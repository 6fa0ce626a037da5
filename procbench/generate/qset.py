"""Question-set files (DESIGN §5): a parquet file per split, ``recipeqa.json`` and ``card.md``.

A set lives at ``STORE/questions/TASK/SETTING/``; several settings (a sweep) are written in one
transaction, so readers never see half a sweep.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from procbench import __version__
from procbench.generate.questions import Question, paused_gc
from procbench.generate.splits import SPLITS
from procbench.store import Store
from procbench.store.views import kept_procedures, kept_steps

__all__ = ["QuestionSet", "iter_settings", "question_set_dir", "read_question_set", "write_question_sets"]

_VISUAL = {"visual-cloze", "visual-coherence", "visual-ordering"}
_QUESTION_TEXT = {
    "textual-cloze": "Choose the best title for the missing blank to correctly complete the recipe.",
    "visual-cloze": "Choose the best image for the missing blank to correctly complete the recipe.",
    "visual-coherence": "Select the incoherent image in the following sequence of images.",
    "visual-ordering": "Choose the correct order of the images to make a complete recipe.",
    "sequencing": "Put the steps in the order they were written.",
    "pair-order": "Are the two steps in the order they were written?",
}


def question_set_dir(store: Store, task: str, setting: str) -> Path:
    """``STORE/questions/TASK/SETTING``."""
    return store.root / "questions" / task / setting


class QuestionSet:
    """A question set on disk: its splits as Arrow tables, read memory-mapped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.task = path.parent.name
        self.setting = path.name

    @property
    def name(self) -> str:
        """``TASK/SETTING``."""
        return f"{self.task}/{self.setting}"

    def split(self, name: str) -> pa.Table:
        """The questions of one split (empty table if the split has none)."""
        return pq.read_table(self.path / f"{name}.parquet", memory_map=True)

    def table(self) -> pa.Table:
        """All splits, train then val then test."""
        return pa.concat_tables([self.split(s) for s in SPLITS if (self.path / f"{s}.parquet").is_file()])


def read_question_set(path: str | Path) -> QuestionSet:
    """Open the question set folder at ``path``."""
    return QuestionSet(Path(path))


def _table(task: str, questions: list[Question], splits: dict[str, str]) -> pa.Table:
    per_procedure: Counter[str] = Counter()
    qids = []
    for q in questions:
        qids.append(f"{q.procedure_id}#{per_procedure[q.procedure_id]}")
        per_procedure[q.procedure_id] += 1
    ordering = bool(questions) and isinstance(questions[0].choices[0], list)
    choice_type = pa.list_(pa.list_(pa.string())) if ordering else pa.list_(pa.string())
    metas = [q.meta for q in questions]
    meta = pa.array(metas) if metas else pa.array([], pa.struct([("setting", pa.string())]))
    return pa.table(
        {
            "qid": pa.array(qids, pa.string()),
            "task": pa.array([task] * len(questions), pa.string()),
            "procedure_id": pa.array([q.procedure_id for q in questions], pa.string()),
            "split": pa.array([splits[q.procedure_id] for q in questions], pa.string()),
            "context": pa.array([q.context for q in questions], pa.list_(pa.int32())),
            "question": pa.array([q.question for q in questions], pa.list_(pa.string())),
            "choices": pa.array([q.choices for q in questions], choice_type),
            "answer": pa.array([q.answer for q in questions], pa.int32()),
            "meta": meta,
        }
    )


def _image_name(image_id: str) -> str:
    """How RecipeQA readers name images: a path relative to ``STORE/images``."""
    return f"{image_id[:2]}/{image_id}.jpg"


def _recipeqa_json(task: str, table: pa.Table, steps_by_procedure: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    visual = task in _VISUAL

    def item(x: str) -> str:
        return x if not visual or x == "@placeholder" else _image_name(x)

    data = []
    contexts: dict[tuple[str, tuple[int, ...]], list[dict[str, Any]]] = {}  # built once per procedure
    for row in table.drop_columns(["meta"]).to_pylist():
        steps = steps_by_procedure[row["procedure_id"]]
        choices = row["choices"]
        key = (row["procedure_id"], tuple(row["context"]))
        if key not in contexts:
            # The context never shows what the choices are made of: step titles are the items of
            # textual cloze and step images those of the visual tasks, so either would give answers away.
            contexts[key] = [
                {
                    "id": steps[i]["index"],
                    "title": "" if task == "textual-cloze" else steps[i]["title"] or "",
                    "body": steps[i]["text"],
                    "images": [] if visual else [_image_name(x) for x in steps[i]["image_ids"]],
                }
                for i in row["context"]
            ]
        data.append(
            {
                "qid": row["qid"],
                "recipe_id": row["procedure_id"],
                "task": task.replace("-", "_"),
                "split": row["split"],
                "question_text": _QUESTION_TEXT.get(task, ""),
                "context": contexts[key],
                "question": [item(x) for x in row["question"]],
                "choice_list": [[item(x) for x in c] if isinstance(c, list) else item(c) for c in choices],
                "answer": row["answer"],
            }
        )
    return {"version": f"procbench-{__version__}", "data": data}


def _card(task: str, setting: str, table: pa.Table, *, seed: int, args: dict[str, Any], store: Store) -> str:
    counts = Counter(table["split"].to_pylist())
    ids = set(table["procedure_id"].to_pylist())
    procs = kept_procedures(store, ["id", "source", "license"])
    procs = [p for p in procs.to_pylist() if p["id"] in ids]
    sources = sorted({p["source"] for p in procs})
    licenses = sorted({p["license"] for p in procs if p["license"]})
    positions = Counter(table["answer"].to_pylist())
    lines = [
        "---",
        f"pretty_name: procbench {task} ({setting})",
        "task_categories:",
        "- multiple-choice",
        "language:",
        "- en",
        "license: other" if licenses else "license: unknown",
        f"procbench_version: {__version__}",
        f"task: {task}",
        f"setting: {setting}",
        f"seed: {seed}",
        "splits:",
        *[f"  {s}: {counts.get(s, 0)}" for s in SPLITS],
        "---",
        "",
        f"# procbench {task}: `{setting}`",
        "",
        f"{table.num_rows} questions from {len(ids)} procedures (sources: {', '.join(sources) or 'none'}).",
        f"Splits are by {args.get('split_by', 'procedure')}: no procedure appears in two splits.",
        "",
        "| split | questions |",
        "|---|---|",
        *[f"| {s} | {counts.get(s, 0)} |" for s in SPLITS],
        "",
        "Answer positions: " + ", ".join(f"{k}: {positions.get(k, 0)}" for k in sorted(positions)) + ".",
        "",
        "## Generation",
        "",
        "```json",
        json.dumps({"task": task, "setting": setting, "seed": seed, **args}, indent=2, sort_keys=True, default=str),
        "```",
        "",
        "Each question's `meta` column records the sampling decisions (knobs, distances, bands, fallbacks).",
        "",
        "## Licenses",
        "",
        "The questions are derived from the procedures' text and images, which keep their own licenses: "
        + (", ".join(licenses) if licenses else "not recorded")
        + ".",
        "",
    ]
    return "\n".join(lines)


def write_question_sets(
    store: Store,
    task: str,
    sets: dict[str, list[Question]],
    *,
    splits: dict[str, str],
    seed: int,
    args: dict[str, Any],
    counts: dict[str, Any] | None = None,
) -> dict[str, Path]:
    """Write each ``{setting: questions}`` of ``task`` (parquet per split, recipeqa.json, card.md) atomically.

    ``splits`` maps every procedure id used to its split. Returns the folder of each setting.
    """
    steps_by_procedure: dict[str, list[dict[str, Any]]] = {}
    used = {q.procedure_id for qs in sets.values() for q in qs}
    for row in kept_steps(store).to_pylist():
        if row["procedure_id"] in used:
            steps_by_procedure.setdefault(row["procedure_id"], []).append(row)
    written: dict[str, Path] = {}
    with paused_gc(), store.transaction("generate", args={"task": task, **args}, seed=seed) as txn:
        for setting, questions in sets.items():
            table = _table(task, questions, splits)
            base = f"questions/{task}/{setting}"
            for split in SPLITS:
                part = table.filter(pc.equal(table["split"], split))
                pq.write_table(part, txn.stage(f"{base}/{split}.parquet"), compression="zstd")
            document = _recipeqa_json(task, table, steps_by_procedure)
            txn.stage(f"{base}/recipeqa.json").write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
            txn.stage(f"{base}/card.md").write_text(
                _card(task, setting, table, seed=seed, args=args, store=store), encoding="utf-8"
            )
            written[setting] = question_set_dir(store, task, setting)
        txn.counts.update({"settings": {s: len(q) for s, q in sets.items()}, **(counts or {})})
    return written


def iter_settings(store: Store, task: str) -> Iterable[QuestionSet]:
    """Every setting written for ``task``, by name."""
    base = store.root / "questions" / task
    return [QuestionSet(p) for p in sorted(base.iterdir()) if p.is_dir()] if base.is_dir() else []
