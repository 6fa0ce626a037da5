"""Dataset cards: one builder for the ``card.md`` that ``generate`` writes beside a question set and the
``README.md`` of a Hugging Face export (``procbench export``).

A card is YAML the Hub reads (``pretty_name``, ``license`` as Hub/SPDX ids, ``language``, ``task_categories``,
``size_categories``, ``configs`` with their data files) followed by sections: what the set is, its
configurations and split sizes, its fields, how it was built (sources, cleaning, encoders with revisions,
generation parameters and seed), the audit table, licenses, limitations and citations.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from procbench import __version__
from procbench.card.citations import BIBTEX, PAPERS, citations_for, methods_of
from procbench.card.escape import md_code, md_text, yaml_safe
from procbench.card.glossary import glossary_for
from procbench.card.licenses import hub_license, spdx_license
from procbench.card.models import models_section
from procbench.card.setting_report import SettingReport
from procbench.readers.views import headroom, headroom_card_lines, readers_card_lines
from procbench.tasks import TASKS as ALL_TASKS
from procbench.tasks import TEXTUAL_ITEMS

__all__ = [
    "BIBTEX",
    "SET_FIELDS",
    "TASKS",
    "CardSet",
    "DatasetCard",
    "SettingReport",
    "dataset_card",
    "default_set",
    "hub_license",
    "meta_totals",
    "procedure_facts",
    "provenance_facts",
    "recommended_setting",
    "set_parameters",
    "setting_counts",
    "spdx_license",
    "summarise_set",
]

SPLITS = ("train", "val", "test")
#: Settings per audit table: a task with more settings gets several tables (a 14-column table does not fit a
#: page or the Hub's card view).
AUDIT_COLUMNS = 5
#: procbench's split names as the Hub names them.
HUB_SPLITS = {"train": "train", "val": "validation", "test": "test"}


@dataclass(frozen=True)
class TaskInfo:
    """How a task reads to a person and to the Hub (from its :class:`~procbench.tasks.TaskSpec`)."""

    summary: str
    category: str  # Hub task category
    multiple_choice: bool


#: Task name -> how it reads, for every task of :data:`procbench.tasks.TASKS`.
TASKS: dict[str, TaskInfo] = {
    spec.name: TaskInfo(spec.summary, spec.hub_category, spec.hub_category == "multiple-choice")
    for spec in ALL_TASKS.values()
}


#: The columns of a question set's parquet files (DESIGN §5).
SET_FIELDS: list[tuple[str, str, str]] = [
    ("qid", "string", "question id, `PROCEDURE_ID#n` (n counts the procedure's questions)"),
    ("task", "string", "the task"),
    ("procedure_id", "string", "`SOURCE:ID` of the procedure the question is about (in the store)"),
    ("split", "string", "train, val or test; no procedure is in two splits"),
    ("context", "list<int32>", "indices of the procedure's steps given as context"),
    (
        "question",
        "list<string>",
        "question items: step titles, texts or first sentences (textual cloze, by `--items`), image ids (visual), "
        "step keys `PROCEDURE_ID#INDEX` (sequencing, pair order); `@placeholder` marks the blank",
    ),
    ("choices", "list<string> or list<list<string>>", "the choices: items, or orders of items"),
    ("answer", "int32", "index of the correct choice (pair order: 1 = in authored order)"),
    ("meta", "struct", "every sampling decision that made the question (differs per setting)"),
]


@dataclass
class CardSet:
    """What a card says about one question set (one setting of one task)."""

    task: str
    setting: str
    splits: dict[str, int]
    procedures: int
    answer_positions: dict[int, int] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    audit: dict[str, Any] | None = None
    #: Hub split name -> file pattern, when the card declares configs.
    data_files: dict[str, str] | None = None
    config_name: str | None = None
    #: This setting's report in the ``generate`` run that wrote it (yield, budget use, adversarial filtering
    #: account, skipped questions); None: not recorded.
    generation: SettingReport | None = None
    #: Per-question ``meta`` summed over the set (:func:`meta_totals`).
    totals: dict[str, int] = field(default_factory=dict)
    #: Textual cloze's ``--items`` the set was made with (None: not given, step titles).
    items: str | None = None
    #: Scored reader packets recorded with the set (``procbench score-packet``; ``readers.json``).
    readers: list[dict[str, Any]] = field(default_factory=list)
    #: Model rows ``procbench evaluate`` recorded for the set (:func:`procbench.card.models.read_model_rows`).
    models: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    @property
    def questions(self) -> int:
        """All questions of the set."""
        return sum(self.splits.values())


@dataclass
class DatasetCard:
    """Everything a card is built from."""

    title: str
    sets: list[CardSet]
    fields: list[tuple[str, str, str]]
    #: Counters over the procedures the sets use: ``sources``, ``licenses`` (as recorded), ``languages``.
    procedures: dict[str, Counter[str]]
    #: Per task: ``{"seed", "args", "counts"}`` of the ``generate`` run that wrote it (further runs that wrote
    #: other settings of the task under their own keys, ``TASK (run of TIME)``).
    generation: dict[str, dict[str, Any]]
    #: Facts from the store's provenance log (:func:`provenance_facts`).
    build: dict[str, Any]
    usage: str = ""
    limitations: list[str] = field(default_factory=list)
    #: When the sets were generated (ISO date of the last ``generate`` run among them), if known.
    published: str | None = None
    #: One question as a person reads it (an inlined record of :mod:`procbench.export.inline`, images as ids),
    #: shown under "Example"; None: no example (a ``card.md`` beside a set holds store keys only).
    example: dict[str, Any] | None = None
    #: Who answers questions about the dataset: a person or address (``export --contact``), else the Hub
    #: repository's discussions when it was pushed (``repo_id``); None and no repo: the card says neither was given.
    contact: str | None = None
    #: The Hub dataset repository the export was pushed to (``OWNER/NAME``), if any.
    repo_id: str | None = None


def _value_counts(column: pa.ChunkedArray | pa.Array) -> Counter[Any]:
    counts = pc.value_counts(column)
    return Counter(dict(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True)))


def set_parameters(meta: pa.ChunkedArray | pa.Array) -> dict[str, Any]:
    """The scalar ``meta`` fields that hold one value over the whole set (knobs, budget, distances fixed for the
    setting, ...): what distinguishes a setting, read from its questions, whatever its name."""
    if not pa.types.is_struct(meta.type) or len(meta) == 0:
        return {}
    chunked = meta if isinstance(meta, pa.ChunkedArray) else pa.chunked_array([meta])
    out: dict[str, Any] = {}
    for child in meta.type:
        kind = child.type
        scalar = pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_string(kind)
        if not (scalar or pa.types.is_boolean(kind)):
            continue
        values = pc.unique(pc.struct_field(chunked, child.name)).drop_null()
        if len(values) == 1:
            out[child.name] = values[0].as_py()
    return out


#: Per-question ``meta`` counts a card sums over a set: ``replacements`` (adversarial filtering's negatives
#: replaced in the question).
_SUMMED = ("replacements",)


def meta_totals(meta: pa.ChunkedArray | pa.Array) -> dict[str, int]:
    """For each per-question count of :data:`_SUMMED` in ``meta``: its total and ``NAME_questions`` (questions
    where it is above 0)."""
    if not pa.types.is_struct(meta.type) or len(meta) == 0:
        return {}
    chunked = meta if isinstance(meta, pa.ChunkedArray) else pa.chunked_array([meta])
    out: dict[str, int] = {}
    for name in _SUMMED:
        if meta.type.get_field_index(name) < 0 or not pa.types.is_integer(meta.type.field(name).type):
            continue
        values = pc.struct_field(chunked, name)
        out[name] = int(pc.sum(values).as_py() or 0)
        out[f"{name}_questions"] = int(pc.sum(pc.greater(values, 0)).as_py() or 0)
    return out


def summarise_set(task: str, setting: str, table: pa.Table) -> CardSet:
    """A :class:`CardSet` from a question table (``split``, ``procedure_id``, ``answer``, ``meta`` columns)."""
    splits = _value_counts(table["split"]) if table.num_rows else Counter()
    positions = _value_counts(table["answer"]) if table.num_rows else Counter()
    return CardSet(
        task=task,
        setting=setting,
        splits={s: int(splits.get(s, 0)) for s in SPLITS},
        procedures=len(pc.unique(table["procedure_id"])) if table.num_rows else 0,
        answer_positions={int(k): int(v) for k, v in sorted(positions.items())},
        parameters=set_parameters(table["meta"]) if "meta" in table.column_names else {},
        totals=meta_totals(table["meta"]) if "meta" in table.column_names else {},
    )


def procedure_facts(procedures: pa.Table) -> dict[str, Counter[str]]:
    """Counters of ``source``, ``license`` and ``language`` over a procedures table (missing values skipped)."""
    out: dict[str, Counter[str]] = {}
    for name, column in (("sources", "source"), ("licenses", "license"), ("languages", "language")):
        if column in procedures.column_names:
            out[name] = Counter(v for v in procedures[column].to_pylist() if v)
        else:
            out[name] = Counter()
    return out


def provenance_facts(provenance: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """What the store's log says about how its procedures were obtained, cleaned and embedded."""
    sources: list[dict[str, Any]] = []
    clean: dict[str, Any] | None = None
    encoders: dict[str, dict[str, Any]] = {}
    generate: list[dict[str, Any]] = []
    for entry in provenance:
        command = entry.get("command")
        args = entry.get("args") or {}
        if command in ("scrape", "ingest", "fetch-images"):
            keep = {k: args[k] for k in ("source", "manifest", "categories", "urls", "file", "format") if args.get(k)}
            sources.append({"command": command, **keep, "time": entry.get("time")})
        elif command == "clean":
            clean = {"args": args, "counts": entry.get("counts") or {}}
        elif command == "embed":
            for name, info in (entry.get("counts") or {}).items():
                if isinstance(info, dict) and info.get("encoder"):
                    encoders[name] = {k: info.get(k) for k in ("encoder", "revision", "dim", "rows", "index")}
        elif command in ("generate", "filter"):  # filter: sets derived from another set (AFLite)
            generate.append(entry)
    return {"sources": sources, "clean": clean, "encoders": encoders, "generate": generate}


