"""``procbench export --format lm-eval``: question sets as EleutherAI lm-evaluation-harness tasks.

Each exported setting becomes a task folder ``DIR/TASK/SETTING/`` holding its data (``train.jsonl``,
``val.jsonl``, ``test.jsonl``: one inlined question a line, :class:`~procbench.export.inline.Inliner`) and
two task configs (YAML, ``output_type: multiple_choice``):

- ``TASK_SETTING``: the question as the report shows it, after the procedure's title and its context steps;
- ``TASK_SETTING_nocontext``: the question alone (no title, no context steps): what a reader answers from
  the question and its choices only. Sets without context steps (sequencing, pair order) differ in the
  title only.

Names are lower case with ``_`` for every other character (``textual-cloze``/``knobs-011`` ->
``textual_cloze_knobs_011``). One group per task (``DIR/TASK/_TASK.yaml``, group ``TASK``) runs all its
tasks; tags ``procbench_context`` and ``procbench_nocontext`` run one variant across tasks.

Prompts are Jinja templates in the YAML (no Python hooks): the instruction, the question's items (the blank
as ``___``), the choices listed, then ``Answer:``; each choice's words are the continuation an LM scores
(``acc``, and ``acc_norm`` normalised by length). Sequencing's choices are every order of the shown steps
(``n!``, at most 120; ``answer`` lists every acceptable order, lm-eval's multiple targets).

The visual tasks (cloze, coherence, ordering) are ``generate_until`` tasks for vision-language models
(lm-eval's ``hf-multimodal``): their data are Parquet files with the images inlined (``images``, the
``datasets`` Image feature, decoded offline), ``doc_to_image: images``, and the prompt shows one ``<image>``
per image in a fixed order (:data:`IMAGE_ORDER`) and names the choices by letter; a regex filter (``letter``)
takes the first choice letter of the answer and ``exact_match`` scores it. Their ``nocontext`` twin leaves out
the title and the step texts: coherence and ordering are then images alone.

lm-eval opens ``data_files`` relative to the working directory, not to the YAML, so the configs name their
data files by absolute path; export again after moving the folder.

Each YAML's ``metadata.procbench`` records the task, setting, variant and source set, so
``procbench evaluate --lm-eval RESULTS.json`` puts lm-eval's results beside the baselines
(:mod:`procbench.models.lmeval`).
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from procbench.errors import BadInput, MissingDependency
from procbench.export.inline import Inliner
from procbench.export.sets import resolve_sets
from procbench.export.target import ExportFormat, prepare_target
from procbench.progress import SILENT, Progress
from procbench.qsets.columns import procedure_ids
from procbench.qsets.files import QuestionSet
from procbench.store import Store
from procbench.store.images import BadImage
from procbench.tasks import get_task

__all__ = [
    "BLANK",
    "IMAGE_ORDER",
    "VISUAL_METRIC",
    "LmEvalExport",
    "export_lm_eval",
    "lm_eval_name",
    "sequencing_orders",
]

#: The visual tasks: exported as generate-until tasks with their images (``hf-multimodal``).
VISUAL_TASKS = frozenset({"visual-cloze", "visual-coherence", "visual-ordering"})

#: The order of a visual prompt's ``<image>`` placeholders, which is the order of its ``images`` list.
IMAGE_ORDER = "the question's images top to bottom (the blank has none), then the choices' images A, B, C, ..."

#: lm-eval's placeholder for an image in a prompt (``hf-multimodal`` puts the model's image token there).
IMAGE_PLACEHOLDER = "<image>"

#: What the visual tasks report: ``exact_match`` of the answer's letter after the ``letter`` filter.
VISUAL_METRIC = "exact_match,letter"

#: Most tokens a visual answer may take (untuned: room for a letter with a few words around it, e.g. "The answer is
#: B.", while a model that rambles stops early).
MAX_ANSWER_TOKENS = 16

#: The blank of a cloze question, as the prompt shows it.
BLANK = "___"

#: lm-eval's splits (its ``datasets`` split names) and the procbench splits they hold.
SPLITS = {"train": "train", "validation": "val", "test": "test"}

#: Version of the exported prompt format (``metadata.version``); raise it when the templates change.
PROMPT_VERSION = 1.0

#: Most items a sequencing question may have: its choices are every order (5! = 120).
MAX_SEQUENCE = 5

#: Most choices a visual question may have (lettered A..Z).
MAX_LETTERS = 26

_DROPPED = f"a choice without words, two alike, or a sequence of over {MAX_SEQUENCE} steps"
_DROPPED_VISUAL = "an image missing from the store or unreadable"

#: Rows per Parquet row group of a visual task (untuned: rows carry about seven images each, so a group stays a
#: few megabytes in memory).
ROW_GROUP = 64

_ITEM = "{% if item.title %}{{ item.title }}{% if item.text %} {% endif %}{% endif %}{{ item.text }}"

#: The context block: the procedure's title and its context steps (numbered as in the procedure).
CONTEXT_TEMPLATE = (
    "{% if procedure_title %}{{ procedure_title }}\n\n{% endif %}"
    "{% if context %}{% for step in context %}Step {{ step.number }}. "
    "{% if step.title %}{{ step.title }}{% if step.text %} {% endif %}{% endif %}{{ step.text }}\n"
    "{% endfor %}\n{% endif %}"
)

#: Multiple-choice questions (cloze, next action, pair order): the instruction, the items, the choices.
QUESTION_TEMPLATE = (
    "{{ instruction }}\n\n"
    "{% for item in question %}{{ loop.index }}. {% if item.blank %}" + BLANK + "{% else %}" + _ITEM + "{% endif %}\n"
    "{% endfor %}\n"
    "Choices:\n"
    "{% for choice in choices %}- {{ choice }}\n{% endfor %}"
    "Answer:"
)

#: Sequencing: the steps as shown (numbered), the instruction; each choice is an order of those numbers.
SEQUENCE_TEMPLATE = (
    "{% for item in question %}{{ loop.index }}. " + _ITEM + "\n{% endfor %}\n"
    "{{ instruction }} Give the numbers of the steps above in that order.\n"
    "Answer:"
)


#: Visual questions: the instruction, the question's images (the blank as ``___``), the choices by letter (an
#: image each, or an order of the numbered images), then how to answer. One ``<image>`` per image, in
#: :data:`IMAGE_ORDER`.
VISUAL_TEMPLATE = (
    "{{ instruction }}\n\n"
    "{% if question %}{{ question_label }}:\n"
    "{% for item in question %}{{ loop.index }}. {% if item.blank %}"
    + BLANK
    + "{% else %}"
    + IMAGE_PLACEHOLDER
    + "{% endif %}\n{% endfor %}\n{% endif %}"
    "Choices:\n"
    "{% for option in options %}{{ option.letter }}. {% if option.image %}"
    + IMAGE_PLACEHOLDER
    + "{% else %}{{ option.text }}{% endif %}\n{% endfor %}\n"
    "Answer with the letter of the correct choice.\n"
    "Answer:"
)


@dataclass
class LmEvalExport:
    """What an lm-eval export wrote."""

    out: Path
    #: lm-eval task name -> {split: questions} (both variants of a setting share the data files).
    tasks: dict[str, dict[str, int]] = field(default_factory=dict)
    #: group name -> its tasks.
    groups: dict[str, list[str]] = field(default_factory=dict)
    #: ``TASK/SETTING`` -> why it was not exported.
    skipped: dict[str, str] = field(default_factory=dict)
    #: lm-eval task name -> the accuracy of guessing (mean over its test questions of acceptable / choices).
    chance: dict[str, float] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "out": str(self.out),
            "tasks": self.tasks,
            "groups": self.groups,
            "skipped": self.skipped,
            "chance": self.chance,
            "files": [str(p.relative_to(self.out)) for p in self.files],
        }


def lm_eval_name(*parts: str) -> str:
    """An lm-eval task or group name: lower case, every run of other characters than ``a-z0-9`` one ``_``."""
    return "_".join(re.sub(r"[^a-z0-9]+", "_", p.lower()).strip("_") for p in parts if p)


def sequencing_orders(n: int) -> list[tuple[int, ...]]:
    """Every order of ``n`` items (positions 0..n-1), in lexicographic order: sequencing's choices."""
    return list(itertools.permutations(range(n)))


