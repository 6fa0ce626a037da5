"""Every behavioural constant of question generation, each with its evidence, read at call time.

A constant is a field of :class:`Policy`; its metadata holds its ``evidence`` (a record of
``benchmarks/evidence_ledger.jsonl``: ``ledger:NAME``, or a source it restates: ``paper:...``, ``design:...``; or
``untuned: <one sentence why the default stands>``) and a one-line ``doc``. Generators read
``current().NAME`` when they run, never a copy made at import, so :func:`overridden` changes what an in-process
run reads (``benchmarks/evidence.py`` measures a constant that way). ``docs/adversarial.md``'s constants table is
:func:`constants_table` (``tests/test_generate_structure.py`` keeps the two in sync).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from procbench.errors import BadInput

__all__ = ["Policy", "constants_table", "current", "entries", "overridden", "pushed"]


def _c(value: Any, evidence: str, doc: str) -> Any:
    """A constant: its default, its evidence and what it does."""
    return field(default=value, metadata={"evidence": evidence, "doc": doc})


_NOISE = "untuned: no measurement over 10 or more seeds exists; the default stands until one does"
_FEW = "untuned: measured on 1-3 seeds (benchmarks/adversarial_constants.md), under the 10 the evidence rule asks"


@dataclass(frozen=True)
class Policy:
    """The behavioural constants (see the module docstring); each field's metadata says why it has its value."""

    # -- the papers' and DESIGN's constants (section 6) ------------------------------------------------------------
    KC: int = _c(100, "paper:001 K_C", "K2: the answer's nearest images of other procedures that define the band")
    MIN_STEPS_KNOBS: int = _c(
        5, "paper:001 K1", "visual knob settings: procedures with fewer image steps are left out"
    )
    BAND_WIDENING: tuple[float, ...] = _c(
        (0.0, 0.5, 1.0), "design:6 widen step by step", "K2's band widened by these multiples of s when short"
    )
    KNN_K: int = _c(100, "paper:004 k=100", "textual default sampler: the answer title's nearest titles")
    MIN_STEPS: int = _c(3, "design:6 (paper 004)", "textual cloze: procedures with fewer steps are dropped")
    MAX_STEPS: int = _c(25, "design:6 (paper 004)", "textual cloze: procedures with more steps are dropped")
    MIN_STEPS_DEBIAS: int = _c(6, "design:6 (paper 004)", "textual cloze --debias: the minimum of steps")
    SEQUENCE_STEPS: int = _c(5, "paper:000", "sequencing: at most this many steps per question")
    MAX_DEFAULT_CLUSTERS: int = _c(100, _NOISE, "--debias: KMeans clusters are round(sqrt(titles)), at most this")
    DUPLICATE_DISTANCE: float = _c(
        1e-3, "untuned: a distance below it is the same picture re-encoded, not a choice", "near-copy distance"
    )
    MIN_DISTANCE_PAIRS: int = _c(
        10_000,
        "untuned: a sample size (the median's SE is far below any band)",
        "RecipeQA style: random pairs whose median distance is the fixed min_distance",
    )
    # -- the adversarial filter's loop (SWAG's adversarial filtering, AFLite's pruning) ----------------------------
    ROUNDS: int = _c(15, "untuned: the rounds stop at chance first on every measured set", "at most this many rounds")
    Z: float = _c(0.5, _NOISE, "stop when every probe is at most chance + Z binomial standard errors")
    N_FOLDS: int = _c(5, "untuned: the usual cross-fitting fold count", "procedure-grouped folds of the probes")
    JUDGE_ROUNDS: int = _c(3, _FEW, "a replacement must fool the ensembles of this many rounds (fictitious play)")
    PROBE_REPEATS: int = _c(2, _FEW, "cross-fitted ensembles averaged per round")
    PRUNE_PARTITIONS: int = _c(3, _FEW, "AFLite: fresh procedure partitions per pruning step")
    PRUNE_STEP: float = _c(0.03, _NOISE, "AFLite: share of the questions one pruning step drops")
    TREE_ITERATIONS: int = _c(
        150, "untuned: the audit's partial-input probe, so filter and audit read alike", "boosting iterations"
    )
    TREE_BINS: int = _c(255, "untuned: scikit-learn's default, the audit's", "histogram bins of those trees")
    FAST_TREE_ITERATIONS: int = _c(60, _FEW, "textual filter: cheaper partial-input trees' iterations")
    FAST_TREE_BINS: int = _c(63, _FEW, "textual filter: cheaper partial-input trees' bins")
    MAX_FIT_QUESTIONS: int = _c(
        2000, "untuned: a cost bound (a round costs the same on any larger set)", "questions fitting one fold's probes"
    )
    JUDGE_VARIANTS: int = _c(
        65_536, "untuned: a cost bound no shared corpus reaches", "candidate variants a round's judge scores"
    )
    MIN_YIELD: float = _c(0.85, _NOISE, "pruning drops the questions the probes still solve while this share stays")
    PATIENCE: int = _c(4, _NOISE, "textual filter: stop after this many rounds without a new best")
    ADVERSARIAL_CLUSTERS: int = _c(16, _FEW, "KMeans clusters of the probes' cluster-frequency feature")
    LATTICE_SPACING: float = _c(0.3, _FEW, "the filter's start: choices' distances spaced this many SDs apart")
    TEXT_CEILING: float = _c(0.8, _NOISE, "a textual replacement's cosine to the answer and question items, below it")
    DEMO_ROUNDS: int = _c(4, "untuned: a cost preset (--policy demo), named on the card", "demo filter: rounds")
    DEMO_FOLDS: int = _c(3, "untuned: a cost preset (--policy demo), named on the card", "demo filter: folds")
    DEMO_PRUNE_STEP: float = _c(0.1, "untuned: a cost preset (--policy demo)", "demo filter: pruning step")
    DEMO_TREE_ITERATIONS: int = _c(50, "untuned: a cost preset (--policy demo)", "demo filter: boosting iterations")
    # -- the textual filter's candidates --------------------------------------------------------------------------
    TEXT_CANDIDATES: int = _c(48, _NOISE, "textual filter: candidates per source (answer, question, items, words)")
    ADVERSARIAL_DRAFTS: int = _c(6, _FEW, "textual adversarial: a procedure's question among its first drafts")
    ADVERSARIAL_NEARER: int = _c(16, _FEW, "textual adversarial: nearest titles a draft's answer is judged among")
    WORD_POSTINGS: int = _c(1000, "untuned: a cost bound (a word in more rows is a stop word here)", "word cap")
    RANDOM_TRIES: int = _c(16, "untuned: a retry bound", "RecipeQA style: random batches tried per question")
    AUTO_GROWTH: float = _c(1.25, _NOISE, "--budget auto: the budget grows by this factor per try")
    AUTO_YIELD: float = _c(0.98, _NOISE, "--budget auto: until this share of the questions is kept")
    AUTO_STEPS: int = _c(12, "untuned: a retry bound", "--budget auto: at most this many tries")
    # -- the visual filter ------------------------------------------------------------------------------------------
    IMAGE_CEILING: float = _c(
        0.95,
        "untuned: photos of one dish are close; only near-copies are excluded",
        "a visual candidate's cosine to the answer and the question's photos stays below it",
    )
    COHERENCE_REPLACE_SHARE: float = _c(0.5, _FEW, "coherence: share of the told questions a round changes")
    ORDER_DIMS: int = _c(16, _NOISE, "ordering: principal components per position of an order's vector")
    # -- needs-context -----------------------------------------------------------------------------------------------
    IMAGE_ALIKE: float = _c(
        0.95, "untuned: the visual filter's near-copy ceiling, reused", "needs-context: no two photos this alike"
    )
    TEXT_ALIKE: float = _c(
        0.75, "untuned: the textual paraphrase threshold, reused", "needs-context: no two step texts this alike"
    )
    PARAPHRASE: float = _c(
        0.75,
        "untuned: set by hand on reader checks, benchmarks/reader_checks.md",
        "textual needs-context: titles this alike (cosine) are paraphrases",
    )
    TEXT_SLACK: float = _c(
        0.12, "untuned: measured on readers (v9, benchmarks/reader_checks.md), fewer than 10 seeds",
        "textual needs-context: a text no more than this nearer another choice's title than its own",
    )  # fmt: skip
    CLOSENESS_MARGINS: tuple[float, ...] = _c(
        (0.08, 0.03),
        "ledger:CLOSENESS_MARGINS",
        "textual needs-context levels 1, 2: a set's mean fit margin (own title over best rival) at most this",
    )

    @staticmethod
    def names() -> list[str]:
        """Every constant's name, in declaration order."""
        return [f.name for f in dataclasses.fields(Policy)]


