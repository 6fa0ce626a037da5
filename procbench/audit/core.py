"""``audit_sets``: run the registered probes on one or more question sets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.context import ProbeContext
from procbench.audit.loaders import default_report_path, load_sets
from procbench.audit.registry import resolve_probes
from procbench.audit.report import AuditReport, ProbeResult, SetAudit, write_report
from procbench.errors import BadInput
from procbench.progress import SILENT, Progress
from procbench.store import Store
from procbench.store.atomic import check_writable_folder

__all__ = ["DEFAULT_BOOTSTRAP", "DEFAULT_FOLDS", "AuditRun", "audit_set", "audit_sets", "run_audit"]

DEFAULT_BOOTSTRAP = 1000
DEFAULT_FOLDS = 5


def audit_set(
    aset: AuditSet,
    *,
    seed: int = 0,
    n_boot: int = DEFAULT_BOOTSTRAP,
    n_folds: int = DEFAULT_FOLDS,
    probes: Iterable[str] | str | None = None,
    per_question: bool = False,
    trees: Mapping[str, int] | None = None,
    progress: Progress = SILENT,
) -> SetAudit:
    """Every (selected) probe on one set; a probe that raises :class:`NotApplicable` is reported with its reason.

    With ``per_question``, also the per-question shortcut scores (:func:`procbench.audit.scores.shortcut_scores`)
    in ``SetAudit.scores``, or why they cannot be computed in ``SetAudit.scores_note``.
    """
    from threadpoolctl import threadpool_limits

    from procbench.audit.scores import shortcut_scores

    specs = resolve_probes(probes)
    progress.start(f"audit {aset.name}", total=len(specs))
    results: dict[str, ProbeResult] = {}
    # The work is many small matrix products: one BLAS/OpenMP thread is faster than several fighting for
    # busy cores, and keeps results bit-identical whatever the machine's thread count.
    with threadpool_limits(limits=1):
        ctx = None
        if len(aset):
            ctx = ProbeContext.for_set(aset, seed=seed, n_boot=n_boot, n_folds=n_folds, trees=trees)
        scores = note = None
        if per_question:  # first: the partial_input probe then reuses the fitted ensemble
            try:
                if ctx is None:
                    raise NotApplicable("the set has no questions")
                scores = shortcut_scores(aset, ctx)
            except NotApplicable as exc:
                note = str(exc)
        for spec in specs:
            try:
                if ctx is None:
                    raise NotApplicable("the set has no questions")
                results[spec.name] = spec.fn(aset, ctx)
            except NotApplicable as exc:
                results[spec.name] = ProbeResult.not_applicable(str(exc))
            progress.advance()
    return SetAudit(aset.name, aset.task, len(aset), results, aset.source, scores=scores, scores_note=note)


def audit_sets(
    sets: Sequence[AuditSet | Any],
    *,
    store: Store | str | Path | None = None,
    seed: int = 0,
    n_boot: int = DEFAULT_BOOTSTRAP,
    n_folds: int = DEFAULT_FOLDS,
    probes: Iterable[str] | str | None = None,
    per_question: bool = False,
    trees: Mapping[str, int] | None = None,
    progress: Progress = SILENT,
) -> AuditReport:
    """Audit question sets side by side.

    Args:
        sets: :class:`AuditSet` objects, ``QuestionSet`` objects, set folders, or ``TASK/SETTING`` names
            (resolved in ``store``). RecipeQA JSON files are read with :func:`procbench.audit.load_recipeqa`.
        store: where ``TASK/SETTING`` names and item embeddings are looked up (a set folder inside a store
            uses that store).
        seed: seeds folds, bootstrap, PCA, KMeans and permutations; the same seed gives the same report.
        n_boot: bootstrap replicates per interval (capped for very large sets, see ``details.n_boot``).
        n_folds: folds of the procedure-grouped cross-validation.
        probes: probe names to run (default: all registered).
        per_question: also compute each set's per-question shortcut scores (``SetAudit.scores``).
        trees: the partial-input probe's tree size, ``{"tree_iterations": ..., "tree_bins": ...}`` (None: 150
            boosting iterations over 255 bins, :class:`procbench.shortcuts.ShortcutEnsemble`); the probe's details
            state it. The demo fits smaller trees (:data:`procbench.demo.DEMO_TREES`).
        progress: receives one task per set.

    Raises:
        BadInput: bad options, an unknown probe, or a set that cannot be read.
    """
    if n_boot < 10:
        raise BadInput("--n-boot must be at least 10")
    if n_folds < 2:
        raise BadInput("--folds must be at least 2")
    unknown = sorted(set(trees or {}) - {"tree_iterations", "tree_bins"})
    if unknown:
        raise BadInput(f"unknown tree option(s) {', '.join(unknown)}: the trees take tree_iterations and tree_bins")
    resolve_probes(probes)
    loaded = load_sets(list(sets), store=store, seed=seed)
    report = AuditReport({}, seed=seed)
    for aset in loaded:
        name = aset.name
        suffix = 2
        while name in report.sets:
            name = f"{aset.name} ({suffix})"
            suffix += 1
        options: dict[str, Any] = {
            "seed": seed,
            "n_boot": n_boot,
            "n_folds": n_folds,
            "probes": probes,
            "per_question": per_question,
            "trees": trees,
        }
        audit = audit_set(aset, progress=progress, **options)
        audit.name = name
        report.sets[name] = audit
    return report


@dataclass
class AuditRun:
    """What :func:`run_audit` did: the report, where ``audit.json`` went, the plots written, and (with
    ``per_question``) where each set's shortcut scores went, or why a set has none."""

    report: AuditReport
    report_path: Path
    plots: list[Path] = field(default_factory=list)
    scores: dict[str, Path] = field(default_factory=dict)
    scores_notes: dict[str, str] = field(default_factory=dict)


