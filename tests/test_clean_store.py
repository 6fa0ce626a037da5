from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procbench.clean import clean_store, clean_tables
from procbench.ingest import ingest_file
from procbench.store import PROCEDURES, STEPS, Store, conform
from procbench.store.views import kept_procedures, kept_steps

from helpers import write_jsonl

SENTENCES = [
    "Measure the board twice and mark the cut line with a sharp pencil.",
    "Clamp the board to the bench so that it cannot move while you saw.",
    "Cut slowly along the line and let the saw do the work for you.",
    "Sand the edges with medium grit paper until they feel smooth.",
    "Wipe away the dust with a damp cloth before you apply the finish.",
    "Brush on a thin coat of oil and let it dry overnight.",
    "Whisk the eggs and sugar in a large bowl until pale.",
    "Fold in the flour gently so the batter stays light.",
]


def noisy_records() -> list[dict[str, Any]]:
    return [
        {
            "source": "t",
            "id": "Build-a-Shelf",
            "title": "How to Build a Shelf",
            "category": ["Woodworking"],
            "steps": [
                {"title": f"Step {i + 1}: {t.split()[0]} it", "text": f"<p>{t}</p>&nbsp;Preheattheoven first."}
                for i, t in enumerate(SENTENCES[:5])
            ],
        },
        {
            "source": "t",
            "id": "Bake-a-Cake",
            "title": "Bake a Cake",
            "category": ["Food"],
            "steps": [
                {"title": None, "text": t.replace("the", "the\u00a0") + " Use 2cups â€” itâ€™s fine."}
                for t in SENTENCES[4:]
            ],
        },
        {"source": "t", "id": "Short", "title": "Short", "steps": [{"text": SENTENCES[0]}]},
    ]


def store_with(tmp_path: Path, records: list[dict[str, Any]]) -> Store:
    store = Store.open(tmp_path / "store", create=True)
    ingest_file(store, write_jsonl(tmp_path / "in.jsonl", records))
    return store


def digest(store: Store, name: str) -> str:
    return hashlib.sha256(store.table_path(name).read_bytes()).hexdigest()


def test_clean_adds_columns_and_keeps_raw_ones(tmp_path: Path) -> None:
    store = store_with(tmp_path, noisy_records())
    raw_steps = store.table("steps")
    raw_procs = store.table("procedures")
    report = clean_store(store)
    steps, procs = store.table("steps"), store.table("procedures")
    for name in raw_steps.column_names:
        assert steps[name].equals(raw_steps[name]), name
    for name in raw_procs.column_names:
        if name != "language":
            assert procs[name].equals(raw_procs[name]), name
    assert steps.column_names[-2:] == ["title_clean", "text_clean"]
    assert procs.column_names[-2:] == ["keep", "drop_reason"]
    first = steps.filter(pa.compute.equal(steps["procedure_id"], "t:Build-a-Shelf")).to_pylist()[0]
    assert first["title_clean"] == "Measure it"
    assert first["text_clean"] == (
        "Measure the board twice and mark the cut line with a sharp pencil.\nPreheat the oven first."
    )
    cake = steps.filter(pa.compute.equal(steps["procedure_id"], "t:Bake-a-Cake")).to_pylist()[0]
    assert cake["text_clean"].endswith("Use 2 cups — it's fine.")
    assert dict(zip(procs["id"].to_pylist(), procs["drop_reason"].to_pylist(), strict=False)) == {
        "t:Build-a-Shelf": None,
        "t:Bake-a-Cake": None,
        "t:Short": "step_count",
    }
    assert procs["language"].to_pylist() == ["en", "en", "en"]
    assert report.in_vocabulary["after"] > report.in_vocabulary["before"]
    for rule in ("html", "unicode", "whitespace", "fused_words", "step_titles"):
        stats = report.rule(rule)
        assert stats.steps > 0 and stats.examples, rule
    assert report.rule("step_count").procedures == 1 and report.rule("step_count").steps == 1
    entry = store.provenance[-1]
    assert entry["command"] == "clean" and entry["counts"]["dropped_step_count"] == 1
    assert entry["args"]["min_steps"] == 3


def test_cleaning_a_clean_store_changes_nothing(tmp_path: Path) -> None:
    store = store_with(tmp_path, noisy_records())
    first = clean_store(store)
    assert sorted(first.written) == ["procedures", "steps"]
    before = {n: digest(store, n) for n in ("procedures", "steps", "images")}
    second = clean_store(store)
    assert second.written == []
    assert {n: digest(store, n) for n in ("procedures", "steps", "images")} == before
    assert second.to_dict()["rules"] == first.to_dict()["rules"]
    # the clean columns themselves are a fixed point of the text rules
    result = clean_tables(store.table("procedures"), store.table("steps"))
    assert result.steps["text_clean"].equals(store.table("steps")["text_clean"])


def test_reclean_with_other_settings_is_not_destructive(tmp_path: Path) -> None:
    store = store_with(tmp_path, noisy_records())
    clean_store(store)
    clean_store(store, min_steps=1)
    assert all(store.table("procedures")["keep"].to_pylist())
    clean_store(store)
    assert store.table("procedures")["keep"].to_pylist() == [True, True, False]


def test_later_stages_read_clean_columns(tmp_path: Path) -> None:
    store = store_with(tmp_path, noisy_records())
    clean_store(store)
    assert kept_procedures(store, ["id"])["id"].to_pylist() == ["t:Build-a-Shelf", "t:Bake-a-Cake"]
    steps = kept_steps(store)
    assert steps.num_rows == 9
    assert not any("<p>" in t for t in steps["text"].to_pylist())


