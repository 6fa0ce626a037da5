"""The baseline models procbench can train or apply, and which tasks each one answers (DESIGN §8)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from procbench.errors import BadInput

__all__ = ["FAMILIES", "MC_TASKS", "MODELS", "TASKS", "ModelSpec", "get_model", "task_family"]

#: Multiple-choice tasks: choices are items (or orders of items), answer indexes them.
MC_TASKS = ("textual-cloze", "visual-cloze", "visual-coherence", "visual-ordering")
TASKS = (*MC_TASKS, "sequencing", "pair-order")
#: Task -> family: how a question is featurised, trained on and scored.
FAMILIES = {**{t: "mc" for t in MC_TASKS}, "sequencing": "sequencing", "pair-order": "pair-order"}


def task_family(task: str) -> str:
    """``mc``, ``sequencing`` or ``pair-order``; an unknown task is a :class:`BadInput`."""
    if task not in FAMILIES:
        raise BadInput(f"unknown task {task!r}; models know: {', '.join(TASKS)}")
    return FAMILIES[task]


@dataclass(frozen=True)
class ModelSpec:
    """A registered model: whether it is trained, which task families it answers, one line on what it is."""

    name: str
    trained: bool
    families: tuple[str, ...]
    summary: str

    def check_task(self, task: str) -> None:
        """Raise :class:`BadInput` unless the model answers ``task``."""
        if task_family(task) not in self.families:
            tasks = [t for t in TASKS if FAMILIES[t] in self.families]
            kind = "multiple-choice questions" if self.families == ("mc",) else ", ".join(tasks)
            raise BadInput(f"model {self.name} does not answer {task} questions; it answers {kind}")


_ALL = ("mc", "sequencing", "pair-order")

MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in [
        ModelSpec("chance", False, _ALL, "expected score of a uniform random answer (exact, not sampled)"),
        ModelSpec(
            "distance-svm",
            False,
            ("mc",),
            "paper 001's bias probe: an SVM on each choice's distance to the question, no context",
        ),
        ModelSpec("hasty-choice-only", True, ("mc",), "paper 004: BiLSTM over each choice, linear score"),
        ModelSpec("hasty", True, ("mc",), "paper 004: distance between BiLSTM-encoded question and choice"),
        ModelSpec(
            "impatient-reader",
            True,
            ("mc",),
            "recurrent attention over the context per question item, cosine to each choice",
        ),
        ModelSpec("bidaf", True, ("mc",), "bi-directional attention flow between context and each filled query"),
        ModelSpec(
            "htrn",
            True,
            ("mc",),
            "paper 001: [CLS] context [SEP] query through a shallow transformer trained from scratch",
        ),
        ModelSpec("pair-order", True, ("pair-order",), "paper 003: linear head over two steps' concatenated features"),
        ModelSpec("pairwise-sort", True, ("sequencing",), "the pair-order head on every pair, items sorted by wins"),
        ModelSpec(
            "order-pointer",
            True,
            ("sequencing",),
            "pointer-network decoder over a self-attention encoding of the steps (BERSON in spirit)",
        ),
    ]
}


def get_model(name: str) -> ModelSpec:
    """The spec of ``name``; an unknown name is a :class:`BadInput` that suggests the closest ones."""
    if name in MODELS:
        return MODELS[name]
    close = difflib.get_close_matches(name, MODELS, n=2)
    hint = f" Did you mean {' or '.join(close)}?" if close else ""
    raise BadInput(f"unknown model {name!r}; available: {', '.join(MODELS)}.{hint}")
