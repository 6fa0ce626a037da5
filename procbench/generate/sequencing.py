"""Sequencing (paper 000): up to five consecutive steps of a procedure shuffled in ``question`` (step keys); the
``choices`` are the acceptable orders (the authored one, the answer 0, then any references); ``meta.modality`` says
whether the steps carry text, images or both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from procbench.card.setting_report import SettingReport
from procbench.errors import BadInput
from procbench.generate import policy
from procbench.generate.options import SequencingOptions
from procbench.generate.settings import Setting
from procbench.progress import SILENT, Progress
from procbench.qsets.questions import Question
from procbench.rng import stream
from procbench.store import Store
from procbench.store.views import kept_steps

__all__ = ["SWEEP", "build", "read_references"]

SWEEP = [Setting("default")]


#: Sequencing's shuffles.
_SEQUENCING = stream("sequencing")


def read_references(path: str | Path) -> dict[str, list[list[int]]]:
    """Alternative orders per procedure from JSONL lines ``{"procedure_id": ..., "orders": [[0, 2, 1, ...]]}``."""
    path = Path(path)
    if not path.is_file():
        raise BadInput(f"no such references file: {path}")
    out: dict[str, list[list[int]]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            orders = [[int(i) for i in order] for order in record["orders"]]
            out.setdefault(str(record["procedure_id"]), []).extend(orders)
        except (ValueError, KeyError, TypeError) as exc:
            raise BadInput(f"{path}:{number}: expected {{'procedure_id': ..., 'orders': [[...]]}} ({exc})") from exc
    return out


def build(
    store: Store, settings: list[Setting], options: SequencingOptions | None = None, *, progress: Progress = SILENT
) -> tuple[dict[str, list[Question]], dict[str, Any]]:
    """One sequencing question per procedure with at least ``options.min_steps`` steps (a window of up to 5),
    the ``options.references`` orders as further acceptable choices."""
    options = options or SequencingOptions()
    for setting in settings:
        if setting.style != "default":
            raise BadInput("sequencing has a single setting; drop --style/--knobs/--debias")
    references, min_steps = options.references or {}, options.min_steps
    stored = {row["id"] for row in store.table("images", ["id", "stored"]).to_pylist() if row["stored"]}
    steps = kept_steps(store, ["procedure_id", "index", "image_ids"]).to_pylist()
    by_procedure: dict[str, list[dict[str, Any]]] = {}
    for row in steps:
        by_procedure.setdefault(row["procedure_id"], []).append(row)
    rng = _SEQUENCING.rng(options.seed)
    questions: list[Question] = []
    skipped = 0
    progress.start("sequencing", total=len(by_procedure))
    for pid in sorted(by_procedure):
        progress.advance()
        rows = by_procedure[pid]
        if len(rows) < min_steps:
            skipped += 1
            continue
        most = policy.current().SEQUENCE_STEPS
        start = int(rng.integers(0, len(rows) - most + 1)) if len(rows) > most else 0
        window = rows[start : start + most]
        keys = [f"{pid}#{r['index']}" for r in window]
        shuffled = _derangement_free_shuffle(len(keys), rng)
        alternatives = []
        for order in references.get(pid, []):
            indices = [start + i for i in order]
            if sorted(indices) == [r["index"] for r in window]:
                alternatives.append([f"{pid}#{i}" for i in indices])
        has_images = all(any(i in stored for i in r["image_ids"]) for r in window)
        meta = {"setting": "default", "window_start": start, "n_steps": len(keys)}
        meta.update(modality="both" if has_images else "text", n_references=1 + len(alternatives))
        questions.append(Question(pid, [], [keys[i] for i in shuffled], [keys, *alternatives], 0, meta))
    report = SettingReport(questions=len(questions), skipped_procedures={"step_count": skipped})
    return {"default": questions}, {"per_setting": {"default": report}}


def _derangement_free_shuffle(n: int, rng: np.random.Generator) -> list[int]:
    """A permutation of ``range(n)`` that is not the identity (the shuffled input never equals the answer)."""
    while True:
        order = [int(i) for i in rng.permutation(n)]
        if order != list(range(n)) or n < 2:
            return order
