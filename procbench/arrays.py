"""Arrow list helpers shared by the question writers and the RecipeQA format (no procbench imports)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["ragged_lists", "ranges"]


def ragged_lists(values: pa.Array | np.ndarray, lengths: np.ndarray) -> pa.ListArray:
    """``values`` cut into consecutive lists of ``lengths``."""
    if isinstance(values, np.ndarray):
        values = pa.array(values)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), values)


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(starts[i], starts[i] + lengths[i])`` over ``i`` (int64)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    ends = np.cumsum(lengths)
    return np.repeat(np.asarray(starts, dtype=np.int64) - (ends - lengths), lengths) + np.arange(
        int(ends[-1]) if len(ends) else 0
    )
