"""The textual driver: items, pool and drafts once, then each setting's sampler, then answer positions.

Textual cloze and next-action (``items="action"``, ``last=True``) both run through :func:`build`.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from typing import Any

from procbench.errors import BadInput
from procbench.generate.adversarial import TEXTUAL_POLICY, AdversarialPolicy, sized
from procbench.generate.answers import balance_answer_positions
from procbench.generate.settings import Setting
from procbench.generate.textual.pool import (
    ITEM_FIELDS,
    MAX_STEPS,
    MIN_STEPS,
    N_NEGATIVES,
    item_embeddings,
    make_pool,
    read_items,
)
from procbench.generate.textual.samplers import KNN_K, SAMPLERS, Sampler, TextualContext
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
    *,
    seed: int = 0,
    progress: Progress = SILENT,
    clusters: int | None = None,
    questions_per_procedure: int = 1,
    knn_k: int = KNN_K,
    min_distance: float | None = None,
    items: str = "title",
    rounds: int | None = None,
    ceiling: float | None = None,
    min_yield: float | None = None,
    splits: Mapping[str, str] | None = None,
    last: bool = False,
    policy: str | None = None,
) -> tuple[dict[str, list[Question]], dict[str, Any]]:
    """Textual-cloze questions for each setting (``recipeqa``, ``default``, ``debias``, ``adversarial``).

    Args:
        clusters: KMeans clusters for debiasing (default ``round(sqrt(distinct titles))``, at most 100).
        questions_per_procedure: questions drawn per procedure (distinct answers except in RecipeQA style).
        knn_k: neighbours of the correct title the default and debiased samplers look at (paper: 100).
        min_distance: RecipeQA style's fixed distance (default: the median distance of random title pairs).
        items: ``title`` (step headlines), ``text`` (step texts, for corpora without headlines; the context
            then leaves out the question's own steps) or ``action`` (step action tuples, ``procbench extract``).
        rounds: adversarial filtering's round limit (default 15).
        ceiling: adversarial negatives' cosine-similarity ceiling to the answer and question items (default 0.8).
        min_yield: adversarial: when replacing negatives leaves the probes above chance, drop the questions they
            still solve while this share of the drafted questions stays (default 0.85; 1: drop none).
        splits: procedure id -> split (the runner passes the split it writes). Negatives are then drawn
            only from procedures of the question's own split, so no title of one split is a choice in
            another; without it (library use) they come from any other procedure, as in Algorithm 1.
        last: the placeholder is always the window's last item and the context the steps before it
            (the next-action task).
        policy: the adversarial filter's size, ``standard`` (default) or ``demo`` (docs/adversarial.md).

    Returns:
        ``({setting name: questions}, counts)``; counts hold, per setting, ``questions``,
        ``skipped_procedures`` and ``skipped_questions`` by reason, for debiasing the clustering
        (clusters, inertia) and budget usage (spent in total and per cluster, exhausted clusters, and for
        ``--budget auto`` the budgets tried and their yield), for the adversarial setting the filtering
        account (rounds, replacements, probe accuracy per round, the ceiling).

    Raises:
        BadInput: a setting or option that does not apply; no embeddings of the items (run ``procbench embed``).
    """
    _check(settings, clusters, questions_per_procedure, knn_k, items)
    if (items != "title" or last) and any(s.style == "needs-context" for s in settings):
        if len(settings) == 1:
            raise BadInput("the needs-context setting applies to textual cloze over step titles (--items title)")
        settings = [s for s in settings if s.style != "needs-context"]  # a sweep over other items leaves it out
    options = _adversarial_options(settings, rounds, ceiling, min_yield, policy)
    steps, title_source = read_items(store, items)
    embeddings = item_embeddings(store, items)
    pool = make_pool(embeddings, steps, splits)
    context = TextualContext(
        store=store,
        items=items,
        pool=pool,
        embeddings=embeddings,
        steps=steps,
        in_range={pid: rows for pid, rows in steps.items() if MIN_STEPS <= len(rows) <= MAX_STEPS},
        seed=seed,
        progress=progress,
        questions_per_procedure=questions_per_procedure,
        knn_k=knn_k,
        clusters=clusters,
        min_distance=min_distance,
        adversarial=options,
        hide_window=items != "title" and not last,
        last=last,
    )
    left_out: dict[str, Any] = {}
    if any(s.style == "needs-context" for s in settings) and context.step_texts is None:
        reason = (
            "no step-text embeddings in the titles' space, which its rule reads "
            f"(run procbench embed --fields step_text with {embeddings.encoder})"
        )
        if len(settings) == 1:
            raise BadInput(f"textual-cloze/needs-context: {reason}")
        settings = [s for s in settings if s.style != "needs-context"]  # a sweep leaves it out and says why
        left_out = {"needs-context": {"questions": 0, "empty": reason}}
    samplers = [SAMPLERS.get(setting.style)(setting, context) for setting in settings]
    if any(s.style == "debias" for s in settings):  # the clustering's account comes before the settings'
        _ = context.clustering
    sets: dict[str, list[Question]] = {}
    entries: dict[str, Any] = {}
    for sampler in samplers:
        sets[sampler.setting.name], entries[sampler.setting.name] = _run(sampler, context)
    counts: dict[str, Any] = {
        "items": items,
        "title_source": title_source,
        "titles": len(pool.keys),
        "encoder": embeddings.encoder,
        "negatives_from": "other procedures of the same split" if splits is not None else "any other procedure",
        **context.notes,
        **entries,
    }
    if left_out:
        counts["per_setting"] = left_out
    return sets, counts


def _run(sampler: Sampler, context: TextualContext) -> tuple[list[Question], dict[str, Any]]:
    """One setting: its drafts, its sampler, balanced answer positions; the questions and the setting's counts."""
    setting, pool = sampler.setting, context.pool
    skipped_procedures: Counter[str] = Counter()
    skipped_procedures["step_count"] = len(context.steps) - len(context.in_range)
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
    entry: dict[str, Any] = dict(sampler.notes)
    if sampler.reports_yield:
        entry["drafted"] = len(drafts)
        entry["yield"] = round(len(questions) / max(1, len(drafts)), 4)
    entry = {
        "questions": len(questions),
        "procedures": len({q.procedure_id for q in questions}),
        "skipped_procedures": dict(sorted((k, v) for k, v in skipped_procedures.items() if v)),
        "skipped_questions": dict(sorted(sampler.skipped.items())),
        **entry,
        **sampler.report(),
    }
    return questions, entry


def _adversarial_options(
    settings: list[Setting], rounds: int | None, ceiling: float | None, min_yield: float | None, policy: str | None
) -> AdversarialPolicy:
    given = (rounds, ceiling, min_yield, policy)
    if any(v is not None for v in given) and not any(s.style == "adversarial" for s in settings):
        raise BadInput("--rounds, --ceiling, --min-yield and --policy apply only with --adversarial (or --sweep)")
    preset = sized(TEXTUAL_POLICY, policy)
    options = dataclasses.replace(
        preset,
        rounds=preset.rounds if rounds is None else rounds,
        ceiling=preset.ceiling if ceiling is None else ceiling,
        min_yield=preset.min_yield if min_yield is None else min_yield,
    )
    if options.rounds < 0 or not 0.0 < options.ceiling <= 1.0 or not 0.0 < options.min_yield <= 1.0:
        raise BadInput("--rounds must be >= 0, --ceiling and --min-yield in (0, 1]")
    return options


def _check(settings: list[Setting], clusters: int | None, per_procedure: int, knn_k: int, items: str) -> None:
    for setting in settings:
        sampler = SAMPLERS.find(setting.style)
        if sampler is None:
            raise BadInput(
                "textual-cloze takes --style recipeqa, the default sampler, --debias [--budget B|auto] or "
                "--adversarial; Control-Knobs are for the visual tasks"
            )
        sampler.check(setting)
    if clusters is not None and not any(s.style == "debias" for s in settings):
        raise BadInput("--clusters applies only with --debias (or --sweep)")
    if per_procedure < 1:
        raise BadInput("--questions-per-procedure must be at least 1")
    if knn_k <= N_NEGATIVES:
        raise BadInput(f"k for the nearest titles must be above {N_NEGATIVES}, not {knn_k}")
    if items not in ITEM_FIELDS:
        raise BadInput(f"--items takes {' or '.join(ITEM_FIELDS)}, not {items!r}")
