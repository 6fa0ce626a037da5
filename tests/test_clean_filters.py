from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from procbench.clean import CleanOptions, clean_store
from procbench.clean.language import _identifier, detect_languages
from procbench.ingest import ingest_file
from procbench.store import Store

from helpers import write_jsonl

ENGLISH = [
    "Measure the board twice and mark the cut line with a sharp pencil.",
    "Clamp the board to the bench so that it cannot move while you saw.",
    "Cut slowly along the line and let the saw do the work for you.",
    "Sand the edges with medium grit paper until they feel smooth.",
    "Wipe away the dust with a damp cloth before you apply the finish.",
    "Brush on a thin coat of oil and let it dry overnight.",
]
FRENCH = [
    "Mesurez la planche deux fois et tracez la ligne de coupe avec un crayon.",
    "Fixez la planche sur l'établi pour qu'elle ne bouge pas pendant la coupe.",
    "Coupez lentement le long de la ligne et laissez la scie travailler.",
    "Poncez les bords avec un papier moyen jusqu'à ce qu'ils soient lisses.",
]


def record(slug: str, texts: list[str], **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "source": "test",
        "id": slug,
        "title": slug.replace("-", " "),
        "category": ["Hobbies and Crafts", "Woodworking"],
        "steps": [{"title": None, "text": t} for t in texts],
    }
    out.update(extra)
    return out


def cleaned(tmp_path: Path, records: list[dict[str, Any]], **options: Any) -> tuple[Store, dict[str, dict[str, Any]]]:
    store = Store.open(tmp_path / "store", create=True)
    ingest_file(store, write_jsonl(tmp_path / "in.jsonl", records))
    clean_store(store, **options)
    rows = store.table("procedures", ["id", "keep", "drop_reason", "language"]).to_pylist()
    return store, {r["id"].split(":", 1)[1]: r for r in rows}


def test_language_filter_records_the_detected_language(tmp_path: Path) -> None:
    _, rows = cleaned(
        tmp_path,
        [
            record("Cut-a-Board", ENGLISH),
            record("Couper-une-Planche", FRENCH),
            record("Declared-German", ENGLISH[:4], language="de"),  # confident detection wins
            record("Declared-Italian", ["Sand.", "Glue.", "Paint."], language="it"),  # too short to detect
        ],
        min_words=1,
    )
    assert rows["Cut-a-Board"]["keep"] and rows["Cut-a-Board"]["language"] == "en"
    assert rows["Couper-une-Planche"]["drop_reason"] == "language" and rows["Couper-une-Planche"]["language"] == "fr"
    assert rows["Declared-German"]["keep"] and rows["Declared-German"]["language"] == "de"  # never overwritten
    assert rows["Declared-Italian"]["drop_reason"] == "language"


def test_non_english_text_is_not_split(tmp_path: Path) -> None:
    store, rows = cleaned(
        tmp_path,
        [
            record(
                "Cuocere",
                [
                    "Versa l'impasto nello stampo e cuoci in forno per venti minuti.",
                    "Lascia raffreddare la torta prima di tagliarla a fette.",
                    "Spolvera con lo zucchero a velo e servi la torta tiepida.",
                ],
            )
        ],
    )
    assert rows["Cuocere"]["drop_reason"] == "language"
    texts = store.table("steps", ["text_clean"])["text_clean"].to_pylist()
    assert "forno" in texts[0]


def test_every_language_allowed_with_an_empty_list(tmp_path: Path) -> None:
    _, rows = cleaned(tmp_path, [record("Couper-une-Planche", FRENCH)], languages=[])
    assert rows["Couper-une-Planche"]["keep"]


def test_no_text_and_step_count(tmp_path: Path) -> None:
    records = [
        record("Only-Markup", ["<br/>", "&nbsp;", "######", "<p></p>"]),  # images only, text was markup
        record("Two-Steps", ENGLISH[:2]),
        record("Too-Many", [f"Repeat the cut on board number {i} with the same care." for i in range(26)]),
        record("Just-Right", ENGLISH[:3]),
    ]
    _, rows = cleaned(tmp_path, records)
    assert rows["Only-Markup"]["drop_reason"] == "no_text"
    assert rows["Two-Steps"]["drop_reason"] == "step_count"
    assert rows["Too-Many"]["drop_reason"] == "step_count"
    assert rows["Just-Right"]["keep"]
    _, rows = cleaned(tmp_path / "again", records, min_steps=2, max_steps=30)
    assert rows["Two-Steps"]["keep"] and rows["Too-Many"]["keep"]