def _words(item: dict[str, Any]) -> dict[str, Any]:
    return {"blank": item["key"] == "@placeholder", "title": item["title"] or "", "text": item["text"] or ""}


def _choice_text(item: dict[str, Any]) -> str:
    title, text = item["title"] or "", item["text"] or ""
    return f"{title} {text}".strip() if title and text else (title or text)


def _document_head(record: dict[str, Any]) -> dict[str, Any]:
    """The fields every lm-eval document starts with: ids, procedure title, instruction and the context steps."""
    return {
        "qid": record["qid"],
        "procedure_id": record["procedure_id"],
        "procedure_title": record["procedure_title"] or "",
        "instruction": record["instruction"],
        "context": [
            {"number": c["index"] + 1, "title": c["title"] or "", "text": c["text"] or ""} for c in record["context"]
        ],
    }


def _document(record: dict[str, Any]) -> dict[str, Any] | None:
    """One lm-eval document of an inlined record (None: a question lm-eval cannot ask, e.g. a choice without
    words)."""
    doc = {**_document_head(record), "question": [_words(i) for i in record["question"]]}
    if record["choice_orders"]:  # sequencing: every order is a choice, the acceptable ones are the targets
        n = len(record["question"])
        if not 2 <= n <= MAX_SEQUENCE:
            return None
        orders = sequencing_orders(n)
        index = {order: i for i, order in enumerate(orders)}
        doc["choices"] = [", ".join(str(p + 1) for p in order) for order in orders]
        doc["answer"] = sorted({index[tuple(order)] for order in record["choice_orders"]})
        return doc
    choices = [_choice_text(c) for c in record["choices"]]
    if not all(choices) or len(set(choices)) != len(choices):
        return None  # lm-eval scores words: a choice without words, or two with the same, cannot be told apart
    doc["choices"] = choices
    doc["answer"] = int(record["answer"])
    return doc


