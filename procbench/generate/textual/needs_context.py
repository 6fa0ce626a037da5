"""Textual cloze that only the context answers: the ``needs-context`` setting (exchangeable choices).

Blinded readers without the step texts answered 80-90% of the ``adversarial`` and ``recipeqa`` questions, and
42-65% of eight earlier versions that took their cues (topic, a step's role, order) away one at a time
(``benchmarks/reader_checks.md``). Each cue lives in what the question shows, so here **the question is the blank
alone** (its context: the blank step's text) and **the choices are four steps of one procedure drawn as an unordered
set** among those :func:`readable_sets` keeps, the answer uniform among the four. Neither the draw nor the rule
looks at which step is the answer, so a context-free reader (person, probe or language model) reads chance in
expectation (Zellers et al. 2018 make the point for SWAG); no adversarial filter runs, as choosing negatives by the
answer would break that symmetry. ``TEXT_SLACK`` trades yield for how plainly the text tells (reader checks, v9).
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import Any

import numpy as np

from procbench.generate import policy
from procbench.generate.exchangeable import SIZE as CHOICES
from procbench.generate.exchangeable import draw, symmetric_sets
from procbench.generate.textual.closeness import LexicalFit, close_sets
from procbench.generate.textual.pool import N_NEGATIVES, Draft
from procbench.generate.textual.samplers import Drawn, Sampler, make_question
from procbench.qsets.questions import Question
from procbench.rng import stream

__all__ = ["NeedsContext", "readable_sets", "rules"]

#: Each procedure's set and answer.
_SETS = stream("textual.needs-context.sets")


def readable_sets(titles: np.ndarray, texts: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """``(K, 4)`` every set of four of the ``n`` steps (unit ``titles (n, D)``, ``texts (n, D)``, ``norms (n,)``
    codes) whose titles are distinct after normalising and under ``PARAPHRASE`` in cosine, no step's text more than
    ``TEXT_SLACK`` nearer another title than its own: a rule symmetric in the four (:mod:`.exchangeable`)."""
    alike = np.asarray(titles @ titles.T, dtype=np.float64)
    alike[norms[:, None] == norms[None, :]] = np.inf
    p = policy.current()
    return symmetric_sets(len(titles), apart=[(alike, p.PARAPHRASE)], fit=texts @ titles.T, slack=p.TEXT_SLACK)


class NeedsContext(Sampler):
    """``needs-context``: four readable steps of one procedure (:func:`readable_sets`), the answer uniform among them;
    a question per draft, each from its own random stream (other procedures do not move it); title items only."""

    style = "needs-context"
    reports_yield = True
    own_procedure_negatives = N_NEGATIVES

    def sample(self, drafts: list[Draft], rng: np.random.Generator) -> dict[int, Question]:
        context, pool = self.context, self.context.pool
        texts = context.step_texts
        if texts is None:
            self.skip("no_step_text", len(drafts))
            return {}
        text_row = {k: i for i, k in enumerate(texts.keys.to_pylist())}
        titles = np.asarray(pool.embeddings.vectors, dtype=np.float32)
        text_vectors = np.asarray(texts.vectors, dtype=np.float32)
        valid = pool.norm_codes >= 0
        level = self.setting.closeness
        lexical = LexicalFit(context.store) if level else None
        made: dict[int, Question] = {}
        context.progress.start(f"textual-cloze/{self.setting.name}", total=len(drafts))
        for i, draft in enumerate(drafts):
            context.progress.advance()
            steps = [
                (index, pool.positions[key], text_row[key])
                for index, _, _ in context.in_range[draft.procedure_id]
                if (key := f"{draft.procedure_id}#{index}") in pool.positions
                and key in text_row
                and valid[pool.positions[key]]
            ]
            if len(steps) < CHOICES:
                self.skip("few_steps")
                continue
            draws = _SETS.rng(context.seed, zlib.crc32(draft.procedure_id.encode("utf-8")), draft.number)
            rows = [s[1] for s in steps]
            step_titles, step_texts = titles[rows], text_vectors[[s[2] for s in steps]]
            sets = readable_sets(step_titles, step_texts, pool.norm_codes[rows])
            if len(sets) and lexical is not None:
                keys = [pool.keys[r] for r in rows]
                sets = close_sets(sets, [step_texts @ step_titles.T, lexical.fit(keys)], level)
                if not len(sets):
                    self.skip("no_close_set")
                    continue
            drawn = draw(sets, draws)
            if drawn is None:
                self.skip("no_readable_set")
                continue
            chosen, answer = [steps[j] for j in drawn[0]], drawn[1]
            made[i] = self._question(draft, chosen[answer], [s for j, s in enumerate(chosen) if j != answer])
        self.notes["rules"] = rules(level)
        return made

    def _question(self, draft: Draft, answer: tuple[int, int, int], negatives: list[tuple[int, int, int]]) -> Question:
        pool = self.context.pool
        index, row, _ = answer
        keys, titles, norms = [pool.keys[row]], [str(pool.texts[row])], [str(pool.norms[row])]
        blank = dataclasses.replace(
            draft, context=[index], start=index, keys=keys, titles=titles, norms=norms, position=0
        )
        rows = np.array([r for _, r, _ in negatives], dtype=np.int64)
        distances = pool.distance(np.full(len(rows), row), rows).tolist()
        return make_question(blank, self.setting, pool, Drawn(rows.tolist(), distances), None)

    def report(self) -> dict[str, Any]:
        return {}


def rules(level: int = 0) -> list[str]:
    """The card's account of the setting's rules at closeness ``level`` (with the policy's values now)."""
    p = policy.current()
    said = [
        "the question is the blank alone; its context is the text of the blank's step",
        "the choices are four steps of the same procedure drawn as an unordered set, the answer uniform among them, "
        "so a reader without the context reads chance",
        "no choice is a paraphrase of another, and no choice's step text is more than "
        f"{p.TEXT_SLACK} (cosine) nearer another choice's title than its own",
        "no adversarial filter: choosing negatives by the answer would break the choices' symmetry",
    ]
    if level:
        said.append(
            f"closeness level {level}: only sets whose mean fit margin (each step text's similarity to its own "
            "title minus its best rival title's in the set, averaged over the four steps and over TF-IDF and "
            f"embedding cosine) is at most {p.CLOSENESS_MARGINS[level - 1]}, so the rival titles come close; the "
            "rule reads the set, never the answer, so a reader without the context still reads chance"
        )
    return said
