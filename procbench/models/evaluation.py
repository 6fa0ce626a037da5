"""Evaluation: trained runs and reference models on question sets, per split, with bootstrap intervals,
and the sweep summary (models as rows, settings as columns, mean ± std across settings, as Meta-RecipeQA
reports).

Each trained run is scored on its own question set, or on every given question set of its task (e.g. a
model trained on the RecipeQA-style set tested on each Control-Knob setting). Reference models
(``chance``, ``distance-svm``, the zero-shot context readers ``context-tfidf`` and ``context-embedding`` of
:mod:`procbench.models.context_readers`, the photo-choice reader ``context-ridge`` of
:mod:`procbench.models.context_ridge`) are scored on the given sets, or on the runs' own sets;
``distance-svm`` and ``context-ridge`` are fitted on each set's train split first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from procbench.errors import BadInput
from procbench.models.featurisation import FeatureConfig, Featurised, featurise
from procbench.models.inputs import is_question_set
from procbench.models.metrics import METRICS, bootstrap_ci
from procbench.models.registry import MODELS, REFERENCE_MODELS, get_model, task_family
from procbench.models.scoring import chance_scores, question_scores
from procbench.progress import SILENT, Progress
from procbench.qsets.files import QuestionSet, read_question_set

if TYPE_CHECKING:
    from procbench.models.lmeval import LmEvalRead

__all__ = ["EvalReport", "EvalResult", "evaluate", "summarise"]

SPLITS = ("train", "val", "test")


@dataclass
class EvalResult:
    """One metric of one model on one split of one question set."""

    model: str
    qset: str
    split: str
    metric: str
    value: float
    ci: tuple[float, float] | None
    n: int
    task: str = ""
    setting: str = ""
    run: str | None = None
    #: How ``ci`` was made when not resampled from per-question scores here: lm-eval results read back
    #: (:mod:`procbench.models.lmeval`) say ``bootstrap`` (from its per-question log) or ``stderr``.
    ci_method: str | None = None
    #: The file the result was read from (lm-eval results).
    source: str | None = None
    #: The question set's folder, when known (where ``evaluate`` records test scores for the card).
    qset_path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (``ci`` is ``[lo, hi]`` or null)."""
        out = {
            "model": self.model,
            "qset": self.qset,
            "split": self.split,
            "metric": self.metric,
            "value": self.value,
            "ci": list(self.ci) if self.ci is not None else None,
            "n": self.n,
            "run": self.run,
        }
        if self.ci_method is not None:
            out.update({"ci_method": self.ci_method, "source": self.source})
        return out


@dataclass
class EvalReport:
    """Every result, the summary tables, and what was skipped (and why)."""

    results: list[EvalResult]
    summary: dict[str, Any]
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: How results read from elsewhere were read (lm-eval: where their intervals come from).
    notes: list[str] = field(default_factory=list)
    #: The ``models.json`` files the test scores were recorded in (for the dataset card).
    recorded: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """``{"results": [...], "summary": {...}, "warnings": [...], "notes": [...], "recorded": [...]}``."""
        return {
            "results": [r.to_dict() for r in self.results],
            "summary": {**self.summary, "skipped": self.skipped},
            "warnings": self.warnings,
            "notes": self.notes,
            "recorded": self.recorded,
        }


@dataclass
class _Job:
    label: str
    qset: QuestionSet
    kind: str  # "run" | a reference model name
    run: Any = None


def _run_label(run: Any) -> str:
    hp = run.config["hyperparameters"]
    family = task_family(run.config["task"])
    if family != "mc" and hp.get("features", "both") != "both":
        return f"{run.model} ({hp['features']})"
    if family == "mc" and hp.get("context", "text") == "both":
        return f"{run.model} (+images)"
    return run.model


