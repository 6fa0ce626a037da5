"""procbench.nesting: the one depth guard of untrusted parsed data."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from procbench.nesting import nesting_depth


def _nested(levels: int) -> object:
    value: object = 1
    for i in range(levels):
        value = [value] if i % 2 else {"k": value}
    return value


@given(st.integers(min_value=0, max_value=60), st.integers(min_value=1, max_value=40))
def test_the_depth_is_exact_up_to_the_cap_and_stops_just_past_it(levels: int, cap: int) -> None:
    assert nesting_depth(_nested(levels), cap=cap) == min(levels, cap + 1)


def test_siblings_count_by_their_deepest_branch_and_scalars_are_flat() -> None:
    assert nesting_depth("text", cap=5) == 0
    assert nesting_depth({"a": [1, [2]], "b": {}}, cap=5) == 3


def test_a_very_deep_document_costs_no_recursion() -> None:
    deep = json.loads("[" * 900 + "]" * 900)
    assert nesting_depth(deep, cap=32) == 33
