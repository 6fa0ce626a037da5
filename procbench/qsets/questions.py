"""Questions as objects (DESIGN §5), and pausing the garbage collector while millions of them are made."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Question", "paused_gc"]


@dataclass
class Question:
    """One multiple-choice question.

    ``context`` holds step indices of the procedure; ``question`` and ``choices`` hold items (step titles
    for textual tasks, image ids for visual ones; for ordering tasks each choice is an order of items).
    ``answer`` indexes ``choices``. ``meta`` records every sampling decision that made the question.
    """

    procedure_id: str
    context: list[int]
    question: list[str]
    choices: list[Any]
    answer: int
    meta: dict[str, Any] = field(default_factory=dict)


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while questions are built or written (restored afterwards).

    A sweep creates millions of small, acyclic containers (questions, their meta and choices); the collector
    would re-scan all of them again and again while they are made (a quarter of the build time at 10,000
    procedures, growing with size) and could not free any. Reference counting still frees everything.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
