"""``length`` and ``lexical_overlap``: surface shortcuts of textual choices.

Both score a few fixed rules and report the cross-validated accuracy of the best one: on each fold the
rule that is most accurate on the other folds is applied (picking the best rule on the same questions it
is scored on would inflate the estimate). Ties earn fractional credit, so a rule that cannot tell the
choices apart scores exactly chance. ``chance`` is the mean of 1/#choices. The interval is a procedure
bootstrap of the whole procedure: every replicate re-chooses the rule of every fold.

* ``length``: pick the longest or the shortest choice, in characters or in words.
* ``lexical_overlap``: pick the choice sharing the largest (or smallest) share of its content words with
  the question items, or with the context text.

Only tasks whose choices are texts (textual cloze) have them; for images and step keys they do not apply.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.context import ProbeContext
from procbench.audit.probes.common import require_multiple_choice
from procbench.audit.registry import register
from procbench.audit.report import ProbeResult
from procbench.audit.stats import cv_rule_hits

__all__ = ["length", "lexical_overlap", "tokens"]

_WORD = re.compile(r"[a-z0-9]+")
_INTERVAL = "procedure bootstrap of the whole cross-validation (the rule is re-chosen in every replicate)"


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def tokens(text: str) -> set[str]:
    """Lower-cased content words of ``text`` (English stop words left out)."""
    stop = _stop_words()
    return {w for w in _WORD.findall(text.lower()) if w not in stop}


def _require_text(aset: AuditSet) -> None:
    require_multiple_choice(aset)
    if aset.kind.items != "text" or aset.kind.ordering:
        what = {"image": "images", "step": "step keys"}.get(aset.kind.items, "not texts")
        raise NotApplicable(f"{aset.task} choices are {what}: text shortcuts do not apply")


def _rows(aset: AuditSet) -> tuple[np.ndarray, np.ndarray]:
    valid = aset.index().valid
    k = valid.shape[1]
    ok = (aset.answers >= 0) & (aset.answers < k) & (valid.sum(axis=1) >= 2)
    ok &= valid[np.arange(len(aset)), np.clip(aset.answers, 0, k - 1)]
    return valid, ok


def _matrix(aset: AuditSet, fn: Callable[[str], float]) -> np.ndarray:
    """``(n, k)`` ``fn`` of every choice's text (0 for missing choices)."""
    out = np.zeros(aset.index().valid.shape)
    for i, choices in enumerate(aset.choices):
        for j, choice in enumerate(choices):
            out[i, j] = fn(str(choice))
    return out


@register("length", kind="accuracy", summary="longest/shortest choice wins (text choices)")
def length(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Cross-validated accuracy of the best of: longest/shortest choice in characters/words."""
    _require_text(aset)
    valid, rows = _rows(aset)
    ctx.require_cv(rows)
    chars = _matrix(aset, lambda c: len(c.strip()))
    words = _matrix(aset, lambda c: len(c.split()))
    rules = {"longest_chars": chars, "shortest_chars": -chars, "longest_words": words, "shortest_words": -words}
    hits, overall, chosen, replicates = cv_rule_hits(rules, aset.answers, valid, ctx.folds, rows, ctx.bootstrap)
    details = {"rule_accuracy": overall, "rule_per_fold": chosen, "interval": _INTERVAL}
    return ctx.accuracy(hits, rows, valid, replicates=replicates, details=details)


@register("lexical_overlap", kind="accuracy", summary="choice sharing most words with question/context wins")
def lexical_overlap(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Cross-validated accuracy of the best word-overlap rule (with the question items, and with the context)."""
    _require_text(aset)
    valid, rows = _rows(aset)
    ctx.require_cv(rows)
    from procbench.generate.questions import PLACEHOLDER

    question_words = [set().union(*(tokens(x) for x in q if x != PLACEHOLDER)) for q in aset.questions]
    choice_words = [[tokens(str(c)) for c in cs] for cs in aset.choices]

    def share(i: int, j: int, pool: set[str]) -> float:
        words = choice_words[i][j]
        return len(words & pool) / len(words) if words else 0.0

    k = valid.shape[1]
    with_question = np.zeros(valid.shape)
    for i in range(len(aset)):
        for j in range(min(k, len(choice_words[i]))):
            with_question[i, j] = share(i, j, question_words[i])
    rules = {"most_question_overlap": with_question, "least_question_overlap": -with_question}
    context_note = None
    if aset.contexts is not None and any(aset.contexts):
        cache: dict[str, set[str]] = {}
        with_context = np.zeros(valid.shape)
        for i, text in enumerate(aset.contexts):
            pool = cache.get(text)
            if pool is None:
                pool = cache[text] = tokens(text)
            for j in range(min(k, len(choice_words[i]))):
                with_context[i, j] = share(i, j, pool)
        rules.update({"most_context_overlap": with_context, "least_context_overlap": -with_context})
    else:
        context_note = "no context text available: only overlap with the question items was tested"
    hits, overall, chosen, replicates = cv_rule_hits(rules, aset.answers, valid, ctx.folds, rows, ctx.bootstrap)
    details: dict[str, object] = {"rule_accuracy": overall, "rule_per_fold": chosen, "interval": _INTERVAL}
    if context_note:
        details["note"] = context_note
    return ctx.accuracy(hits, rows, valid, replicates=replicates, details=details)
