"""``length`` and ``lexical_overlap``: surface shortcuts of text choices; ``context_overlap``: a word-overlap reader.

Both score a few fixed rules and report the cross-validated accuracy of the best one: on each fold the
rule that is most accurate on the other folds is applied (picking the best rule on the same questions it
is scored on would inflate the estimate). Ties earn fractional credit, so a rule that cannot tell the
choices apart scores exactly chance. ``chance`` is the mean of 1/#choices. The interval is a procedure
bootstrap of the whole procedure: every replicate re-chooses the rule of every fold.

* ``length``: pick the longest or the shortest choice, in characters or in words.
* ``lexical_overlap``: pick the choice sharing the largest (or smallest) share of its content words with
  the question items. Context-free, so above or below chance is a shortcut.
* ``context_overlap``: pick the choice sharing the largest share of its content words with the context
  text. It reads the context, so it is a *reference* (like ``context_reference``), never flagged: a set
  where it beats chance rewards reading, the other probes say whether anything else is rewarded.

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
from procbench.audit.stats import cv_rule_hits, mc_hits

__all__ = ["context_overlap", "length", "lexical_overlap", "tokens"]

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


def _shares(aset: AuditSet, pools: list[set[str]], k: int) -> np.ndarray:
    """``(n, k)``: the share of each choice's content words found in its question's word ``pools[i]``."""
    out = np.zeros((len(aset), k))
    for i, choices in enumerate(aset.choices):
        pool = pools[i]
        for j, choice in enumerate(list(choices)[:k]):
            words = tokens(str(choice))
            out[i, j] = len(words & pool) / len(words) if words else 0.0
    return out


@register("lexical_overlap", kind="accuracy", summary="choice sharing most/fewest words with the question wins")
def lexical_overlap(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Cross-validated accuracy of the best word-overlap rule with the question items (no context read)."""
    _require_text(aset)
    valid, rows = _rows(aset)
    ctx.require_cv(rows)
    from procbench.formats.recipeqa import PLACEHOLDER

    pools = [set().union(*(tokens(x) for x in q if x != PLACEHOLDER)) for q in aset.questions]
    with_question = _shares(aset, pools, valid.shape[1])
    rules = {"most_question_overlap": with_question, "least_question_overlap": -with_question}
    hits, overall, chosen, replicates = cv_rule_hits(rules, aset.answers, valid, ctx.folds, rows, ctx.bootstrap)
    details = {"rule_accuracy": overall, "rule_per_fold": chosen, "interval": _INTERVAL}
    return ctx.accuracy(hits, rows, valid, replicates=replicates, details=details)


@register(
    "context_overlap",
    kind="accuracy",
    summary="reference: the choice sharing most words with the context (a bag-of-words reader)",
)
def context_overlap(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Accuracy of picking the choice with the largest share of its content words in the context text."""
    _require_text(aset)
    if aset.contexts is None or not any(aset.contexts):
        raise NotApplicable("the set has no context text (pass --store, or a set with recipeqa.json)")
    valid, rows = _rows(aset)
    words: dict[str, set[str]] = {}  # questions of one procedure share a context
    for text in aset.contexts:
        if text not in words:
            words[text] = tokens(text)
    pools = [words[text] for text in aset.contexts]
    return ctx.accuracy(
        mc_hits(_shares(aset, pools, valid.shape[1]), aset.answers, valid),
        rows,
        valid,
        details={"model": "no training: the choice with the largest share of its content words in the context"},
        reference=True,
    )
