"""K3=2 knob settings pruned AFLite-style (:mod:`procbench.generate.visual.pruning`, issue 35).

What pruning must keep is checked from the written files, apart from the generator's code: every kept question is
one the draw made (same images, same choices), at least ``rank_yield`` of the drawn questions stay, and equally
many are dropped at every answer rank.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_task_contract import SEED, check_set

from procbench.corpus.synthetic import write_synthetic_store
from procbench.errors import BadInput
from procbench.generate import Setting, generate
from procbench.generate.adversarial import RANK_UNIFORM_YIELD
from procbench.generate.adversarial.prune import interleaved
from procbench.store import Store
from procbench.tasks import get_task


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=60), st.integers(0, 2**16))
def test_interleaved_takes_each_stratum_in_turn_keeping_their_own_order(labels: list[int], seed: int) -> None:
    order = np.random.default_rng(seed).permutation(len(labels))
    strata = np.array(labels)[order]
    out = interleaved(order, strata)
    assert sorted(out.tolist()) == sorted(order.tolist())
    by_row = dict(zip(order.tolist(), strata.tolist(), strict=True))
    for label in set(labels):  # a stratum's rows keep their order (most predictable first)
        assert [r for r in out.tolist() if by_row[r] == label] == [r for r in order.tolist() if by_row[r] == label]
    seen: Counter[int] = Counter()
    places = []
    for row in out.tolist():  # the k-th of every stratum comes before the (k+1)-th of any
        places.append(seen[by_row[row]])
        seen[by_row[row]] += 1
    assert places == sorted(places)


def _rows(path: Path) -> list[dict[str, Any]]:
    return [r for f in sorted(path.glob("*.parquet")) for r in pq.read_table(f).to_pylist()]


def _question(row: dict[str, Any]) -> tuple[Any, ...]:
    """A question as drawn: its procedure, what it shows, its choices (any order) and its answer."""
    choices = [str(c) for c in row["choices"]]
    return row["procedure_id"], tuple(map(str, row["question"])), frozenset(choices), choices[row["answer"]]


@pytest.mark.parametrize("task", ["visual-cloze", "visual-coherence", "visual-ordering"])
def test_k3_rank_uniform_prunes_to_its_yield_keeping_drawn_questions_and_uniform_ranks(
    task: str, tmp_path: Path
) -> None:
    """On a synthetic store (a procedure's own images lie together, so the probes solve most questions) pruning
    drops down to its floor; what it keeps is what the draw made, and the ranks stay as even as drawn."""
    store = write_synthetic_store(tmp_path / "s", n_procedures=36, seed=5)
    shutil.copytree(tmp_path / "s", tmp_path / "drawn")
    knobs = Setting("knobs", (0, 1, 2))
    drawn = generate(Store.open(tmp_path / "drawn"), task, knobs, seed=SEED, rank_yield=1.0)
    pruned = generate(store, task, knobs, seed=SEED, policy="demo")  # the demo-sized probes: the same loop, cheaper
    check_set(store, get_task(task), pruned, "knobs-012")  # the contract every task's sets keep
    drawn_rows, kept_rows = _rows(drawn.paths["knobs-012"]), _rows(pruned.paths["knobs-012"])
    report = pruned.counts["per_setting"]["knobs-012"]
    assert "pruning" not in drawn.counts["per_setting"]["knobs-012"]
    n = len(drawn_rows)
    assert report["questions"] == len(kept_rows) == n - report["pruning"]["pruned"]
    assert report.get("skipped_questions", {}).get("solved_by_probes", 0) == report["pruning"]["pruned"]
    assert len(kept_rows) >= RANK_UNIFORM_YIELD * n
    account = report["pruning"]
    # pruning went on to the floor (equal drops per rank, at least the yield kept) unless the probes reached chance
    last = account["steps"][-1]
    assert last["questions"] == len(kept_rows)
    floor = n - int(n - np.ceil(RANK_UNIFORM_YIELD * n)) // 4 * 4
    if len(kept_rows) > floor:
        assert max(abs(a - 0.25) for a in last["accuracy"].values()) <= account["chance_bound"] - 0.25, account
    # every kept question is one the draw made, images and choices as they were (the answer's place is dealt anew)
    as_drawn = {_question(r) for r in drawn_rows}
    assert all(_question(r) in as_drawn for r in kept_rows)
    before = np.bincount([r["meta"]["answer_rank"] for r in drawn_rows], minlength=4)
    after = np.bincount([r["meta"]["answer_rank"] for r in kept_rows], minlength=4)
    dropped = before - after
    assert dropped.max() - dropped.min() == 0, (before, after)
    card = (pruned.paths["knobs-012"] / "card.md").read_text()
    assert "AFLite pruning (Le Bras et al. 2020) of the drawn questions" in card and "lebras2020aflite" in card
    share = f"{len(kept_rows)} kept of {n} drawn at a rank ({len(kept_rows) / n:.0%})"
    balanced = report.get("skipped_questions", {}).get("rank_balance", 0)  # skipped before the draw was pruned
    assert share + (f", of {n + balanced} planned" if balanced else ")") in card


def test_rank_yield_is_checked(tmp_path: Path) -> None:
    store = write_synthetic_store(tmp_path / "s", n_procedures=12, seed=5)
    with pytest.raises(BadInput, match="--rank-yield applies only to K3=2"):
        generate(store, "visual-cloze", Setting("knobs", (0, 1, 1)), seed=1, rank_yield=0.9)
    with pytest.raises(BadInput, match="--rank-yield must be a share"):
        generate(store, "visual-ordering", Setting("knobs", (0, 1, 2)), seed=1, rank_yield=1.5)