def _letter(index: int) -> str:
    return chr(ord("A") + index)


def _visual_document(record: dict[str, Any], images: _Images) -> dict[str, Any] | None:
    """One lm-eval document of an inlined visual record, its images as JPEG bytes in :data:`IMAGE_ORDER`
    (None: an image is missing or unreadable, or there are too many choices to letter)."""
    doc = _document_head(record)
    ids: list[str | None] = []
    question = []
    for item in record["question"]:
        blank = item["key"] == "@placeholder"
        question.append({"blank": blank})
        if not blank:
            ids.append(item["image"])
    if record["choice_orders"]:  # ordering: the images are numbered, each choice an order of their numbers
        doc["question_label"] = "Images"
        options = [", ".join(str(p + 1) for p in order) for order in record["choice_orders"]]
        doc["options"] = [{"letter": _letter(i), "text": text, "image": False} for i, text in enumerate(options)]
    else:
        doc["question_label"] = "Steps"
        doc["options"] = [{"letter": _letter(i), "text": "", "image": True} for i in range(len(record["choices"]))]
        ids += [choice["image"] for choice in record["choices"]]
    if not 2 <= len(doc["options"]) <= MAX_LETTERS or not 0 <= int(record["answer"]) < len(doc["options"]):
        return None
    doc["question"] = question
    doc["answer"] = _letter(int(record["answer"]))
    data = [images.get(i) for i in ids]
    if not ids or any(d is None for d in data):
        return None
    doc["images"] = [{"bytes": d, "path": None} for d in data]
    return doc