def setting_counts(counts: dict[str, Any], setting: str) -> SettingReport | None:
    """A setting's report in a ``generate`` run's counts (:meth:`SettingReport.of`); None when it recorded none."""
    return SettingReport.of(counts, setting)


def generation_of(build: dict[str, Any], task: str, setting: str) -> dict[str, Any] | None:
    """The last ``generate`` log entry that wrote ``task``/``setting``."""
    for entry in reversed(build.get("generate", [])):
        args = entry.get("args") or {}
        if args.get("task") == task and setting in (args.get("settings") or []):
            counts = entry.get("counts") or {}
            return {"seed": entry.get("seed"), "args": args, "counts": counts, "time": entry.get("time")}
    return None


def recommended_setting(task: str) -> str:
    """The setting to use when in doubt for ``task`` (:attr:`procbench.tasks.TaskSpec.recommended`)."""
    spec = ALL_TASKS.find(task)
    return spec.recommended if spec is not None else "default"


def default_set(sets: list[CardSet]) -> CardSet | None:
    """The set that is the default config: the first task's recommended setting when exported, else its
    ``default`` setting, else the first set."""
    if not sets:
        return None
    task = sets[0].task
    for wanted in (recommended_setting(task), "default"):
        for s in sets:
            if s.task == task and s.setting == wanted:
                return s
    return sets[0]


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "1M<n<10M" if n < 10_000_000 else "10M<n<100M"


