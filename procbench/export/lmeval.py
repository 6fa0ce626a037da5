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
(``n!``, at most 120; ``answer`` lists every acceptable order, lm-eval's multiple targets). The visual tasks
are not exported: their items are images (see :data:`SKIPPED_TASKS`).

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
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from procbench.errors import BadInput
from procbench.export.inline import Inliner
from procbench.export.sets import resolve_sets
from procbench.export.target import ExportFormat, prepare_target
from procbench.progress import SILENT, Progress
from procbench.qsets.columns import procedure_ids
from procbench.qsets.files import QuestionSet
from procbench.tasks import get_task

__all__ = ["BLANK", "SKIPPED_TASKS", "LmEvalExport", "export_lm_eval", "lm_eval_name", "sequencing_orders"]

#: Tasks not exported, and why (their items are images: a text rendering would be another task).
SKIPPED_TASKS: dict[str, str] = {
    "visual-cloze": "its question and choices are images; words in their place would make it textual cloze",
    "visual-coherence": "its choices are images; only an image shows which one does not belong",
    "visual-ordering": "its items are images; their step texts would be the sequencing task, not this one",
}

#: The blank of a cloze question, as the prompt shows it.
BLANK = "___"

#: lm-eval's splits (its ``datasets`` split names) and the procbench splits they hold.
SPLITS = {"train": "train", "validation": "val", "test": "test"}

#: Version of the exported prompt format (``metadata.version``); raise it when the templates change.
PROMPT_VERSION = 1.0

#: Most items a sequencing question may have: its choices are every order (5! = 120).
MAX_SEQUENCE = 5

_DROPPED = f"a choice without words, two alike, or a sequence of over {MAX_SEQUENCE} steps"

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


def _document(record: dict[str, Any]) -> dict[str, Any] | None:
    """One lm-eval document of an inlined record (None: a question lm-eval cannot ask, e.g. a choice without
    words)."""
    doc: dict[str, Any] = {
        "qid": record["qid"],
        "procedure_id": record["procedure_id"],
        "procedure_title": record["procedure_title"] or "",
        "instruction": record["instruction"],
        "context": [
            {"number": c["index"] + 1, "title": c["title"] or "", "text": c["text"] or ""} for c in record["context"]
        ],
        "question": [_words(i) for i in record["question"]],
    }
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


def _chance(doc: dict[str, Any]) -> float:
    answers = doc["answer"]
    return (len(answers) if isinstance(answers, list) else 1) / len(doc["choices"])


def _task_config(
    name: str,
    qset: QuestionSet,
    files: dict[str, Path],
    *,
    context: bool,
    sequencing: bool,
) -> dict[str, Any]:
    body = SEQUENCE_TEMPLATE if sequencing else QUESTION_TEMPLATE
    config: dict[str, Any] = {
        "task": name,
        "tag": ["procbench_context" if context else "procbench_nocontext"],
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {split: str(path.resolve()) for split, path in files.items()}},
        "output_type": "multiple_choice",
        "test_split": "test",
    }
    if "train" in files:
        config["training_split"] = "train"
        config["fewshot_split"] = "train"
    if "validation" in files:
        config["validation_split"] = "validation"
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
            "metadata": {
                "version": PROMPT_VERSION,
                "procbench": {
                    "task": qset.task,
                    "setting": qset.setting,
                    "context": context,
                    "qset": str(qset.path.resolve()),
                },
            },
        }
    )
    return config


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
    rf"README\.md|(?P<group>{_NAME})/_(?P=group)\.yaml|{_NAME}/{_NAME}/(?:(?:train|val|test)\.jsonl|{_NAME}\.yaml)"
)


