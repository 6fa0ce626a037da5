"""What an audit returns: a result per probe and set, and the report that holds them (``audit.json``)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procbench.store.atomic import atomic_write_bytes

__all__ = ["AuditReport", "ProbeResult", "SetAudit", "write_report"]

_DIGITS = 6


def _num(x: float | None) -> float | None:
    if x is None or not math.isfinite(float(x)):
        return None
    return round(float(x), _DIGITS)


def _jsonable(value: Any) -> Any:
    """Details as plain JSON: numpy scalars and arrays become numbers and lists, floats are rounded."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return _num(value)
    return str(value)


@dataclass
class ProbeResult:
    """One probe on one set.

    ``value`` is the probe's statistic (an accuracy, a share, a divergence or a rate), ``chance`` what it is
    expected to be when the set has no such bias (None when the probe has no chance level), ``ci`` a
    bootstrap 95% interval of ``value``. A probe that does not apply has ``value`` None and a ``reason``.
    ``reference`` marks a probe that measures what the *context* gives (not a shortcut: being above chance
    is what it should be). ``arrays`` keeps raw per-question data for plots; it is not written to JSON.
    """

    value: float | None
    chance: float | None
    ci: tuple[float, float] | None
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, Any] = field(default_factory=dict, repr=False)
    reference: bool = False

    @classmethod
    def not_applicable(cls, reason: str, **details: Any) -> ProbeResult:
        """A probe that does not apply to the set (or cannot be computed), and why."""
        return cls(None, None, None, reason=reason, details=dict(details))

    @property
    def applies(self) -> bool:
        """Whether the probe produced a value."""
        return self.value is not None

    @property
    def verdict(self) -> str | None:
        """``above``/``below`` when the interval excludes chance on that side, ``chance`` when it includes it,
        None when there is no value or no chance level."""
        if self.value is None or self.chance is None or self.ci is None:
            return None
        lo, hi = self.ci
        if lo > self.chance:
            return "above"
        if hi < self.chance:
            return "below"
        return "chance"

    @property
    def flagged(self) -> bool:
        """Whether the result shows a bias: a shortcut probe whose interval excludes chance on *either* side.

        Far below chance is a shortcut with the sign flipped (e.g. the answer is almost never the choice
        nearest the question: a model that knows the distance rank exploits it). Reference probes are
        never flagged.
        """
        return not self.reference and self.verdict in ("above", "below")

    def to_dict(self) -> dict[str, Any]:
        """``{"value", "chance", "ci"}`` plus ``reason`` (when not applicable), ``verdict`` and ``flagged`` (when
        there is a chance level), ``reference`` (context-using probes) and ``details``."""
        out: dict[str, Any] = {
            "value": _num(self.value),
            "chance": _num(self.chance),
            "ci": [_num(self.ci[0]), _num(self.ci[1])] if self.ci is not None else None,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        if self.verdict is not None:
            out["verdict"] = self.verdict
            out["flagged"] = self.flagged
        if self.reference:
            out["reference"] = True
        if self.details:
            out["details"] = _jsonable(self.details)
        return out


@dataclass
class SetAudit:
    """Every probe's result on one question set; with ``per_question``, the per-question shortcut scores
    (a ``pyarrow.Table``, see :mod:`procbench.audit.scores`) or why there are none (``scores_note``)."""

    name: str
    task: str
    n_questions: int
    probes: dict[str, ProbeResult]
    path: Path | None = None
    scores: Any = None
    scores_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"n_questions": int, "probes": {PROBE: {...}}}``."""
        return {"n_questions": int(self.n_questions), "probes": {k: v.to_dict() for k, v in self.probes.items()}}


@dataclass
class AuditReport:
    """The audit of one or more question sets, in the order they were given."""

    sets: dict[str, SetAudit]
    seed: int = 0

    @property
    def probe_names(self) -> list[str]:
        """Every probe that appears in any set, in registry order."""
        names: list[str] = []
        for audit in self.sets.values():
            names.extend(n for n in audit.probes if n not in names)
        return names

    def to_dict(self) -> dict[str, Any]:
        """``{"sets": {NAME: {"n_questions": int, "probes": {PROBE: {"value", "chance", "ci", ...}}}}}``."""
        return {"sets": {name: audit.to_dict() for name, audit in self.sets.items()}}

    def counts(self) -> dict[str, int]:
        """How many sets, probe results with a value, results whose interval lies above chance, and results
        flagged as a bias (above or below chance, reference probes left out)."""
        results = [r for a in self.sets.values() for r in a.probes.values()]
        return {
            "sets": len(self.sets),
            "questions": sum(a.n_questions for a in self.sets.values()),
            "probes_run": sum(r.applies for r in results),
            "above_chance": sum(r.verdict == "above" for r in results),
            "flagged": sum(r.flagged for r in results),
        }


def write_report(report: AuditReport, path: str | Path) -> Path:
    """Write ``report.to_dict()`` as JSON to ``path`` atomically (``DIR/audit.json`` when ``path`` is a folder)."""
    target = Path(path)
    if target.is_dir():
        target = target / "audit.json"
    text = json.dumps(report.to_dict(), indent=2, sort_keys=False, allow_nan=False) + "\n"
    atomic_write_bytes(target, text.encode("utf-8"))
    return target
