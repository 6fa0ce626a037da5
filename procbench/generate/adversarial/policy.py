"""The adversarial filter's policy: every constant of one task's filtering in one frozen object, a preset per task.

docs/adversarial.md says what each constant is for; benchmarks/adversarial_constants.md holds the measurements
that set them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from procbench.errors import BadInput
from procbench.shortcuts import MIN_CV_QUESTIONS

__all__ = [
    "COHERENCE_POLICY",
    "DEMO_SIZE",
    "DEFAULT_POLICY",
    "FAST_TREES",
    "MAX_FIT_QUESTIONS",
    "PATIENCE",
    "RANK_PRUNING",
    "RANK_UNIFORM_YIELD",
    "TREE_BINS",
    "IMAGE_POLICY",
    "JUDGE_VARIANTS",
    "MIN_YIELD",
    "JUDGE_ROUNDS",
    "PROBE_REPEATS",
    "PRUNE_PARTITIONS",
    "PRUNE_STEP",
    "TREE_ITERATIONS",
    "TEXTUAL_POLICY",
    "VISUAL_MIN_YIELD",
    "POLICY_SIZES",
    "AdversarialPolicy",
    "sized",
]

#: A round judges replacement candidates by the mean of the ensembles of this many rounds, its own and those before
#: it (as fictitious play answers the mix of the adversary's past strategies): a swap must fool the probes of earlier
#: rounds too, so a round does not plant what the one before removed.
JUDGE_ROUNDS = 3
#: A round's probes are the mean of this many cross-fitted ensembles, each on its own procedure folds, so which
#: questions a round targets does not hinge on how the procedures fell into folds.
PROBE_REPEATS = 2
#: Pruning scores each question with this many cross-fittings (fresh procedure folds each), as AFLite averages
#: over random partitions: a question one fold assignment happens to solve is not dropped for that alone.
PRUNE_PARTITIONS = 3
#: Each pruning step drops this share of the questions.
PRUNE_STEP = 0.03
#: Boosting iterations of the partial-input probe (the audit's, :class:`procbench.shortcuts.ShortcutEnsemble`).
TREE_ITERATIONS = 150
#: Histogram bins per feature of the partial-input trees (scikit-learn's default, the audit's).
TREE_BINS = 255
#: Subsampled cross-fitting: at most this many questions fit one fold's probes, so a round costs the same on any
#: set larger than that (every question is still scored by the folds that did not see its procedure).
MAX_FIT_QUESTIONS: int | None = 2000
#: A round's judge scores at most about this many candidate variants (a told question with one negative swapped
#: for a usable candidate): past it, each told question's candidates are a fresh seeded draw of an equal share, so
#: a round's replacements cost the same on any set larger than that (no set of the shared corpora reaches it).
JUDGE_VARIANTS: int | None = 65_536
#: ``min_yield``'s default for the textual tasks' preset and options (the visual tasks': :data:`VISUAL_MIN_YIELD`):
#: when replacing negatives leaves the probes above chance, the questions they still solve are dropped while this
#: share of the drafted questions stays.
MIN_YIELD = 0.85
#: K3=2 knob settings (rank-uniform, visual tasks): the drawn questions the probes still solve are dropped
#: (AFLite) while this share stays, the share of its drafted questions issue 35's probe bar is held at
#: (benchmarks/real_photos.md, session 15).
RANK_UNIFORM_YIELD = 0.8
#: The visual presets' ``min_yield`` (cloze, ordering and coherence ``adversarial``): the share K3=2's pruning keeps,
#: issue 35's bar. Against 0.85, visual cloze ``adversarial`` read a worst context-free probe of 0.317 -> 0.299 on the
#: build guides and 0.316 -> 0.307 on the cooking variant, 10 seeds each (benchmarks/real_photos.md, session 22).
VISUAL_MIN_YIELD = RANK_UNIFORM_YIELD
#: The textual filter stops its rounds after this many rounds in a row without a new best round.
PATIENCE = 4
#: The textual filter's cheaper partial-input trees: 60 boosting iterations over 63 bins per feature read the same
#: held-out accuracy as the audit's 150 over 255 at a third of the cost.
FAST_TREES: dict[str, Any] = {"tree_iterations": 60, "tree_bins": 63}


@dataclass(frozen=True)
class AdversarialPolicy:
    """How adversarial filtering runs.

    Attributes:
        rounds: at most this many fit-and-replace rounds.
        ceiling: a candidate's cosine similarity to the answer and to every question item must stay below it
            (no paraphrases of the answer; no near-copies of what the question shows).
        max_uses: how many questions may use one item as a negative.
        n_folds: procedure-grouped folds of the cross-fitting.
        z: the stop rule: every probe's (and their mean's) accuracy at most chance + ``z`` binomial standard errors.
        min_yield: when replacing negatives leaves the probes above that bound, the questions they still solve
            are dropped, most confidently solved first, while this share of the drafted questions stays
            (AFLite-style pruning); 1: never drop a question.
        probe_repeats: cross-fitted ensembles averaged per round (:data:`PROBE_REPEATS`).
        judge_rounds: rounds whose ensembles judge a replacement (:data:`JUDGE_ROUNDS`).
        judge_variants: a round's judge scores at most about this many candidate variants, each told question's
            usable candidates subsampled to an equal share past it (:data:`JUDGE_VARIANTS`; None: every one).
        replace_share: share of the questions the probes tell that a round changes (drawn at random).
        prune_repeats: cross-fitted ensembles averaged per partition of the pruning.
        prune_partitions: partitions (fresh procedure folds) per pruning step (:data:`PRUNE_PARTITIONS`).
        prune_step: share of the questions one pruning step drops (:data:`PRUNE_STEP`).
        prune_carry: a question's predictability adds up over the pruning steps so far (False: each step's own
            partitions only).
        prune_last: pruning keeps the questions left when it stops (at chance, or at the floor: AFLite's target
            size) rather than those of the step whose probes were nearest chance.
        tree_iterations: boosting iterations of the partial-input probe's trees (:data:`TREE_ITERATIONS`).
        tree_bins: histogram bins per feature of those trees (:data:`TREE_BINS`).
        max_fit_questions: subsampled cross-fitting: at most this many questions fit a fold's probes
            (:data:`MAX_FIT_QUESTIONS`; None: all), so a round's fits cost the same on any set size.
        patience: the rounds stop when this many rounds in a row brought no round nearer chance than the best
            (None: run every round; the textual preset: :data:`PATIENCE`).
        size: ``standard``, or ``demo`` (:data:`DEMO_SIZE`, :func:`sized`).
    """

    rounds: int = 15
    ceiling: float = 0.8
    max_uses: int = 1
    n_folds: int = 5
    z: float = 0.5
    min_yield: float = 1.0
    probe_repeats: int = PROBE_REPEATS
    judge_rounds: int = JUDGE_ROUNDS
    judge_variants: int | None = JUDGE_VARIANTS
    replace_share: float = 1.0
    prune_repeats: int = PROBE_REPEATS
    prune_partitions: int = PRUNE_PARTITIONS
    prune_step: float = PRUNE_STEP
    prune_carry: bool = False
    prune_last: bool = False
    tree_iterations: int = TREE_ITERATIONS
    tree_bins: int = TREE_BINS
    max_fit_questions: int | None = MAX_FIT_QUESTIONS
    patience: int | None = None
    size: str = "standard"

    def not_filtered(self, n_procedures: int, n_questions: int) -> str | None:
        """Why ``n_questions`` questions from ``n_procedures`` procedures are not filtered (None: they are). The
        probes are cross-fitted on ``n_folds`` procedure folds: on fewer procedures, or fewer questions than the
        audit fits a probe on (:data:`~procbench.shortcuts.MIN_CV_QUESTIONS`), each fold holds out a large share of
        a tiny set, and a probe's held-out accuracy there cannot be told from chance, so its rounds would chase
        noise."""
        if n_procedures < self.n_folds:
            return f"{n_procedures} procedures, fewer than the probes' {self.n_folds} procedure folds"
        if n_questions < MIN_CV_QUESTIONS:
            return f"{n_questions} questions, fewer than the {MIN_CV_QUESTIONS} the probes are fitted on"
        return None

    def unfiltered(self, why: str) -> dict[str, Any]:
        """The account of a set left as drawn (:meth:`not_filtered`)."""
        return {**self.to_dict(), "rounds_run": 0, "not_filtered": why}

    def to_dict(self) -> dict[str, Any]:
        """The options a set's counts and card state (the loop's own constants are the task's preset; a policy
        other than the standard one is named, with what it changes)."""
        out: dict[str, Any] = {
            "rounds": self.rounds,
            "ceiling": self.ceiling,
            "max_uses": self.max_uses,
            "n_folds": self.n_folds,
            "z": self.z,
            "min_yield": self.min_yield,
        }
        if self.size != "standard":
            out["policy"] = self.size
            out.update({name: getattr(self, name) for name in POLICY_SIZES[self.size]})
        return out


#: The defaults (library use).
DEFAULT_POLICY = AdversarialPolicy()
#: Textual cloze and next-action: questions the probes still solve after the rounds are dropped down to 85%. One
#: cross-fitting per round (the judge still averages the last 3 rounds' ensembles), one fresh partition per pruning
#: step whose scores add up over the steps (``prune_carry``), the cheaper trees, and a stop after :data:`PATIENCE`
#: rounds without progress: the validity probes within noise of the standard loop at a fraction of its cost
#: (benchmarks/adversarial_constants.md).
TEXTUAL_POLICY = AdversarialPolicy(
    min_yield=MIN_YIELD,
    probe_repeats=1,
    prune_repeats=1,
    prune_partitions=1,
    prune_carry=True,
    patience=PATIENCE,
    **FAST_TREES,
)
#: K3=2 knob settings' pruning (:mod:`procbench.generate.visual.pruning`): AFLite on the drawn set, scored as the
#: visual filters prune, down to :data:`RANK_UNIFORM_YIELD` unless the probes reach chance first; it keeps what is
#: left then, not the step whose noisy probes read nearest chance (benchmarks/real_photos.md, session 15).
RANK_PRUNING = AdversarialPolicy(min_yield=RANK_UNIFORM_YIELD, prune_last=True)
#: Visual cloze and ordering: image embeddings of different photos of one dish can be very close; only
#: near-copies are excluded. Questions the probes still solve are dropped while 80% stay (:data:`VISUAL_MIN_YIELD`).
IMAGE_POLICY = AdversarialPolicy(ceiling=0.95, min_yield=VISUAL_MIN_YIELD)
#: Visual coherence: the intruder (the answer) is what is replaced; one ensemble per round, and half of the told
#: questions changed per round (replacing them all made the probes swing across chance from round to round).
COHERENCE_POLICY = AdversarialPolicy(ceiling=0.95, min_yield=VISUAL_MIN_YIELD, probe_repeats=1, replace_share=0.5)

#: ``--policy demo``: a demo-sized filter for a small sample in seconds rather than minutes: 4 rounds of one
#: 3-fold ensemble judged alone, whose partial-input trees have 50 boosting iterations (150 standard); pruning
#: scores each step with one cross-fitting (one partition of one ensemble) and drops a tenth of the questions per
#: step. Weaker than the standard policy (the probes are noisier, so sets end further from chance); the card names
#: the policy. Pruning was most of the demo's filtering time (3 partitions per step, one question dropped per step
#: on the 45-procedure sample: 7-8 steps per set).
DEMO_SIZE: dict[str, Any] = {
    "rounds": 4,
    "n_folds": 3,
    "probe_repeats": 1,
    "judge_rounds": 1,
    "prune_repeats": 1,
    "prune_partitions": 1,
    "prune_step": 0.1,
    "tree_iterations": 50,
}
#: ``--policy``: the sizes a task's preset comes in.
POLICY_SIZES = {"standard": {}, "demo": DEMO_SIZE}


def sized(policy: AdversarialPolicy, size: str | None) -> AdversarialPolicy:
    """``policy`` at ``size`` (:data:`POLICY_SIZES`; None: as it is).

    Raises:
        BadInput: an unknown size.
    """
    if size is None or size == policy.size:
        return policy
    if size not in POLICY_SIZES:
        raise BadInput(f"--policy takes {' or '.join(POLICY_SIZES)}, not {size!r}")
    return dataclasses.replace(policy, size=size, **POLICY_SIZES[size])
