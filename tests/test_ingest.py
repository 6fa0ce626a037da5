from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from procbench.errors import BadInput, InputFileNotFound
from procbench.ingest import ingest_file
from procbench.store import Store
from procbench.store.append import UNUSABLE_LOCAL_IMAGE

from helpers import make_record, write_jsonl


def _png(colour: tuple[int, int, int], size: tuple[int, int] = (40, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, format="PNG")
    return out.getvalue()


def test_jsonl_round_trip_field_by_field(tmp_path: Path) -> None:
    record = make_record(
        "Make-Wood-Signs",
        3,
        author="ana",
        fetched_at="2024-05-01T10:00:00Z",
        category=["Hobbies and Crafts", "Woodworking", "Signs"],
    )
    record["steps"][1]["title"] = None
    record["steps"][2]["images"] = ["https://example.org/a.jpg"]
    store = Store.open(tmp_path / "s", create=True)
    report = ingest_file(store, write_jsonl(tmp_path / "in.jsonl", [record]))
    assert (report.added, report.problems) == (1, [])
    proc = store.table("procedures").to_pylist()[0]
    assert proc["id"] == "test:Make-Wood-Signs" and proc["source"] == "test"
    assert proc["title"] == record["title"] and proc["url"] == record["url"]
    assert proc["category"] == ["Hobbies and Crafts", "Woodworking", "Signs"]
    assert proc["author"] == "ana" and proc["license"] == "CC0-1.0" and proc["n_steps"] == 3
    assert proc["fetched_at"].isoformat() == "2024-05-01T10:00:00+00:00"
    steps = store.table("steps").to_pylist()
    assert [s["index"] for s in steps] == [0, 1, 2]
    assert [s["text"] for s in steps] == [s["text"] for s in record["steps"]]
    assert [s["title"] for s in steps] == [record["steps"][0]["title"], None, record["steps"][2]["title"]]
    image = store.table("images").to_pylist()[0]
    assert steps[2]["image_ids"] == [image["id"]] and image["id"].startswith("url:")
    assert image["url"] == "https://example.org/a.jpg" and image["stored"] is False and image["step_index"] == 2


def test_reingest_adds_nothing_and_keeps_tables_identical(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [make_record(f"p{i}") for i in range(5)])
    store = Store.open(tmp_path / "s", create=True)
    ingest_file(store, path)
    before = {n: (tmp_path / "s" / f"{n}.parquet").read_bytes() for n in ("procedures", "steps", "images")}
    again = ingest_file(store, path)
    assert (again.added, again.already_present) == (0, 5)
    assert {n: (tmp_path / "s" / f"{n}.parquet").read_bytes() for n in before} == before
    assert [e["counts"]["added"] for e in store.provenance] == [5, 0]


def test_bad_lines_are_reported_with_line_numbers_and_rest_imported(tmp_path: Path) -> None:
    lines = [
        make_record("good-1"),
        "{not json",
        json.dumps(["a list"]),
        make_record("no-steps", 0),
        {"title": "No text", "steps": [{"text": " ", "images": []}]},
        "",
        {"steps": [{"text": "untitled"}]},
        make_record("good-2"),
        make_record("good-1"),
    ]
    store = Store.open(tmp_path / "s", create=True)
    report = ingest_file(store, write_jsonl(tmp_path / "in.jsonl", lines))
    assert report.added == 2
    by_line = {p.where: p.message for p in report.problems}
    assert set(by_line) == {"line 2", "line 3", "line 4", "line 5", "line 7", "line 9"}
    assert "invalid JSON" in by_line["line 2"] and "not a JSON object" in by_line["line 3"]
    assert "without steps" in by_line["line 4"] and "step 1 has no text, title or image" in by_line["line 5"]
    assert "title" in by_line["line 7"] and "duplicate id test:good-1 (first on line 1)" in by_line["line 9"]
    assert sorted(store.table("procedures")["id"].to_pylist()) == ["test:good-1", "test:good-2"]
    assert report.counts()["malformed"] == 5 and report.counts()["duplicates_in_file"] == 1


def test_missing_file_and_unknown_format_are_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputFileNotFound):
        ingest_file(tmp_path / "s", tmp_path / "missing.jsonl")
    assert not (tmp_path / "s").exists()
    path = write_jsonl(tmp_path / "in.jsonl", [make_record("a")])
    with pytest.raises(BadInput, match="unknown format"):
        ingest_file(tmp_path / "s", path, format="xml")


