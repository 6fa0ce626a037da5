from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procbench.clean import TextCleaner, clean_tables, strip_step_numbering
from procbench.clean.options import CleanOptions
from procbench.store import PROCEDURES, STEPS, conform


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("2. Find a photo.", "Find a photo."),
        ("1) Open Facebook.", "Open Facebook."),
        ("1: Cut the board.", "Cut the board."),
        ("Step 3: Mix the flour.", "Mix the flour."),
        ("Step 3 - Mount the motors.", "Mount the motors."),
        ("Step 3 \u2013 Mount the motors.", "Mount the motors."),
        ("STEP 12 Sand the edges.", "Sand the edges."),
        ("Step #3: Sand.", "Sand."),
        ("Step Three - Sand.", "Sand."),
        ("Part 2 of 3: Making the frame", "Making the frame"),
        ("Step IV: Glue.", "Glue."),
        ("Final step: Enjoy!", "Enjoy!"),
        ("(3) Glue the parts.", "Glue the parts."),
        ("[3] Glue the parts.", "Glue the parts."),
        ("#3 Glue the parts.", "Glue the parts."),
        ("3 - Glue the parts.", "Glue the parts."),
        ("ii. Fold the paper.", "Fold the paper."),
        ("IV) Fold the paper.", "Fold the paper."),
        ("(iv) fold the paper.", "fold the paper."),
        ("i) fold the paper.", "fold the paper."),
        ("1.Take a rice wrapper.", "Take a rice wrapper."),
        ("Step 2: 1. Open Settings.", "Open Settings."),
        ("  12. Mount the frame.", "Mount the frame."),
        ("2.", ""),
        # numbered sub-lists glued at the start: the markers that follow in sequence become sentence breaks
        ("1. Cut the zip tie 2. Tuck the wires 3. Close the lid", "Cut the zip tie. Tuck the wires. Close the lid"),
        ("1. Preheat the oven. 2. Grease the pan.", "Preheat the oven. Grease the pan."),
        ("1) Put in the filter2) Pour the water", "Put in the filter. Pour the water"),
        (
            "1. Barbecue Sauce2. Shredded cheese (any kind)3. Corn tortillas",
            "Barbecue Sauce. Shredded cheese (any kind). Corn tortillas",
        ),
        ("1. Mix well. 3. Bake.", "Mix well. 3. Bake."),  # out of sequence: content, not a marker
        ("1. Bake for 2. Then cool.", "Bake for 2. Then cool."),  # a quantity after "for"
    ],
)
def test_step_numbers_are_removed(raw: str, clean: str) -> None:
    assert strip_step_numbering(raw) == clean
    assert strip_step_numbering(clean) == clean


@pytest.mark.parametrize(
    "text",
    [
        "3 cups of flour.",
        "10 serial bus servos are used.",
        "2 M3 set screws hold the links.",
        "1/2 cup sugar.",
        "1.5 inch cut.",
        "4:30 is the time.",
        "2 - 3 eggs.",
        "1 - 2 cups of water.",
        "#10 can of beans.",
        "3 days into the curing I added pepper.",
        "Step up onto the stool.",
        "Step 1 is to find a partner.",
        "Step one foot forward.",
        "Part of the fun is waiting.",
        "First, cut the wood.",
        "Next, add the eggs.",
        "Mix. Then add the eggs.",
        "I. M. Pei designed it.",
        "Xi. Add",
        "In 2019 we moved.",
        "2019. A good year.",
        "(2) 8-inch pans.",
    ],
)
def test_numbers_that_are_content_stay(text: str) -> None:
    assert strip_step_numbering(text) == text


_UNITS = st.sampled_from(["cups", "cup", "tablespoons", "tsp", "grams", "g", "inches", "minutes", "eggs", "pieces"])
_WORDS = st.sampled_from(["flour", "sugar", "water", "wood", "screws", "of flour", "of the board", "and mix"])
_SENTENCE = st.lists(
    st.sampled_from(["Open", "Tap", "Cut", "Mix", "Place", "the", "Settings", "board", "iCloud"]),
    min_size=1,
    max_size=6,
).map(" ".join)
_MARKERS = st.one_of(
    st.integers(1, 99).map(lambda n: f"{n}. "),
    st.integers(1, 99).map(lambda n: f"{n}) "),
    st.integers(1, 99).map(lambda n: f"({n}) "),
    st.integers(1, 99).map(lambda n: f"Step {n}: "),
    st.integers(1, 99).map(lambda n: f"Step {n} - "),
    st.integers(1, 99).map(lambda n: f"STEP {n} "),
    st.sampled_from(["ii. ", "III) ", "(iv) ", "Step Two: ", "Final step: ", "#4 "]),
)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 999), _UNITS, _WORDS)
def test_quantities_are_never_stripped(number: int, unit: str, rest: str) -> None:
    text = f"{number} {unit} {rest}"
    assert strip_step_numbering(text) == text
    assert strip_step_numbering(f"{number}/{number + 1} {unit} {rest}") == f"{number}/{number + 1} {unit} {rest}"