class _Images:
    """JPEG bytes of stored images, read through the store's confined reader (no links, nothing outside the
    store, checked to be an image); None for an image that is missing or unreadable."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.cache: dict[str, bytes | None] = {}
        self.missing: set[str] = set()

    def get(self, image_id: str | None) -> bytes | None:
        if image_id is None:
            return None
        if image_id not in self.cache:
            if len(self.cache) > 4096:
                self.cache.clear()
            try:
                self.cache[image_id] = self.store.read_image(image_id)
            except BadImage:
                self.cache[image_id] = None
                self.missing.add(image_id)
        return self.cache[image_id]


def _chance(doc: dict[str, Any]) -> float:
    if "options" in doc:
        return 1 / len(doc["options"])
    answers = doc["answer"]
    return (len(answers) if isinstance(answers, list) else 1) / len(doc["choices"])


def _config_head(
    name: str, files: dict[str, Path], *, context: bool, dataset: str, output: str, fewshot: bool
) -> dict[str, Any]:
    """The fields every task config starts with: name, tags, the exported files and the splits they hold
    (``fewshot``: few-shot examples come from the train split)."""
    config: dict[str, Any] = {
        "task": name,
        "tag": ["procbench_context" if context else "procbench_nocontext"],
        "dataset_path": dataset,
        "dataset_kwargs": {"data_files": {split: str(path.resolve()) for split, path in files.items()}},
        "output_type": output,
        "test_split": "test",
    }
    if "train" in files:
        config["training_split"] = "train"
        if fewshot:
            config["fewshot_split"] = "train"
    if "validation" in files:
        config["validation_split"] = "validation"
    return config


def _metadata(qset: QuestionSet, *, context: bool, **extra: Any) -> dict[str, Any]:
    """A task's ``metadata``: the prompt version and where its questions come from (what ``evaluate`` reads)."""
    source = {"task": qset.task, "setting": qset.setting, "context": context, "qset": str(qset.path.resolve())}
    return {"version": PROMPT_VERSION, "procbench": {**source, **extra}}


def _task_config(
    name: str,
    qset: QuestionSet,
    files: dict[str, Path],
    *,
    context: bool,
    sequencing: bool,
) -> dict[str, Any]:
    body = SEQUENCE_TEMPLATE if sequencing else QUESTION_TEMPLATE
    config = _config_head(name, files, context=context, dataset="json", output="multiple_choice", fewshot=True)
    config.update(
        {
            "doc_to_text": (CONTEXT_TEMPLATE if context else "") + body,
            "doc_to_choice": "choices",
            "doc_to_target": "answer",
            "target_delimiter": " ",
            "metric_list": [
                {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
                {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True},
            ],
            "metadata": _metadata(qset, context=context),
        }
    )
    return config


def _visual_config(
    name: str, qset: QuestionSet, files: dict[str, Path], *, context: bool, letters: int
) -> dict[str, Any]:
    config = _config_head(name, files, context=context, dataset="parquet", output="generate_until", fewshot=False)
    config["tag"].append("procbench_visual")
    config.update(
        {
            "doc_to_image": "images",
            "doc_to_text": (CONTEXT_TEMPLATE if context else "") + VISUAL_TEMPLATE,
            "doc_to_target": "answer",
            "target_delimiter": " ",
            "generation_kwargs": {"until": ["\n"], "do_sample": False, "max_gen_toks": MAX_ANSWER_TOKENS},
            "filter_list": [
                {
                    "name": VISUAL_METRIC.split(",")[1],
                    "filter": [
                        {"function": "regex", "regex_pattern": rf"\b([A-{_letter(letters - 1)}])\b"},
                        {"function": "take_first"},
                    ],
                }
            ],
            "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True}],
            "metadata": _metadata(qset, context=context, metric=VISUAL_METRIC, images=IMAGE_ORDER),
        }
    )
    return config


def _visual_schema() -> pa.Schema:
    """The Arrow schema of a visual task's Parquet files, with the ``datasets`` features in its metadata (so
    ``datasets`` decodes ``images`` as PIL images)."""
    try:
        from datasets import Features, Image, List, Value
    except ImportError as exc:  # pragma: no cover - lm-eval installs datasets
        raise MissingDependency(
            "exporting the visual tasks to lm-eval needs `datasets>=4`: pip install 'procbench[hf]'"
        ) from exc
    text = Value("string")
    features = Features(
        {
            "qid": text,
            "procedure_id": text,
            "procedure_title": text,
            "instruction": text,
            "context": List({"number": Value("int32"), "title": text, "text": text}),
            "question_label": text,
            "question": List({"blank": Value("bool")}),
            "options": List({"letter": text, "text": text, "image": Value("bool")}),
            "answer": text,
            "images": List(Image()),
        }
    )
    schema: pa.Schema = features.arrow_schema
    return schema


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the prompt templates) as YAML literal blocks, readable as they render."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _string)


