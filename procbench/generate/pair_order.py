"""Pair order (paper 003, WikiOrder): are the two step keys of ``question`` in authored order? ``choices`` are
``["inverted", "in order"]``, ``answer`` the label (1 in authored order), balanced exactly 50/50."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from procbench.card.setting_report import SettingReport
from procbench.errors import BadInput
from procbench.generate.options import PairOrderOptions
from procbench.generate.settings import Setting
from procbench.progress import SILENT, Progress
from procbench.qsets.questions import Question
from procbench.rng import stream
from procbench.store import Store
from procbench.store.views import kept_procedures, kept_steps

__all__ = ["CHOICES", "SWEEP", "build"]

SWEEP = [Setting("default")]
CHOICES = ["inverted", "in order"]


#: Pair order's pairs and labels.
_PAIRS = stream("pair-order")


def build(
    store: Store, settings: list[Setting], options: PairOrderOptions | None = None, *, progress: Progress = SILENT
) -> tuple[dict[str, list[Question]], dict[str, Any]]:
    """Up to ``options.pairs_per_procedure`` distinct step pairs per procedure (consecutive steps if
    ``options.adjacent``)."""
    options = options or PairOrderOptions()
    for setting in settings:
        if setting.style != "default":
            raise BadInput("pair-order has a single setting; drop --style/--knobs/--debias")
    pairs_per_procedure, adjacent = options.pairs_per_procedure, options.adjacent
    counts_per_procedure = Counter(row["procedure_id"] for row in kept_steps(store, ["procedure_id"]).to_pylist())
    roots = {p["id"]: (p["category"] or ["(none)"])[0] for p in kept_procedures(store, ["id", "category"]).to_pylist()}
    rng = _PAIRS.rng(options.seed)
    pairs: list[tuple[str, int, int]] = []
    progress.start("pair-order", total=len(counts_per_procedure))
    for pid in sorted(counts_per_procedure):
        progress.advance()
        n = counts_per_procedure[pid]
        if n < 2:
            continue
        candidates = (
            [(i, i + 1) for i in range(n - 1)] if adjacent else [(i, j) for i in range(n) for j in range(i + 1, n)]
        )
        chosen = rng.choice(len(candidates), size=min(pairs_per_procedure, len(candidates)), replace=False)
        pairs.extend((pid, *candidates[int(c)]) for c in sorted(chosen))
    labels = rng.permutation(np.resize([0, 1], len(pairs)))
    questions = []
    for (pid, i, j), label in zip(pairs, labels, strict=True):
        first, second = (i, j) if label == 1 else (j, i)
        meta = {"setting": "default", "gap": j - i, "category": roots.get(pid, "(none)")}
        questions.append(Question(pid, [], [f"{pid}#{first}", f"{pid}#{second}"], list(CHOICES), int(label), meta))
    per_category = Counter(q.meta["category"] for q in questions)
    report = SettingReport(questions=len(questions), procedures=len({pid for pid, _, _ in pairs}))
    counts = {"per_category": dict(sorted(per_category.items())), "per_setting": {"default": report}}
    return {"default": questions}, counts
