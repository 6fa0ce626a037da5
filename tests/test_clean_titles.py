from __future__ import annotations

import pytest

from procbench.clean import TextCleaner, strip_step_indicator


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Step 3: Cut the Wood", "Cut the Wood"),
        ("Step 3 - Cut", "Cut"),
        ("STEP 12 Sand the edges", "Sand the edges"),
        ("Step #3: Sand", "Sand"),
        ("3. Sand it", "Sand it"),
        ("3) Sand", "Sand"),
        ("10 - Sand it", "Sand it"),
        ("Step Three - Sand", "Sand"),
        ("Step three: sand", "sand"),
        ("Part 2 of 3: Making the Frame", "Making the Frame"),
        ("Method 1 of 3: Baking", "Baking"),
        ("Step 1 of 10: Gather", "Gather"),
        ("Part Two: Finish", "Finish"),
        ("Final Step: Enjoy!", "Enjoy!"),
        ("(3) Glue", "Glue"),
        ("#3 Glue", "Glue"),
        ("Step 3: Step 3: Glue", "Glue"),
        ("Step IV: Glue", "Glue"),
        ("Cut the Wood - Step 3", "Cut the Wood"),
        ("Step 3", ""),
        ("Part 1", ""),
    ],
)
def test_indicators_are_removed(raw: str, clean: str) -> None:
    assert strip_step_indicator(raw) == clean
    assert strip_step_indicator(clean) == clean


@pytest.mark.parametrize(
    "title",
    [
        "3 Ways to Fold",
        "2x4 Frame",
        "3.5 Inch Cut",
        "1950s Lamp",
        "Step up the heat",
        "First, cut the wood",
        "2 cups of flour",
        "3 - 4 Cups of Flour",
        "4:30 Wake up",
        "Introduction",
    ],
)
def test_numbers_that_are_content_stay(title: str) -> None:
    assert strip_step_indicator(title) == title


def test_title_pipeline_empty_titles_become_null_and_fused_indicators_go() -> None:
    cleaner = TextCleaner()
    assert cleaner.clean("Step 3:", title=True) is None
    assert cleaner.clean("<b>Step 2:</b> Preheattheoven", title=True) == "Preheat the oven"
    assert cleaner.clean("Step3:Cut the board", title=True) == "Cut the board"
    assert cleaner.clean("Step 3\nCut the board", title=True) == "Cut the board"
    assert cleaner.clean("Step 3: Cut", title=False) == "Cut"  # step texts lose them too (step_numbers rule)
