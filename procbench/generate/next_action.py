"""Next action (paper 002's tuples as a question task): pick the action that comes after step k.

A question shows the action tuples of up to 3 consecutive steps of a procedure (rendered as text, e.g.
``fry bacon with heated skillet``) followed by ``@placeholder``; ``context`` lists the steps up to and
including the last one shown (models read their texts), never the answer's step or a later one. The 4
``choices`` are the action of the next step and 3 actions of steps of other procedures of the same split.
A step's action is its first in-lexicon tuple from ``procbench extract`` (``actions.parquet``); embedded
as the ``action`` field by ``procbench embed --fields action``.

The negatives come from the textual-cloze machinery (:func:`procbench.generate.textual.build`
with ``items="action"``, ``last=True``), so the settings are the same: ``recipeqa`` (random actions beyond
a fixed distance), ``default`` (paper 004: far kNN candidates of the answer's action), ``debias`` (Algorithm
1's budgeted clusters, ``--budget B|auto``) and ``adversarial`` (adversarial filtering against the
cross-fitted shortcut ensemble). ``meta`` is textual cloze's plus ``choice_tuples`` (``[verb, arg, ...]``
per choice, in choice order).
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
    """Next-action questions for each setting (``recipeqa``, ``default``, ``debias``, ``adversarial``).

    The options are textual cloze's but the items (:class:`~procbench.generate.options.NextActionOptions`), and
    so is the driver (:func:`procbench.generate.textual.build`).

    Raises:
        BadInput: no ``action`` embeddings (run ``procbench extract``, then ``procbench embed --fields action``).
    """
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
