"""How deeply parsed data (JSON, TOML) nests: the one guard every reader of untrusted files uses before walking it."""

from __future__ import annotations

from typing import Any

__all__ = ["nesting_depth"]


def nesting_depth(value: Any, *, cap: int) -> int:
    """How many levels of dicts and lists ``value`` nests (a scalar: 0), walked without recursion; the walk stops
    at the first level past ``cap``, so the result is at most ``cap + 1`` and costs at most what that much reads."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if depth > cap:
                return depth
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest
