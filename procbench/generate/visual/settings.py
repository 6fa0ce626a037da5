"""A visual task's settings resolved: knobs K1, K2, K3, or the RecipeQA style (no knobs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from procbench.errors import BadInput
from procbench.generate.settings import Setting
from procbench.rng import stream

__all__ = ["PlanKey", "VisualSetting", "resolve_settings"]


#: Each visual setting's own draws.
_SETTINGS = stream("visual.settings")


class PlanKey(NamedTuple):
    """Which question plan a setting uses: K1 (None: free resampling), and whether procedures shorter than K1's
    minimum are planned too (``short``: ``adversarial``, :func:`.plans.plans_by_k1`)."""

    k1: int | None
    short: bool = False


@dataclass(frozen=True)
class VisualSetting:
    """A setting resolved for a visual task: ``knobs`` is None for the RecipeQA style."""

    setting: Setting
    knobs: tuple[int, int, int] | None

    @property
    def name(self) -> str:
        """The setting's folder name."""
        return self.setting.name

    @property
    def plan_key(self) -> PlanKey:
        """Which question plan the setting uses."""
        if self.knobs is None:
            return PlanKey(None)
        return PlanKey(self.knobs[0], self.setting.style == "adversarial")

    @property
    def k3(self) -> bool:
        """Whether K3 (closeness to the question) is on."""
        return bool(self.knobs and self.knobs[2])

    def rng(self, seed: int, code: int, salt: int = 0) -> np.random.Generator:
        """The setting's own random stream."""
        key = [9, 9, 9] if self.knobs is None else list(self.knobs)
        return _SETTINGS.rng(seed, code, *key, salt)


def resolve_settings(
    settings: Sequence[Setting], *, task: str, with_k3: bool, default: tuple[int, int, int], adversarial: bool = False
) -> list[VisualSetting]:
    """Check ``settings`` for a visual task (``default``: the knobs of ``Setting("default")``; ``adversarial``
    starts from its K1, K2 with K3=2; a task without K3 takes K3=2 all the same).

    Raises:
        BadInput: ``--debias``, an unknown style, K3=1 for a task without K3, ``--adversarial`` for a task
            without it.
    """
    resolved = []
    for setting in settings:
        if setting.style == "recipeqa":
            resolved.append(VisualSetting(setting, None))
        elif setting.style == "adversarial":
            if not adversarial:
                raise BadInput(f"{task} has no --adversarial setting")
            # K3=2's balanced answer rank; a task without K3 (ordering) draws uniformly within the rank classes
            knobs = (default[0], default[1] if with_k3 else 0, 2)
            resolved.append(VisualSetting(setting, knobs))
        elif setting.style == "default":
            resolved.append(VisualSetting(setting, default))
        elif setting.style == "knobs" and setting.knobs is not None:
            if not with_k3 and setting.knobs[2] == 1:
                raise BadInput(
                    f"{task} has no K3 (question-closeness); use --knobs K1,K2,0 or K1,K2,2 (rank-uniform path length)"
                )
            resolved.append(VisualSetting(setting, setting.knobs))
        else:
            given = f"--{setting.style}" if setting.style == "debias" else f"--style {setting.style}"
            raise BadInput(f"{task} takes --knobs K1,K2,K3, --style recipeqa, --adversarial or --sweep, not {given}")
    return resolved