def _write_yaml(path: Path, data: dict[str, Any]) -> None:
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000)
    path.write_text(text, encoding="utf-8")


_NAME = r"[a-z0-9]+(?:_[a-z0-9]+)*"
#: The paths an lm-eval export writes (relative to ``--to``): what a marker may name and ``--overwrite`` remove.
_OWN_PATH = re.compile(
    rf"README\.md|(?P<group>{_NAME})/_(?P=group)\.yaml"
    rf"|{_NAME}/{_NAME}/(?:(?:train|val|test)\.(?:jsonl|parquet)|{_NAME}\.yaml)"
)


def _planned(wanted: list[QuestionSet]) -> list[str]:
    """Every path (relative to ``--to``) an export of ``wanted`` may write."""
    planned = {"README.md"}
    for qset in wanted:
        group, setting = lm_eval_name(qset.task), lm_eval_name(qset.setting)
        name = lm_eval_name(qset.task, qset.setting)
        planned.add(f"{group}/_{group}.yaml")
        suffix = "parquet" if qset.task in VISUAL_TASKS else "jsonl"
        planned |= {f"{group}/{setting}/{split}.{suffix}" for split in SPLITS.values()}
        planned |= {f"{group}/{setting}/{name}.yaml", f"{group}/{setting}/{name}_nocontext.yaml"}
    return sorted(planned)


#: An lm-eval export (its marker's format; a Hugging Face export's folder is not replaced by one, nor it by one).
LM_EVAL_EXPORT = ExportFormat(
    "procbench-lm-eval-export", "lm-eval export by procbench", lambda rel: _OWN_PATH.fullmatch(rel) is not None
)


def export_lm_eval(
    targets: list[str],
    out: str | Path,
    *,
    store: str | Path = "procbench-store",
    overwrite: bool = False,
    progress: Progress = SILENT,
) -> LmEvalExport:
    """Export question sets (``TASK``, ``TASK/SETTING`` or set folders) as lm-evaluation-harness tasks in ``out``.

    Raises:
        BadInput: a set that does not exist, ``out`` not empty (without ``overwrite``), two settings whose task
            names collide, or no set with test questions lm-eval can ask.
    """
    resolved = resolve_sets(targets, store)
    out = Path(out)
    result = LmEvalExport(out)
    wanted: list[QuestionSet] = list(resolved.sets)
    names: dict[str, str] = {}
    for qset in wanted:
        name = lm_eval_name(qset.task, qset.setting)
        if name in names:
            raise BadInput(f"{qset.name} and {names[name]} would both be the lm-eval task {name}; export them apart")
        names[name] = qset.name
    prepare_target(out, _planned(wanted), LM_EVAL_EXPORT, overwrite=overwrite)
    used: set[str] = set()
    for qset in wanted:
        for split in SPLITS.values():
            if (qset.path / f"{split}.parquet").is_file():
                used |= procedure_ids(qset.split(split))
    inliner = Inliner(resolved.store, used)
    images = _Images(resolved.store)
    progress.start("export", total=len(wanted))
    for qset in wanted:
        progress.advance()
        _export_set(qset, inliner, images, out, result)
    if not result.tasks:
        raise BadInput("nothing to export to lm-eval: " + "; ".join(f"{k}: {v}" for k, v in result.skipped.items()))
    for group, tasks in result.groups.items():
        path = out / group / f"_{group}.yaml"
        _write_yaml(
            path,
            {"group": group, "task": tasks, "metadata": {"version": PROMPT_VERSION, "procbench": {"group": True}}},
        )
        result.files.append(path)
    readme = out / "README.md"
    readme.write_text(_readme(result), encoding="utf-8")
    result.files.append(readme)
    return result


