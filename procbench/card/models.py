"""Model rows of a question set: what ``procbench evaluate`` scored on its test split, kept beside the set
(``SET/models.json``) and shown by the dataset card.

``models.json`` is ``{"models": {LABEL: {METRIC: {"value", "ci", "n", "interval", "source", "set_written"}}}}``
where ``interval`` says how ``ci`` was made (``bootstrap``: resampling procedures; ``stderr``: lm-eval's
reported standard error, normal approximation) and ``set_written`` when the set's split files were written:
a row recorded on an earlier version of the set (``generate --overwrite`` since) is not the set's row.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from procbench.card.escape import md_code, md_text

__all__ = ["MODELS_FILE", "models_section", "read_model_rows", "record_model_rows"]

MODELS_FILE = "models.json"

_SPLITS = ("train", "val", "test")


def _written(folder: Path) -> float:
    times = [(folder / f"{s}.parquet").stat().st_mtime for s in _SPLITS if (folder / f"{s}.parquet").is_file()]
    return max(times, default=0.0)


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    models = data.get("models") if isinstance(data, dict) else None
    return models if isinstance(models, dict) else {}


def record_model_rows(folder: str | Path, rows: dict[str, dict[str, dict[str, Any]]]) -> Path:
    """Merge ``{label: {metric: {...}}}`` into ``folder/models.json`` (a label's metrics replace its earlier
    ones) atomically; returns the file."""
    folder = Path(folder)
    path = folder / MODELS_FILE
    written = _written(folder)
    models = _load(path)
    for label, metrics in rows.items():
        models[label] = {metric: {**entry, "set_written": written} for metric, entry in metrics.items()}
    handle, tmp = tempfile.mkstemp(dir=folder, prefix=".models-", suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump({"models": models}, out, indent=2, sort_keys=True)
    os.chmod(tmp, 0o644)  # as the set's other files (mkstemp makes it private)
    os.replace(tmp, path)
    return path


def read_model_rows(folder: str | Path) -> dict[str, dict[str, dict[str, Any]]]:
    """The rows recorded for the set in ``folder`` as it is now (rows of an earlier version left out)."""
    folder = Path(folder)
    written = _written(folder)
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for label, metrics in _load(folder / MODELS_FILE).items():
        if not isinstance(metrics, dict):
            continue
        current = {
            m: e
            for m, e in metrics.items()
            if isinstance(e, dict) and abs(float(e.get("set_written", -1.0)) - written) < 1e-6
        }
        if current:
            rows[label] = current
    return rows


def _cell(entry: dict[str, Any] | None, percent: bool) -> str:
    if not entry or entry.get("value") is None:
        return "-"
    scale, digits = (100.0, 1) if percent else (1.0, 2)
    text = f"{scale * entry['value']:.{digits}f}"
    ci = entry.get("ci")
    if ci and None not in ci:
        text += f" [{scale * ci[0]:.{digits}f}, {scale * ci[1]:.{digits}f}]"
    if entry.get("interval") == "stderr":
        text += "*"
    return text


#: The metric a card shows per task family (the first recorded one otherwise), and whether it is a percentage.
_MAIN = (("accuracy", True), ("pmr", True), ("acc", True))


def models_section(sets: list[Any]) -> list[str]:
    """The card's "Models" section: per task, models as rows and the sets as columns (test split), value
    [95% interval]; empty when no set has model rows. ``sets`` are :class:`procbench.card.CardSet`."""
    scored = [s for s in sets if getattr(s, "models", None)]
    if not scored:
        return []
    lines = [
        "## Models",
        "",
        "Test-split scores that `procbench evaluate` recorded (baselines, reference models, and language models "
        "through `procbench export --format lm-eval` then `procbench evaluate --lm-eval`): value [95% interval]. "
        "Intervals resample procedures (bootstrap); * marks an interval from lm-eval's reported standard error "
        "(its per-question log was not given).",
        "",
    ]
    for task in dict.fromkeys(s.task for s in scored):
        task_sets = [s for s in sets if s.task == task]
        metrics = [m for s in task_sets for row in (s.models or {}).values() for m in row]
        metric, percent = next(((m, p) for m, p in _MAIN if m in metrics), (metrics[0], False))
        labels = list(dict.fromkeys(label for s in task_sets for label in (s.models or {})))
        unit = " %" if percent else ""
        lines += [
            f"### {md_text(task)} · {md_text(metric)}{unit}",
            "",
            "| model | " + " | ".join(f"`{md_code(s.config_name or s.setting)}`" for s in task_sets) + " |",
            "|---|" + "---|" * len(task_sets),
        ]
        for label in labels:
            cells = [_cell((s.models or {}).get(label, {}).get(metric), percent) for s in task_sets]
            lines.append(f"| {md_text(label)} | " + " | ".join(cells) + " |")  # a label is anyone's text
        lines.append("")
    return lines
