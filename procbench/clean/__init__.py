"""``procbench clean``: the meta-dataset cleaning of papers 001 (App. D) and 004 (§3.1-3.2).

Text rules (each step's ``title`` and ``text`` -> ``title_clean`` and ``text_clean``): HTML/CSS/script
remnants, unicode and mojibake, optional ASCII folding, whitespace and bullets, fused words, step-title
indicators, step numbers at the start of step texts. Filters (``keep`` and ``drop_reason`` on procedures,
first matching rule wins): ``no_text``, ``language``, ``step_count``, ``off_domain``, ``duplicate``. Raw
columns are never changed, except that a null ``language`` is filled with a confidently detected one.

>>> from procbench.clean import clean_store
>>> report = clean_store("procbench-store", min_steps=3, max_steps=25)   # doctest: +SKIP
>>> report.in_vocabulary["before"], report.in_vocabulary["after_kept"]    # doctest: +SKIP
"""

from __future__ import annotations

from procbench.clean.normalize import fix_unicode, normalize_text, normalize_whitespace, strip_markup, to_ascii
from procbench.clean.numbering import strip_step_numbering
from procbench.clean.options import CleanOptions
from procbench.clean.pipeline import CleanResult, clean_store, clean_tables
from procbench.clean.report import FILTER_RULES, TEXT_RULES, CleanReport, Example, RuleStats
from procbench.clean.segment import Segmenter, SegmenterSettings
from procbench.clean.text import TextCleaner
from procbench.clean.titles import strip_step_indicator
from procbench.clean.vocab import Vocabulary, count_in_vocabulary, get_vocabulary

__all__ = [
    "FILTER_RULES",
    "TEXT_RULES",
    "CleanOptions",
    "CleanReport",
    "CleanResult",
    "Example",
    "RuleStats",
    "Segmenter",
    "SegmenterSettings",
    "TextCleaner",
    "Vocabulary",
    "clean_store",
    "clean_tables",
    "count_in_vocabulary",
    "fix_unicode",
    "get_vocabulary",
    "normalize_text",
    "normalize_whitespace",
    "strip_markup",
    "strip_step_indicator",
    "strip_step_numbering",
    "to_ascii",
]