class _SplitWriter:
    """One split's data file, written as documents come (JSON lines, or Parquet row groups of images), created
    at the first document; memory holds at most one row group."""

    def __init__(self, path: Path, schema: pa.Schema | None) -> None:
        self.path, self.schema = path, schema
        self.count = 0
        self._rows: list[dict[str, Any]] = []
        self._parquet: pq.ParquetWriter | None = None
        self._text: Any = None

    def add(self, doc: dict[str, Any]) -> None:
        self.count += 1
        if self.schema is None:
            if self._text is None:
                self._text = self.path.open("w", encoding="utf-8")
            self._text.write(json.dumps(doc, ensure_ascii=False) + "\n")
            return
        self._rows.append(doc)
        if len(self._rows) == ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if not self._rows or self.schema is None:
            return
        if self._parquet is None:
            self._parquet = pq.ParquetWriter(self.path, self.schema, compression="zstd")
        self._parquet.write_table(pa.Table.from_pylist(self._rows, schema=self.schema))
        self._rows = []

    def close(self) -> None:
        self._flush()
        for handle in (self._parquet, self._text):
            if handle is not None:
                handle.close()


def _export_set(qset: QuestionSet, inliner: Inliner, images: _Images, out: Path, result: LmEvalExport) -> None:
    visual = qset.task in VISUAL_TASKS
    sequencing = get_task(qset.task).family == "sequencing"
    name = lm_eval_name(qset.task, qset.setting)
    folder = out / lm_eval_name(qset.task) / lm_eval_name(qset.setting)
    folder.mkdir(parents=True, exist_ok=True)
    schema = _visual_schema() if visual else None
    files: dict[str, Path] = {}
    counts: dict[str, int] = {}
    dropped = 0
    letters = 2
    test_chance: list[float] = []
    for hub, split in SPLITS.items():
        writer = _SplitWriter(folder / f"{split}.{'parquet' if visual else 'jsonl'}", schema)
        try:
            for record in inliner.records(qset, split):
                doc = _visual_document(record, images) if visual else _document(record)
                if doc is None:
                    dropped += 1
                    continue
                if visual:
                    letters = max(letters, len(doc["options"]))
                if split == "test":
                    test_chance.append(_chance(doc))
                writer.add(doc)
        finally:
            writer.close()
        if writer.count:
            files[hub] = writer.path
            counts[split] = writer.count
            result.files.append(writer.path)
    why_dropped = _DROPPED_VISUAL if visual else _DROPPED
    if "test" not in files:
        for path in files.values():
            path.unlink()
            result.files.remove(path)
        if not any(folder.iterdir()):
            folder.rmdir()
        why = f" ({dropped} dropped: {why_dropped})" if dropped else ""
        result.skipped[qset.name] = f"no test questions lm-eval can ask{why}"
        return
    group = lm_eval_name(qset.task)
    for context in (True, False):
        task_name = name if context else f"{name}_nocontext"
        path = folder / f"{task_name}.yaml"
        if visual:
            config = _visual_config(task_name, qset, files, context=context, letters=letters)
        else:
            config = _task_config(task_name, qset, files, context=context, sequencing=sequencing)
        _write_yaml(path, config)
        result.files.append(path)
        result.tasks[task_name] = dict(counts)
        result.chance[task_name] = float(sum(test_chance) / len(test_chance))
        result.groups.setdefault(group, []).append(task_name)
    if dropped:
        result.skipped[f"{qset.name} ({dropped} questions)"] = why_dropped


