"""The tasks procbench generates, audits and trains models on: one :class:`TaskSpec` per task.

Every stage reads the same spec: ``generate`` its builder and sweep, ``audit`` its :class:`TaskKind`,
``models`` its family, the dataset card its summary and Hub category, RecipeQA JSON, the report and
exports its instruction. Adding a task is one ``TaskSpec`` below (and the module it names); see
DEVELOPERS.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from procbench.registry import Registry, load_object

if TYPE_CHECKING:
    from procbench.generate.settings import Setting

__all__ = [
    "COOKING_CATEGORIES",
    "FAMILIES",
    "TASKS",
    "TEXTUAL_ITEMS",
    "ItemChoice",
    "TaskKind",
    "TaskSpec",
    "domain_noun",
    "get_task",
    "items_of",
]

#: How models featurise, train on and score a task's questions.
FAMILIES = ("mc", "sequencing", "pair-order")

#: Category names (any level of a procedure's category path, compared lower-cased) whose procedures are recipes;
#: every other procedure is a "procedure" in the instructions people read (exports, the report).
COOKING_CATEGORIES = frozenset(
    {"food and entertaining", "recipes", "recipe", "cooking", "food", "baking", "cooking and recipes"}
)
#: Sources whose procedures are all recipes.
COOKING_SOURCES = frozenset({"recipeqa"})


def domain_noun(category: list[str] | tuple[str, ...] | None = None, source: str | None = None) -> str:
    """What an instruction calls a procedure: ``recipe`` for cooking (:data:`COOKING_CATEGORIES`,
    :data:`COOKING_SOURCES`), else ``procedure``."""
    if (source or "").lower() in COOKING_SOURCES:
        return "recipe"
    if any(str(name).strip().lower() in COOKING_CATEGORIES for name in category or ()):
        return "recipe"
    return "procedure"


#: RecipeQA's own wording, kept in ``recipeqa.json`` (the format its readers expect) for its own tasks.
RECIPEQA_NOUN = "recipe"
RECIPEQA_TASKS = frozenset({"textual-cloze", "visual-cloze", "visual-coherence", "visual-ordering"})


@dataclass(frozen=True)
class TaskKind:
    """How a task's questions are built, as far as the audit probes care.

    Attributes:
        items: ``text`` (choices are texts), ``image`` (image ids) or ``step`` (step keys).
        field: the store embedding field holding the items' vectors (None: no vectors needed).
        ordering: every choice is an order of items rather than one item.
        multiple_choice: one of several alternative choices is correct.
        label_choices: the choices are fixed labels (e.g. ``inverted`` / ``in order``), not items.
        coherence: the answer is the odd one out among the choices (visual coherence).
    """

    items: str
    field: str | None
    ordering: bool = False
    multiple_choice: bool = True
    label_choices: bool = False
    coherence: bool = False


@dataclass(frozen=True)
class TaskSpec:
    """A task.

    Attributes:
        name: ``procbench generate --task NAME``.
        module: the module implementing it: ``build(store, settings, *, seed, progress, **options)`` and
            ``SWEEP`` (imported only when the task is generated).
        kind: what the audit probes need to know.
        family: how models treat its questions (one of :data:`FAMILIES`).
        summary: one line for people (dataset cards).
        hub_category: the Hugging Face Hub task category.
        instruction: the question's instruction, ``{procedure}`` standing for what the procedure is
            (:func:`domain_noun`; RecipeQA JSON's ``question`` says ``recipe``, as RecipeQA does).
        recommended: the setting to use when in doubt: the default config of an export and the setting the
            card and the report point to (one place to change it).
        setting_instructions: ``(setting, instruction)`` pairs for the settings whose questions ask something
            else than the task's instruction says (a set ``procbench filter`` derived from one, ``SETTING-...``,
            asks the same).
    """

    name: str
    module: str
    kind: TaskKind
    family: str
    summary: str
    hub_category: str = "multiple-choice"
    instruction: str = ""
    recommended: str = "default"
    setting_instructions: tuple[tuple[str, str], ...] = ()

    @property
    def items(self) -> str:
        """What a question's items are: ``text``, ``image`` or ``step``."""
        return self.kind.items

    def field_for(self, items: str | None = None) -> str | None:
        """The embedding field of the items of a set made with ``--items items`` (None: the task's own)."""
        chosen = TEXTUAL_ITEMS.get(items or "") if self.name == "textual-cloze" else None
        return chosen.field if chosen is not None else self.kind.field

    def instruction_for(self, items: str | None = None, *, noun: str = "procedure", setting: str | None = None) -> str:
        """The instruction of a ``setting`` set made with ``--items items`` (None: the task's own), for a
        procedure that is a ``noun`` (:func:`domain_noun`: ``recipe`` for cooking, else ``procedure``)."""
        setting = setting or ""
        own = [text for name, text in self.setting_instructions if setting == name or setting.startswith(f"{name}-")]
        chosen = TEXTUAL_ITEMS.get(items or "") if self.name == "textual-cloze" else None
        template = own[0] if own else chosen.instruction if chosen is not None else self.instruction
        return template.replace("{procedure}", noun)

    def recipeqa_instruction(self, items: str | None = None, *, setting: str | None = None) -> str:
        """``question_text`` in ``recipeqa.json``: RecipeQA's own words (``recipe``) for its four tasks (textual
        cloze over titles, the three visual tasks), ``procedure`` for the others."""
        own = self.name in RECIPEQA_TASKS and (self.name != "textual-cloze" or items in (None, "title"))
        return self.instruction_for(items, noun=RECIPEQA_NOUN if own else "procedure", setting=setting)

    def builder(self) -> Callable[..., tuple[dict[str, Any], dict[str, Any]]]:
        """The task's ``build`` function (imports its module)."""
        return cast(Callable[..., tuple[dict[str, Any], dict[str, Any]]], load_object(f"{self.module}:build"))

    def sweep(self) -> list[Setting]:
        """Every setting ``--sweep`` writes (imports the task's module)."""
        return list(cast("list[Setting]", load_object(f"{self.module}:SWEEP")))


