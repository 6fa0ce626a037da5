"""The dealer where the candidates allow only some ranks (visual coherence: an intruder more central than every
coherent photo often does not exist), and the even ranks of coherence's ``adversarial`` after pruning."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from procbench.corpus.synthetic import write_synthetic_store
from procbench.generate import Setting, generate
from procbench.generate.visual.dealer import deal_ranks, even_subset


def test_questions_whose_candidates_allow_only_some_ranks_are_skipped() -> None:
    # coherence on build guides: rank 3 (the odd one out) always possible, rank 0 (most central) for about half.
    # Dealing those questions the ranks they allow doubled the yield but gave their ranks away (evidence.md).
    can = np.array([[1, 1, 1, 1]] * 49 + [[0, 0, 1, 1]] * 19 + [[0, 1, 1, 1]] * 16 + [[0, 0, 0, 1]] * 8, dtype=bool)
    dealt = deal_ranks(can, np.arange(4)[:, None], np.random.default_rng(0))
    kept = dealt.option >= 0
    assert kept.sum() == 48 and not kept[49:].any()
    assert np.bincount(dealt.option[kept], minlength=4).tolist() == [12, 12, 12, 12]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=0, max_size=60), st.integers(0, 2**16))
def test_even_subset_keeps_every_rank_as_often_as_the_scarcest(ranks_list: list[int], seed: int) -> None:
    ranks = np.array(ranks_list, dtype=np.int64)
    kept = np.random.default_rng(seed).random(len(ranks)) < 0.8
    even = even_subset(kept, ranks, seed)
    assert not (even & ~kept).any()  # only drops
    counts = np.bincount(ranks[even], minlength=4)[np.unique(ranks)] if len(ranks) else np.zeros(0)
    assert len(set(counts.tolist())) <= 1
    if len(ranks):
        assert counts[0] == min(int((kept & (ranks == r)).sum()) for r in np.unique(ranks))
    assert (even_subset(kept, ranks, seed) == even).all()  # seeded


def test_coherence_adversarial_keeps_the_intruder_ranks_even(tmp_path: Path) -> None:
    store = write_synthetic_store(tmp_path / "s", n_procedures=120, dim=32, seed=3)
    result = generate(store, "visual-coherence", Setting("adversarial"), seed=0, policy="demo")
    folder = result.paths["adversarial"]
    rows = [r for split in ("train", "val", "test") for r in pq.read_table(folder / f"{split}.parquet").to_pylist()]
    counts = Counter(r["meta"]["answer_rank"] for r in rows)
    assert len(rows) >= 40 and set(counts) == {0, 1, 2, 3}
    assert len(set(counts.values())) == 1, counts
    account = result.reports["adversarial"].adversarial or {}
    assert account["rank_balanced"] > 0 and account["pruned"] > 0  # pruning left the ranks uneven here
    assert any("fuller answer ranks" in rule for rule in account["rules"])
