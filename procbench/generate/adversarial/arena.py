"""The arena adversarial filtering plays in (Q questions over a pool of item rows, their negatives and candidates)
and every cloze task's start: usable candidates and negatives on the distance lattice (:func:`lattice_targets`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from procbench.generate.adversarial.policy import DEFAULT_POLICY, AdversarialPolicy
from procbench.generate.adversarial.rounds import ExtraProbes
from procbench.rng import stream
from procbench.shortcuts import ChoiceBatch, HubnessTable, choice_features, word_weights

__all__ = ["Arena", "initial_negatives", "lattice_targets", "no_items", "usable_candidates"]

#: The filter's starting negatives.
_START = stream("adversarial.slot-start")
#: The arena's per-question fields ``(Q, ...)`` (some may be None).
_PER_QUESTION = "answers question_items candidates groups candidate_class negative_class placeholder strata allowed"
#: Questions whose candidates' vectors are gathered at once (``(B, M, D)``: about 100 MB at 192 candidates and 384
#: dimensions), so the memory of the candidates' checks does not grow with the set.
QUESTION_BLOCK = 512


@dataclass
class Arena:
    """Q questions over a pool of N items (rows of ``vectors``), with K negatives and M candidates each."""

    vectors: np.ndarray  # (N, D) float32, L2-normalised
    identity: np.ndarray  # (N,) rows of one code show the same item (-1: unusable)
    answers: np.ndarray  # (Q,) rows
    question_items: np.ndarray  # (Q, L) rows the question shows (-1: placeholder or none)
    negatives: np.ndarray  # (Q, K) the current negatives
    candidates: np.ndarray  # (Q, M) rows a negative may be replaced by (-1: padding), best first
    groups: np.ndarray  # (Q,) procedures (cross-fitting never splits one)
    texts: Sequence[str | None] | None = None  # (N,) item texts (text items' features)
    clusters: np.ndarray | None = None  # (N,) cluster of each item
    copies: np.ndarray | None = None  # (n_identities,) pool rows per identity; max_uses per copy
    candidate_class: np.ndarray | None = None  # (Q, M): a candidate replaces only a negative of its class
    negative_class: np.ndarray | None = None  # (Q, K)
    placeholder: np.ndarray | None = None  # (Q,) placeholder's slot among question_items (-1: none)
    features: Callable[[ChoiceBatch], np.ndarray] | None = None  # (Q, C, F) probes' features (else choice_features)
    probes: ExtraProbes | None = None  # the task's own probes, fitted on features
    strata: np.ndarray | None = None  # (Q,) the dealt rank, kept in proportion in the folds
    replaced: str = "negatives"  # or "answer" (coherence's intruder; negative_class (Q, 1))
    allowed: np.ndarray | None = None  # (Q, M) usable candidates by the task's rule (None: usable_candidates)
    _word_weights: dict[str, float] | None = field(default=None, repr=False)
    _text_pairs: dict[tuple[str, str], tuple[int, int, float, float]] = field(default_factory=dict, repr=False)
    _text_table: np.ndarray | None = field(default=None, repr=False)
    _hubness: HubnessTable | None = field(default=None, repr=False)
    _usable: dict[tuple[float, int], np.ndarray] = field(default_factory=dict, repr=False)

    def text_table(self) -> np.ndarray | None:
        """``(N + 1,)`` object array of the item texts as strings ("" for none), then "" (row -1 reads it)."""
        if self.texts is None:
            return None
        if self._text_table is None:
            self._text_table = np.array([str(t or "") for t in self.texts] + [""], dtype=object)
        return self._text_table

    def hubness(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Centrality and density of pool ``rows`` (any shape; :class:`~procbench.shortcuts.HubnessTable`) against the
        items of the set's first :meth:`batch` (before it, the pool's usable items): one measure, computed once per
        item, for every batch of the arena, so the probes fitted on the set's read its variants' alike."""
        if self._hubness is None:
            self._hubness = HubnessTable(self.vectors, self.identity >= 0)
        return self._hubness(rows)

    def word_weights(self) -> dict[str, float] | None:
        """The TF-IDF overlap feature's token weights, from every item text of the pool (None: no texts)."""
        if self.texts is None:
            return None
        if self._word_weights is None:
            self._word_weights = word_weights(t for t in self.texts if t)
        return self._word_weights

    def capacity(self, max_uses: int) -> np.ndarray:
        """``(n_identities,)`` how many questions may use each identity as a negative."""
        n = int(self.identity.max()) + 1 if len(self.identity) else 0
        copies = np.ones(n, dtype=np.int64) if self.copies is None else np.asarray(self.copies, dtype=np.int64)
        return copies * max_uses

    def slots(self) -> np.ndarray:
        """``(Q, S)`` the rows the game replaces: the negatives, or the answers as one column."""
        return self.answers[:, None] if self.replaced == "answer" else self.negatives

    def with_slots(self, slots: np.ndarray) -> Arena:
        """This arena with ``slots (Q, S)`` (:meth:`slots`) in place of the current ones."""
        if self.replaced == "answer":
            return dataclasses.replace(self, answers=slots[:, 0].copy())
        return dataclasses.replace(self, negatives=slots)

    def choices(self) -> np.ndarray:
        """``(Q, 1 + K)`` rows: the answer first, then the negatives."""
        return np.concatenate([self.answers[:, None], self.negatives], axis=1)

    def subset(self, keep: np.ndarray, *, negatives: np.ndarray) -> Arena:
        """The questions where ``keep`` (``(Q,)`` bool) is True, with these ``negatives``."""
        values = {name: getattr(self, name) for name in _PER_QUESTION.split()}
        cut: dict[str, Any] = {name: None if value is None else value[keep] for name, value in values.items()}
        usable = {key: usable[keep] for key, usable in self._usable.items()}
        return dataclasses.replace(self, **cut, negatives=negatives, _usable=usable)

    def batch(self) -> ChoiceBatch:
        """The probes' view of the current choices (the answer is column 0)."""
        choices = self.choices()
        if self._hubness is None:  # measured against the items the set first shows, as the audit measures it
            self._hubness = HubnessTable.of_shown(self.vectors, choices)
        return _batch(self, choices, self.question_items, self.groups, self.placeholder)

    def choice_features(self, batch: ChoiceBatch) -> np.ndarray:
        """``(Q, C, F)`` the probes' features of ``batch`` (:attr:`features`, else :func:`choice_features`)."""
        return (self.features or choice_features)(batch)


