"""search_until_k: widening stops where a search is exhausted, an IVF index scans more lists instead, and blocks
of queries give the same result."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from procbench.generate import search


def _fake_knn(reach: dict[int, int], calls: list[tuple[int, int, int | None]]) -> Any:
    """A knn over rows 0..39 in row order where query q (its vector's first value) reaches ``reach[q]`` rows per
    list it scans (2 lists by default), as an IVF index's probed lists do: asked for more, it pads with -1."""

    def knn(
        index: object, queries: np.ndarray, k: int, *, exclude: object = None, nprobe: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        calls.append((len(queries), k, nprobe))
        lists = 2 if nprobe is None else nprobe
        ids = np.full((len(queries), k), -1, dtype=np.int64)
        for i, q in enumerate(queries[:, 0].astype(int).tolist()):
            found = np.arange(min(k, reach[q] * lists, 40))
            ids[i, : len(found)] = found
        return np.where(ids >= 0, ids.astype(np.float32), np.inf), ids

    return knn


def _even(_queries: np.ndarray, ids: np.ndarray) -> np.ndarray:
    return ids % 2 == 0


def test_a_short_search_is_not_widened_and_blocks_give_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    exact = SimpleNamespace(probes=(0, 0))
    reach = {0: 5, 1: 20, 2: 20}  # x 2 lists: query 0 reaches 10 rows, the others all 40
    queries = np.array([[0.0], [1.0], [2.0]], dtype=np.float32)
    results = []
    for block in (32_768, 1):
        calls: list[tuple[int, int, int | None]] = []
        monkeypatch.setattr(search, "knn", _fake_knn(reach, calls))
        monkeypatch.setattr(search, "SEARCH_BLOCK", block)
        _, ids = search.search_until_k(exact, queries, 8, exclude=[None] * 3, keep=_even, fetch=8, limit=40)  # type: ignore[arg-type]
        results.append(ids)
        # query 0 is widened once (to 16), comes back short (10 rows) and stops; queries 1 and 2 need 16 rows
        assert ids[0].tolist() == [0, 2, 4, 6, 8, -1, -1, -1]
        assert ids[1].tolist() == ids[2].tolist() == list(range(0, 16, 2))
        assert max(k for _, k, _ in calls) == 16 and {p for _, _, p in calls} == {None}  # never the whole store
    np.testing.assert_array_equal(results[0], results[1])


def test_an_ivf_search_that_comes_back_short_scans_more_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    ivf = SimpleNamespace(probes=(2, 8))  # scans 2 of 8 lists
    calls: list[tuple[int, int, int | None]] = []
    monkeypatch.setattr(search, "knn", _fake_knn({0: 3, 1: 20}, calls))
    queries = np.array([[0.0], [1.0]], dtype=np.float32)
    _, ids = search.search_until_k(ivf, queries, 8, exclude=[None] * 2, keep=_even, fetch=16, limit=40)  # type: ignore[arg-type]
    # query 0 reaches 3 rows per list: 6 with 2 lists, 12 with 4, 24 with 8 (all): 8 even rows at 8 lists
    assert ids[0].tolist() == list(range(0, 16, 2)) and ids[1].tolist() == list(range(0, 16, 2))
    assert [p for _, _, p in calls] == [None, 4, 8]


def test_stable_search_scans_the_lists_it_is_asked_to() -> None:
    """On a real FAISS IVF index, a search returns only its probed lists' rows; ``nprobe`` scans more of them."""
    import faiss

    from procbench.embed.index import stable_search

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(2000, 8)).astype(np.float32)
    quantizer = faiss.IndexFlatL2(8)
    index = faiss.IndexIVFFlat(quantizer, 8, 16, faiss.METRIC_L2)
    index.train(vectors)
    index.add(vectors)
    index.nprobe = 1
    queries = vectors[:5]
    _, one = stable_search(index, queries, 1000)
    _, all_lists = stable_search(index, queries, 1000, nprobe=16)
    assert ((one >= 0).sum(axis=1) < 1000).all()  # one list holds fewer than 1,000 rows
    assert ((all_lists >= 0).sum(axis=1) == 1000).all() and index.nprobe == 1  # the index itself is unchanged


@pytest.mark.parametrize(
    ("kind", "split_rows", "exact"), [("flat", 900, True), ("ivf", 100, True), ("ivf", 900, False)]
)
def test_a_split_small_enough_for_an_exact_index_is_searched_exactly(kind: str, split_rows: int, exact: bool) -> None:
    """On an approximate store index, a split of at most ``SPLIT_EXACT_ROWS`` (and ``exact_max_rows``) rows is
    searched over an exact index of its own rows: its rows are sparse in the lists an IVF search scans, and an
    exact search of them costs less per query (measured at 100k procedures)."""
    from procbench.generate.textual.candidates import SplitSearch

    subsets: list[int] = []

    def subset(rows: np.ndarray) -> str:
        subsets.append(len(rows))
        return "part"

    index = SimpleNamespace(kind=kind, exact_max_rows=500, subset=subset)
    allowed = np.zeros(1000, dtype=bool)
    allowed[:split_rows] = True
    split = SplitSearch(index, SimpleNamespace(keys=range(1000)), allowed)  # type: ignore[arg-type]
    assert (split.part is not None) == exact and subsets == ([split_rows] if exact else [])
