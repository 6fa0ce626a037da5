"""lm-evaluation-harness results read back into procbench's evaluation (``procbench evaluate --lm-eval``).

lm-eval writes ``OUT/MODEL/results_TIME.json`` and, with ``--log_samples``, one
``samples_TASK_TIME.jsonl`` per task beside it. Tasks exported by ``procbench export --format lm-eval``
carry ``metadata.procbench`` (task, setting, with or without the context, the source set), which the
results file repeats under ``configs``: each such task becomes an :class:`EvalResult` of the model
``lm-eval NAME`` (or ``lm-eval NAME (no context)``) on the set's test split, in the same tables as the
baselines.

Intervals: with the samples file, the per-question scores are resampled by procedure, as every other
procbench interval (:func:`procbench.models.metrics.bootstrap_ci`); without it, lm-eval's reported standard
error gives a normal-approximation interval (``value ± 1.96 · stderr``, clipped to [0, 1]), and the result
says so (``ci_method = "stderr"``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from procbench.errors import BadInput
from procbench.models.metrics import bootstrap_ci
from procbench.models.registry import task_family

__all__ = ["LM_EVAL_METRICS", "Z95", "LmEvalRead", "LmEvalScore", "model_label", "read_lm_eval"]

#: lm-eval's metrics that ``--lm-eval-metric`` takes (``acc_norm``: likelihood per byte of the choice).
LM_EVAL_METRICS = ("acc", "acc_norm")

#: The normal quantile of a two-sided 95% interval.
Z95 = 1.96

#: The procbench metric an lm-eval accuracy is, per task family (sequencing: the whole order right = PMR).
_METRIC_OF_FAMILY = {"mc": "accuracy", "pair-order": "accuracy", "sequencing": "pmr"}


@dataclass
class LmEvalScore:
    """One lm-eval result as procbench scores it: the fields of :class:`procbench.models.evaluation.EvalResult`
    (which builds one from it)."""

    model: str
    qset: str
    split: str
    metric: str
    value: float
    ci: tuple[float, float] | None
    n: int
    task: str
    setting: str
    ci_method: str
    source: str
    qset_path: str | None


@dataclass
class LmEvalRead:
    """What :func:`read_lm_eval` found: the scores, and one line per results file on how it was read."""

    results: list[LmEvalScore] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _results_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        found = sorted(path.rglob("results_*.json"))
        if found:
            return found
        raise BadInput(f"no lm-eval results_*.json under {path}")
    raise BadInput(f"no lm-eval results at {path}")


def model_label(data: dict[str, Any]) -> str:
    """``lm-eval NAME``: the ``pretrained`` model (or the lm-eval model type), with its few-shot count if any."""
    config = data.get("config") or {}
    args = config.get("model_args") or {}
    if isinstance(args, str):
        args = dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    name = str(args.get("pretrained") or args.get("model") or config.get("model") or "model")
    shots = {v for v in (data.get("n-shot") or {}).values() if isinstance(v, int)}
    few = f" {max(shots)}-shot" if shots and max(shots) > 0 else ""
    return f"lm-eval {name}{few}"


def _samples_file(results: Path, task: str) -> Path | None:
    stamp = results.stem.removeprefix("results_")
    path = results.parent / f"samples_{task}_{stamp}.jsonl"
    return path if path.is_file() else None


def _read_samples(path: Path, metric: str) -> tuple[np.ndarray, np.ndarray]:
    values: list[float] = []
    groups: list[str] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                sample = json.loads(line)
                values.append(float(sample[metric]))
                doc = sample.get("doc") or {}
                groups.append(str(doc.get("procedure_id") or doc.get("qid") or sample.get("doc_id")))
            except (ValueError, KeyError, TypeError) as exc:
                raise BadInput(f"{path}:{number}: not an lm-eval sample with {metric!r} ({exc})") from exc
    return np.asarray(values, dtype=np.float64), np.asarray(groups)


def read_lm_eval(
    paths: list[str | Path],
    *,
    metric: str = "acc",
    bootstrap: int = 1000,
    seed: int = 0,
) -> LmEvalRead:
    """Read lm-eval results files (or folders holding them) into scores of exported sets' test splits.

    Raises:
        BadInput: a path that is no results file, a metric lm-eval did not report, no task exported by procbench.
    """
    if metric not in LM_EVAL_METRICS:
        raise BadInput(f"--lm-eval-metric takes {', '.join(LM_EVAL_METRICS)}, not {metric!r}")
    out = LmEvalRead()
    files = [f for p in paths for f in _results_files(Path(p))]
    for number, path in enumerate(files):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BadInput(f"{path}: not an lm-eval results file ({exc})") from exc
        if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
            raise BadInput(f"{path}: not an lm-eval results file (no 'results')")
        configs = data.get("configs") or {}
        label = model_label(data)
        sampled = stderr = 0
        for task, values in data["results"].items():
            info = ((configs.get(task) or {}).get("metadata") or {}).get("procbench") or {}
            if not info.get("task"):
                continue  # a group, or a task procbench did not export
            key = f"{metric},none"
            if key not in values:
                out.skipped.append(f"{path.name}: {task} has no {metric}")
                continue
            samples = _samples_file(path, task)
            n = int(((data.get("n-samples") or {}).get(task) or {}).get("effective") or values.get("sample_len") or 0)
            value = float(values[key])
            rng = np.random.default_rng([seed, number, len(out.results)])
            if samples is not None:
                scores, groups = _read_samples(samples, metric)
                n = len(scores)
                value = float(scores.mean()) if n else value
                ci = bootstrap_ci(scores, groups, resamples=bootstrap, rng=rng)
                method = "bootstrap"
                sampled += 1
            else:
                err = values.get(f"{metric}_stderr,none")
                ci = None
                if isinstance(err, (int, float)) and bootstrap > 0:
                    ci = (max(0.0, value - Z95 * float(err)), min(1.0, value + Z95 * float(err)))
                method = "stderr"
                stderr += 1
            out.results.append(
                LmEvalScore(
                    model=label if info.get("context", True) else f"{label} (no context)",
                    qset=f"{info['task']}/{info['setting']}",
                    split="test",
                    metric=_METRIC_OF_FAMILY.get(task_family(str(info["task"])), "accuracy"),
                    value=value,
                    ci=ci,
                    n=n,
                    task=str(info["task"]),
                    setting=str(info["setting"]),
                    ci_method=method,
                    source=str(path),
                    qset_path=str(info["qset"]) if info.get("qset") else None,
                )
            )
        if sampled or stderr:
            how = []
            if sampled:
                how.append(f"{sampled} tasks' intervals from the per-question log (bootstrap over procedures)")
            if stderr:
                how.append(
                    f"{stderr} from lm-eval's standard error (no samples_TASK_*.jsonl beside it: run lm_eval with "
                    "--log_samples for bootstrap intervals)"
                )
            out.notes.append(f"{label} ({path.name}, {metric}): " + "; ".join(how))
        else:
            out.skipped.append(f"{path}: no task exported by `procbench export --format lm-eval`")
    return out
