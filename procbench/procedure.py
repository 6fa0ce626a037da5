"""In-memory procedures as they arrive from a source, before they become store rows."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["Procedure", "Step", "procedure_id", "slugify"]


@dataclass
class Step:
    """One step in authored order. ``images`` are URLs or local file paths, in order.

    ``part`` names the part or method of a multi-part article the step is in; ``kind`` says what the step
    is (``step``, ``part``, ``method``, ``intro``, ``supplies``; None when the source does not say).
    """

    text: str
    title: str | None = None
    images: list[str] = field(default_factory=list)
    part: str | None = None
    kind: str | None = None


@dataclass
class Procedure:
    """One How-To procedure. ``id`` is the stable store id ``SOURCE:slug`` (see :func:`procedure_id`)."""

    id: str
    source: str
    title: str
    steps: list[Step]
    url: str | None = None
    category: list[str] = field(default_factory=list)
    author: str | None = None
    license: str | None = None
    language: str | None = None
    fetched_at: datetime | None = None
    split: str | None = None


_SLUG_DROP = re.compile(r"[^\w\s-]")
_SLUG_SPACE = re.compile(r"[\s_]+")


def slugify(text: str) -> str:
    """A wikiHow-style slug: ASCII words joined by ``-`` (``"How to Make Tea!"`` -> ``"How-to-Make-Tea"``)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _SLUG_SPACE.sub("-", _SLUG_DROP.sub("", ascii_text).strip()).strip("-")


def procedure_id(source: str, *, slug: str | None = None, url: str | None = None, title: str | None = None) -> str:
    """The stable id ``SOURCE:slug``, from an explicit slug, else the URL's last path segment, else the title.

    An explicit slug that already starts with ``SOURCE:`` is kept as it is.
    """
    if slug:
        slug = slug.strip()
        return slug if slug.startswith(f"{source}:") else f"{source}:{slug}"
    if url:
        last = url.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        if last and "." not in last[-6:]:
            return f"{source}:{last}"
        if last:
            return f"{source}:{slugify(last.rsplit('.', 1)[0])}"
    return f"{source}:{slugify(title or '')}"