def test_off_domain_rules(tmp_path: Path) -> None:
    records = [
        record("Bake-Bread", ENGLISH, category=["Food and Entertaining", "Recipes"]),
        record("nutrient-calculator", ENGLISH, category=["Food and Entertaining"]),
        record("Build-a-Shelf", ENGLISH),
        record("Uncategorised", ENGLISH, category=[]),
    ]
    _, rows = cleaned(
        tmp_path, records, categories=["food and entertaining"], exclude_keywords=["calculator"], dedupe=False
    )
    assert rows["Bake-Bread"]["keep"] and rows["Uncategorised"]["keep"]
    assert rows["nutrient-calculator"]["drop_reason"] == "off_domain"
    assert rows["Build-a-Shelf"]["drop_reason"] == "off_domain"
    _, rows = cleaned(tmp_path / "kw", records, keywords=["oil"], dedupe=False)
    assert all(r["keep"] for r in rows.values())
    _, rows = cleaned(tmp_path / "kw2", records, keywords=["oven"], dedupe=False)
    assert not any(r["keep"] for r in rows.values())


def test_exact_and_near_duplicates_keep_one_copy_deterministically(tmp_path: Path) -> None:
    templated = [
        "Prepare the shot cups on a tray.",
        "Dissolve the gelatin into the boiling water in a bowl.",
        "Measure and pour the alcohol into the bowl.",
        "Carefully pour the mixture into the shot cups.",
        "Chill in the refrigerator for two hours.",
    ]
    other = [*templated[:2], "Measure and pour the cold water and light rum into the bowl.", *templated[3:]]
    records = [
        record("Cut-a-Board", ENGLISH),
        record("Cut-a-Board-copy", [f"<p>{t}</p>" for t in ENGLISH], title="Cut a Board"),  # scraped twice
        record("Cut-a-Board-short", ENGLISH[:5], title="How to Cut a Board"),  # a step lost
        record("Make-Bermuda-Triangle-Jello-Shots", templated),
        record("Make-Strawberry-Daiquiri-Jello-Shots", other),  # templated, not a duplicate
    ]
    store, rows = cleaned(tmp_path, records)
    assert rows["Cut-a-Board"]["keep"]  # the first imported of the complete copies
    assert rows["Cut-a-Board-copy"]["drop_reason"] == "duplicate"
    assert rows["Cut-a-Board-short"]["drop_reason"] == "duplicate"
    assert rows["Make-Bermuda-Triangle-Jello-Shots"]["keep"] and rows["Make-Strawberry-Daiquiri-Jello-Shots"]["keep"]
    _, reordered = cleaned(tmp_path / "reordered", [records[2], records[0], records[1]])
    assert reordered["Cut-a-Board"]["keep"] and not reordered["Cut-a-Board-short"]["keep"]  # most text wins
    _, rows = cleaned(tmp_path / "off", records, dedupe=False)
    assert all(r["keep"] for r in rows.values())


def test_batch_language_detection_equals_py3langid() -> None:
    texts = [
        *ENGLISH,
        *FRENCH,
        "Den Ofen auf 180 Grad vorheizen.",
        "日本語のテキストです",
        "x",
        "!!!",
        "ПРИВЕТ МИР",
        " ".join(ENGLISH),
    ]
    identifier = _identifier()
    for text, (lang, prob) in zip(texts, detect_languages(texts), strict=False):
        expected_lang, expected_prob = identifier.classify(text)
        assert lang == expected_lang and prob == pytest.approx(expected_prob, abs=1e-4)
    assert detect_languages(["", None, "   "]) == [(None, 0.0)] * 3


def test_options_are_validated() -> None:
    from procbench.errors import BadInput

    with pytest.raises(BadInput):
        CleanOptions(min_steps=10, max_steps=5)
    with pytest.raises(BadInput):
        CleanOptions().replace(colour="red")
    with pytest.raises(BadInput):
        CleanOptions(near_duplicate_threshold=1.5)
    assert CleanOptions(languages="EN").languages == ("en",)
