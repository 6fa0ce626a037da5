"""``procbench report``: a static HTML report of question sets that works offline (no CDN, nothing fetched).

``OUT/index.html`` lists the sets, shows the audit's probes side by side with their intervals, the distances
of correct and wrong choices to the question (paper 001 Fig. 2) and evaluate's sweep table when trained runs
exist; ``OUT/sets/TASK--SETTING.html`` browses a set's questions as a person sees them (items with the
placeholder, choices as text or images, the answer marked, the context folded), filtered by split and by
per-question shortcut score where ``audit --per-question`` wrote one. Images are copied to ``OUT/images``,
the stylesheet and script to ``OUT/assets``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from procbench.export.inline import Inliner
from procbench.export.sets import resolve_sets
from procbench.progress import SILENT, Progress
from procbench.qsets.columns import procedure_ids
from procbench.report.data import (
    choice_distances_of,
    copy_images,
    discover_runs,
    generation_notes,
    report_target,
    set_view,
    sweep_tables,
)
from procbench.report.html import index_page, set_page

__all__ = ["ReportResult", "write_report"]

#: Questions per set put in the report (test first); the page says how many the set has.
DEFAULT_LIMIT = 500


@dataclass
class ReportResult:
    """What a report wrote."""

    index: Path
    pages: dict[str, Path] = field(default_factory=dict)
    questions: dict[str, int] = field(default_factory=dict)
    images: int = 0
    sweep_tables: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "index": str(self.index),
            "pages": {k: str(v) for k, v in self.pages.items()},
            "questions": self.questions,
            "images": self.images,
            "sweep_tables": self.sweep_tables,
        }


def write_report(
    targets: list[str] | None,
    out: str | Path | None = None,
    *,
    store: str | Path = "procbench-store",
    runs: Sequence[str | Path] | None = None,
    sweeps: list[dict[str, Any]] | None = None,
    limit: int = DEFAULT_LIMIT,
    seed: int = 0,
    progress: Progress = SILENT,
) -> ReportResult:
    """Write the report of ``targets`` (TASK, TASK/SETTING or set folders; all sets of ``store`` when empty).

    ``runs``: run folders for the sweep table (default: every run under ``STORE/runs``); ``sweeps``: sweep
    tables already computed (``evaluate(...).summary["tables"]``), used instead of evaluating runs. ``out``
    defaults to ``STORE/report`` inside the store the sets come from. The run is recorded in that store's
    provenance log.
    """
    if not targets:
        base = Path(store) / "questions"
        targets = sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    resolved = resolve_sets(list(targets), store)
    out = Path(out) if out is not None else resolved.store.root / "report"
    report_target(out, "sets").mkdir(parents=True, exist_ok=True)
    report_target(out, "assets").mkdir(parents=True, exist_ok=True)
    for name in ("report.css", "report.js"):
        source = resources.files("procbench.report").joinpath("assets", name)
        report_target(out, f"assets/{name}").write_bytes(source.read_bytes())
    used: set[str] = set()
    for qset in resolved.sets:
        used |= procedure_ids(qset.table().select(["procedure_id"]))
    inliner = Inliner(resolved.store, used)
    result = ReportResult(report_target(out, "index.html"))
    views = []
    progress.start("report", total=len(resolved.sets))
    images: set[str] = set()
    for qset in resolved.sets:
        view = set_view(qset, inliner, limit=limit)
        view.distances = choice_distances_of(qset, resolved.store)
        view.generation = generation_notes(resolved.store, qset.task, qset.setting)
        images |= view.images
        page = report_target(out, f"sets/{view.slug}.html")
        page.write_text(set_page(view, instruction=qset.instruction), encoding="utf-8")
        result.pages[qset.name] = page
        result.questions[qset.name] = len(view.questions)
        views.append(view)
        progress.advance()
    result.images = copy_images(resolved.store, images, out)
    if sweeps is None:
        run_dirs = [Path(r) for r in runs] if runs is not None else discover_runs(resolved.store)
        sweeps = sweep_tables(run_dirs, seed=seed)
    result.sweep_tables = len(sweeps)
    title = "procbench report: " + ", ".join(dict.fromkeys(q.task for q in resolved.sets))
    result.index.write_text(index_page(views, sweeps, title=title), encoding="utf-8")
    counts = {"sets": len(result.pages), "questions": sum(result.questions.values()), "images": result.images}
    args = {"sets": list(result.pages), "limit": limit, "sweep_tables": result.sweep_tables}
    resolved.store.record_run("report", args=args, seed=seed, counts=counts, outputs=[out])
    return result
