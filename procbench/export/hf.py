"""``procbench export --format hf``: a Hugging Face dataset repository of question sets.

Layout: ``README.md`` (the dataset card of :mod:`procbench.card` with ``configs``), ``croissant.json``
(:mod:`procbench.export.croissant`) and ``data/CONFIG/{train,validation,test}-00000-of-00001.parquet``, one
config per setting (``TASK-SETTING`` when several tasks are exported). Every config has the same features
(:data:`FEATURES`), so a sweep, or several tasks, load with one schema; images are the ``datasets`` Image
feature (JPEG bytes + path), texts are inlined, so the export is usable without the store.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from procbench.card import (
    HUB_SPLITS,
    DatasetCard,
    dataset_card,
    default_set,
    generation_of,
    procedure_facts,
    provenance_facts,
    recommended_setting,
    setting_counts,
    summarise_set,
)
from procbench.card.models import read_model_rows
from procbench.errors import BadInput, MissingDependency
from procbench.export.inline import Inliner
from procbench.export.sets import find_audit, resolve_sets
from procbench.export.target import EXPORT_MARKER, ExportFormat, prepare_target
from procbench.progress import SILENT, Progress
from procbench.qsets.columns import procedure_ids
from procbench.readers.views import recorded_readers

__all__ = [
    "DEFAULT_RENAMED",
    "EXPORT_FIELDS",
    "EXPORT_MARKER",
    "ExportResult",
    "config_names",
    "export_sets",
    "features",
    "push_to_hub",
]

#: The config name of the setting ``default`` when another setting is the export's default config: ``datasets``
#: loads a config named ``default`` when none is named and refuses a second default.
DEFAULT_RENAMED = "default-sampler"

#: The file an export leaves in its folder, listing the files it wrote: ``--overwrite`` replaces only a folder
#: holding it, and only those files (it is not uploaded by ``--push-to-hub``).
#: Rows per parquet row group (small: rows carry images, and the Hub's viewer reads a row group at a time).
ROW_GROUP = 100

EXPORT_FIELDS: list[tuple[str, str, str]] = [
    ("qid", "string", "question id, `PROCEDURE_ID#n`"),
    ("task", "string", "the task"),
    ("setting", "string", "the setting (config) that made the question"),
    ("procedure_id", "string", "`SOURCE:ID` of the procedure"),
    ("procedure_title", "string", "the procedure's title"),
    ("source", "string", "where the procedure comes from"),
    ("url", "string", "the procedure's page"),
    ("license", "string", "the procedure's license as recorded (see Licenses for SPDX ids)"),
    ("category", "list<string>", "category path, root first"),
    ("instruction", "string", "what the question asks, in words"),
    (
        "context",
        "list<{index, title, text}>",
        "the context steps (titles left out when the items are titles, so the context never holds the answer)",
    ),
    (
        "question",
        "list<{key, title, text, image}>",
        "question items: `key` is the item in the procbench set (step key, image id, title; `@placeholder` marks "
        "the blank), `title`/`text` the step's words, `image` an Image (JPEG) or null; for order tasks the items "
        "to order",
    ),
    ("choices", "list<{key, title, text, image}>", "the choices (empty for order tasks)"),
    (
        "choice_orders",
        "list<list<int32>>",
        "order tasks (sequencing, visual ordering): each choice as positions into `question`",
    ),
    ("answer", "int32", "index of the correct choice (pair order: 1 = in authored order)"),
    (
        "meta",
        "string",
        "JSON: the sampling decisions of the question (knobs, bands, distances, clusters, fallbacks); its "
        "fields differ per setting, so it is one JSON string for one schema across a sweep",
    ),
]


def features() -> Any:
    """The ``datasets.Features`` of every exported config."""
    try:
        from datasets import Features, Image, List, Value
    except ImportError as exc:  # pragma: no cover - the dev extra installs it
        raise MissingDependency("procbench export needs `datasets>=4`: pip install 'procbench[hf]'") from exc
    item = {"key": Value("string"), "title": Value("string"), "text": Value("string"), "image": Image()}
    return Features(
        {
            "qid": Value("string"),
            "task": Value("string"),
            "setting": Value("string"),
            "procedure_id": Value("string"),
            "procedure_title": Value("string"),
            "source": Value("string"),
            "url": Value("string"),
            "license": Value("string"),
            "category": List(Value("string")),
            "instruction": Value("string"),
            "context": List({"index": Value("int32"), "title": Value("string"), "text": Value("string")}),
            "question": List(item),
            "choices": List(item),
            "choice_orders": List(List(Value("int32"))),
            "answer": Value("int32"),
            "meta": Value("string"),
        }
    )


@dataclass
class ExportResult:
    """What an export wrote."""

    out: Path
    configs: dict[str, dict[str, int]] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    images: int = 0
    missing_images: int = 0
    url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "out": str(self.out),
            "configs": self.configs,
            "files": [str(p.relative_to(self.out)) for p in self.files],
            "images": self.images,
            "missing_images": self.missing_images,
            "url": self.url,
        }


class _ImageBytes:
    """JPEG bytes of stored images: the most recently used ones kept (questions of a procedure share images)."""

    def __init__(self, inliner: Inliner, keep: int = 4096) -> None:
        self.inliner = inliner
        self.cache: OrderedDict[str, bytes | None] = OrderedDict()
        self.keep = keep
        self.seen: set[str] = set()
        self.missing_ids: set[str] = set()

    def get(self, image_id: str | None) -> dict[str, Any] | None:
        if image_id is None:
            return None
        data = self.cache.get(image_id)
        if image_id in self.cache:
            self.cache.move_to_end(image_id)
        else:
            path = self.inliner.store.image_file(image_id)  # None: no regular file of that id in the store
            try:
                if path is None:
                    raise FileNotFoundError(image_id)
                data = path.read_bytes()
                self.seen.add(image_id)
            except FileNotFoundError:
                self.missing_ids.add(image_id)
            self.cache[image_id] = data
            if len(self.cache) > self.keep:
                self.cache.popitem(last=False)
        return None if data is None else {"bytes": data, "path": f"{image_id[:2]}/{image_id}.jpg"}


def _embed_images(record: dict[str, Any], images: _ImageBytes) -> dict[str, Any]:
    for key in ("question", "choices"):
        record[key] = [{**item, "image": images.get(item["image"])} for item in record[key]]
    record.pop("split", None)
    return record


def export_sets(
    targets: list[str],
    out: str | Path,
    *,
    store: str | Path = "procbench-store",
    fmt: str = "hf",
    overwrite: bool = False,
    progress: Progress = SILENT,
    repo_id: str | None = None,
    contact: str | None = None,
) -> ExportResult:
    """Export question sets (``TASK``, ``TASK/SETTING`` or set folders) as a Hugging Face dataset folder.

    ``repo_id``: the Hub repository it will be pushed to (``OWNER/NAME``): the card's usage snippet loads it
    from there and its contact is the repository's discussions. ``contact``: who answers questions about it
    (an e-mail or URL), written into the card.

    Raises:
        BadInput: an unknown format, a set that does not exist, or an ``out`` folder that is not empty
            (without ``overwrite``).
    """
    if fmt != "hf":
        raise BadInput(f"--format takes 'hf' or 'lm-eval', not {fmt!r}")
    resolved = resolve_sets(targets, store)
    out = Path(out)
    names = config_names([(q.task, q.setting) for q in resolved.sets])
    tables = {q.name: _summary_columns(q) for q in resolved.sets}
    planned = ["README.md", "croissant.json"]
    for qset in resolved.sets:
        config = names[(qset.task, qset.setting)]
        present = set(tables[qset.name]["split"].to_pylist()) if tables[qset.name].num_rows else set()
        planned += [
            f"data/{config}/{hub}-00000-of-00001.parquet" for split, hub in HUB_SPLITS.items() if split in present
        ]
    prepare_target(out, planned, HF_EXPORT, overwrite=overwrite)
    schema = features().arrow_schema
    used: set[str] = set()
    for table in tables.values():
        used |= procedure_ids(table)
    inliner = Inliner(resolved.store, used)
    images = _ImageBytes(inliner)
    build = provenance_facts(resolved.store.provenance)
    result = ExportResult(out)
    card_sets = []
    generation: dict[str, dict[str, Any]] = {}
    total = sum(t.num_rows for t in tables.values())
    progress.start("export", total=total)
    for qset in resolved.sets:
        config = names[(qset.task, qset.setting)]
        summary = summarise_set(qset.task, qset.setting, tables[qset.name])
        summary.config_name = config
        summary.items = qset.items
        summary.audit = find_audit(qset)
        summary.readers = recorded_readers(qset.path)
        summary.models = read_model_rows(qset.path)
        summary.data_files = {}
        result.configs[config] = {}
        for split, hub in HUB_SPLITS.items():
            if not summary.splits.get(split):
                continue
            path = out / "data" / config / f"{hub}-00000-of-00001.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            written = _write_split(inliner.records(qset, split), images, path, schema, progress)
            summary.data_files[hub] = f"data/{config}/{hub}-*.parquet"
            result.configs[config][hub] = written
            result.files.append(path)
        card_sets.append(summary)
        gen = generation_of(build, qset.task, qset.setting)
        if gen is not None:
            summary.generation = setting_counts(gen.get("counts") or {}, qset.setting)
            runs = [g for k, g in generation.items() if k.split(" ")[0] == qset.task]
            if not any(g.get("time") == gen.get("time") for g in runs):  # each run that wrote a set, once
                generation[f"{qset.task} (run of {gen.get('time')})" if runs else qset.task] = gen
    result.images = len(images.seen)
    result.missing_images = len(images.missing_ids)
    procs = _procedures_table(inliner)
    chosen = default_set([c for c in card_sets if c.data_files])
    card = DatasetCard(
        title=_title(resolved.sets),
        sets=card_sets,
        fields=EXPORT_FIELDS,
        procedures=procedure_facts(procs),
        generation=generation,
        build=build,
        usage=_usage(chosen, repo_id or str(out), hub=repo_id is not None),
        example=_example(resolved.sets, chosen, inliner),
        contact=contact,
        repo_id=repo_id,
        published=max((str(g["time"])[:10] for g in generation.values() if g.get("time")), default=None),
        limitations=(
            [f"{len(images.missing_ids)} images recorded in the store had no file and are exported as null."]
            if images.missing_ids
            else []
        ),
    )
    (out / "README.md").write_text(dataset_card(card), encoding="utf-8")
    from procbench.export.croissant import write_croissant

    write_croissant(out, card, result)
    return result


def _own_relpath(rel: str) -> bool:
    """Whether ``rel`` is a path export itself writes (so a crafted marker cannot name anything else)."""
    if rel in ("README.md", "croissant.json"):
        return True
    parts = rel.split("/")
    return (
        len(parts) == 3
        and parts[0] == "data"
        and parts[1] not in ("", ".", "..")
        and "\\" not in parts[1]
        and re.fullmatch(r"(train|validation|test)-00000-of-00001\.parquet", parts[2]) is not None
    )


#: A Hugging Face export (``export --format hf``).
HF_EXPORT = ExportFormat("procbench-export", "procbench export", _own_relpath)


def _summary_columns(qset: Any) -> pa.Table:
    """The columns a card summarises (split, procedure, answer, meta) of every split of ``qset``."""
    columns = ["split", "procedure_id", "answer", "meta"]
    parts = [
        pq.read_table(qset.path / f"{s}.parquet", columns=columns)
        for s in HUB_SPLITS
        if (qset.path / f"{s}.parquet").is_file()
    ]
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def _write_split(
    records: Iterator[dict[str, Any]], images: _ImageBytes, path: Path, schema: pa.Schema, progress: Progress
) -> int:
    """Stream records into one parquet file, a row group at a time (memory stays bounded by a row group)."""
    written = 0
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        batch: list[dict[str, Any]] = []
        for record in records:
            batch.append(_embed_images(record, images))
            if len(batch) == ROW_GROUP:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                written += len(batch)
                progress.advance(len(batch))
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            written += len(batch)
            progress.advance(len(batch))
    return written


def _procedures_table(inliner: Inliner) -> pa.Table:
    rows = list(inliner.procedures.values())
    return pa.table({name: [r.get(name) for r in rows] for name in ("source", "license", "language")})


def _title(sets: list[Any]) -> str:
    tasks = list(dict.fromkeys(q.task for q in sets))
    return "procbench " + ", ".join(tasks)


def config_names(sets: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The config name of each ``(task, setting)``: the setting (``TASK-SETTING`` when several tasks are
    exported), and :data:`DEFAULT_RENAMED` for a single task's setting ``default`` when the task's recommended
    setting is exported too (it is then the default config, and a config named ``default`` would be a second
    one)."""
    tasks = {task for task, _ in sets}
    settings = {setting for _, setting in sets}
    out = {}
    for task, setting in sets:
        if len(tasks) > 1:
            out[(task, setting)] = f"{task}-{setting}"
        elif setting == "default" and recommended_setting(task) != "default" and recommended_setting(task) in settings:
            out[(task, setting)] = DEFAULT_RENAMED
        else:
            out[(task, setting)] = setting
    return out


