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
from procbench.card.citations import BIBTEX, citations_for, methods_of
from procbench.card.escape import md_code, md_text, yaml_safe
from procbench.card.licenses import hub_license, spdx_license
from procbench.card.models import models_section
from procbench.readers.views import readers_card_lines
from procbench.tasks import TASKS as ALL_TASKS
from procbench.tasks import TEXTUAL_ITEMS

__all__ = [
    "BIBTEX",
    "SET_FIELDS",
    "TASKS",
    "CardSet",
    "DatasetCard",
    "dataset_card",
    "hub_license",
    "meta_totals",
    "procedure_facts",
    "provenance_facts",
    "set_parameters",
    "setting_counts",
    "spdx_license",
    "summarise_set",
]

SPLITS = ("train", "val", "test")
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
    #: This setting's entry in the counts of the ``generate`` run that wrote it (yield, budget use, adversarial
    #: filtering account, skipped questions).
    generation: dict[str, Any] = field(default_factory=dict)
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


def setting_counts(counts: dict[str, Any], setting: str) -> dict[str, Any]:
    """A setting's entry in a ``generate`` run's counts: ``counts[setting]`` (textual tasks) or
    ``counts["per_setting"][setting]`` (visual tasks); empty when neither."""
    entry = counts.get(setting)
    if not isinstance(entry, dict):
        entry = (counts.get("per_setting") or {}).get(setting)
    return entry if isinstance(entry, dict) else {}