def _qset_labels(qsets: Sequence[QuestionSet]) -> dict[Path, str]:
    labels: dict[Path, str] = {}
    used: set[tuple[str, str]] = set()
    for q in qsets:
        path = q.path.resolve()
        if path in labels:
            continue
        label = q.setting
        if (q.task, label) in used:
            label = f"{q.setting} ({path.parents[2].name})"
        used.add((q.task, label))
        labels[path] = label
    return labels


def _dedupe(qsets: Sequence[QuestionSet]) -> list[QuestionSet]:
    seen: dict[Path, QuestionSet] = {}
    for q in qsets:
        seen.setdefault(q.path.resolve(), q)
    return list(seen.values())


def evaluate(
    *,
    runs: Sequence[str | Path] = (),
    qsets: Sequence[QuestionSet | str | Path] = (),
    models: Sequence[str] = (),
    splits: Sequence[str] = ("test",),
    bootstrap: int = 1000,
    seed: int = 0,
    allow_changed_sets: bool = False,
    lm_eval: Sequence[str | Path] = (),
    lm_eval_metric: str = "acc",
    record: bool = False,
    store: str | Path | None = None,
    progress: Progress = SILENT,
) -> EvalReport:
    """Score ``runs`` and reference ``models`` on ``qsets`` (see the module docstring) for each of ``splits``.

    Values are means over the split's questions; ``ci`` is a percentile bootstrap 95% interval over
    questions (``bootstrap`` resamples; 0 for none).

    ``lm_eval``: lm-evaluation-harness results files (or folders of them) of tasks that
    ``procbench export --format lm-eval`` wrote; their test scores join the tables as models
    ``lm-eval NAME`` and ``lm-eval NAME (no context)`` (:mod:`procbench.models.lmeval`; ``lm_eval_metric``
    ``acc`` or ``acc_norm``). ``record``: keep every test score beside its set (``models.json``) for the
    dataset card (:mod:`procbench.card.models`); with ``store``, only in sets of that store or given in
    ``qsets`` (or a run's own): a results file names its sets by the path they were exported from, which a
    moved export or a crafted file points anywhere.

    A run scored on the set it was trained on must find that set as it was: when the set's files changed
    since (regenerated with other options or on another store state) the run's scores would be stale,
    so this is refused, or with ``allow_changed_sets`` reported in ``warnings``.

    Raises:
        BadInput: see above, and unknown splits, trained models passed as ``models``, nothing to score.
    """
    splits = _check_splits(splits)
    read = _read_lm_eval(lm_eval, lm_eval_metric, bootstrap, seed, splits) if lm_eval else None
    _check_references(models)
    sets = _read_sets(qsets)
    skipped: list[str] = []
    warnings: list[str] = []
    jobs, own_sets = _run_jobs(runs, sets, allow_changed_sets, skipped, warnings)
    reference_sets = sets or _dedupe(own_sets)
    if models and not reference_sets:
        raise BadInput(f"--model {models[0]} needs a question set to score: pass QSET (or a sweep folder)")
    if read is not None:
        skipped += read.skipped
        if not read.results:
            raise BadInput("nothing to evaluate: " + ("; ".join(read.skipped) or "no lm-eval results"))
    jobs += _reference_jobs(models, reference_sets, skipped)
    if not jobs and read is None:
        why = "; ".join(skipped) or f"pass a run, or --model {'|'.join(REFERENCE_MODELS)} with a question set"
        raise BadInput(f"nothing to evaluate: {why}")
    _disambiguate(jobs)
    results = _score_jobs(jobs, splits, bootstrap, seed, skipped, progress)
    notes: list[str] = []
    if read is not None:
        results += [EvalResult(**vars(score)) for score in read.results]
        notes += read.notes
    report = EvalReport(results, summarise(results), skipped, warnings, notes)
    if record:
        within = None if store is None else [Path(store), *(q.path for q in (*sets, *own_sets))]
        report.recorded = record_results(results, warnings, within=within)
    return report


