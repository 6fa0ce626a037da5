"""What a visual task is to the driver (:mod:`.driver`): its constants and hooks, and what the hooks see."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from procbench.generate.visual.bands import Candidates
from procbench.generate.visual.closeness import Closeness
from procbench.generate.visual.columns import QuestionColumns, Ragged, TableParts
from procbench.generate.visual.dealer import Classed, Dealt
from procbench.generate.visual.plans import Plan
from procbench.generate.visual.selection import Selection
from procbench.generate.visual.sequences import Sequences, VisualData
from procbench.generate.visual.settings import VisualSetting

if TYPE_CHECKING:
    from procbench.generate.recipes import Recipe
    from procbench.tells import Tell

__all__ = ["Draw", "Items", "VisualTask", "Window"]

W = TypeVar("W", bound="Window")


@dataclass
class Items:
    """The questions of one plan that fall in a chunk of procedures, as K1 planning chose them."""

    proc: np.ndarray  # (B,)
    rows: np.ndarray  # (B, size) image rows of the question's steps, in authored order
    steps: np.ndarray  # (B, size) their step indices
    anchor: np.ndarray  # (B,) the anchor's slot (a cloze question's answer)
    columns: dict[str, np.ndarray]  # proc and what K1 planning decided
    ragged: Ragged  # removed_steps

    @classmethod
    def of(cls, plan: Plan, start: int, stop: int, seqs: Sequences) -> Items:
        """The questions of ``plan`` for procedures ``[start, stop)``."""
        idx = plan.window(start, stop)
        proc = plan.proc[idx]
        seq = seqs.offsets[proc][:, None] + plan.slots[idx]
        planned = {"n_steps": seqs.lengths[proc], "budget": plan.budget[idx], "question_number": plan.number[idx]}
        columns = {"proc": proc, **planned, "pool_size": plan.pool[idx]}
        ragged = {"removed_steps": plan.removed_steps(seqs, idx)}
        return cls(proc, seqs.rows[seq], seqs.steps[seq], plan.anchor[idx], columns, ragged)


def _empty() -> np.ndarray:
    return np.zeros(0)


@dataclass(kw_only=True)
class Window:
    """A task's questions of one plan in a chunk: what the driver needs, and the columns they all share."""

    proc: np.ndarray  # (B,)
    columns: dict[str, np.ndarray]  # (B, ...) shared by every setting of the plan
    ragged: Ragged
    # a task with neighbours sets these (empty: none)
    anchors: np.ndarray = field(default_factory=_empty)  # (B, r) rows whose neighbours are the K2 candidates
    point: np.ndarray = field(default_factory=_empty)  # (B, D): K3 wants a negative closer to it than radius (B,)
    radius: np.ndarray = field(default_factory=_empty)

    def __len__(self) -> int:
        return len(self.proc)


@dataclass
class Draw:
    """What one setting drew for one window, as the task's ``add`` hook receives it."""

    setting: VisualSetting
    data: VisualData
    rng: np.random.Generator  # the setting's stream
    tally: Counter[str]  # its counts
    rows: np.ndarray = field(default_factory=_empty)  # (B, need) negative images, -1: none (empty: no neighbours)
    selection: Selection | None = None  # knob settings: the draw and the K2 candidates it drew from
    candidates: Candidates | None = None
    farthest: np.ndarray | None = None  # RecipeQA style: (B,) the farthest drawn were taken
    min_distance: float = 0.0  # RecipeQA style's fixed distance
    dealt: Dealt | None = None  # K3=2: what the dealer did


@dataclass(frozen=True)
class VisualTask(Generic[W]):
    """A visual task: its constants and hooks (DEVELOPERS.md), run by :func:`.driver.run`."""

    name: str
    code: int  # seed component of the task's random streams
    size: int  # sequence steps per question
    default_knobs: tuple[int, int, int]
    with_k3: bool
    anchored: bool  # whether the anchor tells two freely resampled questions apart
    need: int  # negative images per question (0: no neighbour search; add draws its own)
    window: Callable[[Items, VisualData], W]  # a plan's questions in a chunk
    add: Callable[[QuestionColumns, W, Draw], None]  # a setting's kept questions of a window, to out
    table: Callable[[QuestionColumns, VisualData, np.random.Generator], TableParts]  # but the meta head
    # K3=2 and adversarial's start: the candidates classed by the recipe's tells, which the dealer deals
    rank_rule: Callable[[W, Candidates, Closeness, VisualData, list[Tell], Recipe], Classed] | None = None
    # filter a setting's negatives in place; returns replacements (Q,), the questions kept (Q,) and a summary
    adversarial: Callable[..., tuple[np.ndarray, np.ndarray, dict[str, Any]]] | None = None