def generation_of(build: dict[str, Any], task: str, setting: str) -> dict[str, Any] | None:
    """The last ``generate`` log entry that wrote ``task``/``setting``."""
    for entry in reversed(build.get("generate", [])):
        args = entry.get("args") or {}
        if args.get("task") == task and setting in (args.get("settings") or []):
            counts = entry.get("counts") or {}
            return {"seed": entry.get("seed"), "args": args, "counts": counts, "time": entry.get("time")}
    return None


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
        # `datasets` takes a config named "default" as the default one: then no other may say so
        first = names.index("default") if "default" in names else 0
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
    for s in card.sets:
        info = TASKS.get(s.task)
        if info and info.multiple_choice and s.answer_positions:
            positions = ", ".join(f"{k}: {v}" for k, v in s.answer_positions.items())
            lines.append(f"- `{md_code(s.config_name or s.setting)}` answer positions: {positions}.")
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
    """What the generation log and the questions' ``meta`` say about one setting: questions kept of those
    drafted (yield), the debiasing budget (and how ``--budget auto`` chose it), the adversarial filtering
    (rounds, ceiling, replacements, the probes' last accuracy) and the questions skipped, by reason."""
    gen = s.generation
    facts: list[str] = []
    adversarial = gen.get("adversarial")
    if isinstance(adversarial, dict) and adversarial:
        text = f"adversarial filtering: at most {adversarial.get('rounds')} rounds"
        if adversarial.get("rounds_run") is not None:
            text += f", {adversarial['rounds_run']} run (stopped: {adversarial.get('stopped', '?')})"
        facts.append(text)
    ceiling = (adversarial or {}).get("ceiling") if isinstance(adversarial, dict) else None
    if ceiling is None:
        ceiling = s.parameters.get("ceiling")
    # a task whose filtering replaces something else than negatives (visual coherence: the intruder; ordering:
    # wrong orders) says what, and what its ceiling bounds
    said = adversarial if isinstance(adversarial, dict) else {}
    if ceiling is not None:
        rule = said.get("ceiling_rule") or "no negative that close to the answer or a question item"
        facts.append(f"similarity ceiling {_fmt(ceiling)} ({rule})")
    if "replacements" in s.totals:
        facts.append(
            f"{s.totals['replacements']} {said.get('replaced', 'negatives')} replaced in "
            f"{s.totals['replacements_questions']} of {s.questions} questions"
        )
    facts.extend(str(rule) for rule in said.get("rules") or [])
    if isinstance(adversarial, dict) and adversarial.get("pruned"):
        facts.append(
            f"{adversarial['pruned']} questions the probes still solved dropped (most confident first; "
            f"at least {_fmt(adversarial.get('min_yield'))} of the drafted questions kept)"
        )
    if isinstance(adversarial, dict) and isinstance(adversarial.get("final_accuracy"), dict):
        accuracy = ", ".join(f"{k} {_fmt(v)}" for k, v in adversarial["final_accuracy"].items())
        bound = adversarial.get("chance_bound")
        facts.append(
            f"held-out probe accuracy on the final set {accuracy}" + (f" (stop bound {_fmt(bound)})" if bound else "")
        )
    auto = gen.get("auto_budget")
    if isinstance(auto, dict) and auto:
        tried = ", ".join(f"{t.get('budget')} → {float(t.get('yield') or 0):.1%}" for t in auto.get("tried") or [])
        facts.append(
            f"budget auto: {auto.get('chosen')} per cluster (even share {auto.get('even_share')}; "
            f"budget → yield tried: {tried})"
        )
    budget = gen.get("budget")
    if isinstance(budget, dict) and budget:
        facts.append(
            f"budget {budget.get('per_cluster')} per cluster over {budget.get('clusters')} clusters: "
            f"{budget.get('spent')} spent, {budget.get('exhausted')} clusters exhausted"
        )
    if gen.get("yield") is not None:
        of = f"{gen['questions']} kept of {gen['drafted']} drafted" if "drafted" in gen and "questions" in gen else ""
        facts.append(f"yield {float(gen['yield']):.1%} ({of or 'questions kept of those drafted'})")
    aflite = gen.get("aflite")
    if isinstance(aflite, dict) and aflite:
        facts.append(
            f"AFLite (`procbench filter --aflite`, Le Bras et al. 2020) on {aflite.get('source')}: kept "
            f"{aflite.get('kept')} of {aflite.get('questions')} questions after {aflite.get('iterations')} rounds "
            f"(stopped at the {aflite.get('stopped')}; threshold {_fmt(aflite.get('threshold'))}, "
            f"{aflite.get('partitions')} partitions per round), dropping those that linear models on "
            "context-free features answered most often"
        )
    for key in ("skipped_questions", "skipped_procedures"):
        skipped = {k: v for k, v in (gen.get(key) or {}).items() if v}
        if skipped:
            facts.append(key.replace("_", " ") + ": " + ", ".join(f"{k} {v}" for k, v in skipped.items()))
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
        sets = [s for s in audited if s.task == task]
        probes = list(dict.fromkeys(p for s in sets for p in (s.audit or {})["probes"]))
        lines += [
            f"### {task}",
            "",
            "| probe | " + " | ".join(f"`{md_code(s.config_name or s.setting)}`" for s in sets) + " |",
            "|---|" + "---|" * len(sets),
        ]
        absent = []
        for probe in probes:
            results = [(s.audit or {})["probes"].get(probe) for s in sets]
            if all(not r or r.get("value") is None for r in results):
                reasons = sorted({md_text(r["reason"]) for r in results if r and r.get("reason")})
                absent.append(md_text(probe) + (f" ({'; '.join(reasons)})" if reasons else ""))
                continue
            reference = any(r and r.get("reference") for r in results)
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
    """The card as Markdown with the YAML header the Hub reads."""
    tasks = list(dict.fromkeys(s.task for s in card.sets))
    total = sum(s.questions for s in card.sets)
    lines = ["---", _yaml(_header(card)).rstrip("\n"), "---", "", f"# {md_text(card.title)}", ""]
    lines.append(
        f"{total} questions in {len(card.sets)} configuration(s) over "
        f"{sum(card.procedures['sources'].values())} procedures, made with procbench {__version__}."
    )
    lines.append("")
    for task in tasks:
        info = TASKS.get(task)
        if info:
            lines.append(f"- **{task}**: {info.summary}.")
        lines += _items_lines(task, [s for s in card.sets if s.task == task])
    lines.append("")
    if card.usage:
        lines += [card.usage, ""]
    lines += _configurations(card)
    lines += ["## Fields", "", "| field | type | description |", "|---|---|---|"]
    lines += [f"| `{name}` | {kind} | {text} |" for name, kind, text in card.fields]
    lines.append("")
    lines += _build_section(card)
    lines += _audit_section(card)
    lines += readers_card_lines((f"{s.config_name or s.setting}", s.readers) for s in card.sets)
    lines += models_section(card.sets)
    lines += _licenses_section(card)
    lines += ["## Limitations", ""]
    lines += [f"- {text}" for text in [*card.limitations, *_LIMITATIONS]]
    lines.append("")
    own, other = citations_for(tasks, methods_of([s.setting for s in card.sets]))
    lines += ["## Citation", "", "The papers whose methods made these questions:", "", "```bibtex"]
    lines += ["\n\n".join(own), "```", ""]
    if other:
        lines += ["The other papers procbench implements:", "", "```bibtex", "\n\n".join(other), "```", ""]
    return "\n".join(lines)


_LIMITATIONS = [
    "Questions are generated automatically from How-To procedures; nobody checked that every question has one "
    "defensible answer (steps can be interchangeable, titles generic).",
    "Negatives are chosen by embedding distances: what is hard depends on the encoders above, and a model "
    "using the same encoders may find shortcuts the audit does not probe.",
    "Audit values are measured on this set with bootstrap intervals over procedures; small sets give wide intervals.",
]
