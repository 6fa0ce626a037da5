"""The options every ``generate`` task shares, and their checks (a bad value is one line of
:class:`~procbench.errors.BadInput`); each task's own class is in :mod:`procbench.generate.options`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

from procbench.errors import BadInput
from procbench.generate.adversarial.policy import MIN_YIELD, POLICY_SIZES, TEXTUAL_POLICY, AdversarialPolicy, sized

if TYPE_CHECKING:
    from procbench.generate.settings import Setting

__all__ = ["MAX_COUNT", "MAX_SEED", "AdversarialOptions", "GenerateOptions", "check_distance", "integer"]

#: Largest seed (every random generator procbench uses takes 32 bits).
MAX_SEED = 2**32 - 1
#: The order the options are recorded in (the command line's; a card lists them in it).
_ORDER = (
    "clusters",
    "questions_per_procedure",
    "knn_k",
    "pairs_per_procedure",
    "adjacent",
    "kc",
    "min_distance",
    "items",
    "min_steps",
    "rounds",
    "ceiling",
    "min_yield",
    "policy",
)
_ADVERSARIAL = ("rounds", "ceiling", "min_yield", "policy")


def _order(name: str) -> int:
    """Where ``name`` is recorded (:data:`_ORDER`; an option it does not list comes last)."""
    return _ORDER.index(name) if name in _ORDER else len(_ORDER)


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


#: Upper bound of every count option (untuned: a guard so that a typo such as ``knn_k = 10**12`` is one line, not a
#: MemoryError; far above any value the tasks use).
MAX_COUNT = 100_000


def integer(name: str, value: Any, least: int, most: int = MAX_COUNT) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise BadInput(f"{flag(name)} must be an integer of at least {least}, not {value!r}")
    if value > most:
        raise BadInput(f"{flag(name)} must be an integer of at most {most:,}, not {value!r}")


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadInput(f"{flag(name)} must be a finite number, not {value!r}")
    return float(value)


def share(name: str, value: Any, what: str) -> float:
    """A number in (0, 1]."""
    number = _number(name, value)
    if not 0.0 < number <= 1.0:
        raise BadInput(f"{flag(name)} must be {what} in (0, 1], not {value!r}")
    return number


@dataclass(frozen=True)
class GenerateOptions:
    """What every task takes: the seed and how procedures are split.

    Attributes:
        seed: the random seed (0 to 2^32-1): the same store, options and seed give byte-identical sets.
        split_by: ``procedure`` (the store's own ``split`` column wins where set), or ``category:LEVEL`` for test
            categories unseen in training.
        split_ratios: train, val and test shares of the procedures (non-negative, summing to 1).
    """

    #: The task these options are for (``procbench generate --task``).
    task: ClassVar[str] = ""

    seed: int = 0
    split_by: str = "procedure"
    split_ratios: tuple[float, float, float] = (0.8, 0.1, 0.1)

    def __post_init__(self) -> None:
        seed = self.seed
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise BadInput(f"--seed must be an integer from 0 to {MAX_SEED}, not {seed!r}")
        kind, _, level = str(self.split_by).partition(":")
        if not isinstance(self.split_by, str) or not (
            self.split_by == "procedure" or (kind == "category" and level.isdigit())
        ):
            raise BadInput(
                f"--split-by takes 'procedure' or 'category:LEVEL' (e.g. category:3), not {self.split_by!r}"
            )
        ratios = self.split_ratios
        if (
            not isinstance(ratios, (list, tuple))
            or len(ratios) != 3
            or any(isinstance(r, bool) or not isinstance(r, (int, float)) or not r >= 0 for r in ratios)
            or abs(sum(ratios) - 1) > 1e-6
        ):
            raise BadInput(f"split ratios must be three non-negative numbers summing to 1, not {ratios!r}")
        object.__setattr__(self, "split_ratios", tuple(float(r) for r in ratios))
        self._check()

    def _check(self) -> None:
        """The task's own checks (each subclass its fields')."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every option name this task takes (the shared ones first)."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def of(cls, **options: Any) -> GenerateOptions:
        """The options from ``options`` (``None`` values are left at their defaults).

        Raises:
            BadInput: an option the task does not take (``--NAME does not apply to task TASK``) or a bad value.
        """
        return cls().replace(**options)

    def replace(self, **changes: Any) -> GenerateOptions:
        """A copy with ``changes`` applied (``None`` values are ignored); an option the task does not take is
        bad input."""
        known = set(self.names())
        for name in changes:
            if name not in known:
                raise BadInput(f"{flag(name)} does not apply to task {self.task}")
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def own(self) -> dict[str, Any]:
        """The task's options that are not at their default, in the command line's order (recorded ones only)."""
        shared = {f.name for f in fields(GenerateOptions)}
        chosen = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in shared and f.metadata.get("record", True) and getattr(self, f.name) != f.default
        }
        return {name: chosen[name] for name in sorted(chosen, key=_order)}

    def record(self) -> dict[str, Any]:
        """What ``options.json`` and the provenance log record besides the task, setting and seed: the split and
        :meth:`own`."""
        return {"split_by": self.split_by, "split_ratios": list(self.split_ratios), **self.own()}

    def to_dict(self) -> dict[str, Any]:
        """Every option, JSON-ready (a manifest's ``[generate.TASK]`` section takes these keys)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("record", True):
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    def check(self, settings: Sequence[Setting]) -> None:
        """Raise :class:`BadInput` when an option is set that none of ``settings`` uses, or a setting the task does
        not have."""
        if self.task != "textual-cloze" and any(s.closeness for s in settings):
            raise BadInput(f"--closeness levels apply to textual-cloze's needs-context, not to {self.task}")


@dataclass(frozen=True)
class AdversarialOptions(GenerateOptions):
    """The ``adversarial`` setting's options (docs/adversarial.md).

    Attributes:
        rounds: round limit of the filtering (None: the policy's, 15 standard, 4 demo).
        ceiling: a replacement's cosine similarity to the answer and to every question item stays below this (no
            paraphrases, no near-copies of what the question shows).
        min_yield: when the probes still beat chance after the rounds, the questions they solve are dropped (most
            confident first) while this share of the drafted questions stays; 1 drops none (:data:`MIN_YIELD`).
        policy: the filter's size: ``standard``, or ``demo`` (4 rounds of one 3-fold ensemble: a small sample in
            seconds, weaker; the card names it).
    """

    rounds: int | None = None
    ceiling: float = TEXTUAL_POLICY.ceiling
    min_yield: float = MIN_YIELD
    policy: str = "standard"

    def _check(self) -> None:
        super()._check()
        if self.rounds is not None:
            integer("rounds", self.rounds, 0)
        object.__setattr__(self, "ceiling", share("ceiling", self.ceiling, "a cosine similarity"))
        object.__setattr__(self, "min_yield", share("min_yield", self.min_yield, "a share"))
        if self.policy not in POLICY_SIZES:
            raise BadInput(f"--policy takes {' or '.join(POLICY_SIZES)}, not {self.policy!r}")

    def check(self, settings: Sequence[Setting]) -> None:
        super().check(settings)
        defaults = {f.name: f.default for f in fields(self)}
        given = [name for name in _ADVERSARIAL if getattr(self, name) != defaults[name]]
        if given and not any(s.style == "adversarial" for s in settings):
            raise BadInput("--rounds, --ceiling, --min-yield and --policy apply only with --adversarial (or --sweep)")

    def adversarial_policy(self, preset: AdversarialPolicy) -> AdversarialPolicy:
        """``preset`` (the task's :class:`~procbench.generate.adversarial.AdversarialPolicy`) at this ``policy``'s
        size, with this ``rounds`` (where given), ``ceiling`` and ``min_yield``."""
        base = sized(preset, self.policy)
        return dataclasses.replace(
            base,
            rounds=base.rounds if self.rounds is None else self.rounds,
            ceiling=self.ceiling,
            min_yield=self.min_yield,
        )


def check_distance(options: Any) -> None:
    """Check and set ``options.min_distance`` (None, or a finite distance of at least 0, made a float)."""
    distance = options.min_distance
    if distance is None:
        return
    bad = isinstance(distance, bool) or not isinstance(distance, (int, float)) or not math.isfinite(distance)
    if bad or distance < 0:
        raise BadInput(f"--min-distance must be a finite distance of at least 0, not {distance!r}")
    object.__setattr__(options, "min_distance", float(distance))
