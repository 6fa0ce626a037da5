"""The round loop of adversarial filtering (SWAG/HellaSwag; docs/adversarial.md): fit fresh cross-fitted probes,
stop when every one is within noise of chance, else let the :class:`Game` replace what they tell; keep the round
whose worst probe was nearest chance."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from procbench.generate.adversarial.policy import AdversarialPolicy
from procbench.progress import Progress
from procbench.rng import stream
from procbench.shortcuts import DISTANCE_MODEL, MODELS, ChoiceBatch, ShortcutEnsemble, choice_features, hits

__all__ = [
    "FILTER_MODELS",
    "AdversarialResult",
    "ExtraProbes",
    "FittedProbes",
    "Game",
    "ProbedEnsemble",
    "RepeatedEnsemble",
    "chance_gap",
    "chance_margin",
    "lagging_probes",
    "probe",
    "probe_costs",
    "probe_names",
    "run_rounds",
    "told_questions",
]

#: The context-free probes filtering plays against: the audit's shortcut probes (:data:`MODELS`) and its
#: question-distance probe (:data:`DISTANCE_MODEL`), which reads a distance pattern the trees leave.
FILTER_MODELS = (*MODELS, DISTANCE_MODEL)
#: The procedure folds of a round's repeated ensembles.
_REPEATS = stream("adversarial.probe-repeats")


def probe_names(probes: Iterable[str]) -> tuple[str, ...]:
    """The probes the rules below read among ``probes`` (a probe dict's or an accuracy dict's keys): every one of
    :data:`FILTER_MODELS`, then a task's own (:class:`ExtraProbes`) in their order; not ``ensemble``."""
    return (*FILTER_MODELS, *(name for name in probes if name not in FILTER_MODELS and name != "ensemble"))


class FittedProbes(Protocol):
    """A task's own probes, fitted (:meth:`ExtraProbes.fit`): ``predict`` gives ``{name: (Q, C)}`` probabilities,
    each question scored by the models of its fold ``folds (Q,)``."""

    def predict(self, batch: ChoiceBatch, features: np.ndarray, folds: np.ndarray) -> dict[str, np.ndarray]: ...


class ExtraProbes(Protocol):
    """Probes a task adds to the filter's own, fitted and read as :data:`FILTER_MODELS` are (``ensemble`` stays
    their mean); the features' last ``reserved`` columns are theirs alone. ``fit`` fits fold ``f``'s models on the
    questions whose ``folds (Q,)`` is not ``f`` (the answer: column 0)."""

    names: tuple[str, ...]
    reserved: int

    def fit(self, batch: ChoiceBatch, features: np.ndarray, folds: np.ndarray, seed: int) -> FittedProbes: ...


@dataclass
class AdversarialResult:
    """What filtering did: final negatives, replacements per question, which questions stay, and one log
    entry per round (``pruning``: one per pruning step)."""

    negatives: np.ndarray
    replacements: np.ndarray
    rounds: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = "rounds"
    best_round: int = 0
    options: AdversarialPolicy = field(default_factory=AdversarialPolicy)
    kept: np.ndarray = field(default_factory=lambda: np.ones(0, dtype=bool))
    pruning: list[dict[str, Any]] = field(default_factory=list)
    best_step: int = 0

    def kept_questions(self) -> np.ndarray:
        """``(Q,)`` the questions filtering keeps (pruning drops the ones the probes still solve; all by default)."""
        return self.kept if len(self.kept) else np.ones(len(self.replacements), dtype=bool)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready account for the set's counts and card."""
        final = self.pruning[self.best_step] if self.pruning else self.rounds[self.best_round] if self.rounds else {}
        kept = self.kept_questions()
        return {
            **self.options.to_dict(),
            "rounds_run": max(0, len(self.rounds) - 1),
            "stopped": self.stopped,
            "kept_round": self.best_round,
            "questions_changed": int((self.replacements[kept] > 0).sum()),
            "replacements": int(self.replacements[kept].sum()),
            "pruned": int((~kept).sum()),
            "final_accuracy": final.get("accuracy"),
            "chance_bound": final.get("bound"),
            "history": [{k: v for k, v in r.items() if k != "bound"} for r in self.rounds],
            "pruning": [{k: v for k, v in p.items() if k != "bound"} for p in self.pruning],
        }


