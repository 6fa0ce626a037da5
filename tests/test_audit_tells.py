"""The ``order_tells`` audit probe (issue 37): step numbers and ordinal words that give an order away."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from procbench.audit import AuditSet, audit_set, load_question_set
from procbench.audit.probes.tells import FIRST, LAST, MIDDLE, _ordered, read_tell
from procbench.clean import clean_store
from procbench.generate import generate
from procbench.ingest import ingest_file
from procbench.store import Store

from helpers import make_record, write_jsonl

VERBS = ["Cut", "Sand", "Drill", "Glue", "Paint", "Mount", "Seal", "Polish"]


@pytest.mark.parametrize(
    ("text", "tell"),
    [
        ("2. Find a photo.", ("number", 2)),
        ("Step 3 - Mount the motors", ("number", 3)),
        ("(4) Glue the parts.", ("number", 4)),
        ("Step Two: Sand.", ("number", 2)),
        ("iii. Fold the paper.", ("number", 3)),
        ("Part 2 of 3: Making the frame", ("number", 2)),
        ("**5. Attach the board**", None),  # emphasis: not a leading marker
        ("First, cut the wood.", ("ordinal", FIRST)),
        ("Secondly, sand it.", ("ordinal", 2)),
        ("Then add the eggs.", ("ordinal", MIDDLE)),
        ("Next, sand the edges.", ("ordinal", MIDDLE)),
        ("Final step: enjoy!", ("ordinal", LAST)),
        ("Finally, serve it warm.", ("ordinal", LAST)),
        ("To finish, wipe the bench.", ("ordinal", LAST)),
        ("3 cups of flour go in.", None),
        ("Add the eggs, then stir.", None),
        ("Firstborn children are special.", None),
        (None, None),
    ],
)
def test_tells_at_the_start_of_a_text(text: str | None, tell: tuple[str, int] | None) -> None:
    assert read_tell(text) == tell


@pytest.mark.parametrize(
    ("a", "b", "said"),
    [
        ("2. Cut.", "3. Sand.", 1),
        ("3. Sand.", "2. Cut.", -1),
        ("First, cut.", "Then sand.", 1),
        ("Then sand.", "Finally, paint.", 1),
        ("3. Sand.", "Finally, paint.", 1),
        ("First, cut.", "Secondly, sand.", 1),
        ("Then sand.", "Next, paint.", 0),
        ("Then sand.", "2. Paint.", 0),
        ("Cut.", "2. Sand.", 0),
    ],
)
def test_tells_order_two_items_when_their_positions_cannot_overlap(a: str, b: str, said: int) -> None:
    assert _ordered(read_tell(a), read_tell(b)) == said


def _sequencing(texts_per_question: list[list[str]], seed: int = 0) -> AuditSet:
    """A sequencing set over texts: the question shows the items shuffled, the answer is their order."""
    rng = np.random.default_rng(seed)
    questions = [[texts[i] for i in rng.permutation(len(texts))] for texts in texts_per_question]
    return AuditSet(
        "seq",
        "sequencing",
        [f"p{i}" for i in range(len(texts_per_question))],
        questions,
        [[list(texts)] for texts in texts_per_question],
        np.zeros(len(texts_per_question), dtype=np.int64),
    )


def _steps(n: int, style: str, offset: int = 0) -> list[str]:
    verbs = VERBS[offset : offset + n]
    if style == "numbered":
        return [f"{i + 1}. {v} the board." for i, v in enumerate(verbs)]
    if style == "ordinal":
        words = ["First,", "Then", "Finally,"]
        return [f"{w} {v.lower()} the board." for w, v in zip(words, verbs, strict=False)]
    return [f"{v} the board." for v in verbs]


def test_sequencing_orders_read_from_numbers_and_ordinal_words() -> None:
    numbered = _sequencing([_steps(4, "numbered", i) for i in range(4)] + [_steps(4, "plain", i) for i in range(4)])
    result = audit_set(numbered, n_boot=50, probes="order_tells").probes["order_tells"]
    assert result.value == pytest.approx(0.5) and result.chance is None
    assert result.details["items_with_tells"] == {"number": 16}
    assert result.details["pairs_contradicted_by_tells"] == 0
    assert result.ci is not None and result.ci[0] <= 0.5 <= result.ci[1]

    ordinal = _sequencing([_steps(3, "ordinal", i) for i in range(6)])
    result = audit_set(ordinal, n_boot=50, probes="order_tells").probes["order_tells"]
    assert result.value == pytest.approx(1.0) and result.details["items_with_tells"] == {"ordinal": 18}

    plain = _sequencing([_steps(5, "plain", i) for i in range(6)])
    result = audit_set(plain, n_boot=50, probes="order_tells").probes["order_tells"]
    assert result.value == 0.0 and result.details["share_with_any_tell"] == 0.0


def test_a_partial_tell_does_not_read_the_whole_order() -> None:
    # only the first and last steps carry a tell: the middle ones stay unordered
    texts = ["First, cut the board.", "Sand the board.", "Drill the board.", "Finally, paint the board."]
    result = audit_set(_sequencing([texts] * 4), n_boot=50, probes="order_tells").probes["order_tells"]
    assert result.value == 0.0
    assert result.details["pairs_ordered_by_tells"] == 4 and result.details["item_pairs"] == 24


def test_ordering_and_pair_order_sets() -> None:
    ordering = AuditSet(
        "ord",
        "text-ordering",  # a task procbench does not know: ordering is inferred from the choices
        ["p", "q"],
        [[], []],
        [
            [["2. Sand it.", "1. Cut it.", "3. Paint it."], ["1. Cut it.", "2. Sand it.", "3. Paint it."]],
            [["Paint it.", "Cut it."], ["Cut it.", "Paint it."]],
        ],
        np.array([1, 1]),
    )
    result = audit_set(ordering, n_boot=50, probes="order_tells").probes["order_tells"]
    assert result.value == pytest.approx(0.5)

    pairs = AuditSet(
        "pairs",
        "pair-order",
        ["p", "q", "r", "s"],
        [
            ["2. Sand it.", "1. Cut it."],
            ["1. Cut it.", "2. Sand it."],
            ["Sand it.", "Cut it."],
            ["Then sand.", "Cut."],
        ],
        [["inverted", "in order"]] * 4,
        np.array([0, 1, 0, 0]),
    )
    result = audit_set(pairs, n_boot=50, probes="order_tells").probes["order_tells"]
    # the label follows from the numbers in the first two; "Then" alone orders nothing
    assert result.value == pytest.approx(0.5) and result.details["readable"] == 2

    images = AuditSet("img", "visual-ordering", ["p"], [[]], [[["a", "b"], ["b", "a"]]], np.array([0]))
    assert "images" in (audit_set(images, n_boot=50, probes="order_tells").probes["order_tells"].reason or "")
    cloze = AuditSet("cl", "textual-cloze", ["p"], [["a", "@placeholder"]], [["b", "c"]], np.array([0]))
    assert "order" in (audit_set(cloze, n_boot=50, probes="order_tells").probes["order_tells"].reason or "")


def test_sets_built_from_a_store_read_the_clean_texts(tmp_path: Path) -> None:
    """Sequencing and pair-order sets from numbered step texts: after ``clean`` the numbers are gone, the
    ordinal words (content) are still read from the store's texts."""
    records = []
    for n in range(12):
        record = make_record(f"Build-Box-{n}", n_steps=5)
        for i, step in enumerate(record["steps"]):
            opener = {0: "First, cut", 4: "Finally, seal"}.get(i, VERBS[i])
            step["text"] = f"{i + 1}. {opener} the {n}th box side with care and patience."
            step["title"] = None
        records.append(record)
    store = Store.open(tmp_path / "store", create=True)
    ingest_file(store, write_jsonl(tmp_path / "in.jsonl", records))
    clean_store(store, workers=1, split_fused=False)
    texts = store.table("steps", ["text_clean"])["text_clean"].to_pylist()
    assert not any(t[0].isdigit() for t in texts)
    for task in ("sequencing", "pair-order"):
        folder = generate(store, task, seed=0).paths["default"]
        aset = load_question_set(folder)
        result = audit_set(aset, n_boot=50, probes="order_tells").probes["order_tells"]
        details = result.details
        assert details["n_used"] == len(aset) > 0, task
        assert "number" not in details["items_with_tells"] and details["items_with_tells"].get("ordinal", 0) > 0
        assert details["tells_from"].get("text", 0) > 0 and details["pairs_contradicted_by_tells"] == 0
        if task == "sequencing":  # the middle steps carry no tell: no order is fully readable
            assert result.value == 0.0 and details["pairs_ordered_by_tells"] > 0
