"""Next action (paper 002's tuples as a question task): the action tuples of up to 3 consecutive steps (e.g. ``fry
bacon with heated skillet``), then ``@placeholder``; the choices are the next step's action and 3 of other procedures
of its split, drawn by textual cloze's settings (``items="action"``, ``last=True``); ``meta`` adds ``choice_tuples``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from procbench.generate.options import NextActionOptions
from procbench.generate.settings import Setting
from procbench.generate.textual import SWEEP as _CLOZE_SWEEP
from procbench.generate.textual import build as build_textual
from procbench.progress import SILENT, Progress
from procbench.qsets.questions import Question
from procbench.store import Store

__all__ = ["SWEEP", "build"]

#: textual cloze's settings but needs-context (its question is the blank alone; next-action's shows the steps before)
SWEEP = [s for s in _CLOZE_SWEEP if s.style != "needs-context"]


def build(
    store: Store,
    settings: list[Setting],
    options: NextActionOptions | None = None,
    *,
    progress: Progress = SILENT,
    splits: Mapping[str, str] | None = None,
) -> tuple[dict[str, list[Question]], dict[str, Any]]:
    """Next-action questions for each setting, through textual cloze's driver (BadInput: no ``action`` embeddings)."""
    from procbench.extract.pipeline import step_actions

    sets, counts = build_textual(store, settings, options or NextActionOptions(), progress=progress, splits=splits)
    actions = step_actions(store)
    tuples = {
        key: [verb, *arguments]
        for key, verb, arguments in zip(
            actions["key"].to_pylist(), actions["verb"].to_pylist(), actions["arguments"].to_pylist(), strict=True
        )
    }
    for questions in sets.values():
        for question in questions:
            question.meta["choice_tuples"] = [tuples.get(key) for key in question.meta["choice_keys"]]
    return sets, counts