def test_crash_mid_ingest_leaves_store_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store.open(tmp_path / "s", create=True)
    ingest_file(store, write_jsonl(tmp_path / "first.jsonl", [make_record("kept")]))
    before = {p.name: p.read_bytes() for p in (tmp_path / "s").glob("*.parquet")}
    from procbench.ingest import jsonl

    real = jsonl.parse_procedure
    seen = {"n": 0}

    def crashing(record: object, **kw: object) -> object:
        seen["n"] += 1
        if seen["n"] == 3:
            raise MemoryError("simulated crash")
        return real(record, **kw)

    monkeypatch.setattr(jsonl, "parse_procedure", crashing)
    with pytest.raises(MemoryError):
        ingest_file(store, write_jsonl(tmp_path / "second.jsonl", [make_record(f"n{i}") for i in range(5)]))
    assert {p.name: p.read_bytes() for p in (tmp_path / "s").glob("*.parquet")} == before
    assert [e["counts"]["added"] for e in store.provenance] == [1]


def test_local_images_are_normalised_and_stored_once(tmp_path: Path) -> None:
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "red.png").write_bytes(_png((255, 0, 0), (1200, 600)))
    (tmp_path / "img" / "red-copy.png").write_bytes(_png((255, 0, 0), (1200, 600)))
    (tmp_path / "img" / "broken.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    record = make_record("pics", 3)
    record["steps"][0]["images"] = ["img/red.png"]
    record["steps"][1]["images"] = ["img/red-copy.png", "img/broken.jpg", "img/missing.png"]
    store = Store.open(tmp_path / "s", create=True)
    report = ingest_file(store, write_jsonl(tmp_path / "in.jsonl", [record]))
    assert report.images_stored == 2 and len(report.image_failures) == 2
    images = store.table("images").to_pylist()
    assert len(images) == 1 and images[0]["stored"] and (images[0]["width"], images[0]["height"]) == (512, 256)
    steps = store.table("steps").to_pylist()
    assert steps[0]["image_ids"] == steps[1]["image_ids"] == [images[0]["id"]]
    with Image.open(store.image_path(images[0]["id"])) as im:
        assert im.format == "JPEG" and im.mode == "RGB" and im.size == (512, 256)


def _recipeqa_entry(recipe_id: str, task: str, n: int = 3) -> dict[str, object]:
    return {
        "recipe_id": recipe_id,
        "task": task,
        "question": [],
        "choice_list": [],
        "answer": 0,
        "context": [
            {
                "id": f"s{i}",
                "title": f"Step {i}",
                "body": f"{recipe_id} body {i}",
                "images": [f"{recipe_id}_{i}_0.jpg"],
            }
            for i in range(n)
        ],
    }


def test_recipeqa_stores_each_recipe_once(tmp_path: Path) -> None:
    data = {
        "version": "1.0",
        "data": [
            _recipeqa_entry("cookies", "textual_cloze"),
            _recipeqa_entry("cookies", "visual_cloze"),
            _recipeqa_entry("soup", "visual_ordering", 4),
            {"task": "textual_cloze"},
            {"recipe_id": "empty", "context": []},
        ],
    }
    path = tmp_path / "train.json"
    path.write_text(json.dumps(data))
    store = Store.open(tmp_path / "s", create=True)
    report = ingest_file(store, path, format="recipeqa")
    assert report.added == 2 and [p.where for p in report.problems] == ["entry 4", "entry 5"]
    procs = {p["id"]: p for p in store.table("procedures").to_pylist()}
    assert set(procs) == {"recipeqa:cookies", "recipeqa:soup"}
    assert procs["recipeqa:soup"]["n_steps"] == 4 and procs["recipeqa:soup"]["split"] == "train"
    steps = store.table("steps")
    assert steps.filter(pc.equal(steps["procedure_id"], "recipeqa:cookies"))["text"].to_pylist() == [
        "cookies body 0",
        "cookies body 1",
        "cookies body 2",
    ]
    assert report.images_remote == 7 and not report.image_failures  # image folder not given: kept as references
    assert ingest_file(store, path, format="recipeqa").added == 0


def test_recipeqa_rejects_other_json(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("[1, 2")
    with pytest.raises(BadInput, match="not RecipeQA JSON"):
        ingest_file(tmp_path / "s", path, format="recipeqa")


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30).filter(str.strip)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", "d", "e", "f"]), st.lists(_text, min_size=1, max_size=6)),
        min_size=1,
        max_size=8,
    )
)
def test_tables_stay_consistent(tmp_path_factory: pytest.TempPathFactory, procs: list[tuple[str, list[str]]]) -> None:
    """Whatever is imported: unique ids, n_steps = rows in steps, indexes 0..n-1, re-import adds nothing."""
    tmp = tmp_path_factory.mktemp("prop")
    records = [
        {"source": "p", "id": slug, "title": f"T {slug}", "steps": [{"text": t} for t in texts]}
        for slug, texts in procs
    ]
    path = write_jsonl(tmp / "in.jsonl", records)
    store = Store.open(tmp / "s", create=True)
    report = ingest_file(store, path)
    first = {}
    for slug, texts in procs:
        first.setdefault(slug, texts)
    assert report.added == len(first)
    procedures = store.table("procedures").to_pylist()
    assert sorted(p["id"] for p in procedures) == sorted(f"p:{s}" for s in first)
    steps = store.table("steps").to_pylist()
    for p in procedures:
        mine = [s for s in steps if s["procedure_id"] == p["id"]]
        assert [s["index"] for s in mine] == list(range(p["n_steps"]))
        assert [s["text"] for s in mine] == [t.strip() for t in first[p["id"][2:]]]
    assert ingest_file(store, path).added == 0


