"""Hardening: values from the store enter a card as text, never as Markdown, HTML or control characters
(issue 34, item 8)."""

from __future__ import annotations

import re
from collections import Counter

import pyarrow as pa
import yaml

from procbench.card import SET_FIELDS, DatasetCard, dataset_card, summarise_set
from procbench.card.escape import md_code, md_text

HOSTILE_LICENSE = "CC BY | x |\n---\n# Owned <script>alert(1)</script> [link](javascript:alert(1)) `code`"
HOSTILE_SOURCE = "evil\x00src\x1b]0;title\x07\x1b[2J"


def _card() -> str:
    table = pa.table(
        {"procedure_id": ["p0", "p1"], "split": ["train", "test"], "answer": [0, 1], "meta": [{"k": 1}, {"k": 1}]}
    )
    qset = summarise_set("textual-cloze", "de`fault|x", table)
    qset.config_name = "de`fault|x"
    card = DatasetCard(
        title="t",
        sets=[qset],
        fields=SET_FIELDS,
        procedures={
            "sources": Counter({HOSTILE_SOURCE: 2}),
            "licenses": Counter({HOSTILE_LICENSE: 2}),
            "languages": Counter({"en\x00": 2}),
        },
        generation={"textual-cloze": {"seed": 1, "args": {"file": "a|b\n# c"}, "counts": {}}},
        build={"sources": [{"command": "ingest", "file": "in|x.jsonl\n---", "source": HOSTILE_SOURCE}]},
    )
    return dataset_card(card)


def test_the_card_holds_no_control_character_and_parses() -> None:
    text = _card()
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["language"] == ["en"]
    assert "evilsrc" in text


def test_a_license_stays_in_its_table_cell() -> None:
    text = _card().split("\n---\n", 1)[1]  # the body (the YAML header holds it as a quoted string)
    lines = text.splitlines()
    rows = [line for line in lines if "Owned" in line]
    assert len(rows) == 1 and rows[0].startswith("| other | ")  # one row: the newlines did not end it
    cells = re.split(r"(?<!\\)\|", rows[0])
    assert len(cells) == 5  # leading, SPDX, as recorded, count, trailing: the `|` in the text is escaped
    assert not re.search(r"(?<!\\)<script", text) and not re.search(r"(?<!\\)\]\(javascript:", text)
    assert not any(line.startswith("# Owned") or line == "---" for line in lines)


def test_config_names_and_arguments_stay_in_their_spans() -> None:
    text = _card()
    assert "`de'fault\\|x`" in text
    assert "a\\|b \\# c" in text


def test_escape_helpers() -> None:
    assert md_text("a|b\n<i>*x*</i>\x00") == "a\\|b \\<i\\>\\*x\\*\\</i\\>"
    assert md_code("x`y|z\x1b") == "x'y\\|z"


def test_reader_and_model_names_stay_in_their_table_cells() -> None:
    """A reader's name (``score-packet --reader``) and a model's (from an lm-eval results file) are anyone's
    text, recorded in the store: in the card's Readers and Models tables they stay one escaped cell."""
    hostile = "bob\x1b[2J | x\n---\n# heading <script>alert(1)</script>\x00"
    record = {"reader": hostile, "context": "without", "n": 10, "accuracy": 0.3, "ci": [0.1, 0.6], "date": "d|\n#"}
    table = pa.table({"procedure_id": ["p0"], "split": ["test"], "answer": [0], "meta": [{"k": 1}]})
    qset = summarise_set("textual-cloze", "default", table)
    qset.readers = [record]
    qset.models = {f"lm-eval {hostile}": {"accuracy": {"value": 0.5, "ci": [0.4, 0.6], "interval": "bootstrap"}}}
    procedures = {"sources": Counter({"s": 1}), "licenses": Counter({"CC0-1.0": 1}), "languages": Counter({"en": 1})}
    card = DatasetCard(title="t", sets=[qset], fields=SET_FIELDS, procedures=procedures, generation={}, build={})
    text = dataset_card(card).split("\n---\n", 1)[1]
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)
    lines = text.splitlines()
    assert not any(line.startswith("# heading") or line == "---" for line in lines)
    assert not re.search(r"(?<!\\)<script", text)
    for row in (line for line in lines if "bob" in line):  # one row each, its `|` escaped
        assert row.startswith("| ") and len(re.split(r"(?<!\\)\|", row)) in (9, 4), row
    assert sum("bob" in line for line in lines) == 2