def run_audit(
    specs: Sequence[Any],
    *,
    format: str = "procbench",
    store: Store | str | Path | None = None,
    images: str | Path | None = None,
    out: str | Path | None = None,
    plots: str | Path | None = None,
    seed: int = 0,
    n_boot: int = DEFAULT_BOOTSTRAP,
    n_folds: int = DEFAULT_FOLDS,
    probes: Iterable[str] | str | None = None,
    per_question: bool = False,
    trees: Mapping[str, int] | None = None,
    progress: Progress = SILENT,
) -> AuditRun:
    """Load the sets named by ``specs``, audit them, write ``audit.json`` and optionally PNG plots.

    ``audit.json`` goes to ``out`` (a file, or a folder to put it in); by default inside the set folder
    for one set, in the sets' common folder for several, next to the file for RecipeQA JSON.
    ``format="recipeqa"`` reads RecipeQA JSON files (one set per task in each file); ``images`` is the
    folder their image names are relative to. ``per_question`` writes each set's
    ``shortcut_scores.parquet`` (:mod:`procbench.audit.scores`) into its set folder (next to a RecipeQA JSON
    file: ``FILE.TASK.shortcut_scores.parquet``). See :func:`audit_sets` for the other options.
    """
    if not specs:
        raise BadInput("name at least one question set")
    resolve_probes(probes)
    if out is not None:  # an output that cannot be written is bad input before the work, not after
        check_writable_folder(Path(out) if Path(out).is_dir() else Path(out).parent, f"--out {out}")
    if plots is not None:
        check_writable_folder(plots, f"--plots {plots}")
    sets = load_sets(list(specs), format=format, store=store, images=images, seed=seed)
    report = audit_sets(
        sets,
        store=store,
        seed=seed,
        n_boot=n_boot,
        n_folds=n_folds,
        probes=probes,
        per_question=per_question,
        trees=trees,
        progress=progress,
    )
    target = Path(out) if out is not None else (default_report_path(sets) or Path("audit.json"))
    path = write_report(report, target)
    written: list[Path] = []
    if plots is not None:
        from procbench.audit.plots import write_plots

        written = write_plots(report, plots)
    run = AuditRun(report, path, written)
    if per_question:
        from procbench.audit.scores import score_path, write_scores

        for aset, (name, audit) in zip(sets, report.sets.items(), strict=True):
            scores_path = score_path(aset)
            if audit.scores is None:
                run.scores_notes[name] = audit.scores_note or "no scores"
            elif scores_path is None:
                run.scores_notes[name] = "the set has no folder to write shortcut_scores.parquet to"
            else:
                run.scores[name] = write_scores(audit.scores, scores_path)
    chosen = probes if probes is None or isinstance(probes, str) else list(probes)
    options: dict[str, Any] = {"format": format, "probes": chosen, "n_boot": n_boot, "n_folds": n_folds}
    options["per_question"] = per_question
    if trees:
        options["trees"] = dict(trees)
    _record_run(run, sets, options, seed=seed)
    return run


def _flagged(audit: SetAudit) -> int:
    return sum(r.flagged for r in audit.probes.values())


def _record_run(run: AuditRun, sets: Sequence[AuditSet], options: dict[str, Any], *, seed: int) -> None:
    """An ``audit`` entry in the provenance log of each store the audited sets live in (RecipeQA JSON files and
    folders outside a store are in none): which sets, the options, the counts and what was written."""
    from procbench.audit.loaders import set_store

    by_store: dict[Path, tuple[Store, list[str]]] = {}
    for aset, name in zip(sets, run.report.sets, strict=True):
        home = set_store(aset.source) if aset.source is not None and aset.source.is_dir() else None
        if home is not None:
            by_store.setdefault(home.root.resolve(), (home, []))[1].append(name)
    outputs: list[Path] = [run.report_path, *run.plots, *run.scores.values()]
    for home, names in by_store.values():
        counts = {**run.report.counts(), "flagged_by_set": {n: _flagged(run.report.sets[n]) for n in names}}
        home.record_run("audit", args={"sets": names, **options}, seed=seed, counts=counts, outputs=outputs)