def test_steps_with_a_title_or_an_image_and_no_text_are_kept(tmp_path: Path) -> None:
    """Instructables image-only steps and wikiHow bold-only steps are content: stored with empty text."""
    steps = [
        {"text": "Cut the board."},
        {"title": "Sand it", "text": ""},
        {"images": ["https://example.org/3.jpg"]},
        {"title": "Paint it", "text": None, "images": ["https://example.org/4.jpg"]},
    ]
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": "shelf", "title": "Make a shelf", "steps": steps}])
    store = Store.open(tmp_path / "s", create=True)
    report = ingest_file(store, path)
    assert (report.added, report.problems, report.images_remote) == (1, [], 2)
    rows = store.table("steps").sort_by("index").to_pylist()
    assert [(r["title"], r["text"], len(r["image_ids"])) for r in rows] == [
        (None, "Cut the board.", 0),
        ("Sand it", "", 0),
        (None, "", 1),
        ("Paint it", "", 1),
    ]
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"title": "T", "steps": [{"text": 3}]}])
    assert "'text' must be a string" in ingest_file(store, bad).problems[0].message


def test_records_that_cannot_be_stored_are_bad_lines(tmp_path: Path) -> None:
    """Deep nesting, a 5,000-digit id, a time that overflows in UTC and a lone surrogate skip their line only."""
    good = json.dumps(make_record("good"))
    lines = [
        good,
        '{"title": "deep", "steps": [{"text": "x"}], "extra": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"title": "big id", "id": ' + "9" * 5000 + ', "steps": [{"text": "x"}]}',
        json.dumps(make_record("old", fetched_at="0001-01-01T00:00:00+05:00")),
        json.dumps(make_record("late", fetched_at="9999-12-31T23:59:59-05:00")),
        '{"title": "surrogate \\ud800", "steps": [{"text": "x"}]}',
        '{"title": "raw surrogate", "steps": [{"text": "x", "images": ["a\\udfff.jpg"]}]}',
        json.dumps(make_record("long-id", id="x" * 600)),
        json.dumps(make_record("bool-id", id=True)),
        json.dumps(make_record("korean-\ud55c", title="\ud55c\uad6d \uc74c\uc2dd"), ensure_ascii=False),
    ]
    store = Store.open(tmp_path / "s", create=True)
    report = ingest_file(store, write_jsonl(tmp_path / "in.jsonl", lines))
    by_line = {p.where: p.message for p in report.problems}
    assert set(by_line) == {f"line {n}" for n in range(2, 10)}
    assert "nested too deeply" in by_line["line 2"]
    assert "unreadable JSON value" in by_line["line 3"]
    assert "out of range" in by_line["line 4"] and "out of range" in by_line["line 5"]
    assert "title holds a lone UTF-16 surrogate" in by_line["line 6"]
    assert "step 1 holds a lone UTF-16 surrogate" in by_line["line 7"]
    assert "longer than 500" in by_line["line 8"] and "'id' must be a string" in by_line["line 9"]
    assert sorted(store.table("procedures")["id"].to_pylist()) == ["test:good", "test:korean-\ud55c"]


def test_image_paths_read_only_regular_files_under_the_cap(tmp_path: Path) -> None:
    """/dev/zero, a FIFO, a directory and a file over 20 MiB are image failures, quickly; the rest imports."""
    import os
    import time

    (tmp_path / "ok.png").write_bytes(_png((0, 255, 0)))
    os.mkfifo(tmp_path / "fifo.png")
    (tmp_path / "dir.png").mkdir()
    with open(tmp_path / "huge.png", "wb") as fh:  # sparse: no disk used
        fh.truncate(21 * 2**20)
    (tmp_path / "zero.png").symlink_to("/dev/zero")
    record = make_record("pics", 2)
    record["steps"][0]["images"] = ["ok.png", "/dev/zero", "fifo.png", "dir.png"]
    record["steps"][1]["images"] = ["huge.png", "zero.png"]
    start = time.monotonic()
    report = ingest_file(tmp_path / "s", write_jsonl(tmp_path / "in.jsonl", [record]), allow_outside=True)
    assert time.monotonic() - start < 20
    assert report.added == 1 and report.images_stored == 1
    failures = dict(report.image_failures)
    assert set(failures) == {"/dev/zero", "fifo.png", "dir.png", "huge.png", "zero.png"}
    # one message for every unusable file: an import cannot tell which files exist
    assert set(failures.values()) == {UNUSABLE_LOCAL_IMAGE}