def _check_splits(splits: Sequence[str]) -> list[str]:
    """The splits asked for, in order and once each (``all``: every split)."""
    checked = list(SPLITS) if "all" in splits else list(dict.fromkeys(splits))
    for split in checked:
        if split not in SPLITS:
            raise BadInput(f"--split takes train, val, test or all, not {split!r}")
    return checked


def _read_lm_eval(
    lm_eval: Sequence[str | Path], metric: str, bootstrap: int, seed: int, splits: list[str]
) -> LmEvalRead:
    """The lm-eval results found in ``lm_eval`` (they score the test split only)."""
    from procbench.models.lmeval import read_lm_eval

    read = read_lm_eval(list(lm_eval), metric=metric, bootstrap=bootstrap, seed=seed)
    if "test" not in splits and read.results:
        raise BadInput("lm-eval scores the test split: pass --split test (the default) with --lm-eval")
    return read


def _check_references(models: Sequence[str]) -> None:
    """``models`` must be untrained references: a trained model is scored through its run."""
    for name in models:
        if get_model(name).trained:
            raise BadInput(
                f"--model takes the untrained references ({', '.join(REFERENCE_MODELS)}); {name} is trained: "
                f"train it with `procbench train QSET --model {name} --out RUN` and pass RUN"
            )


def _read_sets(qsets: Sequence[QuestionSet | str | Path]) -> list[QuestionSet]:
    """The given question sets, each once; a path that holds none is a :class:`BadInput`."""
    for q in qsets:
        if not is_question_set(q.path if isinstance(q, QuestionSet) else Path(q)):
            raise BadInput(f"no question set at {q.path if isinstance(q, QuestionSet) else q}")
    return _dedupe([q if isinstance(q, QuestionSet) else read_question_set(q) for q in qsets])


def _run_jobs(
    runs: Sequence[str | Path],
    sets: list[QuestionSet],
    allow_changed_sets: bool,
    skipped: list[str],
    warnings: list[str],
) -> tuple[list[_Job], list[QuestionSet]]:
    """A job per run and set of its task it is scored on (the given ``sets``, else its own set), and the runs'
    own sets that still exist. A stale own set is refused unless ``allow_changed_sets`` (then a warning)."""
    loaded = []
    if runs:
        from procbench.models.training import load_run

        loaded = [load_run(r) for r in runs]
    jobs: list[_Job] = []
    own_sets: list[QuestionSet] = []
    for run in loaded:
        own_path = Path(run.config["qset"]["path"])
        if not sets and not is_question_set(own_path):
            raise BadInput(f"{run.path} was trained on {own_path}, which is gone: pass the question set to score on")
        own = read_question_set(own_path)
        if is_question_set(own_path):
            own_sets.append(own)
        targets = [q for q in sets if q.task == run.config["task"]] if sets else [own]
        if any(q.path.resolve() == own_path.resolve() for q in targets):
            stale = _stale_set_message(run, own)
            if stale and not allow_changed_sets:
                raise BadInput(f"{stale}; retrain it, or pass --allow-changed-sets to score it anyway")
            if stale:
                warnings.append(stale)
        if not targets:
            skipped.append(f"{run.path}: no given question set is a {run.config['task']} set")
        jobs.extend(_Job(_run_label(run), q, "run", run) for q in targets)
    return jobs, own_sets


def _reference_jobs(models: Sequence[str], reference_sets: list[QuestionSet], skipped: list[str]) -> list[_Job]:
    """A job per reference model and set of a task it answers (the others are noted in ``skipped``)."""
    jobs = []
    for name in models:
        spec = MODELS.get(name)
        for q in reference_sets:
            if spec.answers(q.task):
                jobs.append(_Job(name, q, name))
            else:
                skipped.append(f"{name}: does not answer {q.task} questions ({q.name})")
    return jobs


