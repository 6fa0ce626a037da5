"""Hardening, round 3 (issue 58): the reader surfaces (packet, answer page, Label Studio, score-packet), the store's
images, ingest's split names and manifests; and issue 57 item 4 (``--n`` defaults that fit the store).

Each test runs an attack of the issue's table and asserts the safe behaviour: one line and exit code 2, or what
the issue describes, with nothing written outside ``--out`` or the store.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner, Result

from procbench.cli import app
from procbench.embed import embed_store
from procbench.errors import BadInput
from procbench.generate import Setting, generate
from procbench.qsets.splits import split_by_procedure
from procbench.readers.packet import DEFAULT_N, build_packet, make_packet
from procbench.readers.views import READERS_FILE, read_records, recorded_readers
from procbench.store import Store

from helpers import make_record, write_jsonl

TEXT = "textual-cloze/needs-context"
VISUAL = "visual-cloze/default"


@pytest.fixture(scope="module")
def store_template(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("round3") / "store"
    shutil.copytree(ingested_sample, root)
    store = Store.open(root)
    embed_store(store, text_encoder="hashed", image_encoder="colour-layout", fields="step_title,step_text,image")
    generate(store, "textual-cloze", Setting("needs-context"), seed=0)
    generate(store, "visual-cloze", seed=0)
    return root


@pytest.fixture
def store(store_template: Path, tmp_path: Path) -> Path:
    shutil.copytree(store_template, tmp_path / "store")
    return tmp_path / "store"


def _run(*args: str) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def _one_line_error(result: Result, *words: str) -> str:
    """The output of a refused command: exit 2, one line, no traceback, holding ``words``."""
    text = result.output.strip()
    assert result.exit_code == 2, result.output
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    for word in words:
        assert word in text, text
    return text


def _packet(store: Path, out: Path, *extra: str) -> Result:
    return _run("packet", TEXT, "--n", "3", "--split", "all", "--out", out, "--store", store, *extra)


def _images(store: Path) -> list[Path]:
    return sorted(p for p in (store / "images").rglob("*.jpg") if p.is_file())


def _visual_image(store: Path) -> Path:
    """A stored image that the packet of ``VISUAL`` (--n 3, --split all, seed 0) shows."""
    packet = build_packet([VISUAL], store=store, n=3, split="all")
    wanted = set(packet.images.values())
    return next(p for p in _images(store) if p.read_bytes() in wanted)


# -- A: --overwrite replaces only a folder the writer marked itself -------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["packet", TEXT, "--n", "3", "--split", "all", "--out"],
        ["report", TEXT, "--answer-sheet", "3", "--split", "all", "--out"],
        ["export", TEXT, "--format", "label-studio", "--n", "3", "--split", "all", "--to"],
    ],
)
def test_overwrite_refuses_a_users_folder_with_a_key(store: Path, tmp_path: Path, command: list[str]) -> None:
    user = tmp_path / "u"
    (user / "images").mkdir(parents=True)
    (user / "key.json").write_text("{}")
    (user / "images" / "holiday.png").write_text("x")
    (user / "tasks.json").write_text("mine")
    before = {p: p.read_bytes() for p in user.rglob("*") if p.is_file()}
    _one_line_error(_run(*command, user, "--overwrite", "--store", store), "no .procbench-export.json")
    assert {p: p.read_bytes() for p in user.rglob("*") if p.is_file()} == before


def test_overwrite_replaces_only_the_files_the_packet_listed(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "pk"
    assert _run("packet", VISUAL, "--n", "3", "--split", "all", "--out", out, "--store", store).exit_code == 0
    (out / "images" / "holiday.png").write_bytes(b"mine")
    (out / "notes.txt").write_text("mine")
    marker = json.loads((out / ".procbench-export.json").read_text())
    marker["files"] += ["notes.txt", "images/holiday.png", "../outside.txt"]  # a crafted marker is not believed
    (out / ".procbench-export.json").write_text(json.dumps(marker))
    (tmp_path / "outside.txt").write_text("outside")
    again = _run("packet", VISUAL, "--n", "2", "--split", "all", "--out", out, "--store", store, "--overwrite")
    assert again.exit_code == 0, again.output
    assert (out / "images" / "holiday.png").read_bytes() == b"mine" and (out / "notes.txt").read_text() == "mine"
    assert (tmp_path / "outside.txt").read_text() == "outside"
    key = json.loads((out / "key.json").read_text())
    assert len(key["questions"]) == 2
    # the first packet's images of questions the second one does not have are gone
    shown = {p.name for p in (out / "images").iterdir()} - {"holiday.png"}
    assert shown and all(name.split("-")[0] in key["questions"] for name in shown)


def test_each_writer_overwrites_only_its_own_kind(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "pk"
    assert _packet(store, out).exit_code == 0
    args = ["export", TEXT, "--format", "label-studio", "--n", "3", "--split", "all", "--to", out, "--overwrite"]
    _one_line_error(_run(*args, "--store", store), "not empty")
    assert not (out / "tasks.json").exists()


# -- B: images come from the store through its confined accessor ---------------------------------------------


def test_a_store_image_linked_to_an_outside_file_is_refused(store: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.png"
    Image.new("RGB", (8, 8), (200, 10, 10)).save(secret)
    target = _visual_image(store)
    target.unlink()
    target.symlink_to(secret)
    for command in (
        ["packet", VISUAL, "--n", "3", "--split", "all", "--out", tmp_path / "pk"],
        ["export", VISUAL, "--format", "label-studio", "--n", "3", "--split", "all", "--to", tmp_path / "ls"],
        ["report", VISUAL, "--answer-sheet", "3", "--split", "all", "--out", tmp_path / "page"],
    ):
        _one_line_error(_run(*command, "--store", store), "question", "nothing was written")
    assert not any((tmp_path / name).exists() for name in ("pk", "ls", "page"))


def test_a_store_image_that_is_text_or_missing_is_one_line_and_nothing_half_written(
    store: Path, tmp_path: Path
) -> None:
    target = _visual_image(store)
    data = target.read_bytes()
    target.write_text("not an image at all")
    _one_line_error(
        _run("packet", VISUAL, "--n", "3", "--split", "all", "--out", tmp_path / "pk", "--store", store), "unreadable"
    )
    assert not (tmp_path / "pk").exists()
    target.unlink()
    _one_line_error(
        _run("packet", VISUAL, "--n", "3", "--split", "all", "--out", tmp_path / "pk", "--store", store), "missing"
    )
    assert not (tmp_path / "pk").exists()
    target.write_bytes(data)
    assert (
        _run("packet", VISUAL, "--n", "3", "--split", "all", "--out", tmp_path / "pk", "--store", store).exit_code == 0
    )


def test_store_read_image_refuses_links_and_non_images(store: Path, tmp_path: Path) -> None:
    stored = Store.open(store)
    path = _images(store)[0]
    image_id = path.stem
    assert stored.read_image(image_id) == path.read_bytes()
    outside = tmp_path / "x.jpg"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)
    with pytest.raises(BadInput, match="missing or a link"):
        stored.read_image(image_id)
    path.unlink()
    path.write_bytes(b"\x89PNG not really")
    with pytest.raises(BadInput, match="unreadable"):
        stored.read_image(image_id)
    with pytest.raises(BadInput):
        stored.read_image("../../etc/passwd")


# -- C: a huge --n is checked before anything is drawn ---------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["packet", TEXT, "--n", "1000000000000", "--split", "all", "--out"],
        ["report", TEXT, "--answer-sheet", "1000000000000", "--split", "all", "--out"],
        ["export", TEXT, "--format", "label-studio", "--n", "1000000000000", "--split", "all", "--to"],
    ],
)
def test_a_huge_n_is_refused_at_once(store: Path, tmp_path: Path, command: list[str]) -> None:
    start = time.monotonic()
    said = _one_line_error(_run(*command, tmp_path / "x", "--store", store), "questions from distinct procedures")
    assert "--split all" not in said  # already all splits: the advice names only what can still help
    assert time.monotonic() - start < 10
    assert not (tmp_path / "x").exists()


# -- D: packet ids -----------------------------------------------------------------------------------------------


def _answers(key: dict[str, object]) -> dict[str, str]:
    questions = key["questions"]
    assert isinstance(questions, dict)
    return {q: entry["answer"] for q, entry in questions.items()}


def test_packet_ids_are_shown_and_answers_to_another_packet_are_refused(store: Path, tmp_path: Path) -> None:
    pk1, pk2 = tmp_path / "pk1", tmp_path / "pk2"
    assert _packet(store, pk1, "--context", "with").exit_code == 0
    assert _packet(store, pk2, "--context", "without").exit_code == 0
    key1 = json.loads((pk1 / "key.json").read_text())
    key2 = json.loads((pk2 / "key.json").read_text())
    assert key1["packet_id"] != key2["packet_id"] and set(key1["questions"]) == set(key2["questions"])
    assert key1["packet_id"] in (pk1 / "packet.md").read_text()
    assert json.loads((pk1 / "packet.json").read_text())["packet_id"] == key1["packet_id"]
    readers = [p for p in store.rglob(READERS_FILE)]
    # answers carrying pk1's id, in both accepted shapes, are refused by pk2 and nothing is recorded
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"packet_id": key1["packet_id"], **_answers(key1)}))
    nested = tmp_path / "nested.json"
    nested.write_text(json.dumps({"packet_id": key1["packet_id"], "answers": _answers(key1)}))
    for answers in (flat, nested):
        _one_line_error(_run("score-packet", pk2, answers, "--reader", "alice"), key1["packet_id"], "not to this")
    assert [p for p in store.rglob(READERS_FILE)] == readers
    for answers in (flat, nested):
        scored = _run("score-packet", pk1, answers, "--reader", "alice", "--json")
        assert scored.exit_code == 0, scored.output
        assert json.loads(scored.output)["scores"][0]["accuracy"] == 1.0


def test_answers_without_a_packet_id_warn_when_their_ids_differ(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "pk"
    assert _packet(store, out).exit_code == 0
    key = json.loads((out / "key.json").read_text())
    exact = tmp_path / "exact.json"
    exact.write_text(json.dumps(_answers(key)))
    quiet = _run("score-packet", out, exact, "--no-record")
    assert quiet.exit_code == 0 and "warning" not in quiet.output, quiet.output
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**_answers(key), "Q99": "A"}))
    warned = _run("score-packet", out, other, "--no-record", "--json")
    assert warned.exit_code == 0, warned.output
    assert "carry no packet id" in " ".join(json.loads(warned.output)["warnings"])


def _label_studio_export(out: Path, tasks: list[dict[str, object]], key: dict[str, object]) -> list[object]:
    answers = _answers(key)
    return [
        {
            **task,
            "annotations": [
                {
                    "completed_by": 1,
                    "result": [{"from_name": "answer", "value": {"choices": [answers[task["data"]["question_id"]]]}}],
                }
            ],
        }
        for task in tasks
    ]


def test_label_studio_tasks_carry_the_packet_id(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "ls"
    made = _run(
        "export", TEXT, "--format", "label-studio", "--n", "3", "--split", "all", "--to", out, "--store", store
    )
    assert made.exit_code == 0, made.output
    key = json.loads((out / "key.json").read_text())
    tasks = json.loads((out / "tasks.json").read_text())
    assert {t["data"]["packet_id"] for t in tasks} == {key["packet_id"]}
    export = tmp_path / "export.json"
    export.write_text(json.dumps(_label_studio_export(out, tasks, key)))
    scored = _run("score-packet", out, export, "--no-record", "--json")
    assert scored.exit_code == 0 and json.loads(scored.output)["scores"][0]["accuracy"] == 1.0
    for task in tasks:
        task["data"]["packet_id"] = "0123456789ab"
    export.write_text(json.dumps(_label_studio_export(out, tasks, key)))
    _one_line_error(_run("score-packet", out, export, "--no-record"), "0123456789ab")


# -- E: score-packet on hostile answer files and keys ------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "[" * 100_000 + "]" * 100_000,
        json.dumps({"Q01": {"answer": {"answer": "A"}}}),
        json.dumps({"Q01": ["A"]}),
        json.dumps({"Q01": {"answer": "A", "ambiguous": "yes"}}),
        json.dumps({"packet_id": 5, "Q01": "A"}),
        json.dumps({"answers": {"Q01": "A"}, "extra": 1}),
        json.dumps([1, 2]),
        json.dumps([{"data": []}]),
        json.dumps([{"data": {"question_id": "Q01"}, "annotations": {"x": 1}}]),
        json.dumps([{"data": {"question_id": "Q01"}, "annotations": [{"result": [{"value": {"choices": [[1]]}}]}]}]),
        json.dumps([{"data": {"question_id": "Q01"}, "annotations": [{"completed_by": [1], "result": []}]}]),
        json.dumps("A"),
        "\xff\xfe not utf-8",
    ],
)
def test_hostile_answer_files_are_one_line(store: Path, tmp_path: Path, content: str) -> None:
    out = tmp_path / "pk"
    assert _packet(store, out).exit_code == 0
    answers = tmp_path / "a.json"
    answers.write_bytes(content.encode("latin-1") if content.startswith("\xff") else content.encode())
    _one_line_error(_run("score-packet", out, answers, "--no-record"))


def test_names_are_printed_as_plain_text_and_unknown_ids_are_capped(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "pk"
    assert _packet(store, out).exit_code == 0
    markup = tmp_path / "a.json"
    markup.write_text(json.dumps({"[/]": "A", "[bold]x[/bold]": "B"}))
    result = _run("score-packet", out, markup, "--no-record", "--reader", "[red]eve[/]")
    assert result.exit_code == 0, result.output
    assert "[/]" in result.output and "[red]eve[/]" in result.output and "[bold]x[/bold]" in result.output
    many = tmp_path / "many.json"
    many.write_text(json.dumps({f"X{i:06d}-{'z' * 40}": "A" for i in range(50_000)}))
    result = _run("score-packet", out, many, "--no-record")
    assert result.exit_code == 0 and len(result.output) < 5_000, len(result.output)
    assert "50,000 ids not in the packet" in result.output and "and 49,990 more" in result.output


@pytest.mark.parametrize(
    "change",
    [
        lambda key: key.pop("questions"),
        lambda key: key.update(questions=[1, 2]),
        lambda key: key.update(questions={"Q01": "A"}),
        lambda key: key.update(questions={"Q01": {"set": "nope", "qid": "x", "answer": "A"}}),
        lambda key: key.update(seed="0"),
        lambda key: key.update(sets={"x": 1}),
    ],
)
def test_a_damaged_key_is_one_line(store: Path, tmp_path: Path, change: object) -> None:
    out = tmp_path / "pk"
    assert _packet(store, out).exit_code == 0
    key = json.loads((out / "key.json").read_text())
    answers = tmp_path / "a.json"
    answers.write_text(json.dumps({"packet_id": key["packet_id"], **_answers(key)}))
    assert callable(change)
    change(key)
    (out / "key.json").write_text(json.dumps(key))
    _one_line_error(_run("score-packet", out, answers, "--no-record"), "not a procbench packet key")


# -- G: split names ---------------------------------------------------------------------------------------------


def test_ingest_refuses_split_names_the_store_does_not_know(tmp_path: Path) -> None:
    records = [make_record(f"odd-{i}", split="validation") for i in range(10)] + [make_record("fine", split="test")]
    source = write_jsonl(tmp_path / "in.jsonl", records)
    result = _run("ingest", source, "--store", tmp_path / "store", "--json")
    assert result.exit_code == 0, result.output  # the other records are ingested; each odd one is reported
    report = json.loads(result.output)
    messages = [p["message"] for p in report["problems"]]
    assert len(messages) == 10 and all("'split' must be one of train, val, test" in m for m in messages)
    splits = Store.open(tmp_path / "store").table("procedures", ["split"])["split"].to_pylist()
    assert splits == ["test"]


def test_generate_on_a_store_holding_an_odd_split_is_one_line(store: Path) -> None:
    path = store / "procedures.parquet"
    table = pq.read_table(path)
    splits = table["split"].to_pylist()
    splits[0] = "validation"
    table = table.set_column(table.schema.get_field_index("split"), "split", pa.array(splits, pa.string()))
    pq.write_table(table, path)
    _one_line_error(_run("generate", "--task", "pair-order", "--store", store), "'validation'", "train, val, test")
    with pytest.raises(BadInput, match="validation"):
        split_by_procedure(["a", "b"], fixed={"a": "validation"})


# -- H: manifests ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * 5000 + "]" * 5000,
        "x = " + "{a = " * 5000 + "}" * 5000,
        ".".join(["a"] * 5000) + " = 1",
        "x = [1, 2\n[generate",
    ],
)
def test_a_hostile_manifest_is_one_line(tmp_path: Path, text: str) -> None:
    manifest = tmp_path / "m.toml"
    manifest.write_text(text)
    start = time.monotonic()
    _one_line_error(_run("generate", "--manifest", manifest, "--store", tmp_path / "store"), str(manifest))
    assert time.monotonic() - start < 5
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize(
    ("text", "flag"),
    [
        ("[generate.textual-cloze]\nknn_k = 1000000000000\n", "--knn-k"),
        ("[generate.visual-cloze]\nkc = 1000000000000\n", "--kc"),
        ("[generate.pair-order]\npairs_per_procedure = 1000000000000\n", "--pairs-per-procedure"),
    ],
)
def test_a_huge_count_option_is_one_line(store: Path, tmp_path: Path, text: str, flag: str) -> None:
    manifest = tmp_path / "m.toml"
    manifest.write_text(text)
    before = sorted(p.relative_to(store) for p in (store / "questions").rglob("*"))
    _one_line_error(_run("generate", "--manifest", manifest, "--store", store), flag, "at most")
    assert sorted(p.relative_to(store) for p in (store / "questions").rglob("*")) == before


def test_a_string_full_of_brackets_is_not_nesting(tmp_path: Path) -> None:
    from procbench.manifest import load_manifest

    manifest = tmp_path / "m.toml"
    manifest.write_text("# [[[[\n[clean]\n# " + "[" * 100 + "\n[generate.pair-order]\nseed = 3\n")
    assert load_manifest(manifest).generate_sections()[0].task == "pair-order"


# -- I: readers.json is opened without following links ----------------------------------------------------------


def test_readers_json_linked_out_of_the_store_is_not_read(store: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    foreign = {"reader": "mallory", "packet_id": "ffffffffffff", "accuracy": 1.0}
    outside.write_text(json.dumps({"results": [foreign]}))
    qset = store / "questions" / TEXT
    (qset / READERS_FILE).symlink_to(outside)
    assert read_records(qset / READERS_FILE) == [] and recorded_readers(qset) == []
    out = tmp_path / "pk"
    assert _packet(store, out).exit_code == 0
    key = json.loads((out / "key.json").read_text())
    answers = tmp_path / "alice.json"
    answers.write_text(json.dumps({"packet_id": key["packet_id"], **_answers(key)}))
    assert _run("score-packet", out, answers).exit_code == 0
    recorded = json.loads((qset / READERS_FILE).read_text())["results"]
    assert [r["reader"] for r in recorded] == ["alice"]
    assert json.loads(outside.read_text()) == {"results": [foreign]}  # the outside file is untouched


def test_a_manifest_that_yields_no_questions_warns_and_strict_refuses(store: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "m.toml"
    manifest.write_text("[generate.sequencing]\nmin_steps = 1000\n")
    made = _run("generate", "--manifest", manifest, "--store", store)
    assert made.exit_code == 0, made.output
    assert "warning: sequencing/default: no questions (procedures skipped: step_count" in " ".join(made.output.split())
    refused = _run("generate", "--manifest", manifest, "--store", store, "--strict", "--overwrite")
    _one_line_error(refused, "no questions", "--strict: nothing written")


# -- issue 57 item 4: defaults that fit the store ----------------------------------------------------------------


def test_without_n_at_most_40_and_say_how_many(store: Path, tmp_path: Path) -> None:
    made = _run("packet", TEXT, "--out", tmp_path / "pk", "--store", store)  # the test split: few procedures
    assert made.exit_code == 0, made.output
    key = json.loads((tmp_path / "pk" / "key.json").read_text())
    taken = len(key["questions"])
    assert 0 < taken < DEFAULT_N
    assert f"{TEXT}: {taken} questions" in " ".join(made.output.split())
    assert "at most 40" in made.output
    exported = _run("export", TEXT, "--format", "label-studio", "--to", tmp_path / "ls", "--store", store, "--json")
    assert exported.exit_code == 0, exported.output
    summary = json.loads(exported.output)
    assert summary["questions"] == taken and "at most 40" in summary["note"]
    every = make_packet([TEXT], tmp_path / "all", store=store, split="all")
    assert taken < every.questions <= DEFAULT_N
    _one_line_error(_run("packet", TEXT, "--n", str(taken + 1), "--out", tmp_path / "x", "--store", store), "--n")
    assert not (tmp_path / "x").exists()
