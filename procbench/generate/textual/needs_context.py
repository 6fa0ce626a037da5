"""Textual cloze whose negatives only the context rules out: the ``needs-context`` setting.

A reader who never sees the step texts answers most cloze questions from three cues (measured with blinded
readers, see ``benchmarks/reader_checks.md``): the *topic* (negatives from other procedures are about something
else), the *role* of a step ("Enjoy!" ends a procedure) and *procedural order* ("Flour It / ____ / Bake It").
Embedding probes see none of them. This module draws negatives that keep all three cues on the answer's side
and leave only what the step texts say to tell them apart ("decoys and lookalikes"):

- **Drafts.** The blank is at an edge of the shown window (first or last item), never the procedure's first or
  last step (their role gives them away), and its title is not a generic one (a normalised title that
  :data:`GENERIC_COPIES` or more rows share, such as "Ingredients"). Fewer neighbours are shown in short
  procedures (:func:`window_length`), so that steps outside the window remain.
- **Order prior.** :func:`order_prior` learns a linear "earliness" score ``f(title) = w . e(title)`` from the
  pairs of steps within procedures (a linear RankNet, Burges et al. 2005, as the pair-order task of paper 003
  frames it), cross-fitted over procedure folds so a procedure's own order never trains its score. A candidate
  must fit where the blank is (before the window for a leading blank, after it for a trailing one) about as
  well as the answer does (:data:`ORDER_SLACK`).
- **Decoys**: at most :data:`DECOYS` steps of the same procedure outside the window, those whose earliness is
  nearest the answer's first. Same topic, same author's style; only the texts place them elsewhere.
- **Lookalikes**: titles of the :data:`NEAR_PROCEDURES` procedures of the same split whose titles are nearest
  this one's (same dish, other author), at a similar relative position (:data:`POSITION_BAND`), in the answer's
  casing and end punctuation, whose cosine to the shown titles' mean is within :data:`TOPIC_SLACK` of the
  answer's (as on-topic as the answer, no more: a probe on the distance to the question must not tell), each
  used by one question at most.
- **The reader's check** (every candidate): not a paraphrase of the answer or of a shown title (cosine below
  :data:`PARAPHRASE`), and farther from the answer's own step text than the answer's title is, by
  :data:`TEXT_MARGIN` in cosine, so a reader of the context can tell.

The questions' start draws how many negatives are nearer the question mean than the answer uniformly (a rank
rule then reads chance); adversarial filtering against the context-free probes runs on top, a decoy only ever
replaced by a decoy. Constants were set by blinded reader checks on real RecipeQA recipes
(``benchmarks/reader_checks.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from procbench.generate.adversarial import Arena, filter_negatives
from procbench.generate.textual.arena import item_clusters
from procbench.generate.textual.pool import N_NEGATIVES, Draft
from procbench.generate.textual.samplers import Drawn, Sampler, make_question
from procbench.qsets.questions import Question

if TYPE_CHECKING:
    from procbench.embed import Embeddings

__all__ = [
    "DECOYS",
    "GENERIC_COPIES",
    "NEAR_PROCEDURES",
    "NeedsContext",
    "NeedsContextDraft",
    "ORDER_SLACK",
    "PARAPHRASE",
    "POSITION_BAND",
    "TEXT_MARGIN",
    "TOPIC_SLACK",
    "choose_questions",
    "starting_negatives",
    "order_prior",
    "window_length",
]

#: Cosine at or above which two titles may say the same (no negative that close to the answer or a shown title).
PARAPHRASE = 0.75
#: The answer's title is at least this much nearer (cosine) its own step text than any negative is.
TEXT_MARGIN = 0.05
#: A normalised title that this many rows share is generic ("Ingredients", "Enjoy!"): never an answer or negative.
GENERIC_COPIES = 3
#: A lookalike's relative position in its procedure is within this of the answer's.
POSITION_BAND = 0.2
#: A candidate's order fit (earliness difference to the window's nearest shown step) may fall this far below
#: the answer's (or below 0, whichever is lower).
ORDER_SLACK = 0.5
#: A lookalike's cosine to the shown titles' mean is within this of the answer's.
TOPIC_SLACK = 0.08
#: Lookalikes come from this many procedures of the same split, nearest by procedure title.
NEAR_PROCEDURES = 25
#: At most this many negatives are steps of the answer's own procedure.
DECOYS = 1
#: Lookalike candidates kept per question (the start and the adversarial filter choose among them).
LOOKALIKES = 6
#: Cross-fitting folds of the order prior.
ORDER_FOLDS = 5

StepRows = Sequence[tuple[int, str | None, str | None]]


@dataclass(frozen=True)
class NeedsContextDraft:
    """One question's place: the window ``[start, start + len(keys))`` of its procedure, the blank at ``position``.

    ``side`` is ``lead`` (the blank is the window's first item) or ``trail`` (its last). ``decoys`` and
    ``lookalikes`` are candidate pool rows (best first); ``answer`` is the blank's pool row.
    """

    procedure_id: str
    n_steps: int
    start: int
    keys: list[str]
    titles: list[str]
    position: int
    side: str
    answer: int
    decoys: list[int]
    lookalikes: list[int]
    pair: bool = False

    @property
    def paired(self) -> bool:
        """Whether the decoy is taken with a pair of lookalikes of one procedure (the first two)."""
        return bool(self.decoys) and len(self.lookalikes) >= 2 and self.pair


def window_length(n_steps: int) -> int:
    """Items a question shows (with the blank): 4 from 8 steps, 3 from 6, else 2, so steps remain outside it."""
    return 4 if n_steps >= 8 else 3 if n_steps >= 6 else 2


def order_prior(
    vectors: np.ndarray, procedures: np.ndarray, order: np.ndarray, *, seed: int, folds: int = ORDER_FOLDS
) -> np.ndarray:
    """``(N,)`` earliness of each row: a linear pairwise ranking score, cross-fitted over procedure folds.

    Args:
        vectors: ``(N, D)`` item vectors.
        procedures: ``(N,)`` procedure code of each row (-1: no procedure; scored 0).
        order: ``(N,)`` the row's step index within its procedure.

    A logistic regression without intercept on ``e_a - e_b`` (label: ``a`` comes first) for every pair of
    steps of a procedure; rows are scored by the model of the folds that do not hold their procedure.
    """
    from sklearn.linear_model import LogisticRegression

    scores = np.zeros(len(vectors), dtype=np.float64)
    codes = np.unique(procedures[procedures >= 0])
    if len(codes) < 2:
        return scores
    fold_of = np.full(int(procedures.max()) + 1, -1, dtype=np.int64)
    fold_of[np.random.default_rng([seed, 0x0DE2]).permutation(codes)] = np.arange(len(codes)) % folds
    rows_of = {int(c): np.flatnonzero(procedures == c) for c in codes}
    vectors = np.asarray(vectors, dtype=np.float32)
    for fold in range(min(folds, len(codes))):
        firsts, seconds = [], []
        for code, rows in rows_of.items():
            if fold_of[code] == fold or len(rows) < 2:
                continue
            rows = rows[np.argsort(order[rows], kind="stable")]
            a, b = np.triu_indices(len(rows), k=1)
            firsts.append(rows[a])
            seconds.append(rows[b])
        if not firsts:
            continue
        first, second = np.concatenate(firsts), np.concatenate(seconds)
        diff = vectors[first] - vectors[second]
        features = np.concatenate([diff, -diff])
        labels = np.concatenate([np.ones(len(diff)), np.zeros(len(diff))])
        model = LogisticRegression(C=1.0, fit_intercept=False, max_iter=500).fit(features, labels)
        held = np.isin(procedures, np.flatnonzero(fold_of == fold))
        scores[held] = vectors[held] @ model.coef_[0]
    return scores


def _style(title: str) -> tuple[bool, str]:
    """A title's casing (all capitals or not) and end punctuation: what a lookalike must share with the answer."""
    letters = [ch for ch in title if ch.isalpha()]
    end = title.rstrip()[-1:]
    return bool(letters) and all(ch.isupper() for ch in letters), end if end in ".!?" else ""


@dataclass
class _Corpus:
    """The pool rows as the drafts read them."""

    vectors: np.ndarray  # (N, D) title vectors
    texts: np.ndarray | None  # (N, D) each row's step-text vector (zeros where none), or None
    earliness: np.ndarray  # (N,)
    generic: np.ndarray  # (N,) bool
    relative: np.ndarray  # (N,) relative position of the row's step in its procedure
    titles: Sequence[str | None]
    norm_codes: np.ndarray
    procedure_of: np.ndarray  # (N,) procedure code of each row


def _fits_order(corpus: _Corpus, side: str, edge: int, candidate: np.ndarray, answer: int) -> np.ndarray:
    """Whether each ``candidate`` row fits the blank's side of the window about as well as the answer does."""
    sign = 1.0 if side == "lead" else -1.0
    fit = sign * (corpus.earliness[edge] - corpus.earliness[candidate])
    fit_answer = sign * (corpus.earliness[edge] - corpus.earliness[answer])
    return fit >= min(fit_answer, 0.0) - ORDER_SLACK


def _readers_check(corpus: _Corpus, answer: int, shown: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """Candidates a reader of the context can rule out and a reader without it cannot call a copy."""
    vectors = corpus.vectors
    against = np.concatenate([[answer], shown])
    ok = (vectors[candidate] @ vectors[against].T).max(axis=1) < PARAPHRASE
    if corpus.texts is not None:
        text = corpus.texts[answer]
        ok &= vectors[candidate] @ text <= float(vectors[answer] @ text) - TEXT_MARGIN
    return ok & ~corpus.generic[candidate]


def _draft_options(
    pid: str, rows: StepRows, positions: Mapping[str, int], corpus: _Corpus
) -> list[tuple[int, int, str, list[int]]]:
    """Every (blank step, window start, side, decoy rows) of one procedure, decoys best first."""
    n = len(rows)
    length = window_length(n)
    keys = [f"{pid}#{index}" for index, _, _ in rows]
    found = [positions.get(k, -1) if rows[i][2] is not None else -1 for i, k in enumerate(keys)]
    options = []
    for blank in range(1, n - 1):
        answer = found[blank]
        if answer < 0 or corpus.generic[answer]:
            continue
        for side, start in (("lead", blank), ("trail", blank - length + 1)):
            if start < 0 or start + length > n:
                continue
            window = range(start, start + length)
            if any(found[j] < 0 for j in window) or len({rows[j][2] for j in window}) < length:
                continue
            shown = np.array([found[j] for j in window if j != blank], dtype=np.int64)
            edge = found[blank + 1] if side == "lead" else found[blank - 1]
            outside = np.array(
                [found[j] for j in range(n) if not start <= j < start + length and found[j] >= 0], dtype=np.int64
            )
            in_window = {int(corpus.norm_codes[found[j]]) for j in window}
            outside = outside[[int(corpus.norm_codes[r]) not in in_window for r in outside]]
            if len(outside):
                outside = outside[_readers_check(corpus, answer, shown, outside)]
                outside = outside[_fits_order(corpus, side, edge, outside, answer)]
                nearness = np.abs(corpus.earliness[outside] - corpus.earliness[answer])
                outside = outside[np.argsort(nearness, kind="stable")]
            options.append((blank, start, side, outside.tolist()))
    return options


def _lookalikes(
    corpus: _Corpus,
    answer: int,
    shown: np.ndarray,
    taken: Sequence[int],
    side: str,
    edge: int,
    near_rows: np.ndarray,
    used: set[int],
) -> list[int]:
    """Up to :data:`LOOKALIKES` rows of near procedures (one per procedure), nearest the answer's topic fit first."""
    if not len(near_rows):
        return []
    vectors = corpus.vectors
    mean = vectors[shown].mean(axis=0)
    fit_answer = float(vectors[answer] @ mean)
    rows = near_rows[np.abs(corpus.relative[near_rows] - corpus.relative[answer]) <= POSITION_BAND]
    style = _style(str(corpus.titles[answer]))
    rows = rows[[corpus.titles[r] is not None and _style(str(corpus.titles[r])) == style for r in rows]]
    blocked = {int(corpus.norm_codes[r]) for r in [answer, *shown.tolist(), *taken]} | used
    rows = rows[[int(corpus.norm_codes[r]) not in blocked for r in rows]]
    if not len(rows):
        return []
    rows = rows[_readers_check(corpus, answer, np.concatenate([shown, np.asarray(taken, dtype=np.int64)]), rows)]
    gap = np.abs(vectors[rows] @ mean - fit_answer)  # how much more or less on-topic than the answer
    keep = gap <= TOPIC_SLACK
    if keep.any():
        keep[keep] = _fits_order(corpus, side, edge, rows[keep], answer)
    rows = rows[keep][np.argsort(gap[keep], kind="stable")]
    # a lookalike pair: two titles of one near procedure as alike as the answer and its decoy are, so that
    # "the answer is in the tightest pair of choices" tells nothing
    pair: list[int] = []
    if taken:
        target = float(vectors[answer] @ vectors[taken[0]])
        best = np.inf
        by_procedure: dict[int, list[int]] = {}
        for r in rows.tolist():
            by_procedure.setdefault(int(corpus.procedure_of[r]), []).append(r)
        for members in by_procedure.values():
            for x in range(len(members)):
                for y in range(x + 1, len(members)):
                    a, b = members[x], members[y]
                    if corpus.norm_codes[a] == corpus.norm_codes[b]:
                        continue
                    gap = abs(float(vectors[a] @ vectors[b]) - target)
                    if gap < best:
                        best, pair = gap, [a, b]
    out: list[int] = list(pair)
    seen: set[int] = {int(corpus.norm_codes[r]) for r in pair}
    for r in rows.tolist():
        code = int(corpus.norm_codes[r])
        if code in seen:
            continue
        seen.add(code)
        out.append(r)
        if len(out) == LOOKALIKES:
            break
    return out


def choose_questions(
    steps: Mapping[str, StepRows],
    *,
    keys: Sequence[str],
    positions: Mapping[str, int],
    vectors: np.ndarray,
    norm_codes: np.ndarray,
    norm_counts: np.ndarray,
    titles: Sequence[str | None],
    procedure_of_row: np.ndarray,
    procedure_code: Mapping[str, int],
    group_of: Mapping[str, int],
    text_vectors: np.ndarray | None,
    procedure_vectors: np.ndarray | None,
    seed: int,
) -> tuple[list[NeedsContextDraft], dict[str, int], dict[str, Any]]:
    """One draft per procedure of ``steps`` with its decoy and lookalike candidates.

    Args:
        steps: per procedure, its steps as ``(index, title, normalised title)`` in order.
        keys, positions: the pool's row keys (``PROCEDURE_ID#INDEX``) and key -> row.
        vectors: ``(N, D)`` the pool's title vectors; ``norm_codes (N,)`` / ``norm_counts``: normalised title
            identity of each row and how many rows share it; ``titles (N,)`` the shown titles.
        procedure_of_row: ``(N,)`` procedure code of each row; ``procedure_code``: id -> code;
            ``group_of``: procedure id -> split code (lookalikes come from the same split).
        text_vectors: ``(N, D)`` each row's step-text vector in the same space (None: no text check).
        procedure_vectors: ``(P, D)`` per procedure code, its title vector (None: the mean of its titles).

    Returns:
        ``(drafts, skipped by reason, notes)``; drafts have at least 3 candidates in all.
    """
    n_rows = len(keys)
    order = np.full(n_rows, -1, dtype=np.int64)
    relative = np.zeros(n_rows, dtype=np.float64)
    for pid, rows in steps.items():
        for i, (index, _, _) in enumerate(rows):
            row = positions.get(f"{pid}#{index}")
            if row is not None:
                order[row] = i
                relative[row] = i / max(1, len(rows) - 1)
    vectors = np.asarray(vectors, dtype=np.float32)
    in_steps = np.isin(procedure_of_row, [procedure_code[p] for p in steps if p in procedure_code]) & (order >= 0)
    earliness = order_prior(vectors, np.where(in_steps, procedure_of_row, -1), order, seed=seed)
    generic = np.zeros(n_rows, dtype=bool)
    valid = norm_codes >= 0
    generic[valid] = norm_counts[norm_codes[valid]] >= GENERIC_COPIES
    corpus = _Corpus(vectors, text_vectors, earliness, generic, relative, titles, norm_codes, procedure_of_row)
    near = _near_procedures(steps, procedure_code, group_of, procedure_of_row, vectors, procedure_vectors)
    rows_of: dict[int, np.ndarray] = {}
    for code in np.unique(procedure_of_row[in_steps]):
        rows_of[int(code)] = np.flatnonzero((procedure_of_row == code) & in_steps)
    rng = np.random.default_rng([seed, 0xC0417E47])
    skipped: dict[str, int] = {}
    drafts: list[NeedsContextDraft] = []
    used: set[int] = set()
    decoy_counts = np.zeros(DECOYS + 1, dtype=np.int64)
    paired_questions = 0
    for pid in sorted(steps):
        rows = steps[pid]
        options = _draft_options(pid, rows, positions, corpus)
        if not options:
            skipped["no_draft"] = skipped.get("no_draft", 0) + 1
            continue
        tie = rng.random(len(options))
        ranked = sorted(range(len(options)), key=lambda t: (-min(DECOYS, len(options[t][3])), tie[t]))
        near_rows = (
            np.concatenate([rows_of[c] for c in near.get(pid, []) if c in rows_of])
            if near.get(pid)
            else np.zeros(0, dtype=np.int64)
        )
        for t in ranked:
            blank, start, side, decoys = options[t]
            length = window_length(len(rows))
            window_keys = [f"{pid}#{rows[j][0]}" for j in range(start, start + length)]
            answer = positions[window_keys[blank - start]]
            shown = np.array([positions[k] for j, k in enumerate(window_keys) if j != blank - start], dtype=np.int64)
            edge = (
                positions[f"{pid}#{rows[blank + 1][0]}"]
                if side == "lead"
                else positions[f"{pid}#{rows[blank - 1][0]}"]
            )
            chosen_decoys = decoys[:DECOYS]
            looks = _lookalikes(corpus, answer, shown, chosen_decoys, side, edge, near_rows, used)
            if len(chosen_decoys) + len(looks) < 3:
                continue
            used.update(int(norm_codes[r]) for r in looks[: 3 - len(chosen_decoys)])
            pair = len(looks) >= 2 and bool(procedure_of_row[looks[0]] == procedure_of_row[looks[1]])
            paired_questions += int(bool(chosen_decoys) and pair)
            decoy_counts[len(chosen_decoys)] += 1
            drafts.append(
                NeedsContextDraft(
                    procedure_id=pid,
                    n_steps=len(rows),
                    start=start,
                    keys=window_keys,
                    titles=[str(titles[positions[k]]) for k in window_keys],
                    position=blank - start,
                    side=side,
                    answer=answer,
                    decoys=chosen_decoys,
                    lookalikes=looks,
                    pair=pair,
                )
            )
            break
        else:
            skipped["few_candidates"] = skipped.get("few_candidates", 0) + 1
    notes = {
        "decoys_per_question": {str(k): int(v) for k, v in enumerate(decoy_counts.tolist())},
        "lookalike_pairs": paired_questions,
    }
    return drafts, skipped, notes


def _near_procedures(
    steps: Mapping[str, StepRows],
    procedure_code: Mapping[str, int],
    group_of: Mapping[str, int],
    procedure_of_row: np.ndarray,
    vectors: np.ndarray,
    procedure_vectors: np.ndarray | None,
) -> dict[str, list[int]]:
    """Per procedure, the codes of the :data:`NEAR_PROCEDURES` procedures of its split nearest by title vector."""
    from procbench.embed.index import exact_knn

    pids = [p for p in sorted(steps) if p in procedure_code and p in group_of]
    codes = np.array([procedure_code[p] for p in pids], dtype=np.int64)
    if procedure_vectors is not None:
        mat = np.asarray(procedure_vectors, dtype=np.float32)[codes]
    else:
        mat = np.zeros((len(pids), vectors.shape[1]), dtype=np.float32)
        for i, code in enumerate(codes):
            mat[i] = vectors[procedure_of_row == code].mean(axis=0)
        mat /= np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
    groups = np.array([group_of[p] for p in pids], dtype=np.int64)
    near: dict[str, list[int]] = {}
    for group in np.unique(groups):
        members = np.flatnonzero(groups == group)
        if len(members) < 2:
            continue
        _, found = exact_knn(mat[members], mat[members], min(len(members), NEAR_PROCEDURES + 1))
        for i, row in enumerate(members):
            near[pids[row]] = [int(codes[members[j]]) for j in found[i] if j >= 0 and members[j] != row][
                :NEAR_PROCEDURES
            ]
    return near


class NeedsContext(Sampler):
    """``needs-context``: decoys and lookalikes (:func:`choose_questions`), the answer's distance rank to the
    question balanced, then adversarially filtered against the context-free probes (a decoy only ever replaced
    by a decoy). Title items only: the context must hold the step texts the decoys are ruled out by."""

    style = "needs-context"
    reports_yield = True
    own_procedure_negatives = DECOYS

    def sample(self, drafts: list[Draft], rng: np.random.Generator) -> dict[int, Question]:
        context, pool = self.context, self.context.pool
        options, seed = context.adversarial, context.seed
        vectors = np.asarray(pool.embeddings.vectors, dtype=np.float32)
        asked = {d.procedure_id for d in drafts}
        context.progress.start(f"textual-cloze/{self.setting.name}: decoys and lookalikes", total=None)
        found, skipped, notes = choose_questions(
            {pid: rows for pid, rows in context.in_range.items() if pid in asked},
            keys=pool.keys,
            positions=pool.positions,
            vectors=vectors,
            norm_codes=pool.norm_codes,
            norm_counts=pool.norm_counts,
            titles=pool.texts,
            procedure_of_row=pool.procedures,
            procedure_code=pool.procedure_code,
            group_of=pool.group_of,
            text_vectors=self._rows_of(context.step_texts, len(vectors)),
            procedure_vectors=self._procedure_vectors(),
            seed=seed,
        )
        for reason, n in skipped.items():
            self.skip(reason, n)
        self.notes["needs_context"] = notes
        if not found:
            return {}
        arena = self._arena(found, vectors)
        negatives, kept, result = arena.negatives, np.ones(len(found), dtype=bool), None
        if len(np.unique(arena.groups)) >= 2:  # cross-fitting needs two procedures
            result = filter_negatives(arena, options, seed=seed, drafted=len(drafts), progress=context.progress)
            negatives, kept = result.negatives, result.kept
            self.skip("predictable", int((~kept).sum()))
        made: dict[int, Question] = {}
        for i in np.flatnonzero(kept).tolist():
            made[i] = self._question(found[i], [int(r) for r in negatives[i]], vectors)
            made[i].meta["replacements"] = int(result.replacements[i]) if result is not None else 0
        summary = result.summary() if result is not None else {**options.to_dict(), "rounds_run": 0}
        summary["rules"] = RULES
        self.notes["adversarial"] = summary
        return made

    def report(self) -> dict[str, Any]:
        return {}

    def _rows_of(self, embeddings: Embeddings | None, n_rows: int) -> np.ndarray | None:
        """``(N, D)`` the step-text vector of each pool row (zeros where none), None without step texts."""
        if embeddings is None:
            return None
        row_of = {k: i for i, k in enumerate(embeddings.keys.to_pylist())}
        out = np.zeros((n_rows, embeddings.dim), dtype=np.float32)
        pairs = [(i, row_of[k]) for i, k in enumerate(self.context.pool.keys) if k in row_of]
        if pairs:
            mine, theirs = (np.array(x, dtype=np.int64) for x in zip(*pairs, strict=True))
            out[mine] = np.asarray(embeddings.vectors)[theirs]
        return out

    def _procedure_vectors(self) -> np.ndarray | None:
        """``(P, D)`` each procedure code's title vector, None when the store has none in the items' space."""
        titles, pool = self.context.procedure_titles, self.context.pool
        if titles is None:
            return None
        row_of = {k: i for i, k in enumerate(titles.keys.to_pylist())}
        out = np.zeros((len(pool.procedure_code), titles.dim), dtype=np.float32)
        for pid, code in pool.procedure_code.items():
            if pid in row_of:
                out[code] = titles.vectors[row_of[pid]]
        return out

    def _arena(self, found: list[NeedsContextDraft], vectors: np.ndarray) -> Arena:
        pool = self.context.pool
        width = max(len(d.keys) for d in found)
        n_candidates = max(len(d.decoys) + len(d.lookalikes) for d in found)
        question_items = np.full((len(found), width), -1, dtype=np.int64)
        candidates = np.full((len(found), n_candidates), -1, dtype=np.int64)
        candidate_class = np.full((len(found), n_candidates), -1, dtype=np.int64)
        for i, d in enumerate(found):
            for n, key in enumerate(d.keys):
                if n != d.position:
                    question_items[i, n] = pool.positions[key]
            rows = d.decoys + d.lookalikes
            candidates[i, : len(rows)] = rows
            candidate_class[i, : len(rows)] = [1] * len(d.decoys) + [0] * len(d.lookalikes)
        answers = np.array([d.answer for d in found], dtype=np.int64)
        pairs = np.array([d.paired for d in found], dtype=bool)
        negatives, classes = starting_negatives(
            vectors, answers, question_items, candidates, candidate_class, self.context.seed, pairs=pairs
        )
        return Arena(
            vectors=vectors,
            identity=pool.norm_codes,
            answers=answers,
            question_items=question_items,
            negatives=negatives,
            candidates=candidates,
            groups=np.array([pool.procedure_code.get(d.procedure_id, -1) for d in found], dtype=np.int64),
            texts=pool.texts,
            clusters=item_clusters(pool, self.context.seed),
            candidate_class=candidate_class,
            negative_class=classes,
            placeholder=np.array([d.position for d in found], dtype=np.int64),
        )

    def _question(self, found: NeedsContextDraft, rows: list[int], vectors: np.ndarray) -> Question:
        pool = self.context.pool
        rows_of = self.context.in_range[found.procedure_id]
        draft = Draft(
            procedure_id=found.procedure_id,
            number=0,
            n_steps=found.n_steps,
            context=[index for index, _, _ in rows_of],
            start=found.start,
            keys=found.keys,
            titles=found.titles,
            norms=[str(pool.norms[pool.positions[k]]) for k in found.keys],
            position=found.position,
        )
        gaps = np.linalg.norm(vectors[rows] - vectors[found.answer], axis=1).astype(np.float64).tolist()
        n_candidates = len(found.decoys) + len(found.lookalikes)
        question = make_question(draft, self.setting, pool, Drawn(rows, gaps, n_candidates=n_candidates), None)
        question.meta["window_side"] = found.side
        question.meta["decoys"] = sum(1 for r in rows if pool.procedures[r] == pool.procedures[found.answer])
        return question


#: The card's account of the setting's rules.
RULES = [
    "the blank is the first or last item of a window of 2-4 titles, never the procedure's first or last step nor "
    "a generic title",
    f"negatives: at most {DECOYS} step of the same procedure (a decoy) and titles of the {NEAR_PROCEDURES} nearest "
    "procedures of the split (lookalikes) at a similar position, in the answer's casing and as on-topic as it; "
    "a decoy's question takes a pair of lookalikes from one procedure",
    "no negative is a paraphrase of the answer or a shown title, or nearer the answer's own step text than the "
    "answer's title",
    "the answer's distance rank to the question balanced; adversarially filtered against the probes",
]


def starting_negatives(
    vectors: np.ndarray,
    answers: np.ndarray,
    question_items: np.ndarray,
    candidates: np.ndarray,
    candidate_class: np.ndarray,
    seed: int,
    pairs: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(Q, 3)`` starting negatives and their classes: the decoy (class 1) if any, then a lookalike pair
    where ``pairs`` says so, else lookalikes chosen so that how many negatives are nearer the question mean
    than the answer is drawn uniformly over the set."""
    rng = np.random.default_rng([seed, 0x5EED])
    n_q = len(answers)
    shown = question_items >= 0
    means = (vectors[np.maximum(question_items, 0)] * shown[..., None]).sum(axis=1) / np.maximum(
        shown.sum(axis=1, keepdims=True), 1
    )
    targets = rng.permutation(np.resize(np.arange(N_NEGATIVES + 1), n_q))
    negatives = np.full((n_q, N_NEGATIVES), -1, dtype=np.int64)
    classes = np.zeros((n_q, N_NEGATIVES), dtype=np.int64)
    for i in range(n_q):
        live = candidates[i] >= 0
        rows, kinds = candidates[i][live], candidate_class[i][live]
        picked = [int(j) for j in np.flatnonzero(kinds == 1)[:1]]
        rest = [int(j) for j in np.flatnonzero(kinds == 0)]
        if picked and pairs is not None and pairs[i]:
            picked += rest[:2]
        else:
            d_answer = float(np.linalg.norm(vectors[answers[i]] - means[i]))
            nearer = np.linalg.norm(vectors[rows] - means[i], axis=1) < d_answer
            want = int(targets[i]) - int(nearer[picked].sum())
            need = N_NEGATIVES - len(picked)
            first = [j for j in rest if bool(nearer[j]) == (want > 0)]
            take = first[: max(0, want)] if want > 0 else first[:need]
            take += [j for j in rest if j not in take][: need - len(take)]
            picked += take[:need]
        negatives[i, : len(picked)] = rows[picked]
        classes[i, : len(picked)] = kinds[picked]
    return negatives, classes
