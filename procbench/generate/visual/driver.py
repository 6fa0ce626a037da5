"""The one driver of the visual tasks: settings, chunks, neighbour searches, draws and tables.

It plans each K1 value's questions, then per chunk of procedures searches the neighbours of each window's
anchors and K3 point (the next chunk searched while this one is drawn), draws each setting's negatives for the
task's ``add`` hook, and builds every setting's table. Draws are seeded per setting and chunks are fixed, so a
setting's questions do not depend on the other settings generated with it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from procbench.card.setting_report import SettingReport
from procbench.generate import policy, recipes
from procbench.generate.adversarial import preset
from procbench.generate.options import VisualClozeOptions, VisualCoherenceOptions, VisualOrderingOptions
from procbench.generate.search import Searcher
from procbench.generate.settings import Setting
from procbench.generate.visual.bands import Candidates
from procbench.generate.visual.closeness import Closeness
from procbench.generate.visual.columns import QuestionColumns, build_counts, meta_head, question_table
from procbench.generate.visual.dealer import Classed, Dealt, draw, options
from procbench.generate.visual.plans import min_steps_knobs, plans_by_k1
from procbench.generate.visual.recipeqa_style import random_far_images, resolve_min_distance
from procbench.generate.visual.selection import Selection, select
from procbench.generate.visual.sequences import VisualData
from procbench.generate.visual.settings import PlanKey, VisualSetting, resolve_settings
from procbench.generate.visual.task import Draw, Items, VisualTask, Window
from procbench.progress import SILENT, Labelled, Progress
from procbench.qsets.columns import questions_table
from procbench.qsets.questions import paused_gc
from procbench.store import Store
from procbench.tells import TELLS

__all__ = ["CHUNK_PROCEDURES", "VisualOptions", "pipelined", "recipe_account", "run"]

T = TypeVar("T")
#: A visual task's options; :data:`_NEIGHBOURS` those of the tasks that search neighbour images.
VisualOptions = VisualClozeOptions | VisualCoherenceOptions | VisualOrderingOptions
_NEIGHBOURS = (VisualClozeOptions, VisualCoherenceOptions)
CHUNK_PROCEDURES = 2048
Neighbours = tuple[np.ndarray, np.ndarray]
#: What a chunk's search hands to its draw: the windows, the anchors' and the K3 points' neighbours, per plan.
Searched = tuple[dict[PlanKey, Any], dict[PlanKey, Neighbours], dict[PlanKey, Neighbours]]


def pipelined(
    n_procedures: int, search: Callable[[int, int], T], draw: Callable[[T], None], progress: Progress
) -> None:
    """Per chunk of :data:`CHUNK_PROCEDURES` (fixed, so random streams never depend on the data size), ``search(start,
    stop)`` here, then ``draw`` its result on another thread (in order) while the next chunk is searched."""
    with ThreadPoolExecutor(max_workers=1) as drawer:
        drawing: Future[None] | None = None
        for start in range(0, n_procedures, CHUNK_PROCEDURES):
            stop = min(n_procedures, start + CHUNK_PROCEDURES)
            searched = search(start, stop)
            if drawing is not None:
                drawing.result()
            drawing = drawer.submit(draw, searched)
            progress.advance(stop - start)
        if drawing is not None:
            drawing.result()


@paused_gc()
def run(
    task: VisualTask[Any],
    store: Store,
    settings: list[Setting],
    options: VisualOptions,
    *,
    progress: Progress = SILENT,
    searcher: Searcher | None = None,
) -> tuple[dict[str, pa.Table], dict[str, Any]]:
    """``task``'s question table per setting and its counts (a ``SettingReport`` per setting); every setting shares
    the neighbour searches (run through ``searcher``; None: here)."""
    seed = options.seed
    kc, min_distance = (
        (options.kc, options.min_distance) if isinstance(options, _NEIGHBOURS) else (policy.current().KC, None)
    )
    searches = task.need > 0
    resolved = resolve_settings(
        settings, task=task.name, with_k3=task.with_k3, default=task.default_knobs, adversarial=bool(task.adversarial)
    )
    options.check(settings)
    data = VisualData(store, with_index=searches and any(s.knobs is not None for s in resolved), searcher=searcher)
    # more neighbours than images is all of them: searching for K_C = 10^8 must not allocate (B, 10^8) arrays
    k = min(kc, max(1, data.n_rows))
    seqs = data.seqs
    plans = plans_by_k1(resolved, seqs.lengths, seed=seed, code=task.code, size=task.size, anchored=task.anchored)
    fixed = resolve_min_distance(data, plans, min_distance, seed=seed, code=task.code) if searches else None
    rngs = {s.name: s.rng(seed, task.code) for s in resolved}
    columns = {s.name: QuestionColumns() for s in resolved}
    tally: dict[str, Counter[str]] = {s.name: Counter() for s in resolved}
    progress.start(task.name, total=len(seqs.names))
    k3_plans = {s.plan_key for s in resolved if s.k3}

    def search(start: int, stop: int) -> Searched:
        windows = {key: task.window(Items.of(plan, start, stop, seqs), data) for key, plan in plans.items()}
        if not searches:
            return windows, {}, {}
        knob_windows = {key: w for key, w in windows.items() if key.k1 is not None and len(w)}
        knn = _anchor_neighbours(data, knob_windows, k)
        near: dict[PlanKey, Neighbours] = {}  # the neighbours of each K3 point, searched once per distinct plan
        for key in sorted(k3_plans & set(knn)):
            same = next((other for other in near if plans[other] is plans[key]), None)
            near[key] = (
                near[same]
                if same is not None
                else data.search(windows[key].point, windows[key].proc, k, kind="question_mean")
            )
        return windows, knn, near

    def draw(searched: Searched) -> None:
        windows, knn, near = searched
        cands = {key: Candidates.union(*found) for key, found in knn.items()}
        close = {}
        for key, (q_dist, q_rows) in near.items():  # K3: which candidates are close to the question
            point, radius = windows[key].point, windows[key].radius
            close[key] = Closeness.mark(data, cands[key], point, radius, q_dist, q_rows)
        rules: dict[tuple[PlanKey, recipes.Recipe], Classed] = {}
        for s in resolved:
            w = windows[s.plan_key]
            if not len(w):
                continue
            drawn = Draw(s, data, rngs[s.name], tally[s.name])
            if searches and s.knobs is None:
                drawn.min_distance = fixed or 0.0
                drawn.rows, drawn.farthest = random_far_images(
                    data, w.proc, w.anchors, task.need, drawn.min_distance, drawn.rng
                )
            elif searches and s.knobs is not None:
                sel, drawn.dealt = _knob_selection(task, s, w, cands[s.plan_key], close.get(s.plan_key), rules, data,
                                                   drawn.rng)  # fmt: skip
                drawn.rows, drawn.selection, drawn.candidates = sel.rows, sel, cands[s.plan_key]
            task.add(columns[s.name], w, drawn)

    pipelined(len(seqs.names), search, draw, progress)
    filtered = {}
    if task.adversarial is not None:  # the adversarial setting's negatives filtered in place
        filtering = options.adversarial_policy(preset(recipes.get(task.name, "adversarial").preset))
        for s in resolved:
            if s.setting.style == "adversarial" and len(columns[s.name]):
                cols, label = columns[s.name], Labelled(progress, s.name)
                replacements, kept, filtered[s.name] = task.adversarial(
                    cols, data, seed=seed, progress=label, options=filtering
                )
                cols.set("replacements", replacements)
                cols.keep(kept)

    def table(s: VisualSetting) -> pa.Table:
        cols = columns[s.name]
        if not len(cols):
            return questions_table([])
        parts = task.table(cols, data, s.rng(seed, task.code, salt=1))
        return question_table(data, cols, parts, meta_head(s, cols, kc=kc, min_distance=fixed, bands=searches))

    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        tables = {s.name: pool.submit(table, s) for s in resolved}
        out = {name: made.result() for name, made in tables.items()}
    counts = build_counts(resolved, plans, out, tally, data, kc=kc if searches else None, min_distance=fixed)
    reports = {name: _report(entry) for name, entry in counts["per_setting"].items()}
    for name, summary in filtered.items():
        reports[name].adversarial = summary
    for s in resolved:  # a setting without questions says why (never a silent empty set)
        reports[s.name].details["recipe"] = recipe_account(recipes.get(task.name, recipes.kind_of(s.setting)))
        if not out[s.name].num_rows:
            reports[s.name].empty = _empty_reason(s, plans[s.plan_key].eligible, tally[s.name])
    counts["per_setting"] = reports
    return out, counts


def recipe_account(recipe: recipes.Recipe) -> dict[str, Any]:
    """What a setting's report states of its recipe: version, tells dealt, how its probes are read."""
    probes = "judged against their nulls" if recipe.judged else "reported by construction (not judged)"
    return {"version": recipe.version, "tells_dealt": list(recipe.tells), "probes": probes}


