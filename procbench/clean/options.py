"""Settings of ``clean``: defaults from the papers, overridable by a manifest's ``[clean]`` section
(read by :func:`procbench.manifest.load_manifest`) and options.

A manifest section looks like::

    [clean]
    min_steps = 3
    max_steps = 25
    languages = ["en"]
    categories = ["Food and Entertaining", "Cooking"]   # keep only these (any level of the category path)
    exclude_keywords = ["calculator", "nyancat"]       # drop procedures whose title or slug names these
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields
from typing import Any

from procbench.errors import BadInput

__all__ = ["CleanOptions"]

#: The two-letter ISO 639-1 language codes (``languages`` takes these, and three-letter ISO 639-3 codes).
_ISO_639_1_CODES = """
    aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv
    dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik
    io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn
    mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg
    si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa
    wo xh yi yo za zh zu"""
ISO_639_1 = frozenset(_ISO_639_1_CODES.split())


def _language_code(code: str) -> bool:
    """An ISO 639-1 code, or a three-letter code (ISO 639-3, which the detector also uses: ``yue``, ``kab``)."""
    return code in ISO_639_1 or (len(code) == 3 and code.isascii() and code.isalpha())


_TUPLE_FIELDS = ("languages", "categories", "exclude_categories", "keywords", "exclude_keywords")


@dataclass(frozen=True)
class CleanOptions:
    """Every knob of ``clean``.

    Attributes:
        min_steps: procedures with fewer steps are dropped (paper 004: 3).
        max_steps: procedures with more steps are dropped (paper 004: 25).
        languages: allowed languages (ISO 639-1); empty to keep every language.
        min_language_confidence: a detected language counts (drops, or fills a null ``language``) only at
            or above this probability; below it the declared language, if any, decides.
        min_words: procedures with fewer word tokens in their steps are dropped as ``no_text``.
        categories: when given, procedures whose category path names none of these are ``off_domain``
            (procedures without any category are kept).
        exclude_categories: procedures whose category path names one of these are ``off_domain``.
        keywords: when given, procedures whose title and steps mention none of these are ``off_domain``.
        exclude_keywords: procedures whose title or id slug mentions one of these are ``off_domain``.
        split_fused: split fused words (``preheattheoven``) and words glued to numbers (``2cups``).
        ascii_only: fold accents and remove non-ASCII characters (paper 004); off by default.
        dedupe: drop exact and near duplicates.
        near_duplicate_threshold: word-bigram Jaccard similarity from which two procedures with similar
            titles are duplicates.
        title_similarity: content-word Jaccard similarity of titles needed at ``near_duplicate_threshold``.
        strong_duplicate_threshold: Jaccard similarity from which procedures are duplicates whatever
            their titles.
        examples: before/after examples kept per rule in the report.
    """

    min_steps: int = 3
    max_steps: int = 25
    languages: tuple[str, ...] = ("en",)
    min_language_confidence: float = 0.9
    min_words: int = 3
    categories: tuple[str, ...] = ()
    exclude_categories: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    exclude_keywords: tuple[str, ...] = ()
    split_fused: bool = True
    ascii_only: bool = False
    dedupe: bool = True
    near_duplicate_threshold: float = 0.5
    title_similarity: float = 0.7
    strong_duplicate_threshold: float = 0.9
    examples: int = 3

    def __post_init__(self) -> None:
        for name in _TUPLE_FIELDS:
            value = getattr(self, name)
            if isinstance(value, str):
                value = (value,)
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise BadInput(f"clean option {name} must be a list of strings, got {value!r}")
            object.__setattr__(self, name, tuple(v.strip() for v in value if v.strip()))
        object.__setattr__(self, "languages", tuple(v.lower() for v in self.languages))
        unknown = [v for v in self.languages if not _language_code(v)]
        if unknown:  # a typo would otherwise drop every procedure
            raise BadInput(
                f"unknown language code(s) {', '.join(map(repr, unknown))}: give ISO 639-1 codes such as en, de"
                " (or three-letter ISO 639-3 codes such as yue)"
            )
        for name in ("min_steps", "max_steps", "min_words", "examples"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise BadInput(f"clean option {name} must be a non-negative integer, got {value!r}")
        if self.min_steps > self.max_steps:
            raise BadInput(f"min_steps ({self.min_steps}) is larger than max_steps ({self.max_steps})")
        for name in (
            "min_language_confidence",
            "near_duplicate_threshold",
            "title_similarity",
            "strong_duplicate_threshold",
        ):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not (0.0 <= value <= 1.0)
                or math.isnan(value)
            ):
                raise BadInput(f"clean option {name} must be a number between 0 and 1, got {value!r}")
            object.__setattr__(self, name, float(value))
        for name in ("split_fused", "ascii_only", "dedupe"):
            if not isinstance(getattr(self, name), bool):
                raise BadInput(f"clean option {name} must be true or false, got {getattr(self, name)!r}")

    def replace(self, **changes: Any) -> CleanOptions:
        """A copy with ``changes`` applied (``None`` values are ignored); unknown names are bad input."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise BadInput(f"unknown clean option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view (what the provenance log records)."""
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in fields(self)}
