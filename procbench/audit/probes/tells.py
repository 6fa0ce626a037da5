"""``order_tells``: can the answer order be read from the items' own words (issue 37)?

Ordering, sequencing and pair-order questions show steps and ask for their order. A step text that
starts with its list number ("2. Find a photo.", "Step 3 - Mount the motors") or with an ordinal word
("First, ...", "Next, ...", "Finally, ...") tells the order without any understanding of the procedure.

Every item's *tell* is read from the start of its text (after markdown emphasis and punctuation):

* ``number``: leading step numbering (:func:`procbench.clean.numbering.leading_numbering_end`: ``2.``,
  ``2)``, ``(2)``, ``Step 2:``, ``Step Two -``, ``ii.``, ...) and its value;
* ``ordinal``: an ordinal or sequencing word or phrase in the first words (:data:`ORDINAL_RANKS`):
  *first* (``first``, ``firstly``, ``to begin``, ``start by``, ``before you begin``), a numbered ordinal
  (``second``, ``secondly``, ``third``, ... as 2, 3, ...), *middle* (``then``, ``next``, ``after that``,
  ``afterwards``, ``now``) and *last* (``finally``, ``lastly``, ``last``, ``final``, ``to finish``, ``when
  you are done``).

Every tell stands for a range of positions on one scale: a number *n* for *n*, *first* for 0-1, a
numbered ordinal for its number, *middle* for anything between first and last, *last* for after
everything. Two items are *ordered by their tells* when their ranges do not overlap ("2." before "3.",
"First," before "Then", "3." before "Finally,"; "Then" and "Next" or "Then" and "2." say nothing). A
question's order *can be read* when every consecutive pair of its answer order is
ordered by the tells, in the answer's direction; for pair order (two items) that is the one pair, and
the label then follows from the presented order. ``value`` is the share of questions whose order can be
read (a rate: no chance level; the interval is a procedure bootstrap). ``details`` adds the share of
questions with any tell, of item pairs ordered by tells (and how many of those contradict the answer),
counts per tell kind and a few examples.

Items are step keys (``PROCEDURE_ID#INDEX``) read from the store the set lives in (``text_clean``, and
``title_clean`` when the text has no tell; the raw columns when the store is not cleaned), or texts.
Image items have no text: the probe does not apply to them.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.context import ProbeContext
from procbench.audit.registry import register
from procbench.audit.report import ProbeResult
from procbench.audit.stats import percentile_ci
from procbench.clean.numbering import leading_numbering_end

__all__ = ["FIRST", "LAST", "MIDDLE", "ORDINAL_RANKS", "Tell", "order_tells", "read_tell"]

#: Ranks of ordinal tells: *first*, *middle* and *last* (numbered ordinals rank by their number).
FIRST, MIDDLE, LAST = 0, -1, -2
#: Ordinal words and phrases at the start of a step and their rank.
ORDINAL_RANKS: dict[str, int] = {
    **dict.fromkeys(["first", "firstly", "first of all", "to begin", "to start", "start by", "begin by"], FIRST),
    **dict.fromkeys(["before you begin", "before you start", "before anything else"], FIRST),
    **dict.fromkeys(["second", "secondly"], 2),
    **dict.fromkeys(["third", "thirdly"], 3),
    **dict.fromkeys(["fourth", "fourthly"], 4),
    **dict.fromkeys(["fifth", "fifthly"], 5),
    **dict.fromkeys(["then", "next", "after that", "afterwards", "afterward", "now", "after this"], MIDDLE),
    **dict.fromkeys(["once that is done", "once done"], MIDDLE),
    **dict.fromkeys(["finally", "lastly", "last", "last of all", "final", "to finish", "to end", "at the end"], LAST),
    **dict.fromkeys(["when you are done", "when you're done", "when finished", "in the end"], LAST),
}
#: The positions each ordinal rank stands for (a number n stands for n).
_SPANS = {FIRST: (0.0, 1.0), MIDDLE: (1.5, 998.0), LAST: (999.0, 999.0)}
_ORDINAL = re.compile(
    r"\A[\W_]*(" + "|".join(sorted((re.escape(w) for w in ORDINAL_RANKS), key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d{1,3}")
_WORD_NUMBERS = {
    w: i
    for i, w in enumerate(
        ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
        + ["eleven", "twelve", "thirteen", "fourteen", "fifteen"],
        1,
    )
}
_ROMAN = re.compile(r"\b(x{0,3})(ix|iv|v?i{0,3})\b", re.IGNORECASE)
_ROMAN_VALUES = {"": 0, "i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5, "vi": 6, "vii": 7, "viii": 8, "ix": 9}
_STEP_KEY = re.compile(r"\S+#\d+")
_INTERVAL = "procedure bootstrap of the share of questions whose order the tells give"


#: ``(kind, rank)``: ``("number", 3)`` or ``("ordinal", rank)`` with a rank of :data:`ORDINAL_RANKS`.
Tell = tuple[str, int]


def _number_of(marker: str) -> int | None:
    digits = _NUMBER.findall(marker)
    if digits:
        return int(digits[0])  # "Step 2: 1. Open" is step 2 (its own list restarts at 1)
    words = [_WORD_NUMBERS[w] for w in re.findall(r"[a-z]+", marker.lower()) if w in _WORD_NUMBERS]
    if words:
        return words[0]
    for match in _ROMAN.finditer(marker):
        tens, units = match.group(1).lower(), match.group(2).lower()
        if tens or units:
            return 10 * len(tens) + _ROMAN_VALUES[units]
    return None


def read_tell(text: str | None) -> Tell | None:
    """The order tell at the start of ``text``, if any."""
    if not text:
        return None
    end = leading_numbering_end(text)
    if end:
        marker = re.split(r"\b(?:of|out of)\b|/", text[:end], maxsplit=1, flags=re.IGNORECASE)[0]
        number = _number_of(marker)
        if number is not None:
            return ("number", number)
        word = _ORDINAL.match(marker)  # "Final step:", "Next step -"
        if word is not None:
            return ("ordinal", ORDINAL_RANKS[word.group(1).lower()])
    word = _ORDINAL.match(text[end:])
    if word is not None:
        return ("ordinal", ORDINAL_RANKS[word.group(1).lower()])
    return None


def _span(tell: Tell) -> tuple[float, float]:
    kind, rank = tell
    if kind == "ordinal" and rank in _SPANS:
        return _SPANS[rank]
    return float(rank), float(rank)


def _ordered(a: Tell | None, b: Tell | None) -> int:
    """+1 when the tells put ``a`` before ``b``, -1 after, 0 when they say nothing (missing or overlapping)."""
    if a is None or b is None:
        return 0
    (a_lo, a_hi), (b_lo, b_hi) = _span(a), _span(b)
    if a_hi < b_lo:
        return 1
    if b_hi < a_lo:
        return -1
    return 0


def _step_texts(aset: AuditSet, keys: set[str]) -> dict[str, tuple[str | None, str | None]]:
    """Step key -> (text, title) from the store the set lives in (clean columns when there)."""
    from procbench.audit.loaders import set_store
    from procbench.features import step_key

    store = set_store(aset.source)
    if store is None or not store.has_table("steps"):
        raise NotApplicable("the items are step keys and there is no store to read their texts from")
    columns = store.columns("steps")
    text = "text_clean" if "text_clean" in columns else "text"
    title = "title_clean" if "title_clean" in columns else "title"
    table = store.table("steps", ["procedure_id", "index", text, title])
    out: dict[str, tuple[str | None, str | None]] = {}
    for pid, index, body, head in zip(
        table["procedure_id"].to_pylist(),
        table["index"].to_pylist(),
        table[text].to_pylist(),
        table[title].to_pylist(),
        strict=True,
    ):
        key = step_key(pid, index)
        if key in keys:
            out[key] = (body, head)
    return out


def _orders(aset: AuditSet) -> tuple[list[list[str]], list[list[str]]]:
    """Per question: the answer order of its items, and the items as presented."""
    kind = aset.kind
    answers, presented = [], []
    for i in range(len(aset)):
        shown = [str(k) for k in aset.qkeys()[i] if k is not None]
        answer = int(aset.answers[i])
        if kind.label_choices:  # pair order: the label says whether the shown order is the authored one
            label = str(aset.choices[i][answer]) if 0 <= answer < len(aset.choices[i]) else ""
            authored = label not in {"inverted", "0", "false", "no"}
            answers.append(shown if authored else shown[::-1])
        else:
            choices = aset.ckeys()[i]
            answers.append([str(x) for x in choices[answer]] if 0 <= answer < len(choices) else [])
        presented.append(shown)
    return answers, presented


@register("order_tells", kind="rate", summary="answer orders readable from step numbers or ordinal words")
def order_tells(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Share of ordering, sequencing and pair-order questions whose answer order the items' tells give."""
    kind = aset.kind
    if not (kind.ordering or (kind.label_choices and aset.task == "pair-order")):
        raise NotApplicable(f"{aset.task} does not ask for an order")
    if kind.items == "image":
        raise NotApplicable(f"{aset.task} items are images: they have no text to carry a tell")
    answers, presented = _orders(aset)
    items = {k for order in answers for k in order} | {k for shown in presented for k in shown}
    keyed = kind.items == "step" and bool(items) and all(_STEP_KEY.fullmatch(k) for k in items)
    tells: dict[str, Tell | None] = {}
    source: Counter[str] = Counter()
    if keyed:
        texts = _step_texts(aset, items)
        for key in items:
            body, head = texts.get(key, (None, None))
            tell = read_tell(body)
            if tell is not None:
                source["text"] += 1
            else:
                tell = read_tell(head)
                source["title"] += tell is not None
            tells[key] = tell
    else:
        tells = {k: read_tell(k) for k in items}
    readable = np.zeros(len(aset))
    usable = np.zeros(len(aset), dtype=bool)
    any_tell = np.zeros(len(aset), dtype=bool)
    pairs = agree = contradict = 0
    kinds: Counter[str] = Counter(t[0] for t in tells.values() if t is not None)
    examples: list[dict[str, Any]] = []
    for i, order in enumerate(answers):
        if len(order) < 2:
            continue
        usable[i] = True
        any_tell[i] = any(tells.get(k) is not None for k in order)
        steps = [_ordered(tells.get(a), tells.get(b)) for a, b in zip(order, order[1:], strict=False)]
        readable[i] = float(all(s == 1 for s in steps))
        for s in range(len(order)):
            for t in range(s + 1, len(order)):
                said = _ordered(tells.get(order[s]), tells.get(order[t]))
                pairs += 1
                agree += said == 1
                contradict += said == -1
        if readable[i] and len(examples) < 3:
            examples.append({"question": i, "tells": [list(tells[k] or ()) for k in order]})
    if not usable.any():
        raise NotApplicable("no question has two or more items to order")
    value = float(readable[usable].mean())
    replicates = ctx.bootstrap.ratio(np.where(usable, readable, 0.0), usable.astype(np.float64))
    return ProbeResult(
        value,
        None,
        percentile_ci(replicates),
        details={
            "n_used": int(usable.sum()),
            "readable": int(readable[usable].sum()),
            "share_with_any_tell": float(any_tell[usable].mean()),
            "item_pairs": pairs,
            "pairs_ordered_by_tells": agree,
            "pairs_contradicted_by_tells": contradict,
            "items_with_tells": dict(sorted(kinds.items())),
            "tells_from": dict(sorted(source.items())) if keyed else {"items": sum(kinds.values())},
            "examples": examples,
            "interval": _INTERVAL,
            "n_boot": ctx.bootstrap.n_boot,
        },
        arrays={"readable": readable, "usable": usable},
    )
