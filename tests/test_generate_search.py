"""search_until_k: widening stops where a search is exhausted; blocks of queries give the same result."""

from __future__ import annotations

import numpy as np
import pytest

from procbench.generate import search


def _fake_knn(reach: dict[int, int], calls: list[tuple[int, int]]):  # type: ignore[no-untyped-def]
    """A knn over rows 0..39 in row order where query q (its vector's first value) reaches only ``reach[q]`` rows,
    as an IVF index's probed lists do: asked for more, it pads with -1."""

    def knn(index: object, queries: np.ndarray, k: int, *, exclude: object = None) -> tuple[np.ndarray, np.ndarray]:
        calls.append((len(queries), k))
        ids = np.full((len(queries), k), -1, dtype=np.int64)
        for i, q in enumerate(queries[:, 0].astype(int).tolist()):
            found = np.arange(min(k, reach[q]))
            ids[i, : len(found)] = found
        return np.where(ids >= 0, ids.astype(np.float32), np.inf), ids

    return knn


def test_a_short_search_is_not_widened_and_blocks_give_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    reach = {0: 10, 1: 40, 2: 40}
    queries = np.array([[0.0], [1.0], [2.0]], dtype=np.float32)

    def even(_queries: np.ndarray, ids: np.ndarray) -> np.ndarray:
        return ids % 2 == 0

    results = []
    for block in (32_768, 1):
        calls: list[tuple[int, int]] = []
        monkeypatch.setattr(search, "knn", _fake_knn(reach, calls))
        monkeypatch.setattr(search, "SEARCH_BLOCK", block)
        dist, ids = search.search_until_k(None, queries, 8, exclude=[None] * 3, keep=even, fetch=8, limit=40)  # type: ignore[arg-type]
        results.append(ids)
        # query 0 reached all it could at fetch 8? no: 8 of its 10 rows, so it is widened once (to 16), comes back
        # short (10 rows) and stops; queries 1 and 2 need 16 rows for 8 even ones
        assert ids[0].tolist() == [0, 2, 4, 6, 8, -1, -1, -1]
        assert ids[1].tolist() == ids[2].tolist() == list(range(0, 16, 2))
        assert max(k for _, k in calls) == 16  # never widened to the whole store
    np.testing.assert_array_equal(results[0], results[1])
