"""``answer_position``: are answers spread evenly over the choice positions?

``value`` is the share of answers at the most common position, which is the accuracy of the rule "always
answer position p" for the best p; ``chance`` is 1/#choices. The interval is a procedure bootstrap of that
share, widened to the ``1 - 0.05/k`` level (Bonferroni over the ``k`` positions, because the reported
position is the largest of ``k``): a set whose positions are uniform keeps chance inside it. ``details``
holds the chi-square test against the uniform distribution (statistic, degrees of freedom, p-value),
the counts per position and the largest deviation of any position's share from 1/k.
"""

from __future__ import annotations

import numpy as np

from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.context import ProbeContext
from procbench.audit.probes.common import require_multiple_choice
from procbench.audit.registry import register
from procbench.audit.report import ProbeResult
from procbench.audit.stats import percentile_ci

__all__ = ["answer_position"]


@register("answer_position", kind="share", summary="share of answers at the most common position")
def answer_position(aset: AuditSet, ctx: ProbeContext) -> ProbeResult:
    """Share of the most common answer position, with a chi-square test against uniform."""
    require_multiple_choice(aset, needs_items=False)
    from scipy.stats import chisquare

    n_choices = aset.index().valid.sum(axis=1)
    values, counts = np.unique(n_choices, return_counts=True)
    k = int(values[np.argmax(counts)])
    rows = (n_choices == k) & (aset.answers >= 0) & (aset.answers < k)
    if k < 2 or rows.sum() < 2:
        raise NotApplicable("fewer than two choices per question, or too few questions")
    per_position = np.bincount(aset.answers[rows], minlength=k)
    top = int(np.argmax(per_position))
    share = per_position / per_position.sum()
    hits = (rows & (aset.answers == top)).astype(np.float64)
    replicates = ctx.bootstrap.ratio(hits, rows.astype(np.float64))
    ci = percentile_ci(replicates, alpha=0.05 / k)
    test = chisquare(per_position)
    return ProbeResult(
        float(share[top]),
        1.0 / k,
        ci,
        details={
            "n_used": int(rows.sum()),
            "n_choices": k,
            "most_common_position": top,
            "counts": per_position.tolist(),
            "max_deviation": float(np.abs(share - 1.0 / k).max()),
            "chi2": float(test.statistic),
            "dof": k - 1,
            "p_value": float(test.pvalue),
            "ci_level": 1 - 0.05 / k,
            "n_boot": ctx.bootstrap.n_boot,
        },
        arrays={"counts": per_position},
    )