def _score_jobs(
    jobs: list[_Job], splits: list[str], bootstrap: int, seed: int, skipped: list[str], progress: Progress
) -> list[EvalResult]:
    """Every job scored on every split: one result per metric with its bootstrap interval (a split without
    questions is noted in ``skipped``). Each set is featurised once per feature config."""
    labels = _qset_labels([j.qset for j in jobs])
    cache: dict[tuple[Path, FeatureConfig | None], Featurised] = {}

    def features(q: QuestionSet, config: FeatureConfig | None) -> Featurised:
        """``config`` None: the structure only, no vectors (chance needs none, even on a store never embedded)."""
        key = (q.path.resolve(), config)
        if key not in cache:
            cache[key] = featurise(q, config or FeatureConfig(), vectors=config is not None)
        return cache[key]

    results: list[EvalResult] = []
    progress.start("evaluate", total=len(jobs))
    for number, job in enumerate(jobs):
        progress.advance()
        for split, (groups, scores) in _score_job(job, features, splits, seed).items():
            n = len(groups)
            if n == 0:
                skipped.append(f"{job.label} on {job.qset.name}: no {split} questions")
                continue
            rng = np.random.default_rng([seed, number, SPLITS.index(split)])
            for metric, values in scores.items():
                results.append(
                    EvalResult(
                        model=job.label,
                        qset=job.qset.name,
                        split=split,
                        metric=metric,
                        value=float(values.mean()),
                        ci=bootstrap_ci(values, groups, resamples=bootstrap, rng=rng),
                        n=n,
                        task=job.qset.task,
                        setting=labels[job.qset.path.resolve()],
                        run=str(job.run.path) if job.run is not None else None,
                        qset_path=str(job.qset.path),
                    )
                )
    return results


def record_results(
    results: Sequence[EvalResult], warnings: list[str], *, within: Sequence[Path] | None = None
) -> list[str]:
    """Keep the test scores beside each set (``SET/models.json``, read by the dataset card); returns the files
    written. A set folder that is gone or cannot be written, or (``within``) lies under none of those folders,
    is a warning."""
    from procbench.card.models import record_model_rows

    by_set: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for r in results:
        if r.split != "test" or r.qset_path is None:
            continue
        entry: dict[str, Any] = {"value": r.value, "ci": list(r.ci) if r.ci else None, "n": r.n}
        entry["interval"] = r.ci_method or "bootstrap"
        if r.source:
            entry["source"] = r.source
        by_set.setdefault(r.qset_path, {}).setdefault(r.model, {})[r.metric] = entry
    written = []
    roots = None if within is None else [root.resolve() for root in within]
    for folder, rows in by_set.items():
        if roots is not None and not any(Path(folder).resolve().is_relative_to(root) for root in roots):
            warnings.append(f"not recorded for the card: {folder} is in neither the store nor the sets given")
            continue
        if not is_question_set(Path(folder)):
            warnings.append(f"not recorded for the card: no question set at {folder} any more")
            continue
        try:
            written.append(str(record_model_rows(folder, rows)))
        except OSError as exc:
            warnings.append(f"not recorded for the card: {folder}: {exc}")
    return written


def _stale_set_message(run: Any, own: QuestionSet) -> str | None:
    """Why ``run``'s scores on its own set would be stale (its files changed since training), or None."""
    from procbench.models.featurisation import qset_fingerprint

    trained_on = run.config["qset"].get("fingerprint")
    if not trained_on or qset_fingerprint(own) == trained_on:
        return None
    return f"{run.path} was trained on {own.name} as it was before; that set has changed since (regenerated)"


def _disambiguate(jobs: list[_Job]) -> None:
    """Two runs with the same label scored on the same set get their run folder's name added."""
    seen: dict[tuple[str, Path], int] = {}
    for job in jobs:
        key = (job.label, job.qset.path.resolve())
        seen[key] = seen.get(key, 0) + 1
    clash = {label for (label, _), count in seen.items() if count > 1}
    for job in jobs:
        if job.label in clash and job.run is not None:
            job.label = f"{job.label} ({job.run.path.name})"


