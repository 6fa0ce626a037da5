"""First sentences of step texts (``--items first-sentence``, the ``step_first_sentence`` field): rule-based
splitting that needs no model or downloaded data."""

from __future__ import annotations

import pytest

from procbench.sentences import first_sentence, split_sentences


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("Preheat the oven. Grease a pan.", "Preheat the oven."),
        # abbreviations before names and numbers do not end a sentence
        ("Ask Dr. Smith for help. He knows.", "Ask Dr. Smith for help."),
        ("Use e.g. a fork or i.e. a spoon. Then stir.", "Use e.g. a fork or i.e. a spoon."),
        ("Wait approx. 5 min. Then serve.", "Wait approx. 5 min."),
        ("See Fig. 2 and No. 5 first. Then cut.", "See Fig. 2 and No. 5 first."),
        ("J. R. R. Tolkien wrote it. Read it.", "J. R. R. Tolkien wrote it."),
        # an abbreviation-looking word followed by a lowercase word goes on; a unit after a number ends
        ("Add 2 tbsp. of sugar. Stir well.", "Add 2 tbsp. of sugar."),
        ("Heat the oven to 350 F. Grease a pan.", "Heat the oven to 350 F."),
        ("Say yes or no. Then go.", "Say yes or no."),
        # decimals, quotes, brackets, ellipses, other terminators
        ("Add 1.5 cups of flour. Mix.", "Add 1.5 cups of flour."),
        ('He said "Stop." Then he left.', 'He said "Stop."'),
        ("Bake (about 20 min.) Then cool.", "Bake (about 20 min.)"),
        ("Mix it... then bake. Done!", "Mix it... then bake."),
        ("Is it done? Yes!", "Is it done?"),
        ("鍋を温めます。油を入れる。", "鍋を温めます。"),
        # a space lost between sentences (RecipeQA's texts), line breaks
        ("Cook the bacon.Make it crispy.", "Cook the bacon."),
        ("You will need:\n- flour\n- eggs", "You will need:"),
        # list markers and step numbers: not sentences of their own; a leading step number is dropped
        ("1. Preheat the oven. 2. Grease a pan.", "Preheat the oven."),
        ("Step 3: Mix it well. Then bake.", "Mix it well."),
        ("a. Mix well. Then bake.", "a. Mix well."),
        ("!!! Great. Done.", "!!! Great."),
        ("1.", "1."),
        # no terminal punctuation: the whole text, whitespace collapsed
        ("  mix the   flour and eggs  ", "mix the flour and eggs"),
        ("Mix well", "Mix well"),
    ],
)
def test_first_sentence(text: str, first: str) -> None:
    assert first_sentence(text) == first


@pytest.mark.parametrize("text", [None, "", "   ", "\n\t"])
def test_empty_text_has_no_sentence(text: str | None) -> None:
    assert first_sentence(text) is None
    assert split_sentences(text) == []


def test_list_markers_stay_with_their_sentence() -> None:
    assert split_sentences("1.) Mix it. Then bake.") == ["1.) Mix it.", "Then bake."]
    assert split_sentences("You need:\n1. flour\n2. eggs") == ["You need:", "1. flour", "2. eggs"]


def test_sentences_cover_the_text_in_order() -> None:
    text = "Ask Dr. Who. Use approx. 2 cups, e.g. rice! Is it done? Cook 5 min. Serve at 7 p.m. tonight"
    sentences = split_sentences(text)
    assert sentences == [
        "Ask Dr. Who.",
        "Use approx. 2 cups, e.g. rice!",
        "Is it done?",
        "Cook 5 min.",
        "Serve at 7 p.m. tonight",
    ]
    assert " ".join(sentences) == text
