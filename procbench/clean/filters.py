"""Procedure filters (papers 001 App. D and 004 §3.1): no text, language, step count, off-domain.

Each filter returns, for every procedure, None (passes) or a short detail string saying why it fails;
the caller applies them in order so a procedure is dropped by the first rule it fails.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from procbench.clean.options import CleanOptions

__all__ = ["language_decisions", "no_text", "off_domain", "step_count"]


def no_text(word_counts: np.ndarray, *, min_words: int) -> list[str | None]:
    """Procedures whose steps hold fewer than ``min_words`` word tokens (after cleaning)."""
    return [
        None if n >= min_words else f"{int(n)} word tokens in its steps (minimum {min_words})"
        for n in word_counts.tolist()
    ]


def step_count(n_steps: np.ndarray, *, min_steps: int, max_steps: int) -> list[str | None]:
    """Procedures with fewer than ``min_steps`` or more than ``max_steps`` steps."""
    return [
        None if min_steps <= n <= max_steps else f"{int(n)} steps (allowed {min_steps}-{max_steps})"
        for n in n_steps.tolist()
    ]


def language_decisions(
    declared: Sequence[str | None],
    detected: Sequence[tuple[str | None, float]],
    *,
    allowed: Sequence[str],
    min_confidence: float,
) -> tuple[list[str | None], list[str | None], list[str | None]]:
    """Decide each procedure's language and whether it is allowed.

    A detection at or above ``min_confidence`` decides; otherwise the declared language does; with
    neither, the procedure is kept (no evidence against it).

    Returns:
        ``(fill, reasons, effective)``: the language to record where ``declared`` is null (None to leave it
        null), per procedure None or why it is not allowed, and the language decided (primary subtag, or
        None when unknown).
    """
    allowed_set = {a.lower() for a in allowed}
    fill: list[str | None] = []
    reasons: list[str | None] = []
    decided: list[str | None] = []
    for lang_declared, (lang, prob) in zip(declared, detected, strict=True):
        confident = lang is not None and prob >= min_confidence
        fill.append(lang if confident and lang_declared is None else None)
        if confident:
            effective, how = lang, f"detected {lang} ({prob:.2f})"
        elif lang_declared:
            effective, how = lang_declared, f"declared {lang_declared}"
        else:
            effective, how = None, ""
        primary = effective.lower().replace("_", "-").split("-")[0] if effective else None
        reasons.append(how if allowed_set and primary is not None and primary not in allowed_set else None)
        decided.append(primary)
    return fill, reasons, decided


def _phrase_pattern(phrases: Sequence[str]) -> re.Pattern[str] | None:
    if not phrases:
        return None
    alternatives = sorted({r"\s+".join(map(re.escape, p.lower().split())) for p in phrases}, key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)")


def _norm(name: str) -> str:
    return " ".join(name.lower().replace("-", " ").replace("_", " ").split())


def off_domain(
    ids: Sequence[str],
    titles: Sequence[str],
    categories: Sequence[Sequence[str] | None],
    texts: Sequence[str],
    options: CleanOptions,
) -> list[str | None]:
    """Procedures outside the domain given by category and keyword rules (see :class:`CleanOptions`).

    ``texts`` are the procedures' clean step texts joined (searched by ``keywords`` only); ids are
    searched as their slug (``instructables:nutrient-calculator`` -> ``nutrient calculator``).
    """
    allowed = {_norm(c) for c in options.categories}
    excluded = {_norm(c) for c in options.exclude_categories}
    include = _phrase_pattern(options.keywords)
    exclude = _phrase_pattern(options.exclude_keywords)
    if not (allowed or excluded or include or exclude):
        return [None] * len(ids)
    out: list[str | None] = []
    for pid, title, cats, text in zip(ids, titles, categories, texts, strict=True):
        path = [_norm(c) for c in (cats or [])]
        reason = None
        hit = next((c for c in path if c in excluded), None)
        if hit is not None:
            reason = f"category {hit!r} is excluded"
        elif allowed and path and not allowed.intersection(path):
            reason = f"category {' > '.join(cats or [])!r} is not one of the allowed categories"
        if reason is None and exclude is not None:
            slug = _norm(pid.split(":", 1)[-1])
            m = exclude.search(_norm(title)) or exclude.search(slug)
            if m:
                reason = f"title or slug mentions {m.group()!r}"
        if reason is None and include is not None and not include.search(_norm(title) + " " + text.lower()):
            reason = "mentions none of the domain keywords"
        out.append(reason)
    return out
