"""The adversarial filter's policy: every constant of one task's filtering in one frozen object, a preset per task
(docs/adversarial.md says what each is for)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from procbench.errors import BadInput
from procbench.generate.policy import Policy, current
from procbench.shortcuts import MIN_CV_QUESTIONS

__all__ = [
    "COHERENCE_POLICY",
    "DEFAULT_POLICY",
    "FAST_TREES",
    "IMAGE_POLICY",
    "MIN_YIELD",
    "POLICY_SIZES",
    "TEXTUAL_POLICY",
    "AdversarialPolicy",
    "preset",
    "demo_size",
    "sized",
]


def _now(name: str) -> Any:
    """A field default read from :func:`procbench.generate.policy.current` when the policy object is made."""
    return field(default_factory=lambda: getattr(current(), name))


#: The textual filter's cheaper partial-input trees (a third of the audit's cost; benchmarks/adversarial_constants.md).
FAST_TREES: dict[str, Any] = {"tree_iterations": Policy().FAST_TREE_ITERATIONS, "tree_bins": Policy().FAST_TREE_BINS}


@dataclass(frozen=True)
class AdversarialPolicy:
    """How adversarial filtering runs (docs/adversarial.md says what each field is for)."""

    rounds: int = _now("ROUNDS")  # fit-and-replace rounds at most
    ceiling: float = _now("TEXT_CEILING")  # a candidate's cosine to the answer and question items stays below
    max_uses: int = 1  # questions that may use one item as a negative
    n_folds: int = _now("N_FOLDS")
    z: float = _now("Z")  # stop: every probe within chance + z binomial SEs
    min_yield: float = 1.0  # pruning keeps this share of the drafted questions (1: none dropped)
    probe_repeats: int = _now("PROBE_REPEATS")
    judge_rounds: int = _now("JUDGE_ROUNDS")
    judge_variants: int | None = _now("JUDGE_VARIANTS")  # variants a round's judge scores (None: all)
    replace_share: float = 1.0  # share of the told questions a round changes
    prune_repeats: int = _now("PROBE_REPEATS")
    prune_partitions: int = _now("PRUNE_PARTITIONS")
    prune_step: float = _now("PRUNE_STEP")
    prune_carry: bool = False  # predictability adds up over the pruning steps
    tree_iterations: int = _now("TREE_ITERATIONS")
    tree_bins: int = _now("TREE_BINS")
    max_fit_questions: int | None = _now("MAX_FIT_QUESTIONS")  # questions fitting a fold's probes (None: all)
    patience: int | None = None  # stop after this many rounds without progress (None: never)
    size: str = "standard"

    def not_filtered(self, n_procedures: int, n_questions: int) -> str | None:
        """Why ``n_questions`` questions of ``n_procedures`` procedures are not filtered (None: they are): fewer
        procedures than folds or questions than :data:`~procbench.shortcuts.MIN_CV_QUESTIONS` are too few to judge."""
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
        stated = ("rounds", "ceiling", "max_uses", "n_folds", "z", "min_yield")
        out: dict[str, Any] = {name: getattr(self, name) for name in stated}
        if self.size != "standard":
            out["policy"] = self.size
            out.update({name: getattr(self, name) for name in demo_size()})
        return out


def preset(name: str) -> AdversarialPolicy:
    """A recipe's filter preset from the current policy: ``default``, ``textual`` (textual cloze, next-action),
    ``image`` (visual cloze, ordering) or ``coherence`` (docs/adversarial.md); BadInput: another name."""
    p = current()
    if name == "default":
        return AdversarialPolicy()
    if name == "textual":
        return AdversarialPolicy(min_yield=p.MIN_YIELD, probe_repeats=1, prune_repeats=1, prune_partitions=1,
                                 prune_carry=True, patience=p.PATIENCE, tree_iterations=p.FAST_TREE_ITERATIONS,
                                 tree_bins=p.FAST_TREE_BINS)  # fmt: skip
    if name == "image":
        return AdversarialPolicy(ceiling=p.IMAGE_CEILING, min_yield=p.MIN_YIELD)
    if name == "coherence":
        return AdversarialPolicy(ceiling=p.IMAGE_CEILING, min_yield=p.MIN_YIELD, probe_repeats=1,
                                 replace_share=p.COHERENCE_REPLACE_SHARE)  # fmt: skip
    raise BadInput(f"no filter preset {name!r}: default, textual, image or coherence")


#: The presets as the defaults make them (option defaults read these at import; generators call :func:`preset`).
DEFAULT_POLICY = preset("default")
TEXTUAL_POLICY = preset("textual")
IMAGE_POLICY = preset("image")
COHERENCE_POLICY = preset("coherence")
MIN_YIELD = current().MIN_YIELD


def demo_size() -> dict[str, Any]:
    """What ``--policy demo`` changes of a preset (``DEMO_*``, read now): a small sample filtered in seconds, with
    noisier probes (sets end further from chance; the card names the policy)."""
    p = current()
    return {
        "rounds": p.DEMO_ROUNDS,
        "n_folds": p.DEMO_FOLDS,
        "probe_repeats": 1,
        "judge_rounds": 1,
        "prune_repeats": 1,
        "prune_partitions": 1,
        "prune_step": p.DEMO_PRUNE_STEP,
        "tree_iterations": p.DEMO_TREE_ITERATIONS,
    }


#: ``--policy``: the sizes a task's preset comes in.
POLICY_SIZES = ("standard", "demo")


def sized(policy: AdversarialPolicy, size: str | None) -> AdversarialPolicy:
    """``policy`` at ``size`` (:data:`POLICY_SIZES`; None: as it is); BadInput: an unknown size."""
    if size is None or size == policy.size:
        return policy
    if size not in POLICY_SIZES:
        raise BadInput(f"--policy takes {' or '.join(POLICY_SIZES)}, not {size!r}")
    return dataclasses.replace(policy, size=size, **(demo_size() if size == "demo" else {}))
