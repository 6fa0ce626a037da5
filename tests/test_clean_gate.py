"""The precision gate of fused-word splitting (issue 56): real words and misspellings stay as written."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from procbench.clean import Segmenter, SegmenterSettings
from procbench.clean.gate import corpus_lexicon, credited, edits1, inflected_stem, refusal, transposed2
from procbench.clean.report import VOCABULARY_NOTE, CleanReport
from procbench.clean.text import TextCleaner

#: Every word of issue 56's table: `clean` split each of them into in-vocabulary garbage.
ISSUE_TABLE = [
    "instructable",
    "decaffinated",
    "serated",
    "merange",
    "chicharones",
    "doness",
    "thinkness",
    "sandaper",
    "teespoon",
    "togather",
    "upcycle",
    "burntness",
    "flavourless",
    "coconutastic",
    "saucepanmandoline",
]
GOLD = Path(__file__).resolve().parents[1] / "benchmarks" / "clean_gold.jsonl"


@pytest.fixture(scope="module")
def segmenter() -> Segmenter:
    return Segmenter()


@pytest.mark.parametrize("word", ISSUE_TABLE)
def test_issue_table_words_stay_as_written(segmenter: Segmenter, word: str) -> None:
    assert segmenter.split_token(word) == word
    text = f"Stir the {word} into the bowl."
    assert segmenter.split_text(text) == text


def test_issue_table_words_unchanged_by_the_whole_cleaner() -> None:
    cleaner = TextCleaner()
    text = "I made this instructable with decaffinated coffee, a serated knife and merange. " + " ".join(ISSUE_TABLE)
    assert cleaner.clean(text) == text


def test_true_fusions_are_still_split(segmenter: Segmenter) -> None:
    assert segmenter.split_token("roomtemperature") == "room temperature"
    assert segmenter.split_token("tocombine") == "to combine"
    cleaned = TextCleaner().clean("Put the butter in the bowl.Add the roomtemperature eggs and stir tocombine.")
    assert cleaned == "Put the butter in the bowl. Add the room temperature eggs and stir to combine."


def test_without_the_gate_the_old_splits_come_back() -> None:
    # the switch the benchmark uses to measure the splitter before issue 56
    old = Segmenter(settings=SegmenterSettings(gate=False))
    assert old.split_token("instructable") == "instruct able"
    assert old.split_token("togather") == "to gather"


@pytest.mark.parametrize(
    ("word", "reason"),
    [
        ("instructable", "lexicon"),
        ("togather", "misspelling"),
        ("teespoon", "misspelling"),
        ("sayin", "misspelling"),
        ("sandaper", "short_part"),
        ("merange", "short_part"),
        ("flavourless", "affix"),
        ("burntness", "affix"),
        ("quadropus", "short_part"),
        ("marshmallowed", "inflection"),
        ("glasswear", "misspelling"),
    ],
)
def test_refusal_reasons(word: str, reason: str) -> None:
    old = Segmenter(settings=SegmenterSettings(gate=False))
    found = old.best_split(word)
    assert found is not None
    score, parts = found
    assert len(parts) >= 2
    assert refusal(word, parts, score, old.vocab) == reason


def test_a_split_that_is_clearly_better_passes() -> None:
    seg = Segmenter(settings=SegmenterSettings(gate=False))
    for word in ("roomtemperature", "tocombine", "atleast", "preheattheoven"):
        score, parts = seg.best_split(word) or (0.0, [])
        assert refusal(word, parts, score, seg.vocab) is None, word


def test_extra_lexicon_keeps_a_token_whole() -> None:
    seg = Segmenter(settings=SegmenterSettings(lexicon=frozenset({"roomtemperature"})))
    assert seg.split_token("roomtemperature") == "roomtemperature"


def test_edits1() -> None:
    near = edits1("teespoon")
    assert "teaspoon" in near  # substitution
    assert "tespoon" in near  # deletion
    assert "etespoon" in near  # transposition
    assert "teespoons" in near  # insertion
    assert "teespoon" not in near


def test_corpus_lexicon_counts_procedures_not_occurrences() -> None:
    texts = pa.array(["a codewheel here", "the codewheel", "codewheel codewheel codewheel", "jigsawblade", None])
    groups = pa.array(["p1", "p2", "p3", "p1", "p2"])
    assert corpus_lexicon(texts, groups, min_groups=3) == frozenset({"codewheel"})
    one_author = pa.array(["jigsawblade jigsawblade", "jigsawblade", "jigsawblade"])
    assert "jigsawblade" not in corpus_lexicon(one_author, pa.array(["p1", "p1", "p1"]), min_groups=3)


def test_report_says_how_splits_are_counted() -> None:
    out = CleanReport().to_dict()
    assert out["in_vocabulary_note"] == VOCABULARY_NOTE
    assert "precision gate" in VOCABULARY_NOTE


def test_gold_file_is_labelled_real_changes() -> None:
    records = [json.loads(line) for line in GOLD.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(records) >= 300
    assert {r["corpus"] for r in records} == {"recipeqa", "wikihow", "build", "build2"}
    rules = {"fused_words", "html", "unicode", "whitespace", "step_titles", "step_numbers"}
    assert {r["rule"] for r in records} >= rules
    for r in records:
        assert r["label"] in {"correct", "wrong"}
        assert r["reason"].strip()
        assert r["before"] != r["after"]
        if r["rule"] == "fused_words":
            assert r["split"].replace(" ", "") == r["token"]
            assert r["half"] in {"tune", "held_out", "other"}


def test_a_phrase_with_a_function_word_must_be_attested_throughout(segmenter: Segmenter) -> None:
    # qua drop us: "drop us" is a web bigram, "qua drop" is not; stir in the / cut it up are attested throughout
    assert segmenter.split_token("quadropus") == "quadropus"
    assert segmenter.split_token("stirinthe") == "stir in the"
    assert segmenter.split_token("cutitup") == "cut it up"
    assert segmenter.split_token("abit") == "a bit"
    assert segmenter.split_token("flourmilksalt") == "flour milk salt"


def test_an_inflected_dictionary_word_is_not_split(segmenter: Segmenter) -> None:
    assert inflected_stem("marshmallowed", segmenter.vocab.words) == "marshmallow"
    assert inflected_stem("baking", segmenter.vocab.words) is None  # stem "bake" is under 5 letters
    assert segmenter.split_token("marshmallowed") == "marshmallowed"
    # a plural of a fusion is no inflection of a dictionary word ("waterbottle" is none)
    assert segmenter.split_token("waterbottles") == "water bottles"


def test_two_transpositions_from_a_known_word_is_a_misspelling(segmenter: Segmenter) -> None:
    assert "glassware" in transposed2("glasswear")
    assert "glasswear" not in transposed2("glasswear")
    assert segmenter.split_token("glasswear") == "glasswear"
    assert segmenter.split_token("glassbar") == "glass bar"  # one letter off glassware, but not its letters


def test_a_name_after_member_or_a_credit_line_stays_whole() -> None:
    seg = Segmenter()
    text = "This was inspired by member dirtymac. Photo from bdjsb7Photo from holisticmonkey"
    assert seg.split_text(text) == text
    assert credited("Photo by holisticmonkey", len("Photo by "))
    assert not credited("Stir tocombine", len("Stir "))
    # the same tokens elsewhere are split, and "from" alone is no credit line
    assert seg.split_text("A dirtymac from the coffeeshop.") == "A dirty mac from the coffee shop."
