from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procbench.clean import (
    TextCleaner,
    fix_unicode,
    normalize_text,
    normalize_whitespace,
    strip_markup,
    to_ascii,
)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("<p>Mix the <b>flour</b>&nbsp;and sugar.</p><p>Bake it.</p>", "Mix the flour and sugar.\nBake it."),
        ("at the height of the dog&#x27;s mouth &amp; nose.", "at the height of the dog's mouth & nose."),
        ("&amp;lt;b&amp;gt;bold&amp;lt;/b&amp;gt; text", "bold text"),
        ("<style>p {margin:0}</style><script>var x = 1;</script>Stir well.", "Stir well."),
        ('table.MsoNormalTable {mso-style-name:"Table Normal"; mso-padding-alt:0in;} Glue it.', "Glue it."),
        ("font-family: Arial; font-size: 12px; Cut the board.", "Cut the board."),
        ("######WH.shared.addScrollLoadItem('img_4ce32d8c68')######Spread the eggs.", "Spread the eggs."),
        (
            "Curl the wire######//<![CDATA[######if(WH.video)WH.video.add(document.getElementById('mvid-9e'));"
            "######//]]>######",
            "Curl the wire",
        ),
        ("Finished.[3]######//<!", "Finished."),
        ("(adsbygoogle = window.adsbygoogle || []).push({}); Mix well.", "Mix well."),
        ("<!-- a comment --> Sand <i>gently</i>.", "Sand gently."),
    ],
)
def test_markup_is_removed(raw: str, clean: str) -> None:
    assert normalize_text(raw) == clean


@pytest.mark.parametrize(
    "text",
    [
        "If a < b and c > d, keep R&D going.",
        "Choose a color: red; then wait.",
        "Add the bowl. Then (optionally) stir.",
        "Visit www.example.com(see) for plans.",
        "Note: use wood glue; it dries in 30 minutes.",
    ],
)
def test_prose_that_looks_like_markup_is_kept(text: str) -> None:
    assert strip_markup(text) == text


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("cafÃ© crÃ¨me", "café crème"),
        ("itâ€™s great â€” really", "it's great — really"),
        ("Cut the ï¬rst board", "Cut the first board"),  # ﬁ read as cp1252 with its last byte lost
        ("the ï¬‚our", "the flour"),
        ("the \ufb01rst \ufb02oor", "the first floor"),
        ("zero\u200bwidth\u00adsoft", "zerowidthsoft"),
        ("cafe\u0301", "café"),  # NFC
        ("“quoted” and ‘single’", "\"quoted\" and 'single'"),
        ("bell\x07 and null\x00", "bell and null"),
    ],
)
def test_unicode_is_repaired(raw: str, clean: str) -> None:
    assert fix_unicode(raw) == clean


def test_whitespace_bullets_and_separators() -> None:
    assert normalize_whitespace("• Cut\n• Sand\n\n\n  • Paint   it   ") == "Cut\nSand\nPaint it"
    assert normalize_whitespace("* one\n- two\n+ three") == "one\ntwo\nthree"
    assert normalize_whitespace("Finished.######\t") == "Finished."
    assert (
        normalize_whitespace("Put it in the bowl.Then stir,mix and serve .")
        == "Put it in the bowl. Then stir, mix and serve."
    )
    assert normalize_whitespace("Step 3:\nCut it", single_line=True) == "Step 3: Cut it"
    assert normalize_whitespace("Keep 3.5 inches and e.g. this") == "Keep 3.5 inches and e.g. this"


def test_ascii_folding_is_optional() -> None:
    text = "Add 1½ cups of crème fraîche — gently… at 180°C"
    assert normalize_text(text) == text
    assert normalize_text(text, ascii_only=True) == "Add 1 1/2 cups of creme fraiche - gently... at 180C"
    assert to_ascii("naïve Straße") == "naive Strasse"


_NOISE = st.sampled_from(
    [
        "<b>",
        "</p>",
        "&nbsp;",
        "&amp;",
        "Ã©",
        "â€™",
        "ï¬",
        "\u200b",
        "  ",
        "\n\n",
        "• ",
        "#####",
        "[2]",
        "WH.shared.add('x')",
        "{margin: 0;}",
        "bowl.Then",
        ",and",
        " .",
        "\t",
        "é",
        "—",
        "<br/>",
        "&#x27;",
    ]
)
_WORDS = st.sampled_from(
    [
        "Cut",
        "the",
        "board",
        "preheattheoven",
        "350degrees",
        "2cups",
        "Step 3:",
        "3.",
        "makeapplepie",
        "KitchenAid",
        "www.example.com",
        "sand",
        "it",
        "Glue",
        "and",
        "x",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_normalize_is_idempotent_on_any_text(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once
    assert normalize_text(once, ascii_only=True) == normalize_text(
        normalize_text(once, ascii_only=True), ascii_only=True
    )


_CLEANER = TextCleaner()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_NOISE, _WORDS), max_size=25), st.booleans())
def test_cleaning_is_idempotent_on_noisy_text(pieces: list[str], title: bool) -> None:
    text = " ".join(pieces)
    once = _CLEANER.clean(text, title=title)
    assert _CLEANER.clean(once, title=title) == once


@pytest.mark.parametrize(
    "text",
    [
        "{" + " ".join(f"a{i}: b{i}" for i in range(300)),  # an unclosed CSS-like block
        "{" + "a: " * 800,
        "x {a: b; " * 400,
        "document.write(" + "(" * 300,
        "<b " * 800,
        "//<!" * 400 + "<!--" * 100,
        "- " * 3000 + "\n" * 500,
        "data/" + "iVBORw0KGgoAAAANSUhEUgAA" * 1000,  # base64 in text
        "a" * 30000 + " b@c",
        "Step " * 3000,
        "1a" * 8000,
    ],
)
def test_adversarial_inputs_are_cleaned_in_linear_time(text: str) -> None:
    import time

    started = time.process_time()
    _CLEANER.clean(text)
    _CLEANER.clean(text, title=True)
    assert time.process_time() - started < 3.0
