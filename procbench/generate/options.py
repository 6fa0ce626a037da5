"""Options of ``generate``: one frozen class per task (as :class:`procbench.clean.options.CleanOptions`).

Every field has its default here and is checked when the object is made (bad value: a one-line
:class:`~procbench.errors.BadInput`); it is set by ``--NAME`` or a manifest's ``[generate.TASK]`` section
(:mod:`procbench.manifest`). :meth:`GenerateOptions.record` (a set's ``options.json``) names only the split and
the options not at their default, so a set's fingerprint does not move when an option is added.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from procbench.errors import BadInput
from procbench.generate.adversarial.policy import IMAGE_POLICY, MIN_YIELD
from procbench.generate.base_options import MAX_SEED, AdversarialOptions, GenerateOptions, check_distance, integer
from procbench.generate.policy import Policy
from procbench.tasks import TEXTUAL_ITEMS

if TYPE_CHECKING:
    from procbench.generate.settings import Setting

__all__ = [
    "MAX_SEED",
    "MIN_YIELD",
    "TASK_OPTIONS",
    "GenerateOptions",
    "NextActionOptions",
    "PairOrderOptions",
    "SequencingOptions",
    "TextualClozeOptions",
    "VisualClozeOptions",
    "VisualCoherenceOptions",
    "VisualOrderingOptions",
    "options_class",
    "task_options",
]

#: The textual samplers' neighbours of the answer (paper 004: 100) and the visual tasks' K_C (paper 001: 100).
KNN_K = Policy().KNN_K
KC = Policy().KC
#: Textual cloze's negatives per question (``knn_k`` must be above it).
_NEGATIVES = 3


@dataclass(frozen=True)
class _TextualSamplers(AdversarialOptions):
    """The textual samplers' options: ``clusters`` for ``--debias`` (None: about the square root of the distinct
    titles, at most 100), ``questions_per_procedure`` (distinct answers but in RecipeQA style), ``knn_k`` neighbours
    of the answer (default and debias) and RecipeQA style's ``min_distance`` (None: median of random item pairs)."""

    clusters: int | None = None
    questions_per_procedure: int = 1
    knn_k: int = KNN_K
    min_distance: float | None = None

    def _check(self) -> None:
        super()._check()
        if self.clusters is not None:
            integer("clusters", self.clusters, 1)
        integer("questions_per_procedure", self.questions_per_procedure, 1)
        integer("knn_k", self.knn_k, _NEGATIVES + 1)
        check_distance(self)

    def check(self, settings: Sequence[Setting]) -> None:
        super().check(settings)
        if self.clusters is not None and not any(s.style == "debias" for s in settings):
            raise BadInput("--clusters applies only with --debias (or --sweep)")


@dataclass(frozen=True)
class TextualClozeOptions(_TextualSamplers):
    """Textual cloze (:mod:`procbench.generate.textual`); ``items``: ``title``, ``text`` (for corpora without
    headlines; the context then leaves out the question's own steps), ``first-sentence`` or ``action``."""

    task: ClassVar[str] = "textual-cloze"

    items: str = "title"

    def _check(self) -> None:
        super()._check()
        if self.items not in TEXTUAL_ITEMS:
            raise BadInput(f"--items takes {' or '.join(TEXTUAL_ITEMS)}, not {self.items!r}")


@dataclass(frozen=True)
class NextActionOptions(_TextualSamplers):
    """Next action (:mod:`procbench.generate.next_action`): textual cloze's samplers over step action tuples."""

    task: ClassVar[str] = "next-action"


@dataclass(frozen=True)
class _Visual(AdversarialOptions):
    """The visual tasks' options: the ``adversarial`` setting's, with the visual filter's defaults."""

    ceiling: float = IMAGE_POLICY.ceiling
    min_yield: float = IMAGE_POLICY.min_yield


@dataclass(frozen=True)
class VisualOrderingOptions(_Visual):
    """Visual ordering (:mod:`procbench.generate.visual.ordering`): only its adversarial setting has options."""

    task: ClassVar[str] = "visual-ordering"


@dataclass(frozen=True)
class _VisualNeighbours(_Visual):
    """The visual tasks that search neighbour images: ``kc`` (K_C, the neighbours of each anchor that define the K2
    band and the K3 point) and RecipeQA style's ``min_distance`` (None: the median distance of random image pairs)."""

    kc: int = KC
    min_distance: float | None = None

    def _check(self) -> None:
        super()._check()
        integer("kc", self.kc, 1)
        check_distance(self)


@dataclass(frozen=True)
class VisualClozeOptions(_VisualNeighbours):
    """Visual cloze (:mod:`procbench.generate.visual.cloze`)."""

    task: ClassVar[str] = "visual-cloze"


@dataclass(frozen=True)
class VisualCoherenceOptions(_VisualNeighbours):
    """Visual coherence (:mod:`procbench.generate.visual.coherence`)."""

    task: ClassVar[str] = "visual-coherence"


@dataclass(frozen=True)
class SequencingOptions(GenerateOptions):
    """Sequencing (:mod:`procbench.generate.sequencing`): procedures under ``min_steps`` are left out;
    ``references``: alternative orders per procedure id, extra acceptable choices (not in ``options.json``)."""

    task: ClassVar[str] = "sequencing"

    min_steps: int = 3
    references: Mapping[str, list[list[int]]] | None = field(default=None, metadata={"record": False})

    def _check(self) -> None:
        super()._check()
        integer("min_steps", self.min_steps, 1)
        if self.references is not None and not isinstance(self.references, Mapping):
            raise BadInput(f"sequencing references must map procedure ids to orders, not {self.references!r}")


@dataclass(frozen=True)
class PairOrderOptions(GenerateOptions):
    """Pair order (:mod:`procbench.generate.pair_order`): at most ``pairs_per_procedure`` distinct step pairs per
    procedure, only consecutive ones if ``adjacent``."""

    task: ClassVar[str] = "pair-order"

    pairs_per_procedure: int = 2
    adjacent: bool = False

    def _check(self) -> None:
        super()._check()
        integer("pairs_per_procedure", self.pairs_per_procedure, 1)
        if not isinstance(self.adjacent, bool):
            raise BadInput(f"--adjacent must be true or false, not {self.adjacent!r}")


#: Task name -> its options class (every task of :data:`procbench.tasks.TASKS`).
TASK_OPTIONS: dict[str, type[GenerateOptions]] = {
    cls.task: cls
    for cls in (
        TextualClozeOptions,
        NextActionOptions,
        VisualClozeOptions,
        VisualCoherenceOptions,
        VisualOrderingOptions,
        SequencingOptions,
        PairOrderOptions,
    )
}


def options_class(task: str) -> type[GenerateOptions]:
    """The options class of ``task`` (a name :data:`procbench.tasks.TASKS` knows, in any spelling it takes)."""
    from procbench.tasks import get_task

    return TASK_OPTIONS[get_task(task).name]


def task_options(task: str, options: GenerateOptions | None = None, **changes: Any) -> GenerateOptions:
    """``task``'s options: ``options`` (None: its defaults) with ``changes`` that are not None applied (BadInput:
    ``options`` of another task, an option the task does not take, or a bad value)."""
    cls = options_class(task)
    if options is None:
        return cls.of(**changes)
    if type(options) is not cls:
        raise BadInput(f"{type(options).__name__} are not options of task {cls.task}")
    return options.replace(**changes)