def no_items(n_q: int) -> np.ndarray:
    """``(Q, 1)`` no item: an arena's empty question items or candidates."""
    return np.full((n_q, 1), -1, dtype=np.int64)


def _batch(
    arena: Arena, rows: np.ndarray, q_rows: np.ndarray, groups: np.ndarray, placeholder: np.ndarray | None = None
) -> ChoiceBatch:
    valid = rows >= 0
    q_mask = q_rows >= 0
    choice_vectors = arena.vectors[np.maximum(rows, 0)]  # missing rows are zero rows
    choice_vectors[~valid] = 0
    question_vectors = arena.vectors[np.maximum(q_rows, 0)]
    question_vectors[~q_mask] = 0
    table = arena.text_table()
    choice_texts = question_texts = None
    if table is not None:  # row -1 reads the table's last entry, ""
        choice_texts = table[rows].tolist()
        shown = table[q_rows]
        question_texts = [row[keep].tolist() for row, keep in zip(shown, q_mask, strict=True)]
    return ChoiceBatch(
        choice_vectors=choice_vectors,
        question_vectors=question_vectors,
        question_mask=q_mask,
        valid=valid,
        answers=np.zeros(len(rows), dtype=np.int64),
        groups=groups,
        choice_texts=choice_texts,
        question_texts=question_texts,
        choice_ids=np.where(valid, arena.identity[np.maximum(rows, 0)], -1),
        clusters=None if arena.clusters is None else np.where(valid, arena.clusters[np.maximum(rows, 0)], -1),
        placeholder=placeholder,
        word_weights=arena.word_weights(),
        text_pairs=arena._text_pairs,
        hubness=arena.hubness(np.where(valid, rows, -1)),
    )


def usable_candidates(arena: Arena, options: AdversarialPolicy) -> np.ndarray:
    """``(Q, M)`` candidates that are no paraphrase of the answer or of a question item (cached per policy)."""
    if arena.allowed is not None:
        return arena.allowed.copy()
    key = (float(options.ceiling), int(options.max_uses))
    if key not in arena._usable:
        arena._usable[key] = _usable_candidates(arena, options)
    return arena._usable[key].copy()


