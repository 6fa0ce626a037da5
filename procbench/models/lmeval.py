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
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from procbench.errors import BadInput
from procbench.models.metrics import bootstrap_ci
from procbench.models.registry import task_family
from procbench.nesting import nesting_depth
from procbench.safetext import plain

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


#: Largest results file read (lm-eval's are kilobytes to a few megabytes: the configs of every task).
MAX_RESULTS_BYTES = 64 * 1024 * 1024

#: Largest line of a per-question log read (a visual task's line holds its document, images as text).
MAX_SAMPLE_LINE = 16 * 1024 * 1024

#: Deepest nesting of JSON read (lm-eval's results nest about six levels).
MAX_DEPTH = 32

#: Most questions a task may say it scored (a count beyond it is not lm-eval's).
MAX_COUNT = 10**9


def _results_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        found = sorted(path.rglob("results_*.json"))
        if found:
            return found
        raise BadInput(f"no lm-eval results_*.json under {plain(str(path))}")
    raise BadInput(f"no lm-eval results at {plain(str(path))}")


def _load_json(text: str, where: str) -> Any:
    """``text`` parsed as JSON, refusing deep nesting and non-finite numbers with one line."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise BadInput(f"{where}: JSON nested too deeply (at most {MAX_DEPTH} levels)") from None
    except ValueError as exc:
        raise BadInput(f"{where}: not valid JSON ({plain(str(exc))[:200]})") from None
    if nesting_depth(data, cap=MAX_DEPTH) > MAX_DEPTH:
        raise BadInput(f"{where}: JSON nested too deeply (at most {MAX_DEPTH} levels)")
    return data


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number lm-eval writes")


def _proportion(value: Any, what: str) -> float:
    """``value`` as a finite number in [0, 1] (an accuracy or its standard error), else one line."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadInput(f"{what} is {_shown(value)}, not a number")
    if not 0.0 <= value <= 1.0:
        raise BadInput(f"{what} is {_shown(value)}, outside [0, 1]")
    return float(value)


def _count(value: Any, what: str) -> int:
    """``value`` as a question count (a whole number in [0, MAX_COUNT]), else one line."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise BadInput(f"{what} is {_shown(value)}, not a count of questions")
    return value


def _shown(value: Any) -> str:
    return plain(repr(value))[:60]


def model_label(data: dict[str, Any]) -> str:
    """``lm-eval NAME``: the ``pretrained`` model (or the lm-eval model type), with its few-shot count if any;
    control characters removed and at most 200 characters (a name shown as plain text)."""
    config: dict[str, Any] = data["config"] if isinstance(data.get("config"), dict) else {}
    args: Any = config.get("model_args") or {}
    if isinstance(args, str):
        args = dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    if not isinstance(args, dict):
        args = {}
    name = str(args.get("pretrained") or args.get("model") or config.get("model") or "model")
    shots_map: dict[str, Any] = data["n-shot"] if isinstance(data.get("n-shot"), dict) else {}
    shots = {v for v in shots_map.values() if isinstance(v, int) and not isinstance(v, bool)}
    few = f" {max(shots)}-shot" if shots and max(shots) > 0 else ""
    return f"lm-eval {plain(name)[:200]}{few}"


def _samples_file(results: Path, task: str) -> Path | None:
    stamp = results.stem.removeprefix("results_")
    path = results.parent / f"samples_{task}_{stamp}.jsonl"
    return path if path.is_file() else None


def _read_samples(path: Path, metric: str, flt: str) -> tuple[np.ndarray, np.ndarray]:
    """The per-question scores of ``metric`` after filter ``flt`` in an lm-eval samples file, and each
    question's procedure (the bootstrap's groups)."""
    values: list[float] = []
    groups: list[str] = []
    name = plain(path.name)
    with path.open("rb") as handle:
        for number, raw in enumerate(iter(lambda: handle.readline(MAX_SAMPLE_LINE + 1), b""), 1):
            where = f"{name}:{number}"
            if len(raw) > MAX_SAMPLE_LINE:
                raise BadInput(f"{where}: a line over {MAX_SAMPLE_LINE // 2**20} MiB")
            if not raw.strip():
                continue
            sample = _load_json(raw.decode("utf-8", errors="replace"), where)
            if not isinstance(sample, dict) or metric not in sample:
                raise BadInput(f"{where}: not an lm-eval sample with {metric!r}")
            if sample.get("filter", flt) != flt:
                continue  # another filter's copy of the question
            values.append(_proportion(sample[metric], f"{where}: {metric}"))
            doc: dict[str, Any] = sample["doc"] if isinstance(sample.get("doc"), dict) else {}
            groups.append(plain(str(doc.get("procedure_id") or doc.get("qid") or sample.get("doc_id")))[:500])
    return np.asarray(values, dtype=np.float64), np.asarray(groups)


def _read_file(path: Path) -> dict[str, Any]:
    """A results file's JSON (size and depth capped), checked to be lm-eval's shape: one line otherwise."""
    name = plain(str(path))
    try:
        size = path.stat().st_size
        if size > MAX_RESULTS_BYTES:
            raise BadInput(f"{name}: over {MAX_RESULTS_BYTES // 2**20} MiB, not an lm-eval results file")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{name}: not an lm-eval results file ({plain(str(exc))[:200]})") from None
    data = _load_json(text, name)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise BadInput(f"{name}: not an lm-eval results file (no 'results')")
    for key in ("configs", "n-samples", "config", "n-shot"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise BadInput(f"{name}: {key!r} is not an object, not an lm-eval results file")
    return data


def _procbench_info(configs: dict[str, Any], task: str) -> dict[str, Any]:
    """``metadata.procbench`` of an exported task's config ({} for a group or a task procbench did not export)."""
    info: Any = configs.get(task)
    for key in ("metadata", "procbench"):
        info = info.get(key) if isinstance(info, dict) else None
    return info if isinstance(info, dict) else {}


