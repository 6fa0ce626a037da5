"""Textual cloze's ``adversarial`` sampler: candidates near the question, filtered by the one replacement game
against the context-free probes (a subclass that overrides :meth:`Adversarial.candidates` is a new setting)."""

from __future__ import annotations

from typing import Any

import numpy as np

from procbench.generate import policy
from procbench.generate.adversarial import Arena, filter_negatives, initial_negatives, lattice_targets
from procbench.generate.textual.arena import (
    answer_ranks,
    distinct_steps,
    item_clusters,
    negative_capacity,
    question_closeness,
)
from procbench.generate.textual.candidates import fits_worse, near_candidates, pick_windows
from procbench.generate.textual.context import DraftPlan
from procbench.generate.textual.pool import N_NEGATIVES, Draft
from procbench.generate.textual.samplers import Drawn, Sampler, make_question
from procbench.qsets.questions import Question

__all__ = ["Adversarial"]


class Adversarial(Sampler):
    """Adversarially filtered negatives from :meth:`candidates` (near the answer, the question mean, each item and
    sharing its words) for windows picked among ``ADVERSARIAL_DRAFTS`` drafts; answer ranks balanced per split."""

    style = "adversarial"
    reports_yield = True

    @property
    def sources(self) -> dict[str, int]:
        """Each candidate source's size (:func:`~.candidates.near_candidates`)."""
        return dict.fromkeys(("answer", "question", "items", "words"), policy.current().TEXT_CANDIDATES)

    def plan(self) -> DraftPlan:
        return DraftPlan(max(policy.current().ADVERSARIAL_DRAFTS, self.context.questions_per_procedure))

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
        p = policy.current()
        rules = [
            f"each procedure's question is the one of its first {p.ADVERSARIAL_DRAFTS} drafts whose answer has the "
            f"most of the {p.ADVERSARIAL_NEARER} nearest titles of other procedures nearer the question than itself, "
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
            replacements = int(result.replacements[i]) if result is not None else 0
            question.meta.update(replacements=replacements, ceiling=options.ceiling, answer_rank=int(ranks[i]))
            made[int(kept_index[i])] = question
        summary = result.summary() if result is not None else options.unfiltered(why or "")
        summary["rules"] = self.rules()
        self.notes["adversarial"] = summary
        return made

    def report(self) -> dict[str, Any]:
        return {}