def _usable_candidates(arena: Arena, options: AdversarialPolicy) -> np.ndarray:
    cand = arena.candidates
    safe = np.maximum(cand, 0)
    ids = arena.identity[safe]
    vec = arena.vectors
    ok = (cand >= 0) & (ids >= 0)
    ok &= arena.capacity(options.max_uses)[np.maximum(ids, 0)] > 0
    ok &= ids != arena.identity[arena.answers][:, None]
    for start in range(0, len(cand), QUESTION_BLOCK):
        rows = slice(start, start + QUESTION_BLOCK)
        gathered = vec[safe[rows]]  # (B, M, D)
        ok[rows] &= np.einsum("qmd,qd->qm", gathered, vec[arena.answers[rows]]) < options.ceiling
        for column in range(arena.question_items.shape[1]):
            item = arena.question_items[rows, column]
            present = item >= 0
            sim = np.einsum("qmd,qd->qm", gathered, vec[np.maximum(item, 0)])
            same = ids[rows] == arena.identity[item][:, None]
            ok[rows] &= ~present[:, None] | ((sim < options.ceiling) & ~same)
    return ok


def initial_negatives(
    arena: Arena,
    options: AdversarialPolicy = DEFAULT_POLICY,
    *,
    seed: int = 0,
    offsets: np.ndarray,
    targets: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K usable candidates per question within ``max_uses``, slot k the one of its side nearest ``targets (Q, K)`` in
    ``offsets (Q, M)`` (:func:`lattice_targets`): ``(negatives (Q, K), classes (Q, K), unfilled (Q,))`` (-1 rows where
    a question got too few)."""
    if arena.candidate_class is None:
        raise ValueError("targets need arena.candidate_class")
    rng = _START.rng(seed)
    n_q, n_neg = targets.shape
    allowed = usable_candidates(arena, options) & np.isfinite(offsets)
    capacity = arena.capacity(options.max_uses)
    uses = np.zeros(len(capacity), dtype=np.int64)
    negatives = np.full((n_q, n_neg), -1, dtype=np.int64)
    classes = np.full((n_q, n_neg), -1, dtype=np.int64)
    unfilled = np.zeros(n_q, dtype=bool)
    klass = np.asarray(arena.candidate_class)
    below = offsets < 0
    # the questions with the fewest candidates on their scarcer side choose first
    need_below = (targets < 0).sum(axis=1)
    sides = [(below, need_below), (~below, n_neg - need_below)]
    slack = np.minimum(*[np.where(need > 0, (allowed & side).sum(axis=1) - need, n_q) for side, need in sides])
    for q in np.lexsort((rng.random(n_q), slack)).tolist():
        seen = {int(arena.identity[arena.answers[q]])}
        seen.update(int(arena.identity[r]) for r in arena.question_items[q].tolist() if r >= 0)
        codes = arena.identity[np.maximum(arena.candidates[q], 0)]
        picked: list[int] = []
        for k in np.argsort(np.abs(targets[q]), kind="stable").tolist():
            side = below[q] if targets[q, k] < 0 else ~below[q]
            ok = allowed[q] & side & (klass[q] >= 0)
            ok &= uses[codes] < capacity[codes]
            ok &= ~np.isin(codes, list(seen))
            if not ok.any():
                break
            m = int(np.flatnonzero(ok)[np.argmin(np.abs(offsets[q, ok] - targets[q, k]))])
            seen.add(int(codes[m]))
            picked.append(m)
            classes[q, len(picked) - 1] = klass[q, m]
        if len(picked) < n_neg:
            unfilled[q] = True
            classes[q] = -1
            continue
        rows = arena.candidates[q, picked]
        np.add.at(uses, arena.identity[rows], 1)
        negatives[q] = rows
    return negatives, classes, unfilled


def lattice_targets(closer: np.ndarray, spacing: float, n_negatives: int) -> np.ndarray:
    """``(Q, K)`` target offsets (a negative's distance to the question minus the answer's) spacing the choices
    ``spacing`` apart around the answer: ``closer (Q,)`` at ``-s, -2s, ...``, the others at ``+s, +2s, ...`` (so
    the answer is not the choice nearest another; docs/adversarial.md)."""
    slot = np.arange(n_negatives)[None, :]
    below = np.asarray(closer, dtype=np.int64)[:, None]
    return np.where(slot < below, -(slot + 1), slot - below + 1).astype(np.float64) * spacing
