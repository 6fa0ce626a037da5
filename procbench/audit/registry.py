"""The probe registry: each probe family registers its probes by name, like cleanlab's issue managers.

A probe is a function ``(audit_set, context) -> ProbeResult``. It decides for itself whether it applies
to the set's task and, when it does not, raises ``NotApplicable`` saying why; it never fakes a value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from procbench.errors import BadInput
from procbench.registry import Registry

if TYPE_CHECKING:
    from procbench.audit.auditset import AuditSet
    from procbench.audit.context import ProbeContext
    from procbench.audit.report import ProbeResult

__all__ = ["PROBES", "ProbeFn", "ProbeSpec", "register", "resolve_probes"]

ProbeFn = Callable[["AuditSet", "ProbeContext"], "ProbeResult"]


@dataclass(frozen=True)
class ProbeSpec:
    """A registered probe.

    Attributes:
        name: the key in ``audit.json``.
        fn: computes the result.
        kind: what ``value`` is: ``accuracy`` (multiple-choice accuracy of a shortcut), ``share``, ``divergence``
            or ``rate``.
        summary: one line for tables and docs.
    """

    name: str
    fn: ProbeFn
    kind: str
    summary: str


#: Probe name -> spec, in the order probes are reported (``partial-input`` finds ``partial_input``).
PROBES: Registry[ProbeSpec] = Registry("probe", normalise=lambda name: name.strip().lower().replace("-", "_"))


def register(name: str, *, kind: str, summary: str) -> Callable[[ProbeFn], ProbeFn]:
    """Register ``fn`` as probe ``name``."""

    def decorate(fn: ProbeFn) -> ProbeFn:
        PROBES.add(name, ProbeSpec(name, fn, kind, summary))
        return fn

    return decorate


def resolve_probes(names: Iterable[str] | str | None) -> list[ProbeSpec]:
    """The specs for ``names`` (``"a,b"`` or a list; None means every probe), in registry order.

    Raises:
        BadInput: an unknown probe name (the message suggests the closest one).
    """
    if names is None:
        return PROBES.values()
    items = [names] if isinstance(names, str) else list(names)
    wanted = {PROBES.get(part).name for item in items for part in item.split(",") if part.strip()}
    if not wanted:
        raise BadInput(f"no probe named; choose from {', '.join(PROBES)}")
    return [spec for spec in PROBES.values() if spec.name in wanted]