def _report(entry: dict[str, Any]) -> SettingReport:
    """A setting's report from its counts: tallies ``skipped_REASON`` are its skipped questions."""
    skipped = {k.removeprefix("skipped_"): v for k, v in entry.items() if k.startswith("skipped_")}
    details = {k: v for k, v in entry.items() if k != "questions" and not k.startswith("skipped_")}
    return SettingReport(questions=entry["questions"], skipped_questions=skipped, details=details)


def _empty_reason(s: VisualSetting, eligible: int, tally: Counter[str]) -> str:
    """Why setting ``s`` drew no question: no procedure its plan takes, else what skipped its questions."""
    if not eligible:
        need = (
            f"at least {min_steps_knobs()} image steps (K1)"
            if s.knobs is not None and not s.plan_key.short
            else "enough image steps"
        )
        return f"no procedure has {need}: ingest procedures with one image per step, or more of them"
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(tally.items()) if k.startswith("skipped") and v)
    return (
        f"every drafted question was skipped ({skipped or 'pruned by adversarial filtering'}); too few images of "
        "other procedures for this knob setting: add procedures or use another setting"
    )


def _knob_selection(
    task: VisualTask[Any],
    s: VisualSetting,
    w: Window,
    cands: Candidates,
    close: Closeness | None,
    rules: dict[tuple[PlanKey, recipes.Recipe], Classed],
    data: VisualData,
    rng: np.random.Generator,
) -> tuple[Selection, Dealt | None]:
    """A knob setting's negatives for a chunk: K3=2 dealt on its recipe's tells (classed once per plan, recipe and
    chunk in ``rules``), else the K2 band draw."""
    key, (_, k2, k3) = s.plan_key, s.knobs or (0, 0, 0)
    if k3 == 2 and task.rank_rule is not None:
        recipe = recipes.get(task.name, recipes.kind_of(s.setting))
        if (key, recipe) not in rules:
            assert close is not None  # K3 plans have their question points' closeness
            tells = [TELLS[name] for name in recipe.tells]
            rules[key, recipe] = task.rank_rule(w, cands, close, data, tells, recipe)
        c = rules[key, recipe]
        wants, ranks = options(c.radix, task.need, additive=c.additive)
        return draw(cands, c.classes, wants, ranks, extra_rows=c.extra_rows, extra_classes=c.extra_classes, k2=k2,
                    need=task.need, rng=rng)  # fmt: skip
    return select(cands, k2=k2, need=task.need, closeness=close if k3 else None, rng=rng), None


def _anchor_neighbours(data: VisualData, windows: dict[PlanKey, Window], kc: int) -> dict[PlanKey, Neighbours]:
    """``(dist, rows)``, each ``(B, r, K_C)``, per plan: one search per distinct (procedure, anchor image)."""
    if not windows:
        return {}
    n = data.n_rows
    codes = np.concatenate([(w.proc[:, None] * n + w.anchors).reshape(-1) for w in windows.values()])
    uniq, inverse = np.unique(codes, return_inverse=True)
    dist, rows = data.search(data.gather(uniq % n), uniq // n, kc, kind="answer")
    parts = np.split(inverse, np.cumsum([w.anchors.size for w in windows.values()])[:-1])
    at = {key: part.reshape(w.anchors.shape) for (key, w), part in zip(windows.items(), parts, strict=True)}
    return {key: (dist[part], rows[part]) for key, part in at.items()}