def _usage(chosen: Any, where: str, *, hub: bool) -> str:
    """A snippet that loads the default config from ``where`` (the Hub repository, else the export folder)."""
    config = chosen.config_name if chosen is not None else None
    origin = "from the Hub" if hub else "the folder this card is in, as exported"
    return (
        "```python\n"
        "from datasets import load_dataset\n\n"
        f"ds = load_dataset({where!r}"
        + (f", {config!r})   # {origin}; one config per setting\n" if config else f")   # {origin}\n")
        + 'q = ds["test"][0]\n'
        'q["instruction"], [c["title"] or c["text"] for c in q["choices"]], q["answer"]\n'
        "# items are {key, title, text, image}: image is a PIL image for visual tasks, else None\n"
        "```"
    )


def _example(sets: list[Any], chosen: Any, inliner: Inliner) -> dict[str, Any] | None:
    """The first question of the default config's test split (else its first split), images as ids."""
    if chosen is None:
        return None
    qset = next((q for q in sets if q.task == chosen.task and q.setting == chosen.setting), None)
    if qset is None:
        return None
    for split in ("test", "val", "train"):
        if chosen.splits.get(split):
            return next(inliner.records(qset, split), None)
    return None


def push_to_hub(out: str | Path, repo_id: str, *, private: bool = False, token: str | None = None) -> str:
    """Upload an export folder to the Hugging Face Hub as dataset repository ``repo_id``; returns its URL.

    Uses ``huggingface_hub`` (its token from ``huggingface-cli login`` or ``HF_TOKEN`` when ``token`` is None).
    """
    try:
        from huggingface_hub import HfApi
    except ImportError as exc:  # pragma: no cover - installed with datasets
        raise MissingDependency("--push-to-hub needs huggingface_hub: pip install 'procbench[hf]'") from exc
    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_folder(
        repo_id=repo_id,
        repo_type="dataset",
        folder_path=str(out),
        commit_message="procbench export",
        ignore_patterns=[EXPORT_MARKER],
    )
    return f"https://huggingface.co/datasets/{repo_id}"