def _header(card: DatasetCard) -> dict[str, Any]:
    spdx = sorted({spdx_license(text) or "other" for text in card.procedures["licenses"]})
    licenses = [hub_license(None if s == "other" else s) for s in spdx] or ["unknown"]
    tasks = list(dict.fromkeys(s.task for s in card.sets))
    header: dict[str, Any] = {
        "pretty_name": card.title,
        "license": licenses[0] if len(licenses) == 1 else licenses,
    }
    if "other" in licenses:
        unnamed = sorted(t for t in card.procedures["licenses"] if spdx_license(t) is None)
        # The Hub wants an id here (like `my-license-1.0`); the licenses as recorded go to license_details.
        header["license_name"] = re.sub(r"[^a-z0-9.]+", "-", " ".join(unnamed).lower()).strip("-")[:100] or "unknown"
        header["license_details"] = "; ".join(unnamed)[:500]
    header["language"] = sorted(card.procedures["languages"]) or ["en"]
    header["task_categories"] = list(dict.fromkeys(TASKS[t].category for t in tasks if t in TASKS))
    if any(TASKS[t].multiple_choice for t in tasks if t in TASKS):
        header["task_ids"] = ["multiple-choice-qa"]
    header["size_categories"] = [_size_category(sum(s.questions for s in card.sets))]
    header["source_datasets"] = ["original"]
    header["tags"] = ["procbench", "procedural-comprehension", *tasks]
    configs = [s for s in card.sets if s.data_files]
    if configs:
        names = [s.config_name or s.setting for s in configs]
        # `datasets` takes a config named "default" as the default one: then no other may say so (an export
        # renames the setting `default` when another config is its default, see procbench.export.hf)
        chosen = default_set(configs)
        first = names.index("default") if "default" in names else configs.index(chosen) if chosen else 0
        header["configs"] = [
            {
                "config_name": name,
                "data_files": [{"split": split, "path": path} for split, path in (s.data_files or {}).items()],
                **({"default": True} if i == first else {}),
            }
            for i, (name, s) in enumerate(zip(names, configs, strict=True))
        ]
    return header


def _items_lines(task: str, sets: list[CardSet]) -> list[str]:
    """What the items of a task's sets are and the instruction they carry (textual cloze's ``--items``)."""
    spec = ALL_TASKS.find(task)
    if spec is None or task != "textual-cloze":
        return []
    lines = []
    for items in dict.fromkeys(s.items or "title" for s in sets):
        choice = TEXTUAL_ITEMS.get(items)
        if choice is not None:
            lines.append(f'  Items (`--items {items}`): {choice.what}; instruction: "{spec.instruction_for(items)}"')
    return lines


def _yaml(header: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(yaml_safe(header), sort_keys=False, allow_unicode=True, width=1000)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, dict)):
        return "`" + md_code(json.dumps(value, sort_keys=True, default=str)) + "`"
    return md_text(value)