def _planned(wanted: list[QuestionSet]) -> list[str]:
    """Every path (relative to ``--to``) an export of ``wanted`` may write."""
    planned = {"README.md"}
    for qset in wanted:
        group, setting = lm_eval_name(qset.task), lm_eval_name(qset.setting)
        name = lm_eval_name(qset.task, qset.setting)
        planned.add(f"{group}/_{group}.yaml")
        planned |= {f"{group}/{setting}/{split}.jsonl" for split in SPLITS.values()}
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
            names collide, or nothing exportable (only visual sets).
    """
    resolved = resolve_sets(targets, store)
    out = Path(out)
    result = LmEvalExport(out)
    wanted: list[QuestionSet] = []
    for qset in resolved.sets:
        if qset.task in SKIPPED_TASKS:
            result.skipped[qset.name] = SKIPPED_TASKS[qset.task]
        else:
            wanted.append(qset)
    if not wanted:
        raise BadInput(
            "nothing to export to lm-eval: "
            + "; ".join(f"{name}: {why}" for name, why in result.skipped.items())
            + " (export textual cloze, next action, pair order or sequencing sets)"
        )
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
    progress.start("export", total=len(wanted))
    for qset in wanted:
        progress.advance()
        _export_set(qset, inliner, out, result)
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


def _export_set(qset: QuestionSet, inliner: Inliner, out: Path, result: LmEvalExport) -> None:
    spec = get_task(qset.task)
    sequencing = spec.family == "sequencing"
    name = lm_eval_name(qset.task, qset.setting)
    folder = out / lm_eval_name(qset.task) / lm_eval_name(qset.setting)
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    counts: dict[str, int] = {}
    dropped = 0
    test_chance: list[float] = []
    for hub, split in SPLITS.items():
        written = 0
        path = folder / f"{split}.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for record in inliner.records(qset, split):
                doc = _document(record)
                if doc is None:
                    dropped += 1
                    continue
                if split == "test":
                    test_chance.append(_chance(doc))
                handle.write(json.dumps(doc, ensure_ascii=False) + "\n")
                written += 1
        if written:
            files[hub] = path
            counts[split] = written
            result.files.append(path)
        else:
            path.unlink()
    if "test" not in files:
        shutil.rmtree(folder)
        why = f" ({dropped} dropped: {_DROPPED})" if dropped else ""
        result.skipped[qset.name] = f"no test questions lm-eval can ask{why}"
        return
    group = lm_eval_name(qset.task)
    for context in (True, False):
        task_name = name if context else f"{name}_nocontext"
        path = folder / f"{task_name}.yaml"
        _write_yaml(path, _task_config(task_name, qset, files, context=context, sequencing=sequencing))
        result.files.append(path)
        result.tasks[task_name] = dict(counts)
        result.chance[task_name] = float(sum(test_chance) / len(test_chance))
        result.groups.setdefault(group, []).append(task_name)
    if dropped:
        result.skipped[f"{qset.name} ({dropped} questions)"] = _DROPPED


def _readme(result: LmEvalExport) -> str:
    groups = list(result.groups)
    lines = [
        "# procbench question sets as lm-evaluation-harness tasks",
        "",
        "Written by `procbench export --format lm-eval`. Each task folder holds one setting's questions "
        "(`train.jsonl`, `val.jsonl`, `test.jsonl`, texts inlined) and its task configs; lm-eval scores the "
        "`test` split (few-shot examples come from `train`).",
        "",
        "## Run",
        "",
        "```bash",
        "pip install 'lm-eval[hf]>=0.4'",
        f"lm_eval --model hf --model_args pretrained=MODEL --tasks {groups[0]} --include_path {result.out.resolve()} "
        "--output_path results --log_samples",
        "```",
        "",
        f"`--tasks` takes task names, groups ({', '.join(f'`{g}`' for g in groups)}: every setting of a task, "
        "both variants) or the tags `procbench_context` and `procbench_nocontext` (one variant, every task). "
        "`--model dummy` (random answers) checks the tasks without a model. "
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
        "| task | train | val | test | chance (test) |",
        "|---|---|---|---|---|",
    ]
    for name, counts in result.tasks.items():
        lines.append(
            f"| `{name}` | {counts.get('train', 0)} | {counts.get('val', 0)} | {counts.get('test', 0)} | "
            f"{100 * result.chance[name]:.1f}% |"
        )
    lines += ["", "## Not exported", ""]
    skipped = dict(result.skipped)
    for task, why in SKIPPED_TASKS.items():
        lines.append(f"- {task}: {why}.")
    lines += [f"- {name}: {why}." for name, why in skipped.items() if name.split("/")[0] not in SKIPPED_TASKS]
    lines += [
        "",
        "## Data files",
        "",
        "lm-eval opens `data_files` relative to the directory it runs in, not to the YAML, so the configs name "
        "their data by absolute path. After moving this folder, export it again (or edit the paths).",
        "",
    ]
    return "\n".join(lines)
