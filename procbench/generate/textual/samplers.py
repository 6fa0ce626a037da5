"""Textual negative samplers: one class per setting, one job each, found by style in :data:`SAMPLERS`.

A sampler reads the drafts of its setting (window, placeholder, answer step; :class:`~.pool.Draft`) and
the :class:`TextualContext` (the pool of item rows with their texts, embeddings, procedures, positions and
splits; the step-text and procedure-title embeddings when the store has them in the items' space; the
shared kNN lists and clustering, computed once when a sampler first asks) and returns questions, counting
every skipped draft under a reason (:meth:`Sampler.skip`, as datatrove counts drop reasons).

- :class:`RecipeQA` (``recipeqa``): random titles of other procedures beyond a fixed distance.
- :class:`FarKnn` (``default``, paper 004): 3 of the k nearest titles farther than their mean distance.
- :class:`Budget` (``debias``, Algorithm 1): FarKnn within a per-cluster budget, ``B`` or ``auto``.
- :class:`Adversarial` (``adversarial``): candidates near the question (:meth:`Adversarial.candidates`)
  filtered against the context-free probes (:mod:`procbench.generate.adversarial`). The filter runs on any
  candidate source: a subclass that overrides :meth:`~Adversarial.candidates` is a new adversarial setting.
- :class:`~.needs_context.NeedsContext` (``needs-context``): four steps of the answer's own procedure, exchangeable
  without the context (the blank's step text), so only reading answers.

A new setting is one class (a :class:`PerDraft` sampler that draws one question's negatives, or a
:class:`Sampler` that fills the whole set at once) and one ``SAMPLERS.add(style, Class)``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from procbench.errors import BadInput
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.generate import policy
from procbench.generate.adversarial import (
    TEXTUAL_POLICY,
    AdversarialPolicy,
    Arena,
    filter_negatives,
    initial_negatives,
    lattice_targets,
)
from procbench.generate.debias import ClusterBudget, Clustering, cluster_titles, default_n_clusters, draw_negatives
from procbench.generate.search import Searcher, median_pair_distance
from procbench.generate.settings import Setting
from procbench.generate.textual.arena import (
    answer_ranks,
    distinct_steps,
    item_clusters,
    negative_capacity,
    question_closeness,
)
from procbench.generate.textual.candidates import (
    ADVERSARIAL_CANDIDATES,
    ADVERSARIAL_DRAFTS,
    ADVERSARIAL_NEARER,
    fits_worse,
    near_candidates,
    nearest_titles,
    pick_windows,
)
from procbench.generate.textual.pool import (
    ITEM_FIELDS,
    MIN_STEPS,
    MIN_STEPS_DEBIAS,
    N_NEGATIVES,
    Draft,
    Pool,
    StepRows,
    make_drafts,
    step_text_embeddings,
)
from procbench.progress import Progress
from procbench.qsets.questions import Question
from procbench.registry import Registry
from procbench.rng import stream
from procbench.store import Store

if TYPE_CHECKING:
    from procbench.embed import Embeddings, NeighborIndex

__all__ = [
    "KNN_K",
    "SAMPLERS",
    "Adversarial",
    "Budget",
    "DraftPlan",
    "Drawn",
    "FarKnn",
    "PerDraft",
    "RecipeQA",
    "Sampler",
    "TextualContext",
    "make_question",
]

KNN_K = 100
_RANDOM_BATCH = 64
_RANDOM_TRIES = 16
#: ``--budget auto``: the budget starts at the even share ``ceil(3 Q / C)`` and grows by this factor until
#: at least :data:`AUTO_YIELD` of the questions are kept (at most :data:`AUTO_STEPS` tries).
AUTO_GROWTH = 1.25
AUTO_YIELD = 0.98
AUTO_STEPS = 12


#: Each setting's negatives and answer positions; the random title pairs of the RecipeQA style's distance.
_SETTINGS = stream("textual.settings")
_PAIRS = stream("textual.recipeqa.min-distance")


@dataclass(frozen=True)
class DraftPlan:
    """Which drafts a sampler reads: ``per_procedure`` of each procedure, answers drawn with ``replace``."""

    per_procedure: int
    replace: bool = False


@dataclass
class TextualContext:
    """Everything a textual sampler reads; shared resources are computed once, when first asked for.

    Attributes:
        store, items, pool, embeddings: the store, the item kind, the pool of item rows and their embeddings.
        steps: per procedure, its steps as ``(index, item, normalised item)`` (every step, in order).
        in_range: the procedures with an allowed step count (those drafts are made of).
        seed, progress: the run's seed and progress.
        questions_per_procedure, knn_k, clusters, min_distance: the options (``clusters``, ``min_distance``:
            None = the default, computed here).
        adversarial: the adversarial filter's options.
        hide_window, last: how drafts are made (:func:`~.pool.make_drafts`).
        searcher: where the neighbour searches of :attr:`index` run (None: in this process).
    """

    store: Store
    items: str
    pool: Pool
    embeddings: Embeddings
    steps: dict[str, StepRows]
    in_range: dict[str, StepRows]
    seed: int
    progress: Progress
    questions_per_procedure: int = 1
    knn_k: int = KNN_K
    clusters: int | None = None
    min_distance: float | None = None
    adversarial: AdversarialPolicy = TEXTUAL_POLICY
    notes: dict[str, Any] = field(default_factory=dict)  # shared resources' account (the clustering)
    hide_window: bool = False
    last: bool = False
    searcher: Searcher | None = None
    _drafts: dict[DraftPlan, dict[str, list[Draft]]] = field(default_factory=dict)

    def drafts(self, plan: DraftPlan) -> dict[str, list[Draft]]:
        """The drafts of every procedure in range under ``plan`` (made once per plan), in procedure order."""
        if plan not in self._drafts:
            self._drafts[plan] = {
                pid: make_drafts(
                    pid,
                    rows,
                    per_procedure=plan.per_procedure,
                    replace=plan.replace,
                    seed=self.seed,
                    hide_window=self.hide_window,
                    last=self.last,
                )
                for pid, rows in sorted(self.in_range.items())
            }
        return self._drafts[plan]

    def rng(self, setting: Setting) -> np.random.Generator:
        """The generator of ``setting`` (its negatives and answer positions)."""
        import zlib

        return _SETTINGS.rng(self.seed, zlib.crc32(setting.name.encode("utf-8")))

    @cached_property
    def fixed_distance(self) -> float:
        """RecipeQA style's distance: ``min_distance``, else the median distance of random title pairs."""
        if self.min_distance is not None:
            return self.min_distance
        pairs = _PAIRS.rng(self.seed)
        return median_pair_distance(self.pool.procedures, self.pool.distance, pairs)

    @cached_property
    def knn(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """``{answer key: (rows, distances)}`` the ``knn_k`` nearest titles of every single-draw draft's answer."""
        pool = self.pool
        plan = DraftPlan(self.questions_per_procedure)
        wanted = sorted(
            {
                d.answer_key
                for ds in self.drafts(plan).values()
                for d in ds
                if d.answer_key in pool.positions and d.procedure_id in pool.group_of
            }
        )
        return nearest_titles(self.index, pool, wanted, self.knn_k, self.progress)

    @cached_property
    def index(self) -> NeighborIndex:
        """The store's persisted index of the items (every neighbour search goes through it)."""
        from procbench.embed import load_index

        return load_index(self.store, ITEM_FIELDS[self.items]).served_by(self.searcher)

    @cached_property
    def clustering(self) -> Clustering:
        """KMeans over the distinct items (Algorithm 1), ``clusters`` or ``round(sqrt(distinct))`` of them."""
        embeddings = self.embeddings
        n_distinct = len(np.unique(embeddings.hashes))
        n_clusters = self.clusters if self.clusters is not None else default_n_clusters(n_distinct)
        self.progress.start(f"textual-cloze: KMeans ({n_clusters} clusters)", total=None)
        clustering = cluster_titles(
            embeddings.vectors, n_clusters=n_clusters, seed=self.seed, hashes=embeddings.hashes
        )
        self.notes["clustering"] = {
            "clusters": clustering.n_clusters,
            "inertia": round(clustering.inertia, 4),
            "n_iter": clustering.n_iter,
            "largest": int(clustering.sizes().max()),
            "smallest": int(clustering.sizes().min()),
        }
        return clustering

    @cached_property
    def step_texts(self) -> Embeddings | None:
        """The step-text embeddings in the items' space when the context shows each answer's step text."""
        return step_text_embeddings(self.store, self.items, self.embeddings)

    @cached_property
    def procedure_titles(self) -> Embeddings | None:
        """The procedure-title embeddings in the items' space, None when the store has none."""
        from procbench.embed import load_embeddings

        try:
            titles = load_embeddings(self.store, "procedure_title")
        except BadInput:
            return None
        return titles if titles.encoder == self.embeddings.encoder else None


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
    """One setting's negatives for its drafts.

    A subclass sets :attr:`style` and implements :meth:`sample`; it may change :meth:`plan` (which drafts),
    :meth:`choose` (which of them it asks), :meth:`min_steps`, :meth:`check` (its options) and
    :meth:`report` (its counts). Skips are counted with :meth:`skip`; :attr:`notes` go to the counts first.
    """

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
        return MIN_STEPS

    def plan(self) -> DraftPlan:
        """The drafts this sampler reads."""
        return DraftPlan(self.context.questions_per_procedure)

    def choose(self, drafts: list[Draft]) -> list[Draft]:
        """The drafts this sampler asks, among ``drafts`` (in procedure order)."""
        return drafts

    def skip(self, reason: str, n: int = 1) -> None:
        """Count ``n`` drafts skipped for ``reason`` (reasons that skipped none are not listed)."""
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
    """RecipeQA style: uniform over other procedures' titles farther than a fixed distance from the answer.

    Its drafts are drawn with replacement (several questions of a procedure may repeat an answer).
    """

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
        for _ in range(_RANDOM_TRIES):
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
    """Algorithm 1 (:mod:`procbench.generate.debias`): FarKnn's candidates from KMeans clusters with budget left.

    Drafts are visited in a seeded random order; one whose negatives cannot be completed is skipped
    (``budget_exhausted``) and spends nothing. ``--budget auto`` takes the smallest budget, from the even share
    ``ceil(3 Q / C)`` growing by :data:`AUTO_GROWTH`, that keeps :data:`AUTO_YIELD` of the drafts. Paper 004
    drops procedures under 6 steps when debiasing; ``auto`` aims at full yield and keeps them.
    """

    style = "debias"
    reports_yield = True

    @classmethod
    def check(cls, setting: Setting) -> None:
        budget = setting.budget
        if budget != "auto" and not (isinstance(budget, int) and budget >= 1):
            raise BadInput("--debias needs --budget B with B >= 1, or --budget auto")

    def min_steps(self) -> int:
        return MIN_STEPS if self.setting.budget == "auto" else MIN_STEPS_DEBIAS

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
        for _ in range(AUTO_STEPS):
            made = self._with_budget(drafts, self.context.rng(self.setting), budget)
            kept = len(made) / need
            tried.append({"budget": budget, "yield": round(kept, 4)})
            if kept >= AUTO_YIELD or not self.skipped.get("budget_exhausted", 0):
                break
            budget = max(budget + 1, math.ceil(budget * AUTO_GROWTH))
        self.notes["auto_budget"] = {"chosen": budget, "even_share": tried[0]["budget"], "tried": tried}
        return made

    def report(self) -> dict[str, Any]:
        out = super().report()
        if self.budget is not None:
            out["budget"] = self.budget.summary()
        return out


class Adversarial(Sampler):
    """Adversarially filtered negatives (:mod:`procbench.generate.adversarial`) from :meth:`candidates`.

    Each procedure's question is chosen among its first :data:`ADVERSARIAL_DRAFTS` drafts
    (:func:`~.candidates.pick_windows`). Candidates are titles near the answer, the question mean, each
    question item and sharing the question's words; with step-text embeddings, none nearer the answer's own
    step text than the answer (:func:`~.candidates.fits_worse`). Answer ranks are balanced per split, the
    negatives start on the distance lattice and the filter replaces those the probes reject.
    """

    style = "adversarial"
    reports_yield = True
    #: the candidate sources' sizes (:func:`~.candidates.near_candidates`)
    sources: ClassVar[dict[str, int]] = ADVERSARIAL_CANDIDATES

    def plan(self) -> DraftPlan:
        return DraftPlan(max(ADVERSARIAL_DRAFTS, self.context.questions_per_procedure))

    def choose(self, drafts: list[Draft]) -> list[Draft]:
        return pick_windows(self.context.index, drafts, self.context.pool, self.context.questions_per_procedure)

    def candidates(self, drafts: list[Draft], answers: np.ndarray) -> np.ndarray:
        """``(Q, M)`` candidate rows per draft (-1: padding), best first; ``answers``: each draft's answer row."""
        pool, step_texts = self.context.pool, self.context.step_texts
        candidates = near_candidates(self.context.index, drafts, pool, self.sources)
        if step_texts is not None:
            candidates = fits_worse(candidates, answers, drafts, pool, step_texts)
        return candidates

    def rules(self) -> list[str]:
        """The card's account of how the candidates were chosen."""
        rules = [
            f"each procedure's question is the one of its first {ADVERSARIAL_DRAFTS} drafts whose answer has the "
            f"most of the {ADVERSARIAL_NEARER} nearest titles of other procedures nearer the question than itself, "
            "answers whose title other steps share last",
            "candidates: the titles nearest the answer, the question mean and each question item, and those "
            "sharing the most words with the question items",
        ]
        if self.context.step_texts is not None:
            rules.append("no negative nearer the answer's own step text than the answer")
        return rules

    def _arena(self, drafts: list[Draft]) -> Arena:
        pool = self.context.pool
        self.context.progress.start(f"textual-cloze/{self.setting.name}: candidates", total=None)
        answers = np.array([pool.positions[d.answer_key] for d in drafts], dtype=np.int64)
        candidates = self.candidates(drafts, answers)
        width = max(len(d.keys) for d in drafts)
        question_items = np.full((len(drafts), width), -1, dtype=np.int64)
        for i, d in enumerate(drafts):
            for n, key in enumerate(d.keys):
                if n != d.position:
                    question_items[i, n] = pool.positions.get(key, -1)
        return Arena(
            vectors=np.asarray(pool.embeddings.vectors, dtype=np.float32),
            identity=pool.norm_codes,
            answers=answers,
            question_items=question_items,
            negatives=np.full((len(drafts), N_NEGATIVES), -1, dtype=np.int64),
            candidates=candidates,
            groups=np.array([pool.procedure_code.get(d.procedure_id, -1) for d in drafts], dtype=np.int64),
            texts=pool.texts,
            clusters=item_clusters(pool, self.context.seed),
            copies=negative_capacity(pool, answers),
            placeholder=np.array([d.position for d in drafts], dtype=np.int64),
        )

    def sample(self, drafts: list[Draft], rng: np.random.Generator) -> dict[int, Question]:
        pool, options, seed = self.context.pool, self.context.adversarial, self.context.seed
        drafted = len(drafts)
        index = [i for i, d in enumerate(drafts) if d.answer_key in pool.positions]
        self.skip("no_embedding", len(drafts) - len(index))
        embedded = [drafts[i] for i in index]
        self.notes["adversarial"] = {}
        if not embedded:
            return {}
        arena = self._arena(embedded)
        arena.candidate_class, offsets, to_answer = question_closeness(arena)
        splits = np.array([pool.group_of[d.procedure_id] for d in embedded])
        ranks = answer_ranks(arena, options, splits, seed=seed)
        ranked = ranks >= 0
        self.skip("rank_balance", int((~ranked).sum()))
        arena, ranks, offsets = arena.subset(ranked, negatives=arena.negatives[ranked]), ranks[ranked], offsets[ranked]
        kept_index = np.array(index, dtype=np.int64)[ranked]  # into ``drafts``, as the arena's questions are now
        # the rank-r answer has r negatives closer to the question, evenly spaced in distance with it
        targets = lattice_targets(ranks, policy.current().LATTICE_SPACING * float(np.std(to_answer)), N_NEGATIVES)
        start, classes, unfilled = initial_negatives(arena, options, seed=seed, offsets=offsets, targets=targets)
        self.skip("few_candidates", int(unfilled.sum()))
        keep = ~unfilled
        arena, ranks, kept_index = arena.subset(keep, negatives=start[keep]), ranks[keep], kept_index[keep]
        arena.negative_class = classes[keep]
        result = None
        negatives, kept = arena.negatives, np.ones(len(kept_index), dtype=bool)
        why = options.not_filtered(len(np.unique(arena.groups)), len(arena.groups))
        if why is None:
            result = filter_negatives(arena, options, seed=seed, drafted=drafted, progress=self.context.progress)
            negatives, kept = result.negatives, result.kept
            self.skip("predictable", int((~kept).sum()))
        final = distinct_steps(negatives, arena, options.ceiling, pool)
        made: dict[int, Question] = {}
        for i in np.flatnonzero(kept).tolist():
            rows = [int(r) for r in final[i]]
            gaps = np.linalg.norm(arena.vectors[rows] - arena.vectors[arena.answers[i]], axis=1)
            drawn = Drawn(rows, gaps.astype(np.float64).tolist(), n_candidates=int((arena.candidates[i] >= 0).sum()))
            question = make_question(drafts[kept_index[i]], self.setting, pool, drawn, None)
            question.meta["replacements"] = int(result.replacements[i]) if result is not None else 0
            question.meta["ceiling"] = options.ceiling
            question.meta["answer_rank"] = int(ranks[i])
            made[int(kept_index[i])] = question
        summary = result.summary() if result is not None else options.unfiltered(why or "")
        summary["rules"] = self.rules()
        self.notes["adversarial"] = summary
        return made

    def report(self) -> dict[str, Any]:
        return {}


#: Textual setting style -> its sampler class.
SAMPLERS: Registry[type[Sampler]] = Registry("textual sampler")
for _sampler in (RecipeQA, FarKnn, Budget, Adversarial):
    SAMPLERS.add(_sampler.style, _sampler)
SAMPLERS.add("needs-context", "procbench.generate.textual.needs_context:NeedsContext")