def _readme(result: LmEvalExport) -> str:
    groups = list(result.groups)
    lines = [
        "# procbench question sets as lm-evaluation-harness tasks",
        "",
        "Written by `procbench export --format lm-eval`. Each task folder holds one setting's questions "
        "(`train`, `val`, `test`: JSON lines with the texts inlined, or for the visual tasks Parquet with the images "
        "inlined) and its task configs; lm-eval scores the `test` split (few-shot examples come from `train`).",
        "",
        "## Run",
        "",
        "```bash",
        "pip install 'lm-eval[hf]>=0.4'",
        *(
            f"lm_eval --model {backend} --model_args pretrained={model} --tasks {','.join(chosen)} "
            f"--include_path {result.out.resolve()} --output_path results --log_samples"
            for backend, model, chosen in (
                ("hf", "MODEL", [g for g in groups if g.replace("_", "-") not in VISUAL_TASKS]),
                ("hf-multimodal", "VLM", [g for g in groups if g.replace("_", "-") in VISUAL_TASKS]),
            )
            if chosen
        ),
        "```",
        "",
        f"`--tasks` takes task names, groups ({', '.join(f'`{g}`' for g in groups)}: every setting of a task, "
        "both variants) or the tags `procbench_context` and `procbench_nocontext` (one variant, every task). "
        "`--model dummy` (random answers) runs the textual tasks without a model; `lm_eval validate --tasks ...` "
        "loads any of them. "
        "Then `procbench evaluate --lm-eval results/MODEL/results_*.json` puts the accuracies beside procbench's "
        "baselines, with bootstrap intervals over procedures from the per-question logs of `--log_samples` "
        "(without them, from lm-eval's standard errors).",
        "",
        "## Tasks",
        "",
        "- `TASK_SETTING`: the procedure's title and context steps, then the question as procbench's report shows "
        "it: the instruction, the question's items (the blank as `" + BLANK + "`), the choices, `Answer:`.",
        "- `TASK_SETTING_nocontext`: the question alone (no title, no context): what the question and its choices "
        "give away. For sets without context steps (sequencing, pair order) the two differ in the title only.",
        "",
        "Each choice's words are the continuation the model scores: `acc` takes the most likely, `acc_norm` "
        "the most likely per byte. Sequencing's choices are every order of the shown steps (`n!`, 120 for 5 "
        "steps: that many scored continuations per question), its targets every acceptable order.",
        "",
        "The visual tasks (visual cloze, coherence, ordering; tag `procbench_visual`) are for vision-language "
        "models (`--model hf-multimodal`, e.g. `--model_args pretrained=MODEL`). Their data are Parquet files "
        "with the images inlined, so nothing is fetched. The prompt shows one `" + IMAGE_PLACEHOLDER + "` per "
        "image (" + IMAGE_ORDER + "), names the choices by letter and asks for the letter; the model generates "
        "its answer, the `letter` filter takes the first choice letter in it and `exact_match` scores it. Their "
        "`_nocontext` twin leaves out the title and the step texts: for coherence and ordering the images are "
        "then the whole input.",
        "",
        "| task | train | val | test | chance (test) |",
        "|---|---|---|---|---|",
    ]
    for name, counts in result.tasks.items():
        lines.append(
            f"| `{name}` | {counts.get('train', 0)} | {counts.get('val', 0)} | {counts.get('test', 0)} | "
            f"{100 * result.chance[name]:.1f}% |"
        )
    if result.skipped:
        lines += ["", "## Not exported", ""]
        lines += [f"- {name}: {why}." for name, why in result.skipped.items()]
    lines += [
        "",
        "## Data files",
        "",
        "lm-eval opens `data_files` relative to the directory it runs in, not to the YAML, so the configs name "
        "their data by absolute path. After moving this folder, export it again (or edit the paths).",
        "",
    ]
    return "\n".join(lines)
