"""`procbench extract`: lexicon (paper 002 §4.1), tuple rules (App. C) and the stored actions table."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from procbench.cli import app
from procbench.errors import BadInput, MissingDependency
from procbench.extract import build_lexicon, extract_store, extract_tuples, find_wordnet, wordnet_verbs
from procbench.extract.lexicon import WORDNET_HINT, read_lexicon_file
from procbench.extract.parser import installed_model, load_pipeline

from helpers import write_jsonl

spacy = pytest.importorskip("spacy")

# -- the lexicon -----------------------------------------------------------------------------------------

INDEX_VERB = """\
  1 This software and database is being provided to you, the LICENSEE, by
  2 Princeton University under the following license.
add v 6 7 ! @ ~ ^ $ + ; 6 5 00182406 01027192 02324496 00640
cut_off v 6 4 @ ~ * ; 6 3 00778293 00292507 01299286 0144066
go v 30 6 ! @ ~ * $ + 30 6 01835496
preheat v 1 1 @ 1 0 00372400
"""


def _wordnet(tmp_path: Path) -> Path:
    folder = tmp_path / "wordnet"
    folder.mkdir()
    (folder / "index.verb").write_text(INDEX_VERB, encoding="utf-8")
    return folder


def test_wordnet_index_is_read_without_its_licence_header(tmp_path: Path) -> None:
    assert wordnet_verbs(_wordnet(tmp_path)) == {"add", "cut off", "go", "preheat"}


def test_find_wordnet_honours_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _wordnet(tmp_path)
    monkeypatch.setenv("PROCBENCH_WORDNET", str(folder))
    assert find_wordnet() == folder
    monkeypatch.setenv("PROCBENCH_WORDNET", str(tmp_path / "nowhere"))
    with pytest.raises(BadInput, match="no WordNet index.verb"):
        find_wordnet()


def test_lexicon_with_wordnet(tmp_path: Path) -> None:
    counts = {"add": 9, "preheat": 5, "go": 7, "the": 12, "whisk": 4, "if": 6}
    lexicon = build_lexicon(counts, min_count=5, wordnet=wordnet_verbs(_wordnet(tmp_path)), wordnet_folder="wn")
    # whisk is below the threshold; "the" and "if" have no verb synset; "go" is on the stop-list
    assert lexicon.verbs == {"add", "preheat"}
    assert lexicon.dropped == {"no_verb_synset": ["if", "the"], "stop_list": ["go"]}
    assert lexicon.note is None and lexicon.candidates == 5
    assert "Add" in lexicon and "whisk" not in lexicon


def test_lexicon_without_wordnet_degrades_with_a_note() -> None:
    counts = {"add": 9, "the": 12, "salt": 6}
    tagged = {"add": 9, "salt": 2}  # the parser took "salt" for a verb in 2 of its 6 uses
    lexicon = build_lexicon(counts, min_count=5, verb_tagged=tagged, wordnet=None)
    assert lexicon.verbs == {"add"}
    assert lexicon.note == WORDNET_HINT
    assert lexicon.dropped == {"not_tagged_verb": ["salt", "the"]}
    with pytest.raises(BadInput):
        build_lexicon(counts, min_count=0)


def test_lexicon_file(tmp_path: Path) -> None:
    path = tmp_path / "verbs.txt"
    path.write_text("# cooking\nAdd\n\ncut  off  # phrasal\n", encoding="utf-8")
    assert read_lexicon_file(path).verbs == {"add", "cut off"}
    path.write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(BadInput):
        read_lexicon_file(path)


@pytest.mark.skipif(not Path("/usr/share/wordnet/index.verb").is_file(), reason="Debian's wordnet-base not installed")
def test_real_wordnet_knows_cooking_verbs() -> None:
    verbs = wordnet_verbs(Path("/usr/share/wordnet"))
    assert {"preheat", "whisk", "saute", "cut off", "add"} <= verbs
    assert "the" not in verbs and "if" not in verbs
    assert len(verbs) > 11_000


# -- tuples from hand-set parses (no trained model needed) ----------------------------------------------------


def _doc(rows: list[tuple[str, str, str, str, int, str]]) -> spacy.tokens.Doc:
    """A parsed sentence from (word, lemma, pos, tag, head index, dep) rows."""
    from spacy.tokens import Doc

    vocab = spacy.blank("en").vocab
    words = [r[0] for r in rows]
    spaces = [i + 1 < len(rows) and rows[i + 1][2] != "PUNCT" for i in range(len(rows))]
    return Doc(
        vocab,
        words=words,
        spaces=spaces,
        lemmas=[r[1] for r in rows],
        pos=[r[2] for r in rows],
        tags=[r[3] for r in rows],
        heads=[r[4] for r in rows],
        deps=[r[5] for r in rows],
        sent_starts=[i == 0 for i in range(len(rows))],
    )


def test_particle_object_and_prepositional_phrase() -> None:
    doc = _doc(
        [
            ("Cut", "cut", "VERB", "VB", 0, "ROOT"),
            ("off", "off", "ADP", "RP", 0, "prt"),
            ("the", "the", "DET", "DT", 3, "det"),
            ("crusts", "crust", "NOUN", "NNS", 0, "dobj"),
            ("with", "with", "ADP", "IN", 0, "prep"),
            ("a", "a", "DET", "DT", 7, "det"),
            ("sharp", "sharp", "ADJ", "JJ", 7, "amod"),
            ("knife", "knife", "NOUN", "NN", 4, "pobj"),
            (".", ".", "PUNCT", ".", 0, "punct"),
        ]
    )
    (t,) = extract_tuples(next(doc.sents))
    assert t.as_list() == ["cut off", "crusts", "with a sharp knife"]
    assert [doc.text[a:b] for a, b in t.argument_spans] == ["crusts", "with a sharp knife"]
    assert doc.text[t.verb_span[0] : t.verb_span[1]] == "Cut"


def test_subjects_causes_and_discourse_are_filtered() -> None:
    # "I then add a lot of pepper because I love it."
    doc = _doc(
        [
            ("I", "I", "PRON", "PRP", 2, "nsubj"),
            ("then", "then", "ADV", "RB", 2, "advmod"),
            ("add", "add", "VERB", "VBP", 2, "ROOT"),
            ("a", "a", "DET", "DT", 4, "det"),
            ("lot", "lot", "NOUN", "NN", 2, "dobj"),
            ("of", "of", "ADP", "IN", 4, "prep"),
            ("pepper", "pepper", "NOUN", "NN", 5, "pobj"),
            ("because", "because", "SCONJ", "IN", 9, "mark"),
            ("I", "I", "PRON", "PRP", 9, "nsubj"),
            ("love", "love", "VERB", "VBP", 2, "advcl"),
            ("it", "it", "PRON", "PRP", 9, "dobj"),
            (".", ".", "PUNCT", ".", 2, "punct"),
        ]
    )
    assert [t.as_list() for t in extract_tuples(next(doc.sents))] == [["add", "lot of pepper"]]


def test_coordinated_objects_split_and_a_second_clause_is_its_own_tuple() -> None:
    # "Add onions and celery, then stir the soup."
    doc = _doc(
        [
            ("Add", "add", "VERB", "VB", 0, "ROOT"),
            ("onions", "onion", "NOUN", "NNS", 0, "dobj"),
            ("and", "and", "CCONJ", "CC", 1, "cc"),
            ("celery", "celery", "NOUN", "NN", 1, "conj"),
            (",", ",", "PUNCT", ",", 0, "punct"),
            ("then", "then", "ADV", "RB", 6, "advmod"),
            ("stir", "stir", "VERB", "VB", 0, "conj"),
            ("the", "the", "DET", "DT", 8, "det"),
            ("soup", "soup", "NOUN", "NN", 6, "dobj"),
            (".", ".", "PUNCT", ".", 0, "punct"),
        ]
    )
    assert [t.as_list() for t in extract_tuples(next(doc.sents))] == [["add", "onions", "celery"], ["stir", "soup"]]


def test_a_third_person_subject_is_not_an_action() -> None:
    # "The water boils."
    doc = _doc(
        [
            ("The", "the", "DET", "DT", 1, "det"),
            ("water", "water", "NOUN", "NN", 2, "nsubj"),
            ("boils", "boil", "VERB", "VBZ", 2, "ROOT"),
            (".", ".", "PUNCT", ".", 2, "punct"),
        ]
    )
    assert extract_tuples(next(doc.sents)) == []


# -- the real parser (spaCy's English pipeline, when installed) ---------------------------------------------

needs_model = pytest.mark.skipif(installed_model() is None, reason="no spaCy English pipeline installed")


@pytest.fixture(scope="module")
def nlp() -> spacy.language.Language:
    if installed_model() is None:
        pytest.skip("no spaCy English pipeline installed")
    return load_pipeline()


@needs_model
def test_real_parser_extracts_paper_example(nlp: spacy.language.Language) -> None:
    doc = nlp("Heat the cast iron skillet over medium heat, then fry the bacon.")
    tuples = [t.as_list() for s in doc.sents for t in extract_tuples(s)]
    assert tuples == [["heat", "cast iron skillet", "over medium heat"], ["fry", "bacon"]]
    doc = nlp("Cut off the crusts of the bread with a sharp knife. You can also add some nuts if you like.")
    tuples = [t.as_list() for s in doc.sents for t in extract_tuples(s)]
    assert tuples == [["cut off", "crusts of the bread", "with a sharp knife"], ["add", "nuts"]]


def test_missing_model_is_one_line_naming_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("procbench.extract.parser.installed_model", lambda: None)
    with pytest.raises(MissingDependency, match=r"pip install 'procbench\[offline\]'"):
        load_pipeline()
    with pytest.raises(MissingDependency, match="cannot load spaCy pipeline 'no_such_model'"):
        load_pipeline("no_such_model")


STEPS = [
    "Preheat the oven to 350 degrees.",
    "Add the flour and the sugar to a bowl.",
    "Whisk the eggs in a cup. Add them to the bowl.",
    "The dough will rise.",
    "Bake the cake for 30 minutes.",
]


def _store(tmp_path: Path) -> Path:
    records = [
        {"source": "test", "id": f"cake-{i}", "title": f"How to Bake Cake {i}", "steps": [{"text": t} for t in STEPS]}
        for i in range(5)
    ]
    store = tmp_path / "store"
    result = CliRunner().invoke(
        app, ["ingest", str(write_jsonl(tmp_path / "p.jsonl", records)), "--store", str(store)]
    )
    assert result.exit_code == 0, result.output
    return store


@needs_model
def test_extract_command_stores_actions_and_info_shows_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nlp: spacy.language.Language
) -> None:
    monkeypatch.setenv("PROCBENCH_WORDNET", str(_wordnet(tmp_path)))
    store = _store(tmp_path)
    result = CliRunner().invoke(app, ["extract", "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # first words: preheat 5, add 10, whisk 5, the 5, bake 5; the test WordNet knows only add and preheat
    assert data["lexicon_verbs"] == ["add", "preheat"]
    assert data["counts"]["sentences"] == 30 and data["counts"]["steps"] == 25
    table = pq.read_table(store / "actions.parquet")
    rows = [r for r in table.to_pylist() if r["procedure_id"] == "test:cake-0"]
    assert [(r["step"], r["sentence"], r["verb"], r["arguments"], r["key"]) for r in rows] == [
        (0, 0, "preheat", ["oven", "to 350 degrees"], True),
        (1, 0, "add", ["flour", "sugar", "to a bowl"], True),
        (2, 0, "whisk", ["eggs", "in a cup"], False),
        (2, 1, "add", ["them", "to the bowl"], True),
        (4, 0, "bake", ["cake", "for 30 minutes"], False),
    ]
    step2 = STEPS[2]
    second = rows[3]
    assert step2[second["verb_span"]["start"] : second["verb_span"]["end"]] == "Add"
    assert [step2[s["start"] : s["end"]] for s in second["argument_spans"]] == ["them", "to the bowl"]
    assert second["sentence_text"] == "Add them to the bowl."
    info = CliRunner().invoke(app, ["info", "--store", str(store), "--json"])
    actions = json.loads(info.stdout)["stages"]["actions"]
    assert actions["tuples"] == 25 and actions["key_sentences"] == 15 and actions["lexicon_size"] == 2
    assert json.loads(info.stdout)["provenance"][-1]["command"] == "extract"

    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {"procedure_id": "test:cake-0", "step": 0, "tuples": [["preheat", "oven", "to 350 degrees"]]},
            {"procedure_id": "test:cake-0", "step": 3, "tuples": []},
            {"procedure_id": "test:cake-0", "step": 4, "tuples": [["bake", "cake", "for 30 minutes"]]},
        ],
    )
    scored = CliRunner().invoke(app, ["evaluate-extraction", str(gold), "--store", str(store), "--json"])
    report = json.loads(scored.stdout)
    # step 4's "bake" is not in the test lexicon: key missed (FN), its tuple not predicted
    assert report["stage1"] == {**report["stage1"], "tp": 1, "fn": 1, "tn": 1, "fp": 0}
    assert report["stage2"]["oracle"]["verbs"]["exact"]["recall"] == 0.5
    assert report["stage2"]["oracle"]["verbs"]["exact"]["precision"] == 1.0
    every = CliRunner().invoke(app, ["evaluate-extraction", str(gold), "--store", str(store), "--all-verbs", "--json"])
    assert json.loads(every.stdout)["stage2"]["oracle"]["arguments"]["exact"]["f1"] == 1.0


@needs_model
def test_extract_is_deterministic_and_takes_a_lexicon_file(tmp_path: Path, nlp: spacy.language.Language) -> None:
    store = _store(tmp_path)
    verbs = tmp_path / "verbs.txt"
    verbs.write_text("bake\nwhisk\n", encoding="utf-8")
    from procbench.store import Store

    opened = Store.open(store)
    first = extract_store(opened, lexicon_file=verbs, nlp=nlp)
    data = (store / "actions.parquet").read_bytes()
    extract_store(opened, lexicon_file=verbs, nlp=nlp)
    assert (store / "actions.parquet").read_bytes() == data
    assert first.lexicon.verbs == {"bake", "whisk"} and first.counts["key_sentences"] == 10


def test_extract_bad_input(tmp_path: Path) -> None:
    empty = CliRunner().invoke(app, ["extract", "--store", str(tmp_path / "none")])
    assert empty.exit_code == 2
    store = _store(tmp_path)
    missing = CliRunner().invoke(app, ["extract", "--store", str(store), "--lexicon", str(tmp_path / "no.txt")])
    assert missing.exit_code == 2 and "lexicon file not found" in missing.output
    evaluate = CliRunner().invoke(app, ["evaluate-extraction", str(tmp_path / "p.jsonl"), "--store", str(store)])
    assert evaluate.exit_code == 2