_LOCK = threading.Lock()
_ACTIVE: list[Policy] = [Policy()]
T = TypeVar("T")


@contextmanager
def pushed(stack: list[T], entry: T) -> Iterator[T]:
    """``entry`` on ``stack`` within the block (the overrides of :func:`overridden` and ``recipes.overridden``)."""
    with _LOCK:
        stack.append(entry)
    try:
        yield entry
    finally:
        with _LOCK:
            stack.remove(entry)


def current() -> Policy:
    """The policy generators read now (the defaults, or :func:`overridden`'s)."""
    return _ACTIVE[-1]


@contextmanager
def overridden(**values: Any) -> Iterator[Policy]:
    """Within the block, :func:`current` has ``values`` in place of the defaults (nested blocks stack).

    Raises:
        BadInput: a name that is not a constant of :class:`Policy`.
    """
    unknown = sorted(set(values) - set(Policy.names()))
    if unknown:
        raise BadInput(f"no policy constant {', '.join(unknown)}; known: {', '.join(Policy.names())}")
    with pushed(_ACTIVE, dataclasses.replace(current(), **values)) as changed:
        yield changed


def entries() -> list[tuple[str, Any, str, str]]:
    """``(name, default, evidence, doc)`` of every constant, in declaration order."""
    return [(f.name, f.default, f.metadata["evidence"], f.metadata["doc"]) for f in dataclasses.fields(Policy)]


def constants_table() -> str:
    """The Markdown table of every constant (``docs/adversarial.md`` holds it verbatim)."""
    lines = ["| constant | default | evidence | what it does |", "|---|---|---|---|"]
    lines += [f"| `{name}` | {value!r} | {evidence} | {doc} |" for name, value, evidence, doc in entries()]
    return "\n".join(lines)
