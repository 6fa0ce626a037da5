"""Question-set files (DESIGN §5): a parquet file per split, ``recipeqa.json`` and ``card.md``.

A set lives at ``STORE/questions/TASK/SETTING/``; several settings (a sweep) are written in one
transaction, so readers never see half a sweep.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from procbench.card import (
    HUB_SPLITS,
    SET_FIELDS,
    DatasetCard,
    dataset_card,
    procedure_facts,
    provenance_facts,
    setting_counts,
    summarise_set,
)
from procbench.errors import BadInput
from procbench.formats.recipeqa import RecipeQAWriter
from procbench.qsets.columns import COLUMNS, Questions, as_table, count, decoded, procedure_ids
from procbench.qsets.questions import paused_gc
from procbench.qsets.splits import SPLITS
from procbench.rng import RNG_VERSION
from procbench.store import Store
from procbench.store.views import kept_procedures, kept_steps
from procbench.tasks import TASKS, items_of

__all__ = [
    "OPTIONS_FILE",
    "QuestionSet",
    "check_overwrite",
    "iter_settings",
    "options_fingerprint",
    "question_set_dir",
    "read_question_set",
    "write_question_sets",
]

#: File in a set's folder recording every option that changes its questions, and their fingerprint.
OPTIONS_FILE = "options.json"
#: Generation arguments that do not change a setting's questions (a sweep lists its settings).
_NOT_QUESTION_OPTIONS = ("settings",)


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

    @property
    def items(self) -> str | None:
        """The ``--items`` the set was made with (textual cloze), as its ``options.json`` records (None: not given)."""
        record = recorded_options(self.path)
        return items_of(record["options"]) if record is not None else None

    @property
    def instruction(self) -> str:
        """The question's instruction (by the task and, for textual cloze, the items)."""
        spec = TASKS.find(self.task)
        return spec.instruction_for(self.items, setting=self.setting) if spec is not None else ""

    def split(self, name: str) -> pa.Table:
        """The questions of one split (empty table if the split has none)."""
        return pq.read_table(self.path / f"{name}.parquet", memory_map=True)

    def table(self) -> pa.Table:
        """All splits, train then val then test."""
        return pa.concat_tables([self.split(s) for s in SPLITS if (self.path / f"{s}.parquet").is_file()])


def set_options(task: str, setting: str, *, seed: int, args: dict[str, Any]) -> dict[str, Any]:
    """The options that decide the questions of ``task``/``setting``: the seed (and the seed tree's version,
    :data:`procbench.rng.RNG_VERSION`), the setting's recipe version (``args["recipe_versions"][setting]``, where
    the task has recipes: :mod:`procbench.generate.recipes`; raised when a recipe draws other questions than before,
    so a set made before has another fingerprint), the split and the task's own."""
    kept = {k: v for k, v in args.items() if k not in _NOT_QUESTION_OPTIONS}
    versions = kept.pop("recipe_versions", None) or {}
    recipe = {"recipe_version": versions[setting]} if setting in versions else {}
    chosen = {"task": task, "setting": setting, "seed": seed, "rng_version": RNG_VERSION, **recipe, **kept}
    return json.loads(json.dumps(chosen, sort_keys=True, default=str))