def test_recipeqa_image_names_stay_inside_the_image_folder(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "in.png").write_bytes(_png((0, 0, 255)))
    (tmp_path / "outside.png").write_bytes(_png((255, 0, 0)))
    entry = _recipeqa_entry("r", "textual_cloze", 2)
    entry["context"][0]["images"] = ["in.png"]  # type: ignore[index]
    entry["context"][1]["images"] = ["../outside.png", str(tmp_path / "outside.png")]  # type: ignore[index]
    path = tmp_path / "train.json"
    path.write_text(json.dumps({"data": [entry]}))
    report = ingest_file(tmp_path / "s", path, format="recipeqa", images_dir=tmp_path / "images")
    assert report.added == 1 and report.images_stored == 1
    assert {ref for ref, _ in report.image_failures} == {"../outside.png", str(tmp_path / "outside.png")}
    assert all("lies outside" in why for _, why in report.image_failures)


def test_recipeqa_file_that_json_cannot_hold_is_bad_input(tmp_path: Path) -> None:
    for name, text in [("deep", "[" * 100_000 + "]" * 100_000), ("bigint", '{"data": [' + "7" * 5000 + "]}")]:
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        with pytest.raises(BadInput, match="not RecipeQA JSON"):
            ingest_file(tmp_path / "s", path, format="recipeqa")


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_any_text = st.text(max_size=12) | st.text(st.characters(min_codepoint=0xD7F0, max_codepoint=0xE00F), max_size=3)
_value = _json | _any_text | st.sampled_from(["0001-01-01T00:00:00+05:00", "2024-02-30", "a/b.png", "../x.png"])


def _fuzzed(base: dict[str, Any], data: st.DataObject, keys: list[str]) -> dict[str, Any]:
    return {key: data.draw(_value) if data.draw(st.integers(0, 3)) == 0 else value for key, value in base.items()} | {
        key: data.draw(_value) for key in data.draw(st.lists(st.sampled_from(keys), max_size=2))
    }


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzzed_jsonl_fields_are_skipped_lines_or_clean_imports(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Arbitrary JSON values in every field of a record and its steps: a skipped line or an import, never a crash."""
    tmp = tmp_path_factory.mktemp("fuzz")
    (tmp / "a").mkdir()
    (tmp / "a" / "b.png").write_bytes(_png((1, 2, 3)))
    keys = ["id", "source", "title", "url", "category", "author", "license", "language", "fetched_at", "split"]
    records = []
    for n in range(3):
        record = _fuzzed(make_record(f"r{n}", 2, fetched_at="2024-01-01T00:00:00Z", language="en"), data, keys)
        if isinstance(record.get("steps"), list):
            record["steps"] = [
                _fuzzed(dict(step, images=["a/b.png"]), data, ["text", "title", "images"])
                if isinstance(step, dict)
                else step
                for step in record["steps"]
            ]
        records.append(record)
    lines = [json.dumps(r) for r in records]  # ensure_ascii: surrogates travel as \\u escapes
    store = Store.open(tmp / "s", create=True)
    report = ingest_file(store, write_jsonl(tmp / "in.jsonl", lines))
    assert report.added + report.counts()["malformed"] + report.duplicates_in_file == 3
    assert store.table("procedures").num_rows == report.added
    Store.open(tmp / "s").table("steps")  # what was written reads back


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzzed_recipeqa_fields_are_skipped_entries_or_clean_imports(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Arbitrary JSON values in every field of a RecipeQA entry and its context steps: never a crash."""
    tmp = tmp_path_factory.mktemp("fuzzqa")
    (tmp / "img").mkdir()
    (tmp / "img" / "a.png").write_bytes(_png((1, 2, 3)))
    keys = ["recipe_id", "title", "task", "context", "question", "choice_list", "answer"]
    entries: list[Any] = []
    for n in range(3):
        entry = _fuzzed(_recipeqa_entry(f"r{n}", "textual_cloze", 2) | {"title": f"R {n}"}, data, keys)
        if isinstance(entry.get("context"), list):
            entry["context"] = [
                _fuzzed(dict(step, images=["a.png"]), data, ["id", "title", "body", "images"])
                if isinstance(step, dict)
                else step
                for step in entry["context"]
            ]
        entries.append(entry)
    entries.append(data.draw(_value))
    path = tmp / "train.json"
    path.write_text(json.dumps({"data": entries}))
    store = Store.open(tmp / "s", create=True)
    report = ingest_file(store, path, format="recipeqa", images_dir=tmp / "img")
    assert report.added + report.counts()["malformed"] <= 4
    assert store.table("procedures").num_rows == report.added
