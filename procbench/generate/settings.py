"""Generation settings: RecipeQA style, the default sampler, Control-Knobs, budgeted debiasing (DESIGN §6)."""

from __future__ import annotations

from dataclasses import dataclass

from procbench.errors import BadInput

__all__ = ["Setting", "parse_budget", "parse_knobs", "parse_setting"]


@dataclass(frozen=True)
class Setting:
    """One way of sampling a question set; ``name`` is its folder under ``questions/TASK/``."""

    style: str  # "recipeqa" | "default" | "knobs" | "debias" | "adversarial" | "needs-context"
    knobs: tuple[int, int, int] | None = None
    budget: int | str | None = None  # debias: a per-cluster budget, or "auto"
    closeness: int = 0  # needs-context: the difficulty level (procbench.generate.textual.closeness)

    def __post_init__(self) -> None:
        from procbench.generate.policy import current

        levels = len(current().CLOSENESS_MARGINS)
        if isinstance(self.closeness, bool) or not isinstance(self.closeness, int):
            raise BadInput(f"--closeness takes a level from 0 to {levels}, not {self.closeness!r}")
        if self.closeness and self.style != "needs-context":
            raise BadInput("--closeness applies only with --style needs-context")
        if not 0 <= self.closeness <= levels:
            raise BadInput(f"--closeness takes a level from 0 to {levels}, not {self.closeness!r}")

    @property
    def name(self) -> str:
        """``recipeqa``, ``default``, ``adversarial``, ``needs-context`` (``needs-context-c2`` at closeness 2),
        ``knobs-011`` (K1 K2 K3), ``debias-b10`` or ``debias-auto``."""
        if self.closeness:
            return f"needs-context-c{self.closeness}"
        if self.style == "knobs" and self.knobs is not None:
            return "knobs-" + "".join(map(str, self.knobs))
        if self.style == "debias":
            return "debias-auto" if self.budget == "auto" else f"debias-b{self.budget}"
        return self.style

    @property
    def rank_uniform(self) -> bool:
        """Whether this is a K3=2 (rank-uniform) knob setting, the ones pruned AFLite-style (``adversarial`` starts
        from such a draw but is not one)."""
        return self.style == "knobs" and self.knobs is not None and self.knobs[2] == 2

    @classmethod
    def all_knobs(cls, with_k3: bool = True, rank_uniform: bool = True) -> list[Setting]:
        """Every knob setting, the paper's first: K1, K2 with K3 = 0, 1 (8; ordering, which has no K3 in the
        paper: K3 = 0 only, 4), then (``rank_uniform``) the rank-uniform K3 = 2 of each K1, K2 (4 more)."""
        paper = [cls("knobs", (k1, k2, k3)) for k1 in (0, 1) for k2 in (0, 1) for k3 in ((0, 1) if with_k3 else (0,))]
        uniform = [cls("knobs", (k1, k2, 2)) for k1 in (0, 1) for k2 in (0, 1)] if rank_uniform else []
        return paper + uniform


def parse_knobs(text: str) -> tuple[int, int, int]:
    """Parse ``"0,1,2"`` (or ``"012"``) into (K1, K2, K3): K1 and K2 are 0 or 1, K3 is 0, 1 or 2 (rank-uniform)."""
    parts = [p.strip() for p in (text.split(",") if "," in text else list(text.strip()))]
    if len(parts) != 3 or any(p not in ("0", "1") for p in parts[:2]) or parts[2] not in ("0", "1", "2"):
        raise BadInput(f"--knobs takes K1,K2,K3 with K1, K2 in 0/1 and K3 in 0/1/2, such as 0,1,2, not {text!r}")
    k1, k2, k3 = (int(p) for p in parts)
    return k1, k2, k3


def parse_budget(text: str | int) -> int | str:
    """``--budget``: a per-cluster budget of at least 1, or ``auto``."""
    value = str(text).strip().lower()
    if value == "auto":
        return "auto"
    if not value.isdigit() or int(value) < 1:
        raise BadInput(f"--budget takes a whole number of at least 1 or 'auto', not {text!r}")
    return int(value)


#: The setting styles that take no knobs or budget (their name is their folder).
_PLAIN = ("recipeqa", "default", "adversarial", "needs-context")


def parse_setting(name: str) -> Setting:
    """A setting from its folder name (:attr:`Setting.name`): ``recipeqa``, ``default``, ``adversarial``,
    ``needs-context``, ``needs-context-c1`` (closeness 1), ``knobs-011`` (K1 K2 K3), ``debias-b10``,
    ``debias-auto`` (``debias``: ``debias-auto``)."""
    text = str(name).strip().lower()
    if text.startswith("needs-context-c") and text.removeprefix("needs-context-c").isdigit():
        return Setting("needs-context", closeness=int(text.removeprefix("needs-context-c")))
    if text in _PLAIN:
        return Setting(text)
    if text == "debias":
        return Setting("debias", budget="auto")
    if text.startswith("knobs-"):
        return Setting("knobs", parse_knobs(text.removeprefix("knobs-")))
    if text.startswith("debias-"):
        budget = text.removeprefix("debias-")
        return Setting("debias", budget=parse_budget(budget if budget == "auto" else budget.removeprefix("b")))
    raise BadInput(
        f"unknown setting {name!r}: give recipeqa, default, adversarial, needs-context[-cLEVEL], knobs-K1K2K3 "
        "(e.g. knobs-011), debias-bB (e.g. debias-b10) or debias-auto"
    )