def read_lm_eval(
    paths: list[str | Path],
    *,
    metric: str = "acc",
    bootstrap: int = 1000,
    seed: int = 0,
) -> LmEvalRead:
    """Read lm-eval results files (or folders holding them) into scores of exported sets' test splits.

    ``metric`` is the multiple-choice tasks' (``acc`` or ``acc_norm``); the visual tasks' is the one their
    export names (``exact_match`` of the letter). Values must be proportions in [0, 1].

    Raises:
        BadInput: a path that is no results file (or one too large or too deeply nested), a value that is not a
            finite proportion or count, a metric lm-eval did not report.
    """
    if metric not in LM_EVAL_METRICS:
        raise BadInput(f"--lm-eval-metric takes {', '.join(LM_EVAL_METRICS)}, not {plain(metric)[:60]!r}")
    out = LmEvalRead()
    files = [f for p in paths for f in _results_files(Path(p))]
    for number, path in enumerate(files):
        data = _read_file(path)
        configs = data.get("configs") or {}
        label = model_label(data)
        name = plain(path.name)
        sampled = stderr = 0
        read_keys: set[str] = set()
        for task, values in data["results"].items():
            info = _procbench_info(configs, task)
            if not info.get("task"):
                continue  # a group, or a task procbench did not export
            shown = plain(str(task))[:100]
            if not isinstance(values, dict):
                raise BadInput(f"{name}: the results of {shown} are not an object")
            for field_name in ("task", "setting"):
                if not isinstance(info.get(field_name), str):
                    raise BadInput(f"{name}: {shown}'s metadata.procbench.{field_name} is not a string")
            key = str(info.get("metric") or f"{metric},none")
            measure, _, flt = key.partition(",")
            if key not in values:
                out.skipped.append(f"{name}: {shown} has no {plain(key)[:60]}")
                continue
            value = _proportion(values[key], f"{name}: {shown}'s {plain(key)[:60]}")
            read_keys.add(plain(key)[:60])
            samples = _samples_file(path, str(task))
            counts = (data.get("n-samples") or {}).get(task)
            n_reported = (counts.get("effective") if isinstance(counts, dict) else None) or values.get("sample_len")
            n = _count(n_reported, f"{name}: {shown}'s question count") if n_reported is not None else 0
            rng = np.random.default_rng([seed, number, len(out.results)])
            if samples is not None:
                scores, groups = _read_samples(samples, measure, flt or "none")
                n = len(scores)
                value = float(scores.mean()) if n else value
                ci = bootstrap_ci(scores, groups, resamples=bootstrap, rng=rng)
                method = "bootstrap"
                sampled += 1
            else:
                err = values.get(f"{measure}_stderr,{flt or 'none'}")
                ci = None
                if err is not None and err != "N/A" and bootstrap > 0:
                    se = _proportion(err, f"{name}: {shown}'s standard error")
                    ci = (max(0.0, value - Z95 * se), min(1.0, value + Z95 * se))
                method = "stderr"
                stderr += 1
            task_name, setting = plain(info["task"])[:100], plain(info["setting"])[:200]
            out.results.append(
                LmEvalScore(
                    model=label if info.get("context", True) else f"{label} (no context)",
                    qset=f"{task_name}/{setting}",
                    split="test",
                    metric=_METRIC_OF_FAMILY.get(task_family(task_name), "accuracy"),
                    value=value,
                    ci=ci,
                    n=n,
                    task=task_name,
                    setting=setting,
                    ci_method=method,
                    source=str(path),
                    qset_path=str(info["qset"]) if isinstance(info.get("qset"), str) else None,
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
            out.notes.append(f"{label} ({name}, {', '.join(sorted(read_keys))}): " + "; ".join(how))
        else:
            out.skipped.append(f"{plain(str(path))}: no task exported by `procbench export --format lm-eval`")
    return out