@dataclass(frozen=True)
class ItemChoice:
    """One value of textual cloze's ``--items``.

    Attributes:
        field: the store embedding field holding the items' vectors.
        what: what the items are, for people (dataset cards).
        instruction: the question's instruction (``{procedure}``: see :attr:`TaskSpec.instruction`).
    """

    field: str
    what: str
    instruction: str


#: ``generate --task textual-cloze --items NAME``: what a question's items and choices are.
TEXTUAL_ITEMS: dict[str, ItemChoice] = {
    "title": ItemChoice(
        "step_title",
        "step titles (headlines)",
        "Choose the best title for the missing blank to correctly complete the {procedure}.",
    ),
    "text": ItemChoice(
        "step_text",
        "step texts (the context leaves out the question's own steps)",
        "Choose the best step text for the missing blank to correctly complete the {procedure}.",
    ),
    "first-sentence": ItemChoice(
        "step_first_sentence",
        "the first sentence of each step text (the context leaves out the question's own steps)",
        "Choose the best first sentence of a step for the missing blank to correctly complete the {procedure}.",
    ),
    "action": ItemChoice(
        "action",
        "step action tuples (`procbench extract`)",
        "Choose the best action for the missing blank to correctly complete the {procedure}.",
    ),
}


def items_of(options: dict[str, Any] | None) -> str | None:
    """The ``--items`` a set's recorded options (``options.json``) name, if any."""
    items = (options or {}).get("items")
    return items if isinstance(items, str) else None


#: Task name -> spec; ``visual_cloze`` (RecipeQA's spelling) finds ``visual-cloze``.
TASKS: Registry[TaskSpec] = Registry("task", normalise=lambda name: name.lower().replace("_", "-"))

for _spec in (
    TaskSpec(
        "sequencing",
        "procbench.generate.sequencing",
        TaskKind("step", None, ordering=True, multiple_choice=False),
        "sequencing",
        "up to five consecutive steps shuffled; put them back in order (`choices` are the acceptable orders, "
        "`answer` is always 0; paper 000)",
        "text-classification",
        instruction="Put the steps in the order they were written.",
    ),
    TaskSpec(
        "pair-order",
        "procbench.generate.pair_order",
        TaskKind("step", None, label_choices=True),
        "pair-order",
        "two steps of a procedure; are they shown in authored order? (label 1) or inverted (label 0; paper 003)",
        "text-classification",
        instruction="Are the two steps in the order they were written?",
    ),
    TaskSpec(
        "textual-cloze",
        "procbench.generate.textual",
        TaskKind("text", "step_title"),
        "mc",
        "four consecutive step titles with one blanked (`@placeholder`); pick the missing title among four "
        "(paper 004)",
        instruction=TEXTUAL_ITEMS["title"].instruction,
        recommended="needs-context",
    ),
    TaskSpec(
        "next-action",
        "procbench.generate.next_action",
        TaskKind("text", "action"),
        "mc",
        "the action tuples of up to three consecutive steps, then `@placeholder`; pick the next step's action "
        "among four (verb-argument tuples of paper 002, negatives as paper 004)",
        instruction="Choose the action that comes next in the {procedure}.",
        recommended="adversarial",
    ),
    TaskSpec(
        "visual-cloze",
        "procbench.generate.visual.cloze",
        TaskKind("image", "image"),
        "mc",
        "four step images in authored order with one blanked; pick the missing image among four (paper 001)",
        instruction="Choose the best image for the missing blank to correctly complete the {procedure}.",
        recommended="needs-context",
    ),
    TaskSpec(
        "visual-coherence",
        "procbench.generate.visual.coherence",
        TaskKind("image", "image", coherence=True),
        "mc",
        "four images, three from the procedure in authored order and one from elsewhere; pick the incoherent "
        "one (paper 001)",
        instruction="Select the incoherent image in the following sequence of images.",
        recommended="needs-context",
        setting_instructions=(
            ("needs-context", "Three of the images show the steps given; select the image that shows none of them."),
        ),
    ),
    TaskSpec(
        "visual-ordering",
        "procbench.generate.visual.ordering",
        TaskKind("image", "image", ordering=True),
        "mc",
        "four orders of a procedure's images; pick the authored one (paper 001)",
        instruction="Choose the correct order of the images to make a complete {procedure}.",
        recommended="adversarial",
    ),
):
    TASKS.add(_spec.name, _spec)


def get_task(name: str) -> TaskSpec:
    """The spec of ``name``; an unknown name is a :class:`~procbench.errors.BadInput` ("did you mean")."""
    return TASKS.get(name)
