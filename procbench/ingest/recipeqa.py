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
from procbench.ingest.records import MAX_ID_CHARS, Problem, unstorable_text
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
                images=[i.strip() for i in images if isinstance(i, str) and i.strip()],
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
        raw_id = entry.get("recipe_id") if isinstance(entry, dict) else None
        if not raw_id or not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool):
            yield where, Problem(where, "entry without 'recipe_id'")
            continue
        recipe_id = str(raw_id).strip()
        if not recipe_id:
            yield where, Problem(where, "entry without 'recipe_id'")
            continue
        if len(recipe_id) > MAX_ID_CHARS:
            yield where, Problem(where, f"'recipe_id' is longer than {MAX_ID_CHARS} characters")
            continue
        if recipe_id in seen:
            continue
        try:
            steps = _steps(entry.get("context"))
        except ValueError as exc:
            yield where, Problem(where, f"recipe {recipe_id[:80]!r}: {exc}")
            continue
        title = entry.get("title") if isinstance(entry.get("title"), str) else None
        procedure = Procedure(
            id=procedure_id(SOURCE, slug=recipe_id),
            source=SOURCE,
            title=(title or "").strip() or recipe_id.replace("-", " ").replace("_", " "),
            steps=steps,
            category=["Cooking"],
            license="RecipeQA (see its terms)",
            split=split,
        )
        if field := unstorable_text(procedure):
            yield where, Problem(where, f"{field} holds a lone UTF-16 surrogate (not valid Unicode)")
            continue
        seen.add(recipe_id)
        yield where, procedure
