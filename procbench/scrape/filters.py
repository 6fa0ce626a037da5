"""Which scraped procedures are kept: step counts and language (manifests set them; defaults 3-25, English)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from procbench.procedure import Procedure

__all__ = ["Filters", "counted_steps", "looks_english"]

_WORD = re.compile(r"[a-zA-Z\u00c0-\u024f']+")
_ENGLISH_WORDS = (
    "the a an and or of to in on for with is are be it this that you your can will from as at by if then "
    "into out up so not it's use make cut place add until when each all about over more them they their "
    "have has was were one two three before after while"
)
_ENGLISH = frozenset(_ENGLISH_WORDS.split(" "))


def looks_english(text: str, *, min_words: int = 20, threshold: float = 0.12) -> bool:
    """Whether ``text`` reads as English: enough common English function words among its words.

    Texts shorter than ``min_words`` words are given the benefit of the doubt.
    """
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < min_words:
        return True
    return sum(w in _ENGLISH for w in words) / len(words) >= threshold


def counted_steps(procedure: Procedure) -> int:
    """Steps that count toward the step-count filter: all but Introduction and Supplies."""
    return sum(step.kind not in ("intro", "supplies") for step in procedure.steps)


@dataclass(frozen=True)
class Filters:
    """Keep procedures with ``min_steps``-``max_steps`` counted steps, in ``language`` (None: any)."""

    min_steps: int = 3
    max_steps: int = 25
    language: str | None = "en"
    require_images: bool = False

    def reason(self, procedure: Procedure) -> str | None:
        """Why ``procedure`` is dropped (``step_count``, ``language``, ``no_images``), or None to keep it."""
        n = counted_steps(procedure)
        if n < self.min_steps or n > self.max_steps:
            return "step_count"
        if self.language is not None:
            declared = (procedure.language or "").split("-")[0].lower()
            if declared and declared != self.language:
                return "language"
            if self.language == "en":
                text = " ".join(f"{s.title or ''} {s.text}" for s in procedure.steps)
                if not looks_english(f"{procedure.title} {text}"):
                    return "language"
        if self.require_images and not any(step.images for step in procedure.steps):
            return "no_images"
        return None
