"""``repeated_items``: questions that show one item twice, read from the set alone (not the generator's code).

A question whose wrong choice is one of its own question items (the photo beside the blank offered again as a
choice), or whose choices repeat each other, is broken whatever a model knows: a reader sees the same photo
twice and can rule it out or is left with two right answers. It happens when a corpus shares or copies a photo
between procedures (stored once, by content) and a sampler misses that the copy is the question's own. An
ordering question repeats when two of its orders are the same order.

``value`` is the share of questions with such a repeat (a rate: no chance level, 0 is the only good value;
the interval is a procedure bootstrap). ``details`` counts each kind and lists a few question ids. Pair order
(label choices) does not apply.
"""

from __future__ import annotations

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.context import ProbeContext
from procbench.audit.registry import register
from procbench.audit.report import ProbeResult
from procbench.audit.stats import percentile_ci

__all__ = ["repeated_items"]

#: Question ids listed in the details.
EXAMPLES = 5


@register("repeated_items", kind="rate", summary="questions showing one item twice (a choice repeats another item)")
def repeated_items(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Share of questions in which a choice repeats a question item or another choice."""
    if aset.kind.label_choices:
        raise NotApplicable(f"{aset.task} choices are labels, not items that could repeat")
    qkeys, ckeys = aset.qkeys(), aset.ckeys()
    in_question = np.zeros(len(aset), dtype=bool)
    among_choices = np.zeros(len(aset), dtype=bool)
    for i, (shown, choices) in enumerate(zip(qkeys, ckeys, strict=True)):
        keys = [tuple(str(x) for x in c) if aset.kind.ordering else str(c) for c in choices]
        among_choices[i] = len(set(keys)) < len(keys)
        if not aset.kind.ordering:
            in_question[i] = bool(set(keys) & {str(k) for k in shown if k is not None})
    repeated = in_question | among_choices
    replicates = ctx.bootstrap.ratio(repeated.astype(np.float64), np.ones(len(aset)))
    qids = aset.qids or [str(i) for i in range(len(aset))]
    return ProbeResult(
        float(repeated.mean()) if len(aset) else 0.0,
        None,
        percentile_ci(replicates),
        details={
            "questions": int(repeated.sum()),
            "choice_repeats_question_item": int(in_question.sum()),
            "choices_repeat_each_other": int(among_choices.sum()),
            "examples": [qids[i] for i in np.flatnonzero(repeated)[:EXAMPLES].tolist()],
            "n_boot": ctx.bootstrap.n_boot,
        },
    )