def test_empty_store_is_cleaned_without_writing(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "empty", create=True)
    report = clean_store(store)
    assert report.procedures == 0 and report.written == [] and not store.has_table("steps")


_TEXT = st.lists(
    st.sampled_from(
        [
            *SENTENCES,
            "<b>",
            "&amp;",
            "Ã©",
            "makeapplepie",
            "Step 2:",
            "  ",
            "\n",
            "",
            "Préchauffez le four.",
            "350degrees",
            "#####",
            "x",
        ]
    ),
    max_size=6,
).map(" ".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.one_of(st.none(), _TEXT), _TEXT), min_size=1, max_size=7),
            st.sampled_from([None, "en", "fr"]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_clean_never_deletes_rows_or_raw_columns(
    procedures: list[tuple[list[tuple[str | None, str]], str | None]],
) -> None:
    procs: dict[str, list[Any]] = {"id": [], "source": [], "title": [], "n_steps": [], "language": []}
    steps: dict[str, list[Any]] = {"procedure_id": [], "index": [], "title": [], "text": [], "image_ids": []}
    for p, (rows, language) in enumerate(procedures):
        procs["id"].append(f"t:{p}")
        procs["source"].append("t")
        procs["title"].append(f"Procedure {p}")
        procs["n_steps"].append(len(rows))
        procs["language"].append(language)
        for i, (title, text) in enumerate(rows):
            for name, value in (
                ("procedure_id", f"t:{p}"),
                ("index", i),
                ("title", title),
                ("text", text),
                ("image_ids", []),
            ):
                steps[name].append(value)
    proc_table = conform(pa.table(procs, schema=pa.schema([PROCEDURES.field(n) for n in procs])), PROCEDURES)
    step_table = conform(pa.table(steps, schema=pa.schema([STEPS.field(n) for n in steps])), STEPS)
    result = clean_tables(proc_table, step_table)
    assert result.procedures.num_rows == proc_table.num_rows and result.steps.num_rows == step_table.num_rows
    for name in step_table.column_names:
        assert result.steps[name].equals(step_table[name])
    for name in proc_table.column_names:
        if name != "language":
            assert result.procedures[name].equals(proc_table[name])
    declared = proc_table["language"].to_pylist()
    assert [d for d in declared if d] == [
        r for r, d in zip(result.procedures["language"].to_pylist(), declared, strict=False) if d
    ]
    assert result.procedures["keep"].null_count == 0
    again = clean_tables(result.procedures, result.steps)
    assert again.steps.equals(result.steps) and again.procedures.equals(result.procedures)


def test_worker_processes_give_identical_results(monkeypatch: pytest.MonkeyPatch) -> None:
    import procbench.clean.text as text_module

    monkeypatch.setattr(text_module, "PARALLEL_MIN_ROWS", 10)
    monkeypatch.setattr(text_module, "_CHUNK", 37)
    procs: dict[str, list[Any]] = {"id": [], "source": [], "title": [], "n_steps": []}
    steps: dict[str, list[Any]] = {"procedure_id": [], "index": [], "title": [], "text": [], "image_ids": []}
    records = noisy_records()
    for copy in range(40):
        for r in records:
            pid = f"t:{r['id']}-{copy}"
            procs["id"].append(pid)
            procs["source"].append("t")
            procs["title"].append(f"{r['title']} {copy}")
            procs["n_steps"].append(len(r["steps"]))
            for i, s in enumerate(r["steps"]):
                text = s["text"].replace("board", f"board{copy}") if copy % 2 else s["text"]
                for name, value in (
                    ("procedure_id", pid),
                    ("index", i),
                    ("title", s.get("title")),
                    ("text", text),
                    ("image_ids", []),
                ):
                    steps[name].append(value)
    proc_table = conform(pa.table(procs, schema=pa.schema([PROCEDURES.field(n) for n in procs])), PROCEDURES)
    step_table = conform(pa.table(steps, schema=pa.schema([STEPS.field(n) for n in steps])), STEPS)
    serial = clean_tables(proc_table, step_table, workers=1)
    parallel = clean_tables(proc_table, step_table, workers=2)
    assert parallel.steps.equals(serial.steps) and parallel.procedures.equals(serial.procedures)
    one, two = serial.report.to_dict(), parallel.report.to_dict()
    one.pop("seconds"), two.pop("seconds")
    assert one == two
    assert serial.report.rule("fused_words").steps > 0 and serial.report.rule("duplicate").procedures > 0


def test_image_and_headline_only_steps_are_kept_and_counted(tmp_path: Path) -> None:
    """Steps without text count as steps; clean reports them and embeds leave them out of step_text."""
    steps = [{"text": s} for s in SENTENCES[:3]] + [
        {"title": "Admire the shelf", "text": ""},
        {"images": ["https://example.org/done.jpg"]},
    ]
    path = write_jsonl(tmp_path / "in.jsonl", [{"source": "t", "id": "s", "title": "Build a Shelf", "steps": steps}])
    store = Store.open(tmp_path / "s", create=True)
    ingest_file(store, path)
    report = clean_store(store, min_steps=5, languages=())
    assert (report.kept, report.kept_steps, report.kept_steps_without_text) == (1, 5, 2)
    assert report.counts()["kept_steps_without_text"] == 2
    assert kept_steps(store, ["text"])["text"].to_pylist()[3:] == ["", ""]
