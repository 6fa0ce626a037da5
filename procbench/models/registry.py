"""The baseline models procbench can train or apply, and which tasks each one answers (DESIGN §8).

A model is a :class:`ModelSpec` in :data:`MODELS`; a trained one names its network's factory
(``"module:function"``, ``factory(dims, hyperparameters) -> Net``), imported only when a network is built.
"""

from __future__ import annotations

from dataclasses import dataclass

from procbench.errors import BadInput
from procbench.registry import Registry
from procbench.tasks import FAMILIES, TASKS, get_task

__all__ = ["MODELS", "REFERENCE_MODELS", "ModelSpec", "get_model", "task_family"]


def task_family(task: str) -> str:
    """``mc``, ``sequencing`` or ``pair-order`` (the task's :class:`~procbench.tasks.TaskSpec`); an unknown task
    is a :class:`BadInput`."""
    return get_task(task).family


@dataclass(frozen=True)
class ModelSpec:
    """A registered model: which task families it answers, one line on what it is, and (trained models) the
    factory of its network."""

    name: str
    families: tuple[str, ...]
    summary: str
    factory: str | None = None  # "module:function" building the network; None: not trained
    tasks: tuple[str, ...] | None = None  # the tasks it answers, when not every task of its families

    def answers(self, task: str) -> bool:
        """Whether the model answers ``task``'s questions."""
        return task_family(task) in self.families and (self.tasks is None or task in self.tasks)

    @property
    def trained(self) -> bool:
        """Whether the model is trained (it has a network)."""
        return self.factory is not None

    def check_task(self, task: str) -> None:
        """Raise :class:`BadInput` unless the model answers ``task``."""
        if not self.answers(task):
            tasks = [t.name for t in TASKS.values() if self.answers(t.name)]
            kind = "multiple-choice questions" if self.families == ("mc",) and self.tasks is None else ", ".join(tasks)
            raise BadInput(f"model {self.name} does not answer {task} questions; it answers {kind}")


_NETS = "procbench.models.nets"
#: Multiple-choice tasks whose choices are text: what the zero-shot context readers compare with step texts.
_TEXT_ITEM_TASKS = tuple(t.name for t in TASKS.values() if t.family == "mc" and t.kind.items == "text")

#: Model name -> spec, in the order models are listed.
MODELS: Registry[ModelSpec] = Registry("model")

for _spec in (
    ModelSpec("chance", FAMILIES, "expected score of a uniform random answer (exact, not sampled)"),
    ModelSpec(
        "distance-svm", ("mc",), "paper 001's bias probe: an SVM on each choice's distance to the question, no context"
    ),
    ModelSpec(
        "context-tfidf",
        ("mc",),
        "zero-shot context reader: TF-IDF cosine of each choice with the context step it explains best",
        tasks=_TEXT_ITEM_TASKS,
    ),
    ModelSpec(
        "context-embedding",
        ("mc",),
        "zero-shot context reader: embedding cosine of each choice with the context step it explains best",
        tasks=_TEXT_ITEM_TASKS,
    ),
    ModelSpec(
        "context-ridge",
        ("mc",),
        "context reader for photo choices: a ridge map from step texts to photos, fitted on the train split",
        tasks=("visual-cloze", "visual-coherence"),
    ),
    ModelSpec(
        "hasty-choice-only", ("mc",), "paper 004: BiLSTM over each choice, linear score", f"{_NETS}:hasty_choice_only"
    ),
    ModelSpec("hasty", ("mc",), "paper 004: distance between BiLSTM-encoded question and choice", f"{_NETS}:hasty"),
    ModelSpec(
        "impatient-reader",
        ("mc",),
        "recurrent attention over the context per question item, cosine to each choice",
        f"{_NETS}:impatient_reader",
    ),
    ModelSpec(
        "bidaf", ("mc",), "bi-directional attention flow between context and each filled query", f"{_NETS}:bidaf"
    ),
    ModelSpec(
        "htrn",
        ("mc",),
        "paper 001: [CLS] context [SEP] query through a shallow transformer trained from scratch",
        f"{_NETS}:htrn",
    ),
    ModelSpec(
        "pair-order",
        ("pair-order",),
        "paper 003: linear head over two steps' concatenated features",
        f"{_NETS}:pair_order",
    ),
    ModelSpec(
        "pairwise-sort",
        ("sequencing",),
        "the pair-order head on every pair, items sorted by wins",
        f"{_NETS}:pairwise_sort",
    ),
    ModelSpec(
        "order-pointer",
        ("sequencing",),
        "pointer-network decoder over a self-attention encoding of the steps (BERSON in spirit)",
        f"{_NETS}:order_pointer",
    ),
):
    MODELS.add(_spec.name, _spec)


#: The untrained references ``evaluate --model`` scores (trained models are scored through their runs).
REFERENCE_MODELS = tuple(name for name, spec in MODELS.items() if not spec.trained)


def get_model(name: str) -> ModelSpec:
    """The spec of ``name``; an unknown name is a :class:`BadInput` that suggests the closest ones."""
    return MODELS.get(name)
