"""``question_overlap``: bias 1 of paper 001, answers visible in other questions of the same procedure.

When several questions are drawn from one procedure, a model can learn a question's answer from the
others instead of from the context. ``value`` is the share of questions whose answer is revealed by
another question of the same procedure (a rate, so ``chance`` is None; the interval is a procedure
bootstrap). What "revealed" means depends on the task:

* cloze (textual, visual): the answer item is shown in another question of the procedure, as one of its
  question items or as its answer;
* visual coherence: every coherent (wrong) choice is known to belong to the procedure from another
  question (one of its question items or coherent choices), which leaves only the answer;
* ordering and sequencing: a consecutive pair of the correct order appears in the same relative order in
  the correct order of another question of the procedure.

Pair order has no answer item (its choices are labels), so the probe does not apply to it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from typing import Any

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.context import ProbeContext
from procbench.audit.registry import register
from procbench.audit.report import ProbeResult
from procbench.audit.stats import percentile_ci

__all__ = ["question_overlap"]


def _units(aset: AuditSet, i: int, qkeys: list[Any], ckeys: list[Any]) -> tuple[set[Hashable], set[Hashable], str]:
    """(what question ``i`` needs revealed, what it reveals to the others, the rule: any/all)."""
    answer = int(aset.answers[i])
    choices = ckeys[i]
    if not 0 <= answer < len(choices):
        return set(), set(), "any"
    kind = aset.kind
    shown = {k for k in qkeys[i] if k is not None}
    if kind.ordering:
        order = [str(x) for x in choices[answer]]
        needs: set[Hashable] = {(a, b) for a, b in zip(order, order[1:], strict=False)}
        reveals: set[Hashable] = {(order[s], order[t]) for s in range(len(order)) for t in range(s + 1, len(order))}
        return needs, reveals, "any"
    if kind.coherence:
        coherent = {str(c) for j, c in enumerate(choices) if j != answer}
        return set(coherent), coherent | {str(k) for k in shown}, "all"
    return {str(choices[answer])}, {str(k) for k in shown} | {str(choices[answer])}, "any"


@register("question_overlap", kind="rate", summary="answers revealed by another question of the same procedure")
def question_overlap(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Share of questions whose answer another question of the same procedure reveals."""
    if aset.kind.label_choices:
        raise NotApplicable(f"{aset.task} answers are labels, not items another question could show")
    qkeys = aset.qkeys()
    ckeys = aset.ckeys()
    by_procedure: dict[int, list[int]] = {}
    for i, code in enumerate(ctx.codes.tolist()):
        by_procedure.setdefault(code, []).append(i)
    revealed = np.zeros(len(aset))
    usable = np.zeros(len(aset), dtype=bool)
    partial = np.zeros(len(aset))
    for members in by_procedure.values():
        units = [_units(aset, i, qkeys, ckeys) for i in members]
        pooled: Counter[Hashable] = Counter()
        for _, reveals, _ in units:
            pooled.update(reveals)
        for i, (needs, reveals, rule) in zip(members, units, strict=True):
            if not needs:
                continue
            usable[i] = True
            if len(members) == 1:
                continue
            seen = [pooled[u] - (u in reveals) > 0 for u in needs]
            partial[i] = sum(seen) / len(seen)
            revealed[i] = float(all(seen) if rule == "all" else any(seen))
    if not usable.any():
        raise NotApplicable("no question has an answer to look for")
    value = float(revealed[usable].mean())
    replicates = ctx.bootstrap.ratio(np.where(usable, revealed, 0.0), usable.astype(np.float64))
    sizes = np.array([len(m) for m in by_procedure.values()])
    return ProbeResult(
        value,
        None,
        percentile_ci(replicates),
        details={
            "n_used": int(usable.sum()),
            "revealed": int(revealed[usable].sum()),
            "mean_share_revealed": float(partial[usable].mean()),
            "procedures": int(len(sizes)),
            "procedures_with_several_questions": int((sizes > 1).sum()),
            "max_questions_per_procedure": int(sizes.max()),
            "n_boot": ctx.bootstrap.n_boot,
        },
    )