def _score_job(
    job: _Job, features: Any, splits: list[str], seed: int
) -> dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Per split: the procedure of each question (bootstrap groups) and ``{metric: per-question values}``."""
    if job.kind == "run":
        from procbench.models.nets import Batches
        from procbench.models.training import predict_rows

        run = job.run
        feats = features(job.qset, run.train_config.feature_config())
        if feats.dims != run.config["dims"] or feats.encoders != run.config["encoders"]:
            raise BadInput(
                f"{run.path} was trained on features {run.config['encoders']} {run.config['dims']}, but "
                f"{job.qset.name} reads {feats.encoders} {feats.dims}: embed its store with the same encoders"
            )
        batches = Batches(feats)

        def predict(rows: np.ndarray) -> list[Any]:
            return predict_rows(run.net, batches, rows)

    else:
        feats = features(job.qset, None if job.kind == "chance" else FeatureConfig())
        if job.kind == "distance-svm":
            from procbench.models.reference import DistanceSVM

            probe = DistanceSVM(seed=seed).fit(feats, feats.rows("train"))

            def predict(rows: np.ndarray) -> list[Any]:
                return probe.predict(feats, rows)

        elif job.kind == "context-embedding":
            from procbench.models.context_readers import embedding_predictions

            def predict(rows: np.ndarray) -> list[Any]:
                return embedding_predictions(feats, rows)

        elif job.kind == "context-ridge":
            from procbench.models.context_ridge import ContextRidge

            ridge = ContextRidge.fit(job.qset)

            def predict(rows: np.ndarray) -> list[Any]:
                return ridge.predict(feats, rows)

        elif job.kind == "context-tfidf":
            from procbench.models.context_readers import tfidf_predictions

            def predict(rows: np.ndarray) -> list[Any]:
                return tfidf_predictions(feats, rows, job.qset, str(feats.splits[rows[0]]))

    out: dict[str, tuple[np.ndarray, dict[str, np.ndarray]]] = {}
    for split in splits:
        rows = feats.rows(split)
        if len(rows) == 0:
            out[split] = (rows, {})
        elif job.kind == "chance":
            out[split] = (feats.procedure[rows], chance_scores(feats, rows))
        else:
            out[split] = (feats.procedure[rows], question_scores(feats, rows, predict(rows)))
    return out


def summarise(results: Sequence[EvalResult]) -> dict[str, Any]:
    """One table per (task, split, metric): models as rows, settings as columns, mean ± std across settings.

    The std is the population standard deviation over the settings a model was scored on (0 for one).
    """
    order = {spec.name: i for i, spec in enumerate(MODELS.values()) if not spec.trained}
    tables: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in results:
        key = (r.task, r.split, r.metric)
        table = tables.setdefault(
            key,
            {
                "task": r.task,
                "split": r.split,
                "metric": r.metric,
                "label": METRICS[r.metric].label,
                "percent": METRICS[r.metric].percent,
                "higher_is_better": METRICS[r.metric].higher_is_better,
                "settings": [],
                "rows": {},
            },
        )
        if r.setting not in table["settings"]:
            table["settings"].append(r.setting)
        row = table["rows"].setdefault(r.model, {"model": r.model, "values": {}, "ci": {}, "n": {}})
        row["values"][r.setting] = r.value
        row["ci"][r.setting] = list(r.ci) if r.ci is not None else None
        row["n"][r.setting] = r.n
    out = []
    for table in tables.values():
        rows = sorted(table["rows"].values(), key=lambda row: order.get(row["model"], len(order)))
        for row in rows:
            values = np.array(list(row["values"].values()))
            row["mean"] = float(values.mean())
            row["std"] = float(values.std())
        out.append({**table, "rows": rows})
    metric_order = {m: i for i, m in enumerate(METRICS)}
    out.sort(key=lambda t: (t["task"], SPLITS.index(t["split"]), metric_order[t["metric"]]))
    return {"tables": out}