@settings(max_examples=300, deadline=None)
@given(_MARKERS, _SENTENCE)
def test_a_marker_before_a_sentence_goes_and_nothing_else(marker: str, sentence: str) -> None:
    text = sentence[0].upper() + sentence[1:] + "."
    assert strip_step_numbering(marker + text) == text


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("12()[].:-# ivxIVXStepAbc\u2013")), max_size=30) | st.text(max_size=40))
def test_idempotent_and_never_longer(text: str) -> None:
    once = strip_step_numbering(text)
    assert strip_step_numbering(once) == once
    assert len(once) <= len(text)


def test_text_pipeline_counts_step_numbers_as_their_own_rule() -> None:
    procedures = conform(
        pa.table(
            {
                "id": ["p1", "p2"],
                "source": ["x", "x"],
                "title": ["Make a photo card", "Fold a plane"],
                "language": ["en", "en"],
            }
        ),
        PROCEDURES,
    )
    texts = [
        "1. Find a photo.",
        "2. Crop the photo.",
        "3. Print it.",
        "Fold the paper.",
        "Step 2 - Crease it.",
        "3 cups of flour go in.",
    ]
    steps = conform(
        pa.table(
            {
                "procedure_id": ["p1"] * 3 + ["p2"] * 3,
                "index": [0, 1, 2, 0, 1, 2],
                "title": ["Step 1: Find", None, None, None, None, None],
                "text": texts,
            }
        ),
        STEPS,
    )
    result = clean_tables(procedures, steps, CleanOptions(split_fused=False, dedupe=False), workers=1)
    assert result.steps["text_clean"].to_pylist() == [
        "Find a photo.",
        "Crop the photo.",
        "Print it.",
        "Fold the paper.",
        "Crease it.",
        "3 cups of flour go in.",
    ]
    assert result.steps["title_clean"].to_pylist()[0] == "Find"
    rule = result.report.rule("step_numbers")
    assert (rule.steps, rule.procedures) == (4, 2)
    assert rule.examples and rule.examples[0].before.startswith("1.")
    assert result.report.rule("step_titles").steps == 1  # titles keep their own rule
    assert result.report.counts()["touched_step_numbers"] == 4


def test_cleaner_strips_numbers_from_texts_only_after_the_other_rules() -> None:
    cleaner = TextCleaner(split_fused=False)
    assert cleaner.clean("<p>2.&nbsp;Find a photo.</p>") == "Find a photo."
    assert cleaner.clean("  \u2022 3) Tap iCloud.") == "Tap iCloud."
    assert cleaner.clean("2. Find", title=True) == "Find"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (
            "1. Six egg whites\n2. One cup sugar\n3. One teaspoon vanilla",
            "Six egg whites.\nOne cup sugar.\nOne teaspoon vanilla",
        ),
        ("1. Dice the fruit.2. Melt the butter.", "Dice the fruit. Melt the butter."),
        ("(1) Set the crumbs aside.\n(2) Place a truffle on top.", "Set the crumbs aside.\nPlace a truffle on top."),
        ("1.) Open the jar.\n 2.) Spread the jelly.", "Open the jar.\nSpread the jelly."),
        ("1. Sauce 2. Cheese Tools 1. Spatula 2. Knife", "Sauce. Cheese Tools. Spatula. Knife"),
        ("**2. Attach the board** Seat the module.", "**Attach the board** Seat the module."),
        ("2.jpg|right|184px]]Get in.", "2.jpg|right|184px]]Get in."),
        ("3. 2 cups of flour", "2 cups of flour"),
    ],
)
def test_sub_lists_line_breaks_and_emphasis(raw: str, clean: str) -> None:
    assert strip_step_numbering(raw) == clean
