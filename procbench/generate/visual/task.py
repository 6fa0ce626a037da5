"""What a visual task is to the driver (:mod:`.driver`): its constants and hooks, and what the hooks see."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import pyarrow as pa

from procbench.generate.visual.bands import Candidates
from procbench.generate.visual.closeness import Closeness
from procbench.generate.visual.columns import QuestionColumns, planned_columns
from procbench.generate.visual.dealer import Classed, Dealt
from procbench.generate.visual.plans import Plan
from procbench.generate.visual.selection import Selection
from procbench.generate.visual.sequences import Sequences, VisualData
from procbench.generate.visual.settings import VisualSetting

if TYPE_CHECKING:
    from procbench.generate.recipes import Recipe
    from procbench.tells import Tell

__all__ = ["Draw", "Items", "TableParts", "VisualTask", "Window"]

W = TypeVar("W", bound="Window")


@dataclass
class Items:
    """The questions of one plan that fall in a chunk of procedures, as K1 planning chose them.

    Attributes:
        proc: ``(B,)`` procedure of each question.
        rows: ``(B, size)`` image rows of the question's sequence steps, in authored order.
        steps: ``(B, size)`` their step indices.
        anchor: ``(B,)`` the slot of the anchor (the answer of a cloze question).
        columns: ``proc`` and the planning columns every setting of the plan shares (:func:`planned_columns`).
        ragged: ``removed_steps``.
    """

    proc: np.ndarray
    rows: np.ndarray
    steps: np.ndarray
    anchor: np.ndarray
    columns: dict[str, np.ndarray]
    ragged: dict[str, tuple[np.ndarray, np.ndarray]]

    @classmethod
    def of(cls, plan: Plan, start: int, stop: int, seqs: Sequences) -> Items:
        """The questions of ``plan`` for procedures ``[start, stop)``."""
        idx = plan.window(start, stop)
        proc = plan.proc[idx]
        seq = seqs.offsets[proc][:, None] + plan.slots[idx]
        planned, ragged = planned_columns(plan, seqs, idx)
        return cls(proc, seqs.rows[seq], seqs.steps[seq], plan.anchor[idx], {"proc": proc, **planned}, ragged)


@dataclass(kw_only=True)
class Window:
    """A task's questions of one plan in a chunk: what the driver needs, and the columns they all share.

    Attributes:
        proc: ``(B,)`` procedure of each question.
        columns: ``(B, ...)`` columns every setting of the plan shares (``proc`` among them).
        ragged: ragged columns as :meth:`QuestionColumns.add` takes them.
        anchors: ``(B, r)`` image rows whose nearest images of other procedures are the K2 candidates (the
            union, for ``r > 1``) and from which RecipeQA-style negatives must be far (None without neighbours).
        point, radius: ``(B, D)`` and ``(B,)``: K3 wants a negative closer to ``point`` than ``radius``.
    """

    proc: np.ndarray
    columns: dict[str, np.ndarray]
    ragged: dict[str, tuple[np.ndarray, np.ndarray]]
    anchors: np.ndarray | None = None
    point: np.ndarray | None = None
    radius: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.proc)

    def anchor_rows(self) -> np.ndarray:
        """:attr:`anchors`, which a task with neighbours sets."""
        if self.anchors is None:  # pragma: no cover - a programming error in a task
            raise TypeError("a visual task that searches neighbours must set its windows' anchors")
        return self.anchors

    def k3(self) -> tuple[np.ndarray, np.ndarray]:
        """``(point, radius)``, which a task with K3 sets."""
        if self.point is None or self.radius is None:  # pragma: no cover - a programming error in a task
            raise TypeError("a visual task with K3 must set its windows' point and radius")
        return self.point, self.radius


@dataclass
class Draw:
    """What one setting drew for one window, as the task's ``add`` hook receives it.

    Attributes:
        setting: the setting; ``rng`` its random stream (for tasks that draw their own negatives) and
            ``tally`` its counts.
        rows: ``(B, need)`` the negative images, -1 where none (None for tasks without neighbours).
        selection, candidates: knob settings: the draw (:func:`select`) and the K2 candidates it drew from.
        dealt: K3=2: what the dealer did (:class:`.dealer.Dealt`).
        farthest: RecipeQA style: ``(B,)`` whether too few images lay beyond ``min_distance`` (the farthest
            drawn were taken).
        min_distance: the RecipeQA style's fixed distance.
    """

    setting: VisualSetting
    data: VisualData
    rng: np.random.Generator
    tally: Counter[str]
    rows: np.ndarray | None = None
    selection: Selection | None = None
    candidates: Candidates | None = None
    farthest: np.ndarray | None = None
    min_distance: float = 0.0
    dealt: Dealt | None = None

    def negatives(self) -> np.ndarray:
        """:attr:`rows`, which tasks with neighbours get."""
        if self.rows is None:  # pragma: no cover - a programming error in a task
            raise TypeError("a visual task without neighbours has no negative images drawn for it")
        return self.rows


@dataclass
class TableParts:
    """A task's part of a question table: ``question``, ``choices``, ``answer`` and ``meta`` after the head."""

    question: pa.Array
    choices: pa.Array
    answer: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VisualTask(Generic[W]):
    """A visual task: its constants and hooks (see the module docstring), run by :func:`run`.

    Attributes:
        name: task name (``procbench generate --task``).
        code: seed component that keeps the task's random streams apart from other tasks'.
        size: sequence steps per question (slots of a plan).
        default_knobs: the knobs of ``Setting("default")``.
        with_k3: whether the task has K3 (question closeness).
        anchored: whether the anchor tells two freely resampled questions apart (a cloze placeholder).
        need: negative images per question (0: the task searches no neighbours and draws its own negatives).
        window: ``window(items, data)``, the task's window of a plan's questions in a chunk.
        add: ``add(out, window, draw)``, add the questions of the window that the draw keeps to ``out``.
        table: ``table(cols, data, rng)``, a setting's (non-empty) question table but for the ``meta`` head.
        rank_rule: ``rank_rule(window, candidates, closeness, data, tells, recipe)``: the candidates classed by the
            recipe's tells (:func:`.dealer.tell_classes`), which :func:`.dealer.draw` deals (K3=2 and
            ``adversarial``'s start); tasks without K3 leave it None.
        adversarial: ``adversarial(cols, data, seed=, progress=, options=)``, adversarial filtering of a setting's
            negatives in place (:mod:`.adversarial`), returning its summary; None: no ``adversarial`` setting.
    """

    name: str
    code: int
    size: int
    default_knobs: tuple[int, int, int]
    with_k3: bool
    anchored: bool
    need: int
    window: Callable[[Items, VisualData], W]
    add: Callable[[QuestionColumns, W, Draw], None]
    table: Callable[[QuestionColumns, VisualData, np.random.Generator], TableParts]
    rank_rule: Callable[[W, Candidates, Closeness, VisualData, list[Tell], Recipe], Classed] | None = None
    adversarial: Callable[..., dict[str, Any]] | None = None


# -- the driver -------------------------------------------------------------------------------------------
