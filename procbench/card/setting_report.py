"""What generating one setting did: :class:`SettingReport`, one shape for every task.

Every ``generate`` builder returns one report per setting under ``counts["per_setting"]``; ``generate`` records
their JSON (:meth:`SettingReport.to_dict`) in the store's provenance log and the dataset card renders them
(:meth:`SettingReport.of` reads one back from a log entry's counts).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TELL_Z", "SettingReport"]

#: A filtered set whose strongest context-free probe still reads this many binomial standard errors above chance
#: (over the questions kept) gets a warning: 3 keeps noise quiet (on 100 questions it takes 0.38 at 4 choices; the
#: filters end at 0.27-0.33 there), while the 0.40-0.51 K3=2 coherence kept on 1,400 questions of a 600-guide corpus
#: (benchmarks/real_photos.md, session 18) is far past it (0.285).
TELL_Z = 3.0

#: Keys of :meth:`SettingReport.to_dict` that are fields (the rest are :attr:`SettingReport.details`).
_FIELDS = (
    "questions",
    "procedures",
    "skipped_procedures",
    "skipped_questions",
    "drafted",
    "yield",
    "budget",
    "auto_budget",
    "adversarial",
    "aflite",
    "pruning",
    "empty",
)


@dataclass
class SettingReport:
    """One setting's account of its generation.

    Attributes:
        questions: questions kept (written).
        procedures: procedures the kept questions come from (None: not counted by the task).
        drafted: questions drafted before negatives were drawn or filtering dropped some (None: the task drafts
            what it keeps).
        kept_share: ``questions / drafted`` (``yield`` in the JSON; None without ``drafted``).
        skipped_procedures: procedures left out, by reason (too few steps, no split, ...).
        skipped_questions: drafted questions dropped, by reason (too few candidates, budget exhausted, ...).
        empty: why the setting has no question (None: it has some).
        adversarial: the adversarial filter's account (rounds, replacements, probe accuracy, pruned questions).
        budget: debiasing's budget use (per cluster, spent, exhausted clusters).
        auto_budget: ``--budget auto``: the budget chosen and the budgets tried with their yield.
        aflite: ``procbench filter --aflite``: what AFLite kept of which set.
        pruning: K3=2 knob settings generated before issue 54 (recipe version 1): AFLite on the drawn set
            (questions the context-free probes still solved dropped, answer ranks kept uniform); read so that the
            card of such a set still says it. Newer K3=2 sets are not pruned.
        details: the task's own counts (kNN k, the fixed RecipeQA distance, band and fallback tallies, ...).
    """

    questions: int = 0
    procedures: int | None = None
    drafted: int | None = None
    kept_share: float | None = None
    skipped_procedures: dict[str, int] = field(default_factory=dict)
    skipped_questions: dict[str, int] = field(default_factory=dict)
    empty: str | None = None
    adversarial: dict[str, Any] | None = None
    budget: dict[str, Any] | None = None
    auto_budget: dict[str, Any] | None = None
    aflite: dict[str, Any] | None = None
    pruning: dict[str, Any] | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def pruned(self) -> int:
        """Questions the adversarial filter (or K3=2's pruning) dropped because its probes still solved them."""
        return int((self.adversarial or {}).get("pruned") or 0) + int((self.pruning or {}).get("pruned") or 0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the counted fields first, then :attr:`details`, then the accounts (None and empty left out)."""
        out: dict[str, Any] = {"questions": self.questions}
        if self.procedures is not None:
            out["procedures"] = self.procedures
        for name in ("skipped_procedures", "skipped_questions"):
            skipped = {k: v for k, v in sorted(getattr(self, name).items()) if v}
            if skipped:
                out[name] = skipped
        if self.drafted is not None:
            out["drafted"] = self.drafted
            out["yield"] = self.kept_share
        out.update(self.details)
        for name in ("budget", "auto_budget", "adversarial", "aflite", "pruning", "empty"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SettingReport:
        """The report :meth:`to_dict` wrote (keys it does not know are :attr:`details`)."""
        return cls(
            questions=int(data.get("questions") or 0),
            procedures=data.get("procedures"),
            drafted=data.get("drafted"),
            kept_share=data.get("yield"),
            skipped_procedures=dict(data.get("skipped_procedures") or {}),
            skipped_questions=dict(data.get("skipped_questions") or {}),
            empty=data.get("empty"),
            adversarial=data.get("adversarial"),
            budget=data.get("budget"),
            auto_budget=data.get("auto_budget"),
            aflite=data.get("aflite"),
            pruning=data.get("pruning"),
            details={k: v for k, v in data.items() if k not in _FIELDS},
        )

    @classmethod
    def of(cls, counts: Mapping[str, Any], setting: str) -> SettingReport | None:
        """``setting``'s report in a ``generate`` run's ``counts`` (``counts["per_setting"][setting]``, a report or
        its JSON); None when the run recorded none."""
        entry = (counts.get("per_setting") or {}).get(setting)
        if isinstance(entry, SettingReport):
            return entry
        return cls.from_dict(entry) if isinstance(entry, Mapping) else None

    def summary(self) -> list[str]:
        """A few human lines (the terminal's account; ``to_dict`` holds everything, the filter's rounds included)."""
        head = f"{self.questions} questions"
        if self.drafted is not None:
            head += f" of {self.drafted} drafted (yield {self.kept_share})"
        if self.procedures is not None:
            head += f", from {self.procedures} procedures"
        lines = [head]
        for name in ("skipped_procedures", "skipped_questions"):
            skipped = {k: v for k, v in sorted(getattr(self, name).items()) if v}
            if skipped:
                listed = ", ".join(f"{k} {v}" for k, v in skipped.items())
                lines.append(f"{name.replace('_', ' ')}: {listed}")
        if self.empty:
            lines.append(f"no questions: {self.empty}")
        filtered = self.adversarial or {}
        if filtered.get("not_filtered"):
            lines.append(f"adversarial filter: not run ({filtered['not_filtered']})")
        elif "rounds_run" in filtered:
            final = filtered.get("final_accuracy") or {}
            worst = max(final.items(), key=lambda item: item[1], default=None)
            line = (
                f"adversarial filter: {filtered['rounds_run']} rounds (stopped: {filtered.get('stopped')}), "
                f"{filtered.get('replacements', 0)} replacements, {self.pruned} pruned"
            )
            if worst is not None:
                line += f"; strongest probe at the end: {worst[0]} {worst[1]}"
                if "chance_bound" in filtered:
                    line += f" (stop bound {filtered['chance_bound']})"
            lines.append(line)
        pruning = self.pruning or {}
        if pruning.get("not_filtered"):
            lines.append(f"K3=2 pruning: not run ({pruning['not_filtered']})")
        elif pruning:
            final = pruning.get("final_accuracy") or {}
            worst = max(final.items(), key=lambda item: item[1], default=None)
            line = f"K3=2 pruning (AFLite, ranks kept uniform): {pruning.get('pruned', 0)} pruned"
            if worst is not None:
                line += (
                    f"; strongest probe at the end: {worst[0]} {worst[1]} (stop bound {pruning.get('chance_bound')})"
                )
            lines.append(line)
        return lines

    def probe_warning(self, name: str, chance: float) -> str | None:
        """A warning when adversarial filtering or K3=2's pruning of set ``name`` ended with a context-free probe
        more than :data:`TELL_Z` binomial standard errors above ``chance`` over the questions kept (None: it did
        not, or nothing was filtered)."""
        if not self.questions or not 0 < chance < 1:
            return None
        bound = chance + TELL_Z * math.sqrt(chance * (1 - chance) / self.questions)
        for what, account in (("adversarial filtering", self.adversarial), ("K3=2 pruning", self.pruning)):
            final = (account or {}).get("final_accuracy") or {}
            # a probe by name first; their ensemble (the mean of their probabilities) where it alone is past the bound
            named = {probe: accuracy for probe, accuracy in final.items() if probe != "ensemble"}
            probe, accuracy = max(named.items(), key=lambda item: item[1], default=(None, 0.0))
            if accuracy <= bound and final.get("ensemble", 0.0) > bound:
                probe, accuracy = "ensemble (the probes' mean)", final["ensemble"]
            if probe is not None and accuracy > bound:
                return (
                    f"{name}: after {what}, the context-free probe {probe} still answers {accuracy:.0%} of the "
                    f"questions (chance {chance:.0%}; more than {TELL_Z:g} standard errors above it on "
                    f"{self.questions}): part of the set can be answered without its context "
                    f"(procbench audit {name} measures it)"
                )
        return None

    @staticmethod
    def yield_of(questions: int, drafted: int) -> float:
        """The yield of ``questions`` kept of ``drafted`` (rounded as every report states it)."""
        return round(questions / max(1, drafted), 4)
