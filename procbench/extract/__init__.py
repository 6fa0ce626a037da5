"""Structured procedural knowledge: verb–argument tuples from steps, with paper 002's metrics.

>>> from procbench.extract import extract_store, evaluate_extraction       # doctest: +SKIP
>>> result = extract_store(store)                  # STORE/actions.parquet, one row per tuple
>>> evaluate_extraction("gold.jsonl", store=store)["stage2"]["oracle"]["verbs"]["fuzzy"]
"""

from __future__ import annotations

from procbench.extract.evaluation import GoldUnit, evaluate_extraction, read_units, score_units
from procbench.extract.lexicon import STOP_VERBS, Lexicon, build_lexicon, find_wordnet, wordnet_verbs
from procbench.extract.metrics import MODES, assignment_tp, binary_scores, pair_score, phrase_scores
from procbench.extract.pipeline import ACTIONS, ExtractResult, extract_store, extract_texts, read_actions
from procbench.extract.tuples import ActionTuple, extract_tuples

__all__ = [
    "ACTIONS",
    "MODES",
    "STOP_VERBS",
    "ActionTuple",
    "ExtractResult",
    "GoldUnit",
    "Lexicon",
    "assignment_tp",
    "binary_scores",
    "build_lexicon",
    "evaluate_extraction",
    "extract_store",
    "extract_texts",
    "extract_tuples",
    "find_wordnet",
    "pair_score",
    "phrase_scores",
    "read_actions",
    "read_units",
    "score_units",
    "wordnet_verbs",
]
