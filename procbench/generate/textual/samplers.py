"""Textual negative samplers, one class per setting found by style in :data:`SAMPLERS` (a new setting is one class
and one ``SAMPLERS.add``): each reads its drafts and the :class:`TextualContext`, returns questions and counts every
skipped draft under a reason."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from procbench.errors import BadInput
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.generate import policy
from procbench.generate.debias import ClusterBudget, Clustering, draw_negatives
from procbench.generate.settings import Setting
from procbench.generate.textual.context import DraftPlan, TextualContext
from procbench.generate.textual.pool import N_NEGATIVES, Draft, Pool
from procbench.qsets.questions import Question
from procbench.registry import Registry

__all__ = ["SAMPLERS", "Budget", "Drawn", "FarKnn", "PerDraft", "RecipeQA", "Sampler", "make_question"]

#: RecipeQA style: random candidate titles drawn per try. block-size
_RANDOM_BATCH = 64


@dataclass
class Drawn:
    """Negatives of one question and what decided them."""

    rows: list[int]
    distances: list[float]
    knn_k: int | None = None
    knn_mean: float | None = None
    n_candidates: int | None = None


def make_question(draft: Draft, setting: Setting, pool: Pool, drawn: Drawn, clustering: Clustering | None) -> Question:
    """The question with the correct choice first (``meta``'s per-choice lists in the same order)."""
    answer_row = pool.positions.get(draft.answer_key)
    choices = [draft.titles[draft.position]] + [str(pool.texts[r]) for r in drawn.rows]
    keys = [draft.answer_key] + [pool.keys[r] for r in drawn.rows]
    distances = [0.0, *drawn.distances]
    if clustering is not None:
        clusters: list[int | None] = [int(clustering.labels[answer_row])] if answer_row is not None else [None]
        clusters += [int(clustering.labels[r]) for r in drawn.rows]
    else:
        clusters = [None] * len(choices)
    question = [PLACEHOLDER if i == draft.position else title for i, title in enumerate(draft.titles)]
    meta: dict[str, Any] = {
        "setting": setting.name,
        "n_steps": draft.n_steps,
        "window_start": draft.start,
        "placeholder": draft.position,
        "answer_key": draft.answer_key,
        "question_keys": [None if i == draft.position else key for i, key in enumerate(draft.keys)],
        "choice_keys": keys,
        "choice_distances": [round(d, 6) for d in distances],
        "knn_k": drawn.knn_k,
        "knn_mean": None if drawn.knn_mean is None else round(drawn.knn_mean, 6),
        "n_candidates": drawn.n_candidates,
        "choice_clusters": clusters if clustering is not None else None,
        "answer_cluster": clusters[0],
    }
    return Question(draft.procedure_id, draft.context, question, choices, 0, meta)


class Sampler(ABC):
    """One setting's negatives for its drafts: a subclass sets :attr:`style` and implements :meth:`sample`."""

    style: ClassVar[str] = ""
    #: whether the counts report ``drafted`` and ``yield`` (settings that may skip many drafts)
    reports_yield: ClassVar[bool] = False
    #: how many negatives of a question may be steps of its own procedure (never a step the question shows)
    own_procedure_negatives: ClassVar[int] = 0

    def __init__(self, setting: Setting, context: TextualContext) -> None:
        self.setting = setting
        self.context = context
        self.skipped: Counter[str] = Counter()
        self.notes: dict[str, Any] = {}

    @classmethod
    def check(cls, setting: Setting) -> None:
        """Raise :class:`BadInput` when ``setting`` does not apply to this sampler (every setting, by default)."""
        return None

    def min_steps(self) -> int:
        """Procedures with fewer steps are skipped (``step_count``)."""
        return policy.current().MIN_STEPS

    def plan(self) -> DraftPlan:
        """The drafts this sampler reads."""
        return DraftPlan(self.context.questions_per_procedure)

    def choose(self, drafts: list[Draft]) -> list[Draft]:
        """The drafts this sampler asks, among ``drafts`` (in procedure order)."""
        return drafts

    def skip(self, reason: str, n: int = 1) -> None:
        """Count ``n`` drafts skipped for ``reason`` (none: not listed)."""
        if n:
            self.skipped[reason] += n

    @abstractmethod
    def sample(self, drafts: list[Draft], rng: np.random.Generator) -> dict[int, Question]:
        """``{draft index: question}`` for the drafts that got negatives (correct choice first)."""

    def report(self) -> dict[str, Any]:
        """Counts of this setting that follow the common ones."""
        return {"knn_k": self.context.knn_k}


class PerDraft(Sampler):
    """A sampler that draws each draft's negatives on its own (:meth:`draw`), in draft order."""

    clustering: Clustering | None = None  # set: the questions' meta name each choice's cluster

    def order(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """The order the drafts are visited in."""
        return np.arange(n)

    @abstractmethod
    def draw(self, draft: Draft, rng: np.random.Generator) -> Drawn | str:
        """The negatives of ``draft``, or the reason it has none."""

    def sample(self, drafts: list[Draft], rng: np.random.Generator) -> dict[int, Question]:
        pool = self.context.pool
        made: dict[int, Question] = {}
        self.context.progress.start(f"textual-cloze/{self.setting.name}", total=len(drafts))
        for i in self.order(len(drafts), rng).tolist():
            self.context.progress.advance()
            draft = drafts[i]
            if draft.answer_key not in pool.positions:
                self.skip("no_embedding")
                continue
            drawn = self.draw(draft, rng)
            if isinstance(drawn, str):
                self.skip(drawn)
                continue
            made[i] = make_question(draft, self.setting, pool, drawn, self.clustering)
        return made


class RecipeQA(PerDraft):
    """RecipeQA style: other procedures' titles beyond a fixed distance from the answer (drafts with replacement)."""

    style = "recipeqa"

    def plan(self) -> DraftPlan:
        return DraftPlan(self.context.questions_per_procedure, replace=True)

    def draw(self, draft: Draft, rng: np.random.Generator) -> Drawn | str:
        pool, min_distance = self.context.pool, self.context.fixed_distance
        own = pool.procedure_code.get(draft.procedure_id, -2)
        candidates = pool.group_rows[pool.group_of[draft.procedure_id]]
        if not len(candidates):
            return "few_candidates"
        vectors = pool.embeddings.vectors
        query = np.asarray(vectors[pool.positions[draft.answer_key]], dtype=np.float64)
        seen = set(draft.norms)
        rows: list[int] = []
        distances: list[float] = []
        for _ in range(policy.current().RANDOM_TRIES):
            batch = candidates[rng.integers(0, len(candidates), _RANDOM_BATCH)]
            batch = batch[pool.procedures[batch] != own]
            gaps = np.linalg.norm(np.asarray(vectors[batch], dtype=np.float64) - query, axis=1)
            for row, gap in zip(batch.tolist(), gaps.tolist(), strict=True):
                norm = pool.norms[row]
                if norm is None or norm in seen or gap <= min_distance:
                    continue
                seen.add(norm)
                rows.append(row)
                distances.append(gap)
                if len(rows) == N_NEGATIVES:
                    return Drawn(rows, distances)
        return "few_candidates"

    def sample(self, drafts: list[Draft], rng: np.random.Generator) -> dict[int, Question]:
        made = super().sample(drafts, rng)
        for question in made.values():
            question.meta["min_distance"] = round(self.context.fixed_distance, 6)
        return made

    def report(self) -> dict[str, Any]:
        return {"min_distance": round(self.context.fixed_distance, 4)}


class FarKnn(PerDraft):
    """Paper 004's sampler: 3 of the k nearest distinct titles farther than their mean distance."""

    style = "default"
    budget: ClusterBudget | None = None

    def draw(self, draft: Draft, rng: np.random.Generator) -> Drawn | str:
        rows, distances = knn = self.context.knn[draft.answer_key]
        if not len(rows):
            return "few_candidates"
        mean = float(distances.mean())
        far = distances > mean
        rows, distances = rows[far], distances[far]
        forbidden = set(draft.norms)
        texts = [self.context.pool.norms[r] for r in rows.tolist()]
        usable = {t for t in texts if t is not None} - forbidden
        clustering, budget = self.clustering, self.budget
        clusters = clustering.labels[rows] if clustering is not None else None
        picked, reason = draw_negatives(rows, clusters, texts, rng, n=N_NEGATIVES, budget=budget, forbidden=forbidden)
        if picked is None:
            return str(reason)
        if budget is not None and clustering is not None:  # the draw checked the budget: never below zero
            budget.spend(clustering.labels[picked])
        gap = dict(zip(rows.tolist(), distances.tolist(), strict=True))
        return Drawn(picked, [gap[r] for r in picked], len(knn[0]), mean, len(usable))


class Budget(FarKnn):
    """Algorithm 1: FarKnn's candidates from clusters with budget left, drafts in a seeded order; ``auto`` takes the
    smallest budget from ``ceil(3 Q / C)`` up by ``AUTO_GROWTH`` that keeps ``AUTO_YIELD`` of the drafts."""

    style = "debias"
    reports_yield = True

    @classmethod
    def check(cls, setting: Setting) -> None:
        budget = setting.budget
        if budget != "auto" and not (isinstance(budget, int) and budget >= 1):
            raise BadInput("--debias needs --budget B with B >= 1, or --budget auto")

    def min_steps(self) -> int:
        p = policy.current()
        return p.MIN_STEPS if self.setting.budget == "auto" else p.MIN_STEPS_DEBIAS

    def order(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.permutation(n)

    def _with_budget(self, drafts: list[Draft], rng: np.random.Generator, budget: int) -> dict[int, Question]:
        self.clustering = self.context.clustering
        self.budget = ClusterBudget(self.clustering.n_clusters, budget)
        self.skipped = Counter()
        return super().sample(drafts, rng)

    def sample(self, drafts: list[Draft], rng: np.random.Generator) -> dict[int, Question]:
        if self.setting.budget != "auto":
            return self._with_budget(drafts, rng, int(str(self.setting.budget)))
        need = max(1, len(drafts))
        budget = max(1, math.ceil(N_NEGATIVES * need / self.context.clustering.n_clusters))
        tried = []
        p = policy.current()
        for _ in range(p.AUTO_STEPS):
            made = self._with_budget(drafts, self.context.rng(self.setting), budget)
            kept = len(made) / need
            tried.append({"budget": budget, "yield": round(kept, 4)})
            if kept >= p.AUTO_YIELD or not self.skipped.get("budget_exhausted", 0):
                break
            budget = max(budget + 1, math.ceil(budget * p.AUTO_GROWTH))
        self.notes["auto_budget"] = {"chosen": budget, "even_share": tried[0]["budget"], "tried": tried}
        return made

    def report(self) -> dict[str, Any]:
        out = super().report()
        if self.budget is not None:
            out["budget"] = self.budget.summary()
        return out


#: Textual setting style -> its sampler class.
SAMPLERS: Registry[type[Sampler]] = Registry("textual sampler")
for _sampler in (RecipeQA, FarKnn, Budget):
    SAMPLERS.add(_sampler.style, _sampler)
SAMPLERS.add("adversarial", "procbench.generate.textual.adversarial:Adversarial")
SAMPLERS.add("needs-context", "procbench.generate.textual.needs_context:NeedsContext")