def _configurations(card: DatasetCard) -> list[str]:
    lines = [
        "## Configurations",
        "",
        "| config | task | train | validation | test | procedures | parameters |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in card.sets:
        params = ", ".join(f"{k}={_fmt(v)}" for k, v in s.parameters.items() if k != "setting") or "-"
        lines.append(
            f"| `{md_code(s.config_name or s.setting)}` | {md_text(s.task)} | {s.splits.get('train', 0)} "
            f"| {s.splits.get('val', 0)} "
            f"| {s.splits.get('test', 0)} | {s.procedures} | {params} |"
        )
    empty = [
        f"`{md_code(s.config_name or s.setting)}` {name}" for s in card.sets for name, n in s.splits.items() if n == 0
    ]
    lines.append("")
    if empty:
        lines += [f"Empty splits: {', '.join(empty)}.", ""]
    lines.append(
        "Splits are by procedure (or by whole categories, see the generation arguments): no procedure appears in "
        "two splits. `parameters` are the `meta` values shared by every question of the configuration."
    )
    shares = [
        (max(s.answer_positions.values()) / sum(s.answer_positions.values()), len(s.answer_positions))
        for s in card.sets
        if TASKS.get(s.task) and TASKS[s.task].multiple_choice and sum(s.answer_positions.values())
    ]
    if shares:
        lo, hi = min(x for x, _ in shares), max(x for x, _ in shares)
        positions = max(n for _, n in shares)
        held = f"{lo:.0%}" if f"{lo:.0%}" == f"{hi:.0%}" else f"{lo:.0%}–{hi:.0%}"
        lines += [
            "",
            f"Answer positions: the most common position holds {held} of a configuration's answers "
            f"({1 / positions:.0%} would be uniform over {positions} positions); the audit's `answer_position` "
            "probe tests each configuration.",
        ]
    lines.append("")
    return lines


def _build_section(card: DatasetCard) -> list[str]:
    build = card.build
    lines = ["## How it was built", ""]
    sources = build.get("sources") or []
    if sources:
        lines.append("**Sources.** " + "; ".join(_describe_source(s) for s in sources) + ".")
    counts = card.procedures["sources"]
    lines.append(
        "Procedures used: "
        + (", ".join(f"{md_text(name)} {n}" for name, n in sorted(counts.items())) or "none recorded")
        + f" (languages: {', '.join(md_text(x) for x in sorted(card.procedures['languages'])) or 'not recorded'})."
    )
    lines.append("")
    clean = build.get("clean")
    if clean:
        args = clean["args"]
        keep = {k: args[k] for k in sorted(args) if k in _CLEAN_KEYS and args[k] not in (None, [], "")}
        dropped = {k[8:]: v for k, v in clean["counts"].items() if k.startswith("dropped_") and v}
        lines.append(
            "**Cleaning** (`procbench clean`, papers 001 and 004): "
            + ", ".join(f"{k}={_fmt(v)}" for k, v in keep.items())
            + f"; kept {clean['counts'].get('kept', '?')} of {clean['counts'].get('procedures', '?')} procedures"
            + (f" (dropped: {', '.join(f'{md_text(k)} {_fmt(v)}' for k, v in dropped.items())})" if dropped else "")
            + "."
        )
    else:
        lines.append("**Cleaning:** the store was not cleaned (raw titles and texts).")
    lines.append("")
    encoders = build.get("encoders") or {}
    if encoders:
        lines += ["**Encoders** (distances that chose negatives and that the audit measures):", ""]
        lines += ["| field | encoder | revision | dim |", "|---|---|---|---|"]
        for name, info in sorted(encoders.items()):
            lines.append(
                f"| {md_text(name)} | {md_text(info['encoder'])} | {md_text(info.get('revision') or '-')} "
                f"| {md_text(info.get('dim') or '-')} |"
            )
        lines.append("")
    lines += ["**Generation** (`procbench generate`):", ""]
    for task, gen in card.generation.items():
        args = {k: v for k, v in (gen.get("args") or {}).items() if k not in ("task",)}
        lines.append(
            f"- {md_text(task)}: seed {_fmt(gen.get('seed'))}, "
            + ", ".join(f"{md_text(k)}={_fmt(v)}" for k, v in args.items())
        )
        skipped = {k: v for k, v in (gen.get("counts") or {}).items() if k.startswith("skipped") and v}
        if skipped:
            lines.append(f"  skipped: {_fmt(skipped)}")
        clustering = (gen.get("counts") or {}).get("clustering")
        if isinstance(clustering, dict) and clustering:
            lines.append(f"  KMeans clustering for debiasing: {_fmt(clustering)}")
    per_setting = [(s, facts) for s in card.sets if (facts := _setting_facts(s))]
    if per_setting:
        lines += ["", "Per configuration:", ""]
        for s, facts in per_setting:
            lines.append(f"- `{md_code(s.config_name or s.setting)}`: " + "; ".join(facts) + ".")
    lines += [
        "",
        "Each question's `meta` records the sampling decisions that made it (knobs, bands, distances, clusters, "
        "fallbacks). The same store, options and seed give byte-identical files.",
        "",
    ]
    return lines


def _setting_facts(s: CardSet) -> list[str]:
    """What the setting's report and the questions' ``meta`` say about one setting: questions kept of those
    drafted (yield), the debiasing budget (and how ``--budget auto`` chose it), the adversarial filtering
    (rounds, ceiling, replacements, the probes' last accuracy) and the questions skipped, by reason."""
    report = s.generation or SettingReport()
    adversarial = report.adversarial or {}
    facts = _adversarial_facts(s, adversarial)
    auto = report.auto_budget
    if auto:
        tried = ", ".join(f"{t.get('budget')} → {float(t.get('yield') or 0):.1%}" for t in auto.get("tried") or [])
        facts.append(
            f"budget auto: {auto.get('chosen')} per cluster (even share {auto.get('even_share')}; "
            f"budget → yield tried: {tried})"
        )
    budget = report.budget
    if budget:
        facts.append(
            f"budget {budget.get('per_cluster')} per cluster over {budget.get('clusters')} clusters: "
            f"{budget.get('spent')} spent, {budget.get('exhausted')} clusters exhausted"
        )
    if report.kept_share is not None:
        of = f"{report.questions} kept of {report.drafted} drafted" if report.drafted is not None else ""
        facts.append(f"yield {float(report.kept_share):.1%} ({of or 'questions kept of those drafted'})")
    pruning = report.pruning
    if pruning and pruning.get("not_filtered"):
        facts.append(f"AFLite pruning of the drawn questions not run: {pruning['not_filtered']}")
    elif pruning:
        final = pruning.get("final_accuracy") or {}
        probes = ", ".join(f"{md_text(name)} {_fmt(value)}" for name, value in final.items())
        # the rank balance skips before pruning: the share is stated of both counts
        drawn = report.questions + int(pruning.get("pruned") or 0)
        planned = drawn + int(report.skipped_questions.get("rank_balance") or 0)
        kept = f"{report.questions} kept of {drawn} drawn at a rank ({report.questions / max(drawn, 1):.0%})"
        if planned > drawn:
            kept += f", of {planned} planned ({report.questions / planned:.0%})"
        facts.append(
            f"AFLite pruning (Le Bras et al. 2020) of the drawn questions: {pruning.get('pruned')} the context-free "
            f"probes still solved dropped (at most {1 - float(pruning.get('min_yield') or 1):.0%}, equally many at "
            f"every answer rank; every kept question is as drawn; {kept}); the probes' held-out accuracy then: "
            f"{probes} (stop bound {_fmt(pruning.get('chance_bound'))})"
            + (f"; policy {md_text(pruning['policy'])}" if pruning.get("policy") else "")
        )
    aflite = report.aflite
    if aflite:
        facts.append(
            f"AFLite (`procbench filter --aflite`, Le Bras et al. 2020) on {aflite.get('source')}: kept "
            f"{aflite.get('kept')} of {aflite.get('questions')} questions after {aflite.get('iterations')} rounds "
            f"(stopped at the {aflite.get('stopped')}; threshold {_fmt(aflite.get('threshold'))}, "
            f"{aflite.get('partitions')} partitions per round), dropping those that linear models on "
            "context-free features answered most often"
        )
    for key in ("skipped_questions", "skipped_procedures"):
        skipped = {k: v for k, v in getattr(report, key).items() if v}
        if skipped:
            facts.append(key.replace("_", " ") + ": " + ", ".join(f"{k} {v}" for k, v in skipped.items()))
    return facts


def _adversarial_facts(s: CardSet, adversarial: dict[str, Any]) -> list[str]:
    """The adversarial filtering's account: rounds, ceiling, replacements, rules, pruning, the probes' accuracy."""
    facts: list[str] = []
    if adversarial:
        text = f"adversarial filtering: at most {adversarial.get('rounds')} rounds"
        if adversarial.get("not_filtered"):
            text += f", none run: {adversarial['not_filtered']}"
        elif adversarial.get("rounds_run") is not None:
            text += f", {adversarial['rounds_run']} run (stopped: {adversarial.get('stopped', '?')})"
        facts.append(text)
    ceiling = adversarial.get("ceiling")
    if ceiling is None:
        ceiling = s.parameters.get("ceiling")
    # a task whose filtering replaces something else than negatives (visual coherence: the intruder; ordering:
    # wrong orders) says what, and what its ceiling bounds
    if ceiling is not None:
        rule = adversarial.get("ceiling_rule") or "no negative that close to the answer or a question item"
        facts.append(f"similarity ceiling {_fmt(ceiling)} ({rule})")
    if "replacements" in s.totals:
        facts.append(
            f"{s.totals['replacements']} {adversarial.get('replaced', 'negatives')} replaced in "
            f"{s.totals['replacements_questions']} of {s.questions} questions"
        )
    facts.extend(str(rule) for rule in adversarial.get("rules") or [])
    if adversarial.get("pruned"):
        facts.append(
            f"{adversarial['pruned']} questions the probes still solved dropped (most confident first; "
            f"at least {_fmt(adversarial.get('min_yield'))} of the drafted questions kept)"
        )
    if isinstance(adversarial.get("final_accuracy"), dict):
        accuracy = ", ".join(f"{k} {_fmt(v)}" for k, v in adversarial["final_accuracy"].items())
        bound = adversarial.get("chance_bound")
        facts.append(
            f"held-out probe accuracy on the final set {accuracy}" + (f" (stop bound {_fmt(bound)})" if bound else "")
        )
    return facts


_CLEAN_KEYS = (
    "min_steps",
    "max_steps",
    "languages",
    "categories",
    "exclude_categories",
    "keywords",
    "exclude_keywords",
    "split_fused",
    "ascii_only",
    "dedupe",
)


def _describe_source(entry: dict[str, Any]) -> str:
    parts = [f"`procbench {md_code(entry['command'])}`"]
    for key in ("source", "manifest", "file", "format"):
        if entry.get(key):
            parts.append(f"{key}={md_text(entry[key])}")
    if entry.get("categories"):
        parts.append("categories=" + ", ".join(md_text(c) for c in entry["categories"][:8]))
    return " ".join(parts)


def _audit_section(card: DatasetCard) -> list[str]:
    audited = [s for s in card.sets if s.audit and s.audit.get("probes")]
    lines = ["## Audit", ""]
    if not audited:
        return [*lines, "Not audited yet: `procbench audit` measures shortcut biases with 95% intervals.", ""]
    lines += [
        "Probes of `procbench audit`, the settings of each task side by side: value [95% interval] (chance). "
        "**Bold**: a shortcut probe whose interval lies above (↑) or below (↓) chance, so the choices alone give "
        "the answer away (or give it away inverted). *Reference* probes read the context: above chance is what "
        "they should be; the gap between them and the shortcut probes is what the audit shows. n/a: the probe "
        "does not apply to the set.",
        "",
    ]
    for task in dict.fromkeys(s.task for s in audited):
        task_sets = [s for s in audited if s.task == task]
        probes = list(dict.fromkeys(p for s in task_sets for p in (s.audit or {})["probes"]))
        chunks = [task_sets[i : i + AUDIT_COLUMNS] for i in range(0, len(task_sets), AUDIT_COLUMNS)]
        absent: list[str] = []
        for number, sets in enumerate(chunks):
            part = f" ({number * AUDIT_COLUMNS + 1}–{number * AUDIT_COLUMNS + len(sets)} of {len(task_sets)})"
            lines += [
                f"### {task}" + (part if len(chunks) > 1 else ""),
                "",
                "| probe | " + " | ".join(f"`{md_code(s.config_name or s.setting)}`" for s in sets) + " |",
                "|---|" + "---|" * len(sets),
            ]
            for probe in probes:
                every = [(s.audit or {})["probes"].get(probe) for s in task_sets]
                if all(not r or r.get("value") is None for r in every):
                    if number == 0:
                        reasons = sorted({md_text(r["reason"]) for r in every if r and r.get("reason")})
                        absent.append(md_text(probe) + (f" ({'; '.join(reasons)})" if reasons else ""))
                    continue
                results = [(s.audit or {})["probes"].get(probe) for s in sets]
                reference = any(r and r.get("reference") for r in every)
                name = f"{md_text(probe)} (*reference*)" if reference else md_text(probe)
                lines.append(f"| {name} | " + " | ".join(_audit_cell(r) for r in results) + " |")
            lines.append("")
        if absent:
            lines += [f"Not applicable to any {task} set: " + "; ".join(absent) + ".", ""]
    missing = [
        f"`{md_code(s.config_name or s.setting)}`" for s in card.sets if not (s.audit and s.audit.get("probes"))
    ]
    if missing:
        lines += ["Not audited: " + ", ".join(missing) + ".", ""]
    return lines


def _audit_cell(result: dict[str, Any] | None) -> str:
    if not result or result.get("value") is None:
        return "n/a"
    text = f"{result['value']:.3f}"
    if result.get("ci") and None not in result["ci"]:
        lo, hi = result["ci"]
        text += f" [{lo:.3f}, {hi:.3f}]"
    if result.get("chance") is not None:
        text += f" ({result['chance']:.3f})"
    flagged = result.get("flagged", result.get("verdict") in ("above", "below") and not result.get("reference"))
    if flagged:
        return f"**{text}** {'↑' if result.get('verdict') == 'above' else '↓'}"
    return text


def _licenses_section(card: DatasetCard) -> list[str]:
    lines = [
        "## Licenses",
        "",
        "The questions are made of the procedures' texts and images, which keep their own licenses:",
        "",
        "| license (SPDX) | as recorded | procedures |",
        "|---|---|---|",
    ]
    for text, n in sorted(card.procedures["licenses"].items()):
        lines.append(f"| {spdx_license(text) or 'other'} | {md_text(text)} | {n} |")
    if not card.procedures["licenses"]:
        lines.append("| unknown | not recorded | - |")
    lines.append("")
    return lines


def dataset_card(card: DatasetCard) -> str:
    """The card as Markdown with the YAML header the Hub reads.

    Sections, each rendered by one function (stable names other features hook into): the header
    (:func:`_header`), purpose and tasks (:func:`_purpose_section`), usage (:func:`_usage_section`), intended
    and out-of-scope uses (:func:`_uses_section`), an example (:func:`_example_section`), settings
    (:func:`_glossary_section`), configurations (:func:`_configurations`), fields, how it was built
    (:func:`_build_section`), the audit (:func:`_audit_section`), licenses (:func:`_licenses_section`),
    limitations, contact (:func:`_contact_section`) and citations (:func:`_citation_section`).
    """
    lines = ["---", _yaml(_header(card)).rstrip("\n"), "---", "", f"# {md_text(card.title)}", ""]
    lines += _purpose_section(card)
    lines += _usage_section(card)
    lines += _uses_section(card)
    lines += _example_section(card)
    lines += _glossary_section(card)
    lines += _configurations(card)
    lines += ["## Fields", "", "| field | type | description |", "|---|---|---|"]
    lines += [f"| `{name}` | {kind} | {text} |" for name, kind, text in card.fields]
    lines.append("")
    lines += _build_section(card)
    lines += _audit_section(card)
    lines += readers_card_lines((f"{s.config_name or s.setting}", s.readers) for s in card.sets)
    lines += models_section(card.sets)
    lines += headroom_card_lines(headroom(s.config_name or s.setting, s.readers, s.models or {}) for s in card.sets)
    lines += _licenses_section(card)
    lines += ["## Limitations", ""]
    lines += [f"- {text}" for text in [*card.limitations, *_LIMITATIONS]]
    lines.append("")
    lines += _contact_section(card)
    lines += _citation_section(card)
    return "\n".join(lines)


def _purpose_section(card: DatasetCard) -> list[str]:
    """What the dataset is for, in plain words, and its tasks."""
    tasks = list(dict.fromkeys(s.task for s in card.sets))
    total = sum(s.questions for s in card.sets)
    lines = [
        "Questions that test whether a model understands How-To procedures (recipes, crafts, home projects): "
        "each question is about the steps of one procedure, written by people and published with their "
        "texts and images, and asks for something only someone who followed the procedure can tell (a "
        "missing step, the step that does not belong, the right order). The wrong choices are picked so that "
        "the answer cannot be found from the choices alone; the Audit section measures how far that holds.",
        "",
        f"{total} questions in {len(card.sets)} configuration(s) over "
        f"{sum(card.procedures['sources'].values())} procedures, made with procbench {__version__}.",
        "",
    ]
    for task in tasks:
        info = TASKS.get(task)
        if info:
            lines.append(f"- **{task}**: {info.summary}.")
        lines += _items_lines(task, [s for s in card.sets if s.task == task])
    lines.append("")
    chosen = default_set([s for s in card.sets if s.data_files] or card.sets)
    if chosen is not None and len(card.sets) > 1:
        name = chosen.config_name or chosen.setting
        names = [s.config_name or s.setting for s in card.sets if s.data_files]
        is_default = bool(chosen.data_files) and (name == "default" or "default" not in names)
        lines += [
            f"**Recommended configuration: `{name}`**"
            + (" (the default when no configuration is named)." if is_default else ".")
            + " The others are there to measure what the choice of negatives does: see Settings and Audit.",
            "",
        ]
    elif len(card.sets) == 1 and card.sets[0].setting != recommended_setting(card.sets[0].task):
        only = card.sets[0]
        lines += [
            f"This is the setting `{only.setting}`; the recommended setting of {only.task} is "
            f"`{recommended_setting(only.task)}` (see Settings).",
            "",
        ]
    return lines


def _usage_section(card: DatasetCard) -> list[str]:
    """How to load it (``card.usage``: a snippet with the real path or Hub id)."""
    return ["## Usage", "", card.usage, ""] if card.usage else []


_INTENDED = [
    "Evaluating models (text-only or multimodal) on procedural comprehension: the test split of the "
    "recommended configuration, scored by accuracy (sequencing: the metrics of Wu et al. 2022).",
    "Measuring how much a model relies on shortcuts: score it on several configurations (e.g. `recipeqa` "
    "against `adversarial`) and compare with the audit's context-free probes.",
    "Training or fine-tuning on the train split, choosing models on the validation split; research on "
    "dataset bias and its removal.",
]
_OUT_OF_SCOPE = [
    "Following the procedures: their texts are as published by their authors and were not checked for "
    "safety or correctness (tools, food handling, electricity).",
    "Claims about general language or vision ability, or about people: the questions cover a few How-To "
    "domains in English, and no human baseline is part of this card unless listed below.",
    "Uses the procedures' licenses do not allow (many are non-commercial, see Licenses).",
    "Comparing scores across configurations as if they were one benchmark: each configuration samples its "
    "negatives differently, so report which one you used.",
]


def _uses_section(card: DatasetCard) -> list[str]:
    """Intended and out-of-scope uses."""
    lines = ["## Intended uses", ""]
    lines += [f"- {text}" for text in _INTENDED]
    lines += ["", "## Out-of-scope uses", ""]
    lines += [f"- {text}" for text in _OUT_OF_SCOPE]
    lines.append("")
    return lines


#: Characters of a step text or title shown in the example before it is cut.
_EXAMPLE_CHARS = 160


def _brief(text: Any, limit: int = _EXAMPLE_CHARS) -> str:
    words = " ".join(str(text).split())
    return md_text(words if len(words) <= limit else words[: limit - 1].rstrip() + "…")


def _example_item(item: dict[str, Any]) -> str:
    if item.get("key") == "@placeholder":
        return "**[the blank]**"
    parts = []
    if item.get("image"):
        parts.append(f"🖼 image `{md_code(item['image'])}`")
    if item.get("title"):
        parts.append(f"**{_brief(item['title'])}**")
    if item.get("text"):
        parts.append(_brief(item["text"]))
    return " — ".join(parts) or f"`{md_code(item.get('key'))}`"


def _example_section(card: DatasetCard) -> list[str]:
    """One question of the dataset as a person reads it (``card.example``)."""
    record = card.example
    if not record:
        return []
    answer = int(record.get("answer", -1))
    lines = [
        "## Example",
        "",
        f"A question of configuration `{md_code(record.get('setting'))}` (task {md_text(record.get('task'))}, `qid` "
        f"`{md_code(record.get('qid'))}`), as `load_dataset` returns it; images are shown by id here and load as PIL "
        "images.",
        "",
        f"> **{_brief(record.get('instruction') or '', 300)}**",
        ">",
        f"> Procedure: *{_brief(record.get('procedure_title') or record.get('procedure_id'), 200)}*"
        + (f" ({' › '.join(md_text(c) for c in record['category'])})" if record.get("category") else ""),
        ">",
    ]
    question = record.get("question") or []
    orders = record.get("choice_orders") or []
    if question:
        lines.append("> Question" + (" (the items to order, as shown):" if orders else ":"))
        lines += [f"> {i + 1}. {_example_item(item)}" for i, item in enumerate(question)]
        lines.append(">")
    lines.append("> Choices:")
    if orders:
        for i, order in enumerate(orders):
            mark = " ✅ (answer)" if i == answer else ""
            lines.append(f"> - {chr(65 + i)}. items in the order {', '.join(str(p + 1) for p in order)}{mark}")
    else:
        for i, item in enumerate(record.get("choices") or []):
            mark = " ✅ (answer)" if i == answer else ""
            lines.append(f"> - {chr(65 + i)}. {_example_item(item)}{mark}")
    context = record.get("context") or []
    if context:
        lines += [">", f"> Context: {len(context)} steps of the procedure, the first two:"]
        for step in context[:2]:
            words = " — ".join(_brief(v) for v in (step.get("title"), step.get("text")) if v)
            lines.append(f"> - step {int(step.get('index', 0)) + 1}: {words or '(no text)'}")
    lines.append("")
    return lines


def _glossary_section(card: DatasetCard) -> list[str]:
    """What each setting (configuration) name means (:mod:`procbench.card.glossary`)."""
    terms = glossary_for(list(dict.fromkeys(s.setting for s in card.sets)))
    if not terms:
        return []
    lines = [
        "## Settings",
        "",
        "Each configuration is one *setting*: one way of choosing the wrong choices (negatives).",
        "",
        "| setting | tasks | what it means |",
        "|---|---|---|",
    ]
    lines += [f"| `{t.name}` | {t.tasks} | {t.meaning} |" for t in terms]
    renamed = [s for s in card.sets if s.setting == "default" and (s.config_name or "default") != "default"]
    if renamed and len({s.task for s in card.sets}) == 1:
        lines += [
            "",
            f"The setting `default` is the configuration `{renamed[0].config_name}` here: the Hub would load a "
            "configuration named `default` when none is named, and the recommended one is the default.",
        ]
    lines.append("")
    return lines


def _contact_section(card: DatasetCard) -> list[str]:
    """Who to ask: ``card.contact``, else the Hub repository's discussions, else that neither was given."""
    lines = ["## Contact", ""]
    if card.contact:
        lines.append(f"Questions, corrections and takedown requests: {card.contact} (given by whoever exported it).")
    if card.repo_id:
        lines.append(
            f"Discussions: https://huggingface.co/datasets/{card.repo_id}/discussions (the Community tab of the "
            "dataset's Hub repository; anyone with a Hub account can open one)."
        )
    if not card.contact and not card.repo_id:
        lines.append(
            "None given: this copy was exported without `--contact` and not pushed to the Hub; ask whoever "
            "gave it to you. Each procedure's own page, where it has one, is in the `url` field."
        )
    lines.append("")
    return lines


def _citation_section(card: DatasetCard) -> list[str]:
    """The papers (numbered as procbench's docs number them) and their BibTeX."""
    tasks = list(dict.fromkeys(s.task for s in card.sets))
    methods = methods_of([s.setting for s in card.sets])
    if any(s.generation is not None and s.generation.pruning for s in card.sets):  # K3=2's pruning
        methods.append("aflite")
    own, other = citations_for(tasks, list(dict.fromkeys(methods)))
    lines = [
        "## Citation",
        "",
        'The papers procbench implements, by the number this card uses ("paper 004"):',
        "",
        "| paper | reference | what procbench takes from it |",
        "|---|---|---|",
    ]
    lines += [f"| {p.number} | {p.citation} | {p.takes} |" for p in PAPERS]
    lines += ["", "The papers whose methods made these questions:", "", "```bibtex"]
    lines += ["\n\n".join(own), "```", ""]
    if other:
        lines += ["The other papers procbench implements:", "", "```bibtex", "\n\n".join(other), "```", ""]
    return lines


_LIMITATIONS = [
    "Questions are generated automatically from How-To procedures; nobody checked that every question has one "
    "defensible answer (steps can be interchangeable, titles generic).",
    "Negatives are chosen by embedding distances: what is hard depends on the encoders above, and a model "
    "using the same encoders may find shortcuts the audit does not probe.",
    "Audit values are measured on this set with bootstrap intervals over procedures; small sets give wide intervals.",
]
