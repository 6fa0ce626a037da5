"""Visual questions that only the context answers: the ``needs-context`` setting (exchangeable photos).

Drawn as textual cloze's ``needs-context`` is (:mod:`procbench.generate.exchangeable`): four photos of the
procedure's image sequence, uniformly among the sets with no near-copy photos (cosine below ``IMAGE_ALIKE``) and no
two steps' texts alike (below ``TEXT_ALIKE``), the answer one of the four; :data:`SHAPES` says what the question
and its context show per task. The answer's rank by distance to the four photos' centroid is dealt from an exactly
balanced shuffled sequence drawn without looking at the photos (an independent draw's skew is a shortcut the
audit's rank-aware probes read). Rationale and measurements: docs/concepts/needs-context.md.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from procbench.card.setting_report import SettingReport
from procbench.errors import BadInput
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.generate import policy, recipes
from procbench.generate.answers import balance_answer_positions
from procbench.generate.exchangeable import SIZE, draw, symmetric_sets
from procbench.generate.search import Searcher
from procbench.generate.settings import Setting
from procbench.generate.visual.driver import VisualOptions, recipe_account, run
from procbench.generate.visual.sequences import VisualData
from procbench.generate.visual.task import VisualTask
from procbench.progress import SILENT, Progress
from procbench.qsets.questions import Question
from procbench.rng import Stream, stream
from procbench.store import Store
from procbench.tells import TELLS, ChoiceView

__all__ = [
    "SHAPES",
    "STYLE",
    "Shape",
    "build_needs_context",
    "run_with_needs_context",
    "tell_ranks",
]

STYLE = "needs-context"


def _choice_rules() -> str:
    """The card's account of the choices' rules, with the policy's values now."""
    p = policy.current()
    return (
        f"no two photos near-copies (cosine below {p.IMAGE_ALIKE}), no two of their steps' texts alike (cosine "
        f"below {p.TEXT_ALIKE}); steps without a text are never choices"
    )


_DEALT = (
    "the answer's rank among the four by distance to their centroid is dealt evenly over the set (a target drawn "
    "without looking at the photos), so no rank holds more answers than another"
)


@dataclass(frozen=True)
class Shape:
    """What a task's ``needs-context`` question shows, given the four photos' steps ``(4,)`` in choice order and
    the answer's position among them."""

    blank: bool  # the question is the blank, its context the answer's step (cloze); else empty, context the others
    sets: Stream  # each procedure's set
    ranks: Stream  # the answers' dealt ranks
    positions: Stream  # the answer positions
    rules: list[str]  # the card's account of the setting's rules

    def context(self, steps: list[int], answer: int) -> list[int]:
        """The step indices the context shows, in authored order."""
        if self.blank:
            return [steps[answer]]
        return sorted(s for i, s in enumerate(steps) if i != answer)


#: Task -> the shape of its ``needs-context`` questions.
SHAPES: dict[str, Shape] = {
    "visual-cloze": Shape(
        blank=True,
        sets=stream("visual.needs-context.sets"),
        ranks=stream("visual.needs-context.ranks"),
        positions=stream("visual.needs-context.positions"),
        rules=[
            "the question is the blank alone; its context is the blank's step (title and text)",
            "the choices are four photos of the procedure's image sequence drawn as an unordered set, the answer "
            "uniform among them, so a reader without the context reads chance",
            _DEALT,
        ],
    ),
    "visual-coherence": Shape(
        blank=False,
        sets=stream("visual.needs-context.coherence-sets"),
        ranks=stream("visual.needs-context.coherence-ranks"),
        positions=stream("visual.needs-context.coherence-positions"),
        rules=[
            "the choices are four photos of the procedure's image sequence drawn as an unordered set; the question "
            "is empty; its context is the steps (title and text) of three of them, in authored order",
            "the answer, the photo of a step the context does not show, is uniform among the four, so a reader "
            "without the context reads chance",
            _DEALT,
        ],
    ),
}


def tell_ranks(task: str, photos: np.ndarray) -> np.ndarray:
    """``(k,)`` each of ``photos (k, d)``'s rank (0: smallest; ties in order) on the first tell of ``task``'s
    ``needs-context`` recipe (``odd_one_out``: the distance to the mean of the other photos), the rank dealt."""
    tell = TELLS[recipes.get(task, STYLE).tells[0]]
    values = tell.values(ChoiceView(photos[None], np.zeros((1, 0, photos.shape[1])), np.zeros((1, 0), dtype=bool)))[0]
    return np.argsort(np.argsort(values, kind="stable"), kind="stable")


