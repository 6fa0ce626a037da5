"""Recipes: what each (task, setting kind) of the visual tasks deals, draws from and is judged by, as data. Its
``version`` goes into the set's ``options.json`` (a change moves only its fingerprints); generators read :func:`get`
when they run, so :func:`overridden` swaps a recipe for a block (benchmarks)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from procbench.errors import BadInput
from procbench.generate.policy import pushed
from procbench.generate.settings import Setting

__all__ = ["KINDS", "RECIPES", "Recipe", "get", "kind_of", "overridden", "recipes_table", "versions"]

#: Setting kinds: paper 001's knobs with K3 0/1, K3=2 (rank-uniform), the filter, needs-context, RecipeQA style.
KINDS = ("knobs", "rank-uniform", "adversarial", "needs-context", "recipeqa")


@dataclass(frozen=True)
class Recipe:
    """One (task, kind)'s recipe."""

    version: int  # bumped whenever the recipe's output bytes change
    tells: tuple[str, ...] = ()  # the tells the dealer deals, the first strictly
    sources: tuple[tuple[str, int], ...] = ()  # (source, candidates per question)
    probes: tuple[str, ...] = ("choice_only", "question_distance", "hubness")  # what the card reports
    judged: bool = False  # probes held to their nulls (else "by construction")
    preset: str = ""  # the adversarial filter's preset


_KNN = (("k2-band", 100),)
_FILTERED = ("choice_only", "partial_input", "question_distance", "hubness", "colour_layout", "near_duplicate")
#: Every recipe, by (task, kind).
RECIPES: dict[tuple[str, str], Recipe] = {
    ("visual-cloze", "knobs"): Recipe(1, sources=(*_KNN, ("question-knn", 100))),
    ("visual-cloze", "rank-uniform"): Recipe(2, tells=("question_distance",), sources=(*_KNN, ("question-knn", 100))),
    ("visual-cloze", "adversarial"): Recipe(
        2,
        tells=("question_distance",),
        judged=True,
        preset="image",
        probes=_FILTERED,
        sources=(*_KNN, ("question-knn", 100), ("answer-knn", 24), ("question-mean-knn", 12), ("negatives-knn", 12)),
    ),  # fmt: skip
    ("visual-cloze", "needs-context"): Recipe(
        1, tells=("odd_one_out",), judged=True, probes=_FILTERED, sources=(("own-sequence", 4),)
    ),  # fmt: skip
    ("visual-cloze", "recipeqa"): Recipe(1, sources=(("random-beyond-min-distance", 3),)),
    ("visual-coherence", "knobs"): Recipe(1, sources=_KNN),
    ("visual-coherence", "rank-uniform"): Recipe(2, tells=("odd_one_out",), sources=_KNN),
    ("visual-coherence", "adversarial"): Recipe(
        3,
        tells=("odd_one_out",),
        judged=True,
        preset="coherence",
        probes=_FILTERED,
        sources=(*_KNN, ("coherent-mean-knn", 24), ("coherent-knn", 24)),
    ),  # fmt: skip
    ("visual-coherence", "needs-context"): Recipe(
        1, tells=("odd_one_out",), judged=True, probes=_FILTERED, sources=(("own-sequence", 4),)
    ),  # fmt: skip
    ("visual-coherence", "recipeqa"): Recipe(1, sources=(("random-beyond-min-distance", 1),)),
    ("visual-ordering", "knobs"): Recipe(1, sources=(("permutations", 23),)),
    ("visual-ordering", "recipeqa"): Recipe(1, sources=(("permutations", 23),)),
    ("visual-ordering", "rank-uniform"): Recipe(3, tells=("path_length",), sources=(("permutations", 22),)),
    ("visual-ordering", "adversarial"): Recipe(
        3,
        tells=("path_length",),
        judged=True,
        preset="image",
        sources=(("permutations", 22),),
        probes=("choice_only", "partial_input", "path_length"),
    ),  # fmt: skip
}

_OVERRIDES: list[tuple[tuple[str, str], Recipe]] = []


def kind_of(setting: Setting) -> str:
    """The recipe kind of ``setting``."""
    if setting.style == "knobs":
        return "rank-uniform" if setting.rank_uniform else "knobs"
    return "knobs" if setting.style == "default" else setting.style


def get(task: str, kind: str) -> Recipe:
    """The recipe of ``task``'s ``kind`` now (the default, or :func:`overridden`'s); BadInput: no such recipe."""
    key = (task, kind)
    for at, recipe in reversed(_OVERRIDES):
        if at == key:
            return recipe
    if key not in RECIPES:
        raise BadInput(f"no recipe for {task} {kind}; recipes: {', '.join(f'{t} {k}' for t, k in RECIPES)}")
    return RECIPES[key]


def versions(task: str, settings: list[Setting]) -> dict[str, int]:
    """``{setting name: its recipe's version}`` for the settings of ``task`` that have a recipe (now)."""
    found = {s.name: (task, kind_of(s)) for s in settings}
    return {name: get(*key).version for name, key in found.items() if key in RECIPES}


@contextmanager
def overridden(task: str, kind: str, **fields: Any) -> Iterator[Recipe]:
    """Within the block, :func:`get` returns ``task``'s ``kind`` recipe with ``fields`` replaced."""
    with pushed(_OVERRIDES, ((task, kind), dataclasses.replace(get(task, kind), **fields))) as entry:
        yield entry[1]


def recipes_table() -> str:
    """The Markdown table of every recipe (``docs/adversarial.md`` holds it verbatim)."""
    lines = [
        "| task | kind | version | tells dealt | sources (n) | probes | judged |",
        "|---|---|---|---|---|---|---|",
    ]
    for (task, kind), r in RECIPES.items():
        sources = ", ".join(f"{s} ({n})" for s, n in r.sources)
        judged = "against their nulls" if r.judged else "by construction"
        lines.append(f"| {task} | {kind} | {r.version} | {', '.join(r.tells) or '-'} | {sources} | "
                     f"{', '.join(r.probes)} | {judged} |")  # fmt: skip
    return "\n".join(lines)
