from __future__ import annotations

import pytest

from procbench.clean import Segmenter, count_in_vocabulary, get_vocabulary

_SEG = Segmenter()

# Hand-checked: fused tokens and the split a reader expects.
FUSED = {
    "preheattheoven": "preheat the oven",
    "makeapplepie": "make apple pie",
    "theoven": "the oven",
    "ofthe": "of the",
    "inthe": "in the",
    "alot": "a lot",
    "aswell": "as well",
    "infront": "in front",
    "eachother": "each other",
    "cutthewoodintotwopieces": "cut the wood into two pieces",
    "gluetheedgestogether": "glue the edges together",
    "thedough": "the dough",
    "addtheflour": "add the flour",
    "stirinthe": "stir in the",
    "mixwell": "mix well",
    "sandthesurface": "sand the surface",
    "paintthewalls": "paint the walls",
    "drillapilothole": "drill a pilot hole",
    "goesfora": "goes for a",
    "350degrees": "350 degrees",
    "2cups": "2 cups",
    "5mm": "5 mm",
    "100g": "100 g",
    "10minutes": "10 minutes",
    "3inches": "3 inches",
    "oven350": "oven 350",
    "preheattheoven350degrees": "preheat the oven 350 degrees",
    "Step3": "Step 3",
    "2cupsflour": "2 cups flour",
    "removablecover": "removable cover",
    "rawpotato": "raw potato",
    "woodglue": "wood glue",
}
# Hand-checked: tokens that must stay whole (real words, jargon, names, brands, codes).
WHOLE = [
    "kitchenaid",
    "longboard",
    "dishwashing",
    "stovetop",
    "cardstock",
    "microplane",
    "wikihow",
    "instructables",
    "dremel",
    "kreg",
    "nutella",
    "tahini",
    "sriracha",
    "pyrex",
    "ziploc",
    "smithson",
    "maca",
    "21st",
    "1980s",
    "2x4",
    "3D",
    "mp3",
    "3M",
    "B2B",
    "4WD",
    "12V",
    "aid384397",
    "9ede3229ae",
    "ac2744cc",
    "covid",
    "tenon",
    "bean",
    "windup",
    "Nutella",
    "Rattata",
    "Ridorana",
    "KitchenAid",
    "iPhone",
    "NASA",
]


def test_splits_hand_checked_fusions_with_high_precision_and_recall() -> None:
    made = {t: _SEG.split_token(t) for t in [*FUSED, *WHOLE]}
    splits = {t: out for t, out in made.items() if out != t}
    correct = sum(1 for t, out in splits.items() if FUSED.get(t, "").lower() == out.lower())
    precision = correct / len(splits)
    recall = correct / len(FUSED)
    wrong = {t: out for t, out in splits.items() if FUSED.get(t, "").lower() != out.lower()}
    assert precision >= 0.97, wrong
    assert recall >= 0.9, {t: made[t] for t in FUSED if made[t].lower() != FUSED[t]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Preheattheoven to 350degrees and makeapplepie.", "Preheat the oven to 350 degrees and make apple pie."),
        ("Mix in the bowl. Thedough should rise.", "Mix in the bowl. The dough should rise."),
        ("I met Ashbury there. We ate Nutella.", "I met Ashbury there. We ate Nutella."),  # names mid-sentence
        ("Use a KitchenAid mixer and an iPhone timer.", "Use a KitchenAid mixer and an iPhone timer."),
        (
            "See https://example.org/makeapplepie or www.makeapplepie.com today",
            "See https://example.org/makeapplepie or www.makeapplepie.com today",
        ),
        (
            "Mail bob@makeapplepie.org #makeapplepie @makeapplepie",
            "Mail bob@makeapplepie.org #makeapplepie @makeapplepie",
        ),
        (
            "Edit icon0.PNG, example.com/makeapplepie and img_makeapplepie",
            "Edit icon0.PNG, example.com/makeapplepie and img_makeapplepie",
        ),
        ("Cut four 2x4 boards for the 1980s lamp, 21st try.", "Cut four 2x4 boards for the 1980s lamp, 21st try."),
        ("makeapplepie, makeapplepies and makeapplepie", "make apple pie, make apple pies and make apple pie"),
    ],
)
def test_split_text_respects_context_and_protected_spans(text: str, expected: str) -> None:
    assert _SEG.split_text(text) == expected


def test_splitting_keeps_spelling_and_case_and_is_memoised() -> None:
    seg = Segmenter()
    assert seg.split_text("Preheattheoven now") == "Preheat the oven now"
    assert seg.applied == {"Preheattheoven": "Preheat the oven"}
    assert seg.split_word("preheattheoven") is seg.split_word("preheattheoven")
    assert seg.split_text("PREHEATTHEOVEN now") == "PREHEATTHEOVEN now"  # all caps: an acronym or shouting


def test_split_output_is_stable() -> None:
    for fused in FUSED:
        once = _SEG.split_text(fused)
        assert _SEG.split_text(once) == once


def test_in_vocabulary_counts() -> None:
    import pyarrow as pa

    counts = count_in_vocabulary(
        pa.array(
            ["Preheat the oven to 350 degrees.", "preheattheoven 2cups", None, "don't children's 21st 1980s", "xqzv"]
        )
    )
    assert counts.tokens.tolist() == [5, 2, 0, 4, 1]
    assert counts.in_vocab.tolist() == [5, 0, 0, 4, 0]
    assert counts.ratio == pytest.approx(9 / 12)


def test_vocabulary_is_offline_data() -> None:
    vocab = get_vocabulary()
    assert len(vocab.words) > 150_000
    assert {"oven", "preheat", "degrees", "tsp", "mm"} <= vocab.words
    assert "ofthe" not in vocab.words and "ofthe" in vocab.unigram_logp  # a common web typo, not a word
    assert "sam" not in vocab.parts and "the" in vocab.parts  # name fragments are no split parts
