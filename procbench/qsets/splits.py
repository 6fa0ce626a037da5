"""Train/val/test splits by procedure (or by category), so no procedure appears in two splits."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from procbench.errors import BadInput

__all__ = ["SPLITS", "parse_ratios", "split_by_category", "split_by_procedure"]

SPLITS = ("train", "val", "test")


def parse_ratios(text: str) -> tuple[float, float, float]:
    """Parse ``"0.8,0.1,0.1"`` (train, val, test); they must be non-negative and sum to 1."""
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError as exc:
        raise BadInput(f"split ratios must be three numbers like 0.8,0.1,0.1, not {text!r}") from exc
    if len(values) != 3 or min(values) < 0 or abs(sum(values) - 1) > 1e-6:
        raise BadInput(f"split ratios must be three non-negative numbers summing to 1, not {text!r}")
    return values


def _unit(seed: int, key: str) -> float:
    """A uniform number in [0, 1) fixed by (seed, key): assignments do not move when other items are added."""
    digest = hashlib.sha256(f"{seed}\x1f{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _pick(u: float, ratios: Sequence[float]) -> str:
    edge = 0.0
    for name, ratio in zip(SPLITS, ratios, strict=True):
        edge += ratio
        if u < edge:
            return name
    return SPLITS[-1]


def split_by_procedure(
    procedure_ids: Sequence[str],
    *,
    ratios: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    fixed: dict[str, str] | None = None,
) -> dict[str, str]:
    """Assign each procedure a split; ``fixed`` splits (e.g. from the store's ``split`` column) are kept.

    Raises:
        BadInput: a ``fixed`` split that is none of :data:`SPLITS` (a store written before ``ingest`` checked them).
    """
    fixed = fixed or {}
    odd = sorted({split for split in fixed.values() if split and split not in SPLITS})
    if odd:
        example = next(pid for pid, split in sorted(fixed.items()) if split == odd[0])
        raise BadInput(
            f"the store holds procedures whose split is none of {', '.join(SPLITS)}: {', '.join(map(repr, odd[:5]))} "
            f"(e.g. {example[:80]}); re-ingest them with one of those splits or none"
        )
    return {pid: fixed.get(pid) or _pick(_unit(seed, pid), ratios) for pid in procedure_ids}


def split_by_category(
    categories: dict[str, list[str]],
    *,
    level: int,
    ratios: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
) -> dict[str, str]:
    """Assign whole categories to splits, so test categories are unseen in training (paper 000).

    ``categories`` maps procedure id to its category path (root first); procedures are grouped by the
    path cut at ``level`` (1 = root). Groups are ordered by a seeded hash and filled into train, val and
    test until each holds its share of procedures.
    """
    if level < 1:
        raise BadInput("category level starts at 1 (the root category)")
    groups: dict[str, list[str]] = {}
    for pid, path in categories.items():
        groups.setdefault(" > ".join(path[:level]) or "(none)", []).append(pid)
    order = sorted(groups, key=lambda g: (_unit(seed, g), g))
    total = sum(len(v) for v in groups.values())
    bounds = [ratios[0] * total, (ratios[0] + ratios[1]) * total]
    out: dict[str, str] = {}
    done = 0
    for group in order:
        members = groups[group]
        middle = done + len(members) / 2
        split = "train" if middle < bounds[0] else "val" if middle < bounds[1] else "test"
        out.update(dict.fromkeys(members, split))
        done += len(members)
    return out
