"""``procbench generate``: question sets from the store (DESIGN §5-6). Each task's module has ``SWEEP`` and ``build``
(DEVELOPERS.md); this package splits the procedures and has :mod:`procbench.qsets` write the sets."""

from __future__ import annotations

import contextlib
import inspect
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench.card.setting_report import SettingReport
from procbench.engine import LOCAL, Engine
from procbench.errors import BadInput
from procbench.generate import recipes
from procbench.generate.answers import balance_answer_positions
from procbench.generate.options import MAX_SEED, GenerateOptions
from procbench.generate.options import task_options as task_options_of
from procbench.generate.settings import Setting, parse_knobs
from procbench.progress import SILENT, Progress
from procbench.qsets.columns import as_table, count, procedure_ids
from procbench.qsets.files import check_overwrite, write_question_sets
from procbench.qsets.splits import SPLITS, split_by_category, split_by_procedure
from procbench.store import Store
from procbench.store.views import kept_procedures
from procbench.tasks import TASKS, get_task

log = logging.getLogger(__name__)

__all__ = [
    "MAX_SEED",
    "TASKS",
    "GenerateOptions",
    "GenerateResult",
    "Setting",
    "SettingReport",
    "balance_answer_positions",
    "generate",
    "parse_knobs",
]


@dataclass
class GenerateResult:
    """What one ``generate`` run wrote: the folder of each setting and the task's counts."""

    task: str
    paths: dict[str, Path]
    questions: dict[str, int]
    counts: dict[str, Any] = field(default_factory=dict)
    split_sizes: dict[str, dict[str, int]] = field(default_factory=dict)  # questions per split of each setting
    warnings: list[str] = field(default_factory=list)  # e.g. an empty split, a filtered set still above chance
    options: GenerateOptions | None = None  # the options the sets were made with
    reports: dict[str, SettingReport] = field(default_factory=dict)  # each setting's (counts["per_setting"]: JSON)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        shown = ("task", "paths", "questions", "split_sizes", "counts", "warnings")
        out = {name: getattr(self, name) for name in shown}
        out["paths"] = {k: str(v) for k, v in self.paths.items()}
        return out


def assign_splits(
    store: Store, procedure_ids: set[str], *, split_by: str, ratios: tuple[float, float, float], seed: int
) -> dict[str, str]:
    """Split procedures ``"procedure"`` (default; the store's own ``split`` column wins) or ``"category:L"``."""
    procedures = [
        p for p in kept_procedures(store, ["id", "category", "split"]).to_pylist() if p["id"] in procedure_ids
    ]
    if split_by == "procedure":
        fixed = {p["id"]: p["split"] for p in procedures if p["split"]}
        return split_by_procedure(sorted(procedure_ids), ratios=ratios, seed=seed, fixed=fixed)
    kind, _, level = split_by.partition(":")
    if kind != "category" or not level.isdigit():
        raise BadInput(f"--split-by takes 'procedure' or 'category:LEVEL' (e.g. category:3), not {split_by!r}")
    categories = {p["id"]: p["category"] or [] for p in procedures}
    return split_by_category(categories, level=int(level), ratios=ratios, seed=seed)


