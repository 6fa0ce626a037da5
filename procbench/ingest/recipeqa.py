"""Recipes from RecipeQA's JSON (read by :mod:`procbench.formats.recipeqa`): each entry holds a whole recipe
as its ``context``.

The same recipe appears under several tasks (textual cloze, visual cloze ...); it is read once, keyed
by its ``recipe_id``. Image names are resolved against the image folder when the files are there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from procbench.formats.recipeqa import read_entries
from procbench.ingest.records import Problem
from procbench.procedure import Procedure, Step, procedure_id

__all__ = ["SOURCE", "read_recipeqa"]

SOURCE = "recipeqa"
_SPLITS = {"train": "train", "val": "val", "valid": "val", "validation": "val", "dev": "val", "test": "test"}


def _steps(context: Any) -> list[Step]:
    if not isinstance(context, list) or not context:
        raise ValueError("entry without context steps")
    steps = []
    for number, raw in enumerate(context, 1):
        if not isinstance(raw, dict):
            raise ValueError(f"context step {number} is not an object")
        body = raw.get("body")
        title = raw.get("title")
        images = raw.get("images") or []
        if not isinstance(body, str) or not isinstance(images, list):
            raise ValueError(f"context step {number} has no text body")
        if not body.strip() and not images and not (isinstance(title, str) and title.strip()):
            continue
        steps.append(
            Step(
                text=body.strip(),
                title=title.strip() if isinstance(title, str) and title.strip() else None,
                images=[str(i) for i in images if str(i).strip()],
            )
        )
    if not steps:
        raise ValueError("entry without context steps")
    return steps


def read_recipeqa(path: Path) -> Iterator[tuple[str, Procedure | Problem]]:
    """Yield ``(where, record)``: each distinct recipe of a RecipeQA JSON file once, a :class:`Problem` per bad entry.

    The split is taken from the file name (``train.json``, ``val.json``, ``test.json``) when it names one.
    """
    entries = read_entries(path)
    split = _SPLITS.get(path.stem.lower())
    seen: set[str] = set()
    for number, entry in enumerate(entries, 1):
        where = f"entry {number}"
        if not isinstance(entry, dict) or not entry.get("recipe_id"):
            yield where, Problem(where, "entry without 'recipe_id'")
            continue
        recipe_id = str(entry["recipe_id"])
        if recipe_id in seen:
            continue
        try:
            steps = _steps(entry.get("context"))
        except ValueError as exc:
            yield where, Problem(where, f"recipe {recipe_id}: {exc}")
            continue
        seen.add(recipe_id)
        title = entry.get("title") if isinstance(entry.get("title"), str) else None
        yield (
            where,
            Procedure(
                id=procedure_id(SOURCE, slug=recipe_id),
                source=SOURCE,
                title=title or recipe_id.replace("-", " ").replace("_", " "),
                steps=steps,
                category=["Cooking"],
                license="RecipeQA (see its terms)",
                split=split,
            ),
        )