def _accuracies(probs: dict[str, np.ndarray], valid: np.ndarray) -> dict[str, float]:
    answers = np.zeros(len(valid), dtype=np.int64)
    return {name: round(float(hits(p, answers, valid).mean()), 4) for name, p in probs.items()}


@dataclass
class ProbedEnsemble:
    """A fitted :class:`ShortcutEnsemble` and a task's own probes fitted on its folds (:class:`ExtraProbes`)."""

    shortcut: ShortcutEnsemble
    extra: FittedProbes
    reserved: int = 0

    def predict(self, batch: ChoiceBatch, features: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The ensemble's probabilities (``ensemble``: the mean of its own probes), then the task's probes'."""
        feats = choice_features(batch) if features is None else features
        out = self.shortcut.predict(batch, _shared_columns(feats, self.reserved))
        out.update(self.extra.predict(batch, feats, self.shortcut.folds(batch.groups)))
        return out


@dataclass
class RepeatedEnsemble:
    """The mean of :class:`ShortcutEnsemble` s (or :class:`ProbedEnsemble` s) fitted with different seeds
    (procedure folds)."""

    members: Sequence[ShortcutEnsemble | ProbedEnsemble]

    def predict(self, batch: ChoiceBatch, features: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Each probe's within-question probabilities ``(Q, C)``, averaged over the members."""
        predicted = [member.predict(batch, features) for member in self.members]
        return {name: np.mean([p[name] for p in predicted], axis=0) for name in predicted[0]}


def _shared_columns(features: np.ndarray, reserved: int) -> np.ndarray:
    """The features without their last ``reserved`` columns (a task's own probes' alone)."""
    return features[:, :, : features.shape[2] - reserved] if reserved else features


def probe(
    batch: ChoiceBatch,
    features: np.ndarray,
    policy: AdversarialPolicy,
    seed: int,
    extra: ExtraProbes | None = None,
    strata: np.ndarray | None = None,
) -> tuple[RepeatedEnsemble, dict[str, np.ndarray]]:
    """``policy.probe_repeats`` fresh cross-fitted ensembles on ``batch`` and their mean held-out probabilities
    (``extra``: a task's own probes, fitted on each ensemble's folds; ``strata``: ``(Q,)`` the answer's dealt rank,
    which the folds keep in proportion, as the audit's rank-aware probes' folds do)."""
    members: list[ShortcutEnsemble | ProbedEnsemble] = []
    shared = features if extra is None else _shared_columns(features, extra.reserved)
    for repeat in range(policy.probe_repeats):
        member = ShortcutEnsemble(
            n_folds=policy.n_folds,
            seed=_REPEATS.seed(seed, repeat),
            models=FILTER_MODELS,
            tree_iterations=policy.tree_iterations,
            tree_bins=policy.tree_bins,
            max_fit_questions=policy.max_fit_questions,
        ).fit(batch, shared, strata)
        if extra is None:
            members.append(member)
        else:
            fitted = extra.fit(batch, features, member.folds(batch.groups), _REPEATS.seed(seed, repeat))
            members.append(ProbedEnsemble(member, fitted, extra.reserved))
    ensemble = RepeatedEnsemble(members)
    return ensemble, ensemble.predict(batch, features)


def chance_gap(accuracy: dict[str, float], chance: float) -> float:
    """How far the probe (or their mean) farthest from chance is from it."""
    return max(abs(accuracy[name] - chance) for name in (*probe_names(accuracy), "ensemble") if name in accuracy)


def chance_margin(options: AdversarialPolicy, chance: float, n_q: int) -> float:
    """The stop rule's tolerance: ``z`` binomial standard errors of an accuracy at chance over ``n_q`` questions."""
    return options.z * math.sqrt(chance * (1 - chance) / max(n_q, 1))


def lagging_probes(accuracy: dict[str, float], chance: float, margin: float) -> tuple[str, ...]:
    """The probes (:func:`probe_names`) whose accuracy is below chance by more than ``margin``."""
    return tuple(name for name in probe_names(accuracy) if name in accuracy and accuracy[name] < chance - margin)


def told_questions(
    probs: dict[str, np.ndarray], accuracy: dict[str, float], batch: ChoiceBatch, chance: float, margin: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(above (Q,), below (Q,))``: the questions a probe above chance (or the probes' mean) solves, and the others
    where a probe below chance rates the answer (column 0) strictly lowest."""
    above = np.zeros(len(batch), dtype=bool)
    below = np.zeros(len(batch), dtype=bool)
    for name in (*probe_names(probs), "ensemble"):
        if accuracy[name] > chance + margin:
            above |= hits(probs[name], batch.answers, batch.valid)
        elif accuracy[name] < chance - margin and name != "ensemble":
            below |= _lowest(probs[name], batch.valid)
    return above, below & ~above


def _lowest(probs: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``(Q,)`` True where the answer (column 0) is the strictly least likely valid choice."""
    masked = np.where(valid, probs, np.inf)
    return masked[:, 0] < masked[:, 1:].min(axis=1)


def probe_costs(probs: dict[str, np.ndarray], chance: float, lagging: Sequence[str] = ()) -> np.ndarray:
    """``(Q,)`` the summed distance of every probe's answer probability (column 0) from ``chance``; for a probe
    ``lagging`` below chance only an answer probability below chance counts (docs/adversarial.md)."""
    costs = []
    for name in probe_names(probs):
        if name in probs:
            deviation = probs[name][:, 0] - chance
            costs.append(np.maximum(-deviation, 0.0) if name in lagging else np.abs(deviation))
    return np.sum(costs, axis=0)


class Game(Protocol):
    """One task's side of :func:`run_rounds`: ``probe`` fits fresh probes on the current set (the ensemble, its
    held-out ``(Q, C)`` probabilities, the batch); ``replace`` changes the told questions (``above``: solved by a
    probe above chance; ``below``: a probe below chance rates the answer lowest), judging candidates by ``judge``,
    and returns those changed; ``snapshot`` copies the current ``(negatives, replacements)``."""

    def probe(self, round_number: int) -> tuple[RepeatedEnsemble, dict[str, np.ndarray], ChoiceBatch]: ...

    def replace(
        self,
        above: np.ndarray,
        below: np.ndarray,
        probs: dict[str, np.ndarray],
        judge: RepeatedEnsemble,
        lagging: tuple[str, ...],
    ) -> np.ndarray: ...

    def snapshot(self) -> tuple[np.ndarray, np.ndarray]: ...


def run_rounds(
    game: Game, policy: AdversarialPolicy, result: AdversarialResult, *, chance: float, n_q: int, progress: Progress
) -> AdversarialResult:
    """Fit, stop at chance, replace; up to ``policy.rounds`` rounds. ``result`` gets the log and the best round."""
    margin = chance_margin(policy, chance, n_q)
    best = np.inf
    recent: list[RepeatedEnsemble] = []  # this round's ensemble first
    progress.start("adversarial filtering", total=policy.rounds)
    for round_number in range(policy.rounds + 1):
        ensemble, probs, batch = game.probe(round_number)
        recent = [ensemble, *recent][: policy.judge_rounds]
        accuracy = _accuracies(probs, batch.valid)
        entry: dict[str, Any] = {"round": round_number, "accuracy": accuracy, "bound": round(chance + margin, 4)}
        result.rounds.append(entry)
        worst = chance_gap(accuracy, chance)
        if worst < best:
            best = worst
            result.negatives, result.replacements = game.snapshot()
            result.best_round = round_number
        if worst <= margin:
            result.stopped = "chance"
            break
        if round_number == policy.rounds:
            break
        if policy.patience is not None and round_number - result.best_round >= policy.patience:
            result.stopped = "patience"
            break
        above, below = told_questions(probs, accuracy, batch, chance, margin)
        judge = RepeatedEnsemble([member for past in recent for member in past.members])
        changed = game.replace(above, below, probs, judge, lagging_probes(accuracy, chance, margin))
        entry["replaced"] = int(len(changed))
        progress.advance()
        if not len(changed):
            result.stopped = "no_candidates"
            break
    return result