def generate(
    store: Store,
    task: str,
    setting: Setting | None = None,
    *,
    sweep: bool = False,
    options: GenerateOptions | None = None,
    seed: int | None = None,
    split_by: str | None = None,
    split_ratios: tuple[float, float, float] | None = None,
    overwrite: bool = False,
    strict: bool = False,
    progress: Progress = SILENT,
    engine: Engine = LOCAL,
    **task_options: Any,
) -> GenerateResult:
    """Generate one setting of ``task`` (or every setting with ``sweep``) and write it to the store.

    ``options``: the task's (None: the defaults), changed by ``seed``, ``split_by``, ``split_ratios`` and
    ``task_options`` that are not None. A set made with other options is not overwritten without ``overwrite``;
    an empty split is a warning (an error with ``strict``: nothing written). A Ray ``engine`` writes the same bytes.

    Raises:
        BadInput: an option the task does not take or a bad value, a set made with other options in the way,
            or (with ``strict``) an empty split.
    """
    spec = get_task(task)
    task, build = spec.name, spec.builder()
    chosen = task_options_of(task, options, seed=seed, split_by=split_by, split_ratios=split_ratios, **task_options)
    settings = spec.sweep() if sweep else [setting or Setting("default")]
    chosen.check(settings)
    args = {"settings": [s.name for s in settings], **chosen.record()}
    if versions := recipes.versions(task, settings):  # each setting's recipe version (a visual task's)
        args["recipe_versions"] = versions
    if not overwrite:
        check_overwrite(store, task, [s.name for s in settings], seed=chosen.seed, args=args)
    splits: dict[str, str] | None = None
    extra: dict[str, Any] = {}
    accepted = inspect.signature(build).parameters
    if "splits" in accepted:  # tasks that draw choices from other procedures get the split
        kept = set(kept_procedures(store, ["id"])["id"].to_pylist())
        splits = extra["splits"] = _splits(store, kept, chosen)
    with contextlib.ExitStack() as stack:
        from threadpoolctl import threadpool_limits

        # one BLAS thread: generation's linear algebra is many small calls, where OpenBLAS's second thread only
        # busy-waits (on a shared machine the demo's visual generation took 47 s with it, 14 s without)
        stack.enter_context(threadpool_limits(limits=1, user_api="blas"))
        if engine.is_ray:
            from procbench.engine.raycluster import cluster_workers, ray_runtime
            from procbench.engine.raysearch import RaySearch

            ray = stack.enter_context(ray_runtime(engine))
            searcher = RaySearch(ray, cluster_workers(ray, engine))
            if "searcher" in accepted:  # tasks that search neighbours run their searches through the engine's
                extra["searcher"] = searcher
        sets, built = build(store, settings, chosen, progress=progress, **extra)
        if engine.is_ray:
            log.info("generate: %d queries searched as %d Ray tasks", searcher.queries, searcher.tasks)
    reports: dict[str, SettingReport] = dict(built.get("per_setting") or {})
    counts = {**built, "per_setting": {name: report.to_dict() for name, report in reports.items()}}
    used = set().union(*(procedure_ids(questions) for questions in sets.values()))
    if splits is None:
        splits = _splits(store, used, chosen)
    sizes = {name: _split_sizes(questions, splits) for name, questions in sets.items()}
    warnings = _empty_split_warnings(task, sizes, chosen)
    warnings += _no_question_warnings(task, sizes, reports)
    if strict and warnings:
        raise BadInput(f"{warnings[0]} (--strict: nothing written)")
    paths = write_question_sets(store, task, sets, splits=splits, seed=chosen.seed, args=args, counts=counts)
    for name, report in reports.items():  # after --strict: a set its filter left telling is written, and said so
        told = report.probe_warning(f"{task}/{name}", _chance(sets[name])) if name in sets else None
        if told:
            warnings.append(told)
    questions = {name: count(qs) for name, qs in sets.items()}
    return GenerateResult(
        task, paths, questions, counts, split_sizes=sizes, warnings=warnings, options=chosen, reports=reports
    )


def _splits(store: Store, procedure_ids: set[str], options: GenerateOptions) -> dict[str, str]:
    return assign_splits(
        store, procedure_ids, split_by=options.split_by, ratios=options.split_ratios, seed=options.seed
    )


def _chance(questions: Any) -> float:
    """The mean of 1 / #choices over a set's questions (0: no multiple-choice question)."""
    if isinstance(questions, pa.Table):  # a list of questions is not made a table twice (writing makes one)
        if "choices" not in questions.column_names:
            return 0.0
        lengths = pc.list_value_length(questions["choices"]).to_numpy(zero_copy_only=False)
    else:
        lengths = np.array([len(q.choices) for q in questions], dtype=np.int64)
    return float((1.0 / lengths[lengths > 0]).mean()) if (lengths > 0).any() else 0.0


def _split_sizes(questions: Any, splits: dict[str, str]) -> dict[str, int]:
    """Questions per split (every split named, 0 included)."""
    proc = as_table(questions)["procedure_id"].combine_chunks()
    if pa.types.is_dictionary(proc.type):
        proc = proc.dictionary_decode()
    counts = pc.value_counts(proc)
    out = dict.fromkeys(SPLITS, 0)
    for pid, n in zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True):
        out[splits[pid]] += int(n)
    return out


def _no_question_warnings(task: str, sizes: dict[str, dict[str, int]], reports: dict[str, SettingReport]) -> list[str]:
    """A line per set left without a question: the setting's own reason, else the procedures it skipped."""
    warnings = [f"{task}/{name}: no questions: {r.empty}" for name, r in reports.items() if r.empty]
    for name, per_split in sizes.items():
        report = reports.get(name)
        if sum(per_split.values()) or (report is not None and report.empty):
            continue
        skipped = report.skipped_procedures if report is not None else {}
        why = ", ".join(f"{reason} {n}" for reason, n in skipped.items()) or "no procedure gave one"
        warnings.append(f"{task}/{name}: no questions (procedures skipped: {why})")
    return warnings


def _empty_split_warnings(task: str, sizes: dict[str, dict[str, int]], options: GenerateOptions) -> list[str]:
    warnings = []
    split_by = options.split_by
    for name, per_split in sizes.items():
        empty = [s for s, r in zip(SPLITS, options.split_ratios, strict=True) if r > 0 and per_split.get(s, 0) == 0]
        if empty and sum(per_split.values()):
            shown = ", ".join(f"{s}: {per_split.get(s, 0)}" for s in SPLITS)
            hint = " (too few categories at that level?)" if split_by.startswith("category") else ""
            warnings.append(f"{task}/{name}: empty {' and '.join(empty)} split ({shown}; split by {split_by}){hint}")
    return warnings