def run_with_needs_context(
    task: VisualTask[Any],
    store: Store,
    settings: list[Setting],
    options: VisualOptions,
    *,
    progress: Progress = SILENT,
    searcher: Searcher | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``task``'s sets and counts: ``needs-context`` through :func:`build_needs_context`, every other setting
    through the visual driver (:func:`~.driver.run`; ``searcher``: where its neighbour searches run)."""
    options.check(settings)
    exchangeable = [s for s in settings if s.style == STYLE]
    rest = [s for s in settings if s.style != STYLE]
    sets: dict[str, Any]
    if rest:
        sets, counts = run(task, store, rest, options, progress=progress, searcher=searcher)
    else:
        sets, counts = {}, {"per_setting": {}}
    for setting in exchangeable:
        questions, entry = build_needs_context(
            store, task.name, setting, seed=options.seed, progress=progress, alone=not rest
        )
        counts["per_setting"][setting.name] = report = _report(entry)
        report.details["recipe"] = recipe_account(recipes.get(task.name, STYLE))
        if questions is not None:
            sets[setting.name] = questions
    return sets, counts


def _report(entry: dict[str, Any]) -> SettingReport:
    """The setting's report: its procedures with too few photos or no readable set are skipped."""
    skipped: dict[str, int] = {k: entry[k] for k in ("few_photos", "no_readable_set") if k in entry}
    details = {k: v for k, v in entry.items() if k not in ("questions", "empty", *skipped)}
    return SettingReport(
        questions=entry["questions"], skipped_procedures=skipped, empty=entry.get("empty"), details=details
    )


def build_needs_context(
    store: Store,
    task: str,
    setting: Setting,
    *,
    seed: int = 0,
    progress: Progress = SILENT,
    alone: bool = True,
) -> tuple[list[Question] | None, dict[str, Any]]:
    """``task``'s ``needs-context`` questions (one per procedure with four usable photos; :data:`SHAPES`) and
    their counts.

    Without step-text embeddings (the rule reads them) a sweep (``alone`` False) leaves the setting out: None, and
    the counts say why.

    Raises:
        BadInput: the setting asked for alone on a store without step-text embeddings.
    """
    from procbench.embed import load_embeddings

    shape = SHAPES[task]
    try:
        texts = load_embeddings(store, "step_text")
    except BadInput as exc:
        reason = f"no step-text embeddings, which its rule reads (run procbench embed --fields step_text): {exc}"
        if alone:
            raise BadInput(f"{task}/{setting.name}: {reason}") from exc
        return None, {"questions": 0, "empty": reason}
    text_row = {k: i for i, k in enumerate(texts.keys.to_pylist())}
    text_vectors = np.asarray(texts.vectors, dtype=np.float32)
    data = VisualData(store, with_index=False)
    seqs, image_ids = data.seqs, data.embeddings.keys.cast("string").to_pylist()
    tally = {"few_photos": 0, "no_readable_set": 0}
    alike = (policy.current().IMAGE_ALIKE, policy.current().TEXT_ALIKE)
    drafts: list[tuple[str, int, list[tuple[int, int, int]], np.ndarray]] = []  # name, steps, chosen, ranks (4,)
    progress.start(f"{task}/{setting.name}", total=len(seqs.names))
    for p, name in enumerate(seqs.names):
        progress.advance()
        lo, hi = int(seqs.offsets[p]), int(seqs.offsets[p + 1])
        items = [
            (int(step), int(row), text_row[key])
            for step, row in zip(seqs.steps[lo:hi].tolist(), seqs.rows[lo:hi].tolist(), strict=True)
            if (key := f"{name}#{step}") in text_row
        ]
        if len(items) < SIZE:
            tally["few_photos"] += 1
            continue
        photos = np.asarray(data.gather(np.array([row for _, row, _ in items], dtype=np.int64)), dtype=np.float64)
        photos /= np.maximum(np.linalg.norm(photos, axis=1, keepdims=True), 1e-12)
        said = text_vectors[[t for _, _, t in items]]
        sets = symmetric_sets(len(items), apart=[(photos @ photos.T, alike[0]), (said @ said.T, alike[1])])
        drawn = draw(sets, shape.sets.rng(seed, zlib.crc32(name.encode("utf-8"))))
        if drawn is None:
            tally["no_readable_set"] += 1
            continue
        drafts.append((name, hi - lo, [items[j] for j in drawn[0]], tell_ranks(task, photos[drawn[0]])))
    targets = shape.ranks.rng(seed).permutation(np.resize(np.arange(SIZE), len(drafts)))
    questions: list[Question] = []
    for (name, n_steps, chosen, ranks), target in zip(drafts, targets.tolist(), strict=True):
        answer = int(np.flatnonzero(ranks == target)[0])
        steps = [s for s, _, _ in chosen]
        meta = {"setting": setting.name, "n_steps": n_steps, "answer_step": steps[answer], "choice_steps": steps}
        choices = [image_ids[row] for _, row, _ in chosen]
        context = shape.context(steps, answer)
        questions.append(Question(name, context, [PLACEHOLDER] if shape.blank else [], choices, answer, meta))
    balance_answer_positions(questions, shape.positions.rng(seed), per_choice=("choice_steps",))
    counts: dict[str, Any] = {
        "questions": len(questions),
        **{k: v for k, v in tally.items() if v},
        "rules": [*shape.rules, _choice_rules()],
    }
    if not questions:
        counts["empty"] = "no procedure has four photos whose steps have texts, no two alike"
    return questions, counts
