"""The textual driver of textual cloze and next-action: items, pool and drafts once, then each setting's sampler,
then answer positions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from procbench.card.setting_report import SettingReport
from procbench.errors import BadInput
from procbench.generate import policy
from procbench.generate.adversarial import preset
from procbench.generate.answers import balance_answer_positions
from procbench.generate.options import NextActionOptions, TextualClozeOptions
from procbench.generate.search import Searcher
from procbench.generate.settings import Setting
from procbench.generate.textual.context import TextualContext
from procbench.generate.textual.pool import item_embeddings, make_pool, read_items
from procbench.generate.textual.samplers import SAMPLERS, Sampler
from procbench.progress import SILENT, Progress
from procbench.qsets.questions import Question
from procbench.store import Store

__all__ = ["SWEEP", "build"]

SWEEP = [
    Setting("recipeqa"),
    Setting("default"),
    Setting("debias", budget="auto"),
    Setting("adversarial"),
    Setting("needs-context"),
]
#: ``meta`` lists that hold one value per choice, in choice order.
_PER_CHOICE = ("choice_keys", "choice_distances", "choice_clusters")


def build(
    store: Store,
    settings: list[Setting],
    options: TextualClozeOptions | NextActionOptions | None = None,
    *,
    progress: Progress = SILENT,
    splits: Mapping[str, str] | None = None,
    searcher: Searcher | None = None,
) -> tuple[dict[str, list[Question]], dict[str, Any]]:
    """Textual-cloze (with ``NextActionOptions``: next-action) questions per setting and the counts; negatives only
    from the question's own split of ``splits`` (procedure id -> split); ``searcher``: where searches run. BadInput:
    a setting or option that does not apply, or no embeddings of the items (run ``procbench embed``)."""
    options = options or TextualClozeOptions()
    last = isinstance(options, NextActionOptions)
    items = "action" if last else getattr(options, "items", "title")
    for setting in settings:
        sampler_class = SAMPLERS.find(setting.style)
        if sampler_class is None:
            raise BadInput(
                "textual-cloze takes --style recipeqa, the default sampler, --debias [--budget B|auto] or "
                "--adversarial; Control-Knobs are for the visual tasks"
            )
        sampler_class.check(setting)
    options.check(settings)
    if (items != "title" or last) and any(s.style == "needs-context" for s in settings):
        if len(settings) == 1:
            raise BadInput("the needs-context setting applies to textual cloze over step titles (--items title)")
        settings = [s for s in settings if s.style != "needs-context"]  # a sweep over other items leaves it out
    steps, title_source = read_items(store, items)
    embeddings = item_embeddings(store, items)
    pool = make_pool(embeddings, steps, splits)
    p = policy.current()
    context = TextualContext(
        store=store,
        items=items,
        pool=pool,
        steps=steps,
        in_range={pid: rows for pid, rows in steps.items() if p.MIN_STEPS <= len(rows) <= p.MAX_STEPS},
        seed=options.seed,
        progress=progress,
        questions_per_procedure=options.questions_per_procedure,
        knn_k=options.knn_k,
        clusters=options.clusters,
        min_distance=options.min_distance,
        adversarial=options.adversarial_policy(preset("textual")),
        hide_window=items != "title" and not last,
        last=last,
        searcher=searcher,
    )
    left_out: dict[str, SettingReport] = {}
    if any(s.style == "needs-context" for s in settings) and context.step_texts is None:
        reason = (
            "no step-text embeddings in the titles' space, which its rule reads "
            f"(run procbench embed --fields step_text with {embeddings.encoder})"
        )
        if len(settings) == 1:
            raise BadInput(f"textual-cloze/needs-context: {reason}")
        settings = [s for s in settings if s.style != "needs-context"]  # a sweep leaves it out and says why
        left_out["needs-context"] = SettingReport(empty=reason)
    samplers = [SAMPLERS.get(setting.style)(setting, context) for setting in settings]
    if any(s.style == "debias" for s in settings):  # the clustering's account comes before the settings'
        _ = context.clustering
    sets: dict[str, list[Question]] = {}
    reports: dict[str, SettingReport] = {}
    for sampler in samplers:
        sets[sampler.setting.name], reports[sampler.setting.name] = _run(sampler, context)
    counts: dict[str, Any] = {
        "items": items,
        "title_source": title_source,
        "titles": len(pool.keys),
        "encoder": embeddings.encoder,
        "negatives_from": "other procedures of the same split" if splits is not None else "any other procedure",
        **context.notes,
        "per_setting": {**reports, **left_out},
    }
    return sets, counts


def _run(sampler: Sampler, context: TextualContext) -> tuple[list[Question], SettingReport]:
    """One setting: its drafts, its sampler, balanced answer positions; the questions and the setting's report."""
    setting, pool = sampler.setting, context.pool
    skipped_procedures = Counter(step_count=len(context.steps) - len(context.in_range))
    drafts = []
    for pid, found in context.drafts(sampler.plan()).items():
        if len(context.in_range[pid]) < sampler.min_steps():
            skipped_procedures["step_count"] += 1
        elif pid not in pool.group_of:
            skipped_procedures["no_split"] += 1
        elif not found:
            skipped_procedures["no_titled_window"] += 1
        else:
            drafts.extend(found)
    drafts = sampler.choose(drafts)
    rng = context.rng(setting)
    made = sampler.sample(drafts, rng)
    questions = [made[i] for i in sorted(made)]
    balance_answer_positions(questions, rng, per_choice=_PER_CHOICE)
    counted = {**sampler.notes, **sampler.report()}  # the sampler's accounts, then its own counts
    report = SettingReport(
        questions=len(questions),
        procedures=len({q.procedure_id for q in questions}),
        skipped_procedures=dict(sorted((k, v) for k, v in skipped_procedures.items() if v)),
        skipped_questions=dict(sorted(sampler.skipped.items())),
        adversarial=counted.pop("adversarial", None),
        auto_budget=counted.pop("auto_budget", None),
        budget=counted.pop("budget", None),
        details=counted,
    )
    if sampler.reports_yield:
        report.drafted = len(drafts)
        report.kept_share = SettingReport.yield_of(len(questions), len(drafts))
    return questions, report
