"""What ``clean`` did, rule by rule: counts, a few before/after examples, the in-vocabulary token ratio."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["FILTER_RULES", "TEXT_RULES", "VOCABULARY_NOTE", "CleanReport", "Example", "RuleStats", "snippet_pair"]

#: Text rules, in the order they run, with what each one does.
TEXT_RULES: dict[str, str] = {
    "html": "HTML tags and entities, CSS and script remnants, citation markers removed",
    "unicode": "mojibake repaired, NFC, ligatures, quotes, invisible and control characters",
    "non_ascii": "non-ASCII characters folded or removed (paper 004; only with ascii_only)",
    "whitespace": "whitespace, bullets, separator runs and spacing around punctuation normalised",
    "fused_words": "fused words and words glued to numbers split (only splits that pass the precision gate)",
    "step_titles": "step-number indicators removed from step titles",
    "step_numbers": "leading step numbers (1., Step 3 -, (3), ii.) and sub-list markers removed from step texts",
}
#: Filter rules, in the order they are applied (a procedure is dropped by the first that matches).
FILTER_RULES: dict[str, str] = {
    "too_long": "procedures with a field over ingest's size cap (README: Size limits); their texts are not cleaned",
    "no_text": "procedures without (enough) step text",
    "language": "procedures not in an allowed language",
    "step_count": "procedures with too few or too many steps",
    "off_domain": "procedures outside the category/keyword rules",
    "duplicate": "exact and near duplicates of a kept procedure",
}


#: How the in-vocabulary figure counts splits (the report says so beside it).
VOCABULARY_NOTE = (
    "a fused word counts as split only when the split passes the precision gate; misspellings and names it "
    "leaves alone stay out of vocabulary"
)


@dataclass
class Example:
    """One before/after example of a rule (text rules) or one removed procedure (filters)."""

    procedure_id: str
    field: str
    before: str
    after: str | None = None


@dataclass
class RuleStats:
    """Counts of one rule: procedures/steps/tokens it touched (text rules) or removed (filters)."""

    rule: str
    kind: str
    description: str
    procedures: int = 0
    steps: int = 0
    tokens: int = 0
    examples: list[Example] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return asdict(self)


@dataclass
class CleanReport:
    """The result of one ``clean`` run.

    ``in_vocabulary`` holds the ratio of in-vocabulary word tokens in step titles and texts: ``before``
    (raw columns, all procedures), ``after`` (clean columns, all procedures) and ``after_kept`` (clean
    columns of kept procedures), with the token counts behind them. A token the fused-word splitter split
    counts as in vocabulary only through the split it made, and it splits only what passes its precision gate
    (:data:`VOCABULARY_NOTE`).
    """

    procedures: int = 0
    steps: int = 0
    kept: int = 0
    kept_steps: int = 0
    #: Kept steps with empty clean text (image-only or headline-only steps): step_text tasks and embeddings
    #: leave them out; their title and images are still used.
    kept_steps_without_text: int = 0
    rules: list[RuleStats] = field(default_factory=list)
    in_vocabulary: dict[str, float | int] = field(default_factory=dict)
    languages: dict[str, int] = field(default_factory=dict)
    language_filled: int = 0
    duplicates: dict[str, int] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def rule(self, name: str) -> RuleStats:
        """The stats of rule ``name``."""
        for stats in self.rules:
            if stats.rule == name:
                return stats
        raise KeyError(name)

    @property
    def dropped(self) -> dict[str, int]:
        """Procedures removed per filter rule."""
        return {r.rule: r.procedures for r in self.rules if r.kind == "filter"}

    def counts(self) -> dict[str, Any]:
        """The numbers of this report (what the provenance log records)."""
        out: dict[str, Any] = {
            "procedures": self.procedures,
            "steps": self.steps,
            "kept": self.kept,
            "kept_steps": self.kept_steps,
            "kept_steps_without_text": self.kept_steps_without_text,
        }
        out.update({f"dropped_{k}": v for k, v in self.dropped.items()})
        out.update({f"touched_{r.rule}": r.steps for r in self.rules if r.kind == "text"})
        out["language_filled"] = self.language_filled
        out["in_vocab_before"] = round(float(self.in_vocabulary.get("before", 0.0)), 4)
        out["in_vocab_after"] = round(float(self.in_vocabulary.get("after_kept", 0.0)), 4)
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (what ``procbench clean --json`` prints)."""
        return {
            "procedures": self.procedures,
            "steps": self.steps,
            "kept": self.kept,
            "kept_steps": self.kept_steps,
            "kept_steps_without_text": self.kept_steps_without_text,
            "dropped": self.dropped,
            "in_vocabulary": self.in_vocabulary,
            "in_vocabulary_note": VOCABULARY_NOTE,
            "rules": [r.to_dict() for r in self.rules],
            "languages": self.languages,
            "language_filled": self.language_filled,
            "duplicates": self.duplicates,
            "options": self.options,
            "written": self.written,
            "seconds": round(self.seconds, 3),
        }


def snippet_pair(before: str, after: str, context: int = 40) -> tuple[str, str]:
    """Windows of ``before`` and ``after`` around the part that changed, ``context`` characters either side."""
    start = 0
    limit = min(len(before), len(after))
    while start < limit and before[start] == after[start]:
        start += 1
    end_b, end_a = len(before), len(after)
    while end_b > start and end_a > start and before[end_b - 1] == after[end_a - 1]:
        end_b, end_a = end_b - 1, end_a - 1
    lo = max(0, start - context)

    def window(text: str, end: int) -> str:
        hi = min(len(text), end + context)
        return ("..." if lo else "") + text[lo:hi] + ("..." if hi < len(text) else "")

    return window(before, end_b), window(after, end_a)


def changed_tokens(before: list[str], after: list[str]) -> int:
    """How many tokens of ``before`` were removed or changed: occurrences of tokens that ``after`` lacks."""
    remaining = set(after)
    return sum(1 for t in before if t not in remaining)