def options_fingerprint(options: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of ``options`` (see :func:`set_options`)."""
    return hashlib.sha256(json.dumps(options, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def recorded_options(path: Path) -> dict[str, Any] | None:
    """What ``options.json`` of the set at ``path`` records (None: no record, e.g. a set from an older procbench)."""
    try:
        data = json.loads((path / OPTIONS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("options"), dict) else None


def check_overwrite(store: Store, task: str, settings: Iterable[str], *, seed: int, args: dict[str, Any]) -> None:
    """Refuse to write a setting over a set that was made with other options (or whose options are unknown).

    Raises:
        BadInput: one line naming the folder and the options that differ.
    """
    for setting in settings:
        path = question_set_dir(store, task, setting)
        if not path.is_dir():
            continue
        wanted = set_options(task, setting, seed=seed, args=args)
        record = recorded_options(path)
        if record is not None and record.get("fingerprint") == options_fingerprint(wanted):
            continue
        if record is None:
            why = "options not recorded (made by an older procbench)"
        else:
            old = record["options"]
            changed = [k for k in sorted(set(old) | set(wanted)) if old.get(k) != wanted.get(k)]
            why = "made with other options: " + ", ".join(
                f"{k} {json.dumps(old.get(k))} -> {json.dumps(wanted.get(k))}" for k in changed
            )
        raise BadInput(
            f"questions/{task}/{setting} exists, {why}; pass --overwrite to replace it, or generate into another store"
        )


def read_question_set(path: str | Path) -> QuestionSet:
    """Open the question set folder at ``path``.

    Raises:
        BadInput: ``path`` holds no split of a question set.
    """
    path = Path(path)
    if not any((path / f"{s}.parquet").is_file() for s in SPLITS):
        raise BadInput(f"no question set at {path} (no train/val/test.parquet; run procbench generate)")
    return QuestionSet(path)


def _table(task: str, questions: Questions, splits: dict[str, str]) -> pa.Table:
    """The DESIGN §5 table: ``qid`` (``PROCEDURE#n``, n counting the procedure's questions in order),
    ``task``, ``procedure_id``, ``split``, the question columns (dictionary-encoded as the builder made them)."""
    base = as_table(questions)
    proc = base["procedure_id"].combine_chunks()
    if not pa.types.is_dictionary(proc.type):
        proc = proc.dictionary_encode()
    codes = proc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if len(codes) else codes
    used = set(np.unique(codes).tolist())
    rank = np.empty(len(codes), dtype=np.int64)
    rank[order] = np.arange(len(codes)) - np.repeat(starts, np.diff(np.r_[starts, len(codes)]))
    names = proc.dictionary.to_pylist()
    try:
        split_of = pa.array([splits[names[i]] if i in used else None for i in range(len(names))], pa.string())
    except KeyError as missing:
        raise ValueError(f"no split for procedure {missing}") from None
    proc_plain = proc.dictionary.take(proc.indices)
    n = base.num_rows
    return pa.table(
        {
            "qid": pc.binary_join_element_wise(proc_plain, pc.cast(pa.array(rank), pa.string()), "#"),
            "task": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([task])),
            "procedure_id": proc,
            "split": split_of.take(proc.indices),
            **{name: base[name] for name in COLUMNS[1:]},
        }
    )


def _card(
    task: str,
    setting: str,
    table: pa.Table,
    *,
    seed: int,
    args: dict[str, Any],
    counts: dict[str, Any],
    procedures: pa.Table,
    build: dict[str, Any],
) -> str:
    """``card.md``: the shared dataset card (:mod:`procbench.card`) of one set, loadable as it lies with
    ``datasets.load_dataset(SET_FOLDER)`` (its ``configs`` name the split files)."""
    summary = summarise_set(task, setting, table)
    summary.config_name = setting
    summary.items = items_of(args)
    summary.data_files = {HUB_SPLITS[s]: f"{s}.parquet" for s in SPLITS if summary.splits.get(s)}
    summary.generation = setting_counts(counts, setting)
    used = pa.array(sorted(procedure_ids(table)), pa.string())
    procs = procedures.filter(pc.is_in(procedures["id"], value_set=used))
    card = DatasetCard(
        title=f"procbench {task} ({setting})",
        sets=[summary],
        fields=SET_FIELDS,
        procedures=procedure_facts(procs),
        generation={task: {"seed": seed, "args": args, "counts": counts}},
        build=build,
        usage="Items are keys into the procbench store it was made from (step keys, image ids); "
        "`procbench export` writes a self-contained copy with texts and images inlined.",
    )
    return dataset_card(card)


def write_question_sets(
    store: Store,
    task: str,
    sets: dict[str, Questions],
    *,
    splits: dict[str, str],
    seed: int,
    args: dict[str, Any],
    counts: dict[str, Any] | None = None,
    command: str = "generate",
) -> dict[str, Path]:
    """Write each ``{setting: questions}`` of ``task`` (parquet per split, recipeqa.json, card.md and
    ``options.json``, the fingerprint of the options that made it) atomically.

    ``command`` names the provenance entry (``filter`` for sets derived from another set).

    ``questions`` are :class:`Question` objects or a question table (:mod:`procbench.qsets.columns`).
    ``splits`` maps every procedure id used to its split. Returns the folder of each setting.
    """
    used = pa.array(sorted(set().union(*(procedure_ids(qs) for qs in sets.values()))), pa.string())
    columns = [c for c in ("id", "source", "license", "language") if c in store.columns("procedures")]
    procedures = kept_procedures(store, columns)
    build = provenance_facts(store.provenance)
    written: dict[str, Path] = {}
    with (
        paused_gc(),
        store.transaction(command, args={"task": task, **args}, seed=seed) as txn,
        ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool,
    ):
        # Files are independent and Arrow releases the GIL: a sweep's parquet and JSON files are written
        # in parallel (staged paths are made here, on one thread).
        recipeqa = pool.submit(_recipeqa_writer, store, task, used)
        spec = TASKS.find(task)
        jobs = []
        for setting, questions in sets.items():
            table = _table(task, questions, splits)
            base = f"questions/{task}/{setting}"
            paths = {split: txn.stage(f"{base}/{split}.parquet") for split in SPLITS}
            jobs.append(pool.submit(_write_splits, table, paths))
            instruction = spec.recipeqa_instruction(items_of(args), setting=setting) if spec is not None else ""
            jobs.append(pool.submit(_write_recipeqa, recipeqa, txn.stage(f"{base}/recipeqa.json"), table, instruction))
            txn.stage(f"{base}/card.md").write_text(
                _card(
                    task,
                    setting,
                    table,
                    seed=seed,
                    args=args,
                    counts=counts or {},
                    procedures=procedures,
                    build=build,
                ),
                encoding="utf-8",
            )
            chosen = set_options(task, setting, seed=seed, args=args)
            record = {"fingerprint": options_fingerprint(chosen), "options": chosen}
            txn.stage(f"{base}/{OPTIONS_FILE}").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
            written[setting] = question_set_dir(store, task, setting)
        for job in jobs:
            job.result()
        txn.counts.update({"settings": {s: count(q) for s, q in sets.items()}, **(counts or {})})
    return written


def _recipeqa_writer(store: Store, task: str, used: pa.Array) -> RecipeQAWriter:
    steps = kept_steps(store)
    return RecipeQAWriter(task, steps.filter(pc.is_in(steps["procedure_id"], value_set=used)))


def _write_recipeqa(writer: Future[RecipeQAWriter], path: Path, table: pa.Table, instruction: str) -> None:
    writer.result().write(path, table, instruction=instruction)


def _write_splits(table: pa.Table, paths: dict[str, Path]) -> None:
    """One parquet file per split (plain strings, as every reader expects)."""
    for split, path in paths.items():
        part = decoded(table.filter(pc.equal(table["split"], split)))
        pq.write_table(part, path, compression="zstd", use_dictionary=_dictionary_columns(part.schema))


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """Parquet paths of the columns worth dictionary-encoding: all but floats (distances never repeat, and
    trying costs an eighth of the writing time)."""

    def leaves(field: pa.Field, prefix: str) -> Iterator[tuple[str, pa.DataType]]:
        name, kind = prefix + field.name, field.type
        if pa.types.is_struct(kind):
            for child in kind:
                yield from leaves(child, f"{name}.")
        elif pa.types.is_list(kind):
            yield from leaves(pa.field("element", kind.value_type), f"{name}.list.")
        else:
            yield name, kind

    return [path for field in schema for path, kind in leaves(field, "") if not pa.types.is_floating(kind)]


def iter_settings(store: Store, task: str) -> Iterable[QuestionSet]:
    """Every setting written for ``task``, by name."""
    base = store.root / "questions" / task
    return [QuestionSet(p) for p in sorted(base.iterdir()) if p.is_dir()] if base.is_dir() else []
