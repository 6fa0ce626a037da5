"""``procbench audit``: bias probes for question sets, each with a chance level and a bootstrap interval.

>>> from procbench.audit import audit_sets, write_report
>>> report = audit_sets(["store/questions/textual-cloze/recipeqa"], seed=0)  # doctest: +SKIP
>>> report.to_dict()["sets"]["textual-cloze/recipeqa"]["probes"]["choice_only"]  # doctest: +SKIP
{'value': 0.41, 'chance': 0.25, 'ci': [0.39, 0.43], ...}

Probes live in a registry (:data:`PROBES`), one module per family under ``procbench.audit.probes``;
each decides whether it applies to a task and raises :class:`NotApplicable` saying why when it does not.
Everything heavy (scikit-learn, scipy, matplotlib) is imported inside the functions that use it.
"""

from __future__ import annotations

from procbench.audit import probes as _probes  # noqa: F401  (registers the probes)
from procbench.audit.auditset import ArrayVectors, AuditSet, NotApplicable, TaskKind
from procbench.audit.core import DEFAULT_BOOTSTRAP, DEFAULT_FOLDS, AuditRun, audit_set, audit_sets, run_audit
from procbench.audit.loaders import default_report_path, load_question_set, load_recipeqa, load_sets
from procbench.audit.plots import write_plots
from procbench.audit.registry import PROBES, ProbeSpec, register, resolve_probes
from procbench.audit.report import AuditReport, ProbeResult, SetAudit, write_report

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_FOLDS",
    "PROBES",
    "ArrayVectors",
    "AuditReport",
    "AuditRun",
    "AuditSet",
    "NotApplicable",
    "ProbeResult",
    "ProbeSpec",
    "SetAudit",
    "TaskKind",
    "audit_set",
    "audit_sets",
    "default_report_path",
    "load_question_set",
    "load_recipeqa",
    "load_sets",
    "register",
    "resolve_probes",
    "run_audit",
    "write_plots",
    "write_report",
]
