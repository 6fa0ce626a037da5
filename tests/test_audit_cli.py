"""``procbench audit`` end to end: a store built from the sample corpus and embedded offline, sets written
with planted shortcuts, the CLI's table / JSON / audit.json / plots, RecipeQA JSON input, determinism."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from procbench.audit import load_question_set, load_recipeqa
from procbench.cli import app
from procbench.embed import embed_store
from procbench.generate import generate
from procbench.qsets import Question, write_question_sets
from procbench.store import Store
from procbench.store.views import kept_steps

PROBE_NAMES = [
    "choice_only",
    "question_distance",
    "hubness",
    "colour_layout",
    "near_duplicate",
    "partial_input",
    "answer_position",
    "length",
    "lexical_overlap",
    "context_overlap",
    "cluster_balance",
    "question_overlap",
    "repeated_items",
    "order_tells",
    "context_reference",
]
PAD = " slowly and very carefully with patience"


def _textual_questions(store: Store, *, planted: float, seed: int) -> list[Question]:
    """Two textual-cloze questions per procedure (4 consecutive titles, one blanked; 3 titles of other
    procedures as negatives); in a ``planted`` share of them the correct title is padded to be the longest."""
    rng = np.random.default_rng(seed)
    steps = kept_steps(store).to_pylist()
    by_procedure: dict[str, list[dict]] = {}
    for row in steps:
        if row["title"]:
            by_procedure.setdefault(row["procedure_id"], []).append(row)
    pool = [(f"{r['procedure_id']}#{r['index']}", r["title"]) for r in steps if r["title"]]
    questions = []
    for pid in sorted(by_procedure):
        rows = by_procedure[pid]
        if len(rows) < 4:
            continue
        for start in sorted({0, len(rows) - 4}):
            window = rows[start : start + 4]
            blank = int(rng.integers(4))
            keys = [f"{pid}#{r['index']}" for r in window]
            titles = [r["title"] for r in window]
            others = [pool[i] for i in rng.permutation(len(pool)) if not pool[i][0].startswith(f"{pid}#")][:3]
            answer_title = titles[blank]
            if rng.random() < planted:
                answer_title += PAD * (1 + max(len(t) for _, t in others) // len(PAD))
            choices = [(keys[blank], answer_title), *others]
            position = int(rng.integers(4))
            choices.insert(position, choices.pop(0))
            question = list(titles)
            question[blank] = "@placeholder"
            questions.append(
                Question(
                    procedure_id=pid,
                    context=[r["index"] for r in rows],
                    question=question,
                    choices=[t for _, t in choices],
                    answer=position,
                    meta={
                        "setting": "planted",
                        "question_keys": [None if i == blank else k for i, k in enumerate(keys)],
                        "choice_keys": [k for k, _ in choices],
                    },
                )
            )
    return questions


def _visual_questions(store: Store, *, seed: int) -> list[Question]:
    """RecipeQA-style visual cloze: 4 images of a procedure, one blanked; negatives random other images."""
    rng = np.random.default_rng(seed)
    images = [r for r in store.table("images").to_pylist() if r["stored"]]
    by_procedure: dict[str, list[str]] = {}
    for row in sorted(images, key=lambda r: (r["procedure_id"], r["step_index"])):
        by_procedure.setdefault(row["procedure_id"], []).append(row["id"])
    questions = []
    for pid, ids in sorted(by_procedure.items()):
        for start in range(0, len(ids) - 3, 2):
            window = ids[start : start + 4]
            blank = int(rng.integers(4))
            others = [r["id"] for r in images if r["procedure_id"] != pid]
            negatives = [others[i] for i in rng.choice(len(others), 3, replace=False)]
            position = int(rng.integers(4))
            choices = list(negatives)
            choices.insert(position, window[blank])
            question = list(window)
            question[blank] = "@placeholder"
            questions.append(Question(pid, [], question, choices, position, {"setting": "random"}))
    return questions


@pytest.fixture(scope="module")
def store_template(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("audit")
    store = Store.open(shutil.copytree(ingested_sample, root / "store"))  # the sample, ingested once per session
    embed_store(store, text_encoder="hashed", image_encoder="colour-layout", fields="step_title,step_text,image")
    generate(store, "pair-order", seed=0)
    generate(store, "sequencing", seed=0)
    splits = {p: "train" for p in store.table("procedures")["id"].to_pylist()}
    textual = {
        "planted": _textual_questions(store, planted=0.7, seed=1),
        "none": _textual_questions(store, planted=0.0, seed=2),
    }
    write_question_sets(store, "textual-cloze", textual, splits=splits, seed=0, args={})
    write_question_sets(
        store, "visual-cloze", {"random": _visual_questions(store, seed=3)}, splits=splits, seed=0, args={}
    )
    return root / "store"


@pytest.fixture
def store(store_template: Path, tmp_path: Path) -> Path:
    shutil.copytree(store_template, tmp_path / "store")
    return tmp_path / "store"


def _invoke(*args: str) -> Any:
    return CliRunner(env={"COLUMNS": "240"}).invoke(app, ["audit", *args])


def test_audit_table_json_and_audit_json_next_to_the_sets(store: Path) -> None:
    folders = [store / "questions" / t for t in ("textual-cloze/planted", "textual-cloze/none", "pair-order/default")]
    result = _invoke(*map(str, folders), "--n-boot", "200")
    assert result.exit_code == 0, result.output
    for name in ("textual-cloze/planted", "pair-order/default", "choice_only", "question_overlap", "chance 25.0%"):
        assert name in result.output
    written = json.loads((store / "questions" / "audit.json").read_text())
    assert list(written) == ["sets"]
    assert list(written["sets"]) == ["textual-cloze/planted", "textual-cloze/none", "pair-order/default"]
    planted = written["sets"]["textual-cloze/planted"]
    assert planted["n_questions"] == 90 and list(planted["probes"]) == PROBE_NAMES
    length = planted["probes"]["length"]
    assert length["value"] > 0.6 and length["ci"][0] > length["chance"] == 0.25
    none = written["sets"]["textual-cloze/none"]["probes"]["length"]
    assert none["ci"][0] <= none["chance"] <= none["ci"][1]
    # textual items resolve through meta.choice_keys to the store's step_title embedding
    assert planted["probes"]["choice_only"]["details"]["encoder"] == "step_title.hashed"
    pair = written["sets"]["pair-order/default"]["probes"]
    assert pair["answer_position"]["chance"] == 0.5 and pair["choice_only"]["value"] is None
    assert "labels" in pair["choice_only"]["reason"]

    single = _invoke(str(folders[0]), "--n-boot", "50", "--probes", "length")
    assert single.exit_code == 0, single.output
    assert (folders[0] / "audit.json").is_file()


def test_task_setting_names_json_output_plots_and_determinism(store: Path, tmp_path: Path) -> None:
    args = ["textual-cloze/planted", "visual-cloze/random", "sequencing/default", "--store", str(store)]
    args += ["--n-boot", "200", "--seed", "3", "--json", "--out", str(tmp_path / "a.json")]
    first = _invoke(*args, "--plots", str(tmp_path / "plots"))
    assert first.exit_code == 0, first.output
    printed = json.loads(first.stdout)
    assert printed == json.loads((tmp_path / "a.json").read_text())
    visual = printed["sets"]["visual-cloze/random"]["probes"]
    # random negatives from other procedures: paper 001's Fig. 2 bias, found by the distance SVM
    assert visual["question_distance"]["ci"][0] > visual["question_distance"]["chance"]
    assert visual["length"]["value"] is None and "images" in visual["length"]["reason"]
    assert visual["choice_only"]["details"]["encoder"] == "image.colour-layout"
    sequencing = printed["sets"]["sequencing/default"]["probes"]
    assert sequencing["question_overlap"]["value"] == 0.0 and sequencing["answer_position"]["value"] is None
    assert sequencing["order_tells"]["value"] == 0.0  # the sample's step texts carry no numbers
    pngs = sorted(p.name for p in (tmp_path / "plots").glob("*.png"))
    assert "visual-cloze_random-distance.png" in pngs and "textual-cloze_planted-positions.png" in pngs
    with Image.open(tmp_path / "plots" / "visual-cloze_random-distance.png") as im:
        assert im.size[0] > 100
    again = _invoke(*args[:-2], "--out", str(tmp_path / "b.json"))
    assert again.exit_code == 0, again.output
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_bad_input_is_one_line_and_exit_2(store: Path) -> None:
    for args, message in (
        (["textual-cloze/planted", "--store", str(store), "--probes", "lenght"], "did you mean 'length'"),
        (["textual-cloze/missing", "--store", str(store)], "no question set"),
        (["textual-cloze/planted", "--store", str(store), "--format", "csv"], "--format"),
        ([str(store / "nope.json"), "--format", "recipeqa"], "no such RecipeQA JSON file"),
    ):
        result = _invoke(*args)
        assert result.exit_code == 2, result.output
        assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_procbench_recipeqa_json_is_read_with_store_images(store: Path) -> None:
    textual = load_recipeqa(store / "questions" / "textual-cloze" / "planted" / "recipeqa.json")
    assert [s.name for s in textual] == ["textual-cloze/planted"] and len(textual[0]) == 90
    assert textual[0].encoder.startswith("hashed (fitted on the set")
    visual = load_recipeqa(store / "questions" / "visual-cloze" / "random" / "recipeqa.json")
    matrix, found = visual[0].item_vectors()
    assert found.all() and visual[0].encoder == "image.colour-layout"
    # the same set read from its parquet files and from its RecipeQA JSON gets the same answers
    assert (
        visual[0].answers.tolist()
        == load_question_set(store / "questions" / "visual-cloze" / "random").answers.tolist()
    )


def test_set_folders_copied_out_of_their_store(store: Path, tmp_path: Path) -> None:
    textual = tmp_path / "elsewhere" / "planted"
    visual = tmp_path / "elsewhere" / "random"
    shutil.copytree(store / "questions" / "textual-cloze" / "planted", textual)
    shutil.copytree(store / "questions" / "visual-cloze" / "random", visual)
    result = _invoke(str(textual), str(visual), "--json", "--n-boot", "100", "--store", str(tmp_path / "none"))
    assert result.exit_code == 0, result.output
    sets = json.loads(result.stdout)["sets"]
    assert list(sets) == ["textual-cloze/planted", "visual-cloze/random"]
    assert (tmp_path / "elsewhere" / "audit.json").is_file()
    text = sets["textual-cloze/planted"]["probes"]
    # no store: titles embedded by a hashed encoder fitted on the set, context read from recipeqa.json
    assert text["choice_only"]["details"]["encoder"].startswith("hashed (fitted on the set")
    assert set(text["lexical_overlap"]["details"]["rule_accuracy"]) == {
        "most_question_overlap",
        "least_question_overlap",
    }
    assert text["context_overlap"]["reference"] and text["context_overlap"]["value"] is not None
    assert text["length"]["ci"][0] > 0.25
    assert "--store" in sets["visual-cloze/random"]["probes"]["choice_only"]["reason"]
    with_store = _invoke(str(visual), "--json", "--n-boot", "100", "--store", str(store), "--probes", "choice_only")
    assert json.loads(with_store.stdout)["sets"]["visual-cloze/random"]["probes"]["choice_only"]["value"] is not None


def _recipeqa_file(tmp_path: Path) -> Path:
    """An original-layout RecipeQA JSON: textual cloze (correct title planted longest) and visual cloze
    whose image files sit under images/ (one colour per recipe, so the correct image is the near one)."""
    rng = np.random.default_rng(0)
    images = tmp_path / "images"
    images.mkdir()
    words = [f"w{i}" for i in range(120)]
    data = []
    for r in range(60):
        colour = tuple(int(c) for c in rng.integers(0, 255, 3))
        names = []
        for s in range(5):
            name = f"recipe-{r}_{s}.jpg"
            pixels = np.clip(np.array(colour) + rng.normal(0, 12, (24, 24, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(images / name)
            names.append(name)
        titles = [" ".join(rng.choice(words, 3)) for _ in range(5)]
        context = [
            {"id": s, "title": titles[s], "body": " ".join(rng.choice(words, 20)), "images": [names[s]]}
            for s in range(5)
        ]
        answer = int(rng.integers(4))
        negatives = [" ".join(rng.choice(words, 3)) for _ in range(3)]
        choice_list = list(negatives)
        choice_list.insert(answer, titles[4] + " and then some more words")
        data.append(
            {
                "recipe_id": f"recipe-{r}",
                "task": "textual_cloze",
                "split": "val",
                "context": context,
                "question": [*titles[:3], "@placeholder"],
                "choice_list": choice_list,
                "answer": answer,
            }
        )
        others = [f"recipe-{(r + d) % 60}_{d % 5}.jpg" for d in (7, 19, 33)]
        visual = list(others)
        visual.insert(answer, names[3])
        data.append(
            {
                "recipe_id": f"recipe-{r}",
                "task": "visual_cloze",
                "split": "val",
                "context": context,
                "question": [names[0], names[1], names[2], "@placeholder"],
                "choice_list": visual,
                "answer": answer,
            }
        )
    path = tmp_path / "val.json"
    path.write_text(json.dumps({"data": data}))
    return path


def test_original_recipeqa_json_with_image_files(tmp_path: Path) -> None:
    path = _recipeqa_file(tmp_path)
    result = _invoke(str(path), "--format", "recipeqa", "--n-boot", "200", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert list(report["sets"]) == ["val:textual-cloze", "val:visual-cloze"]
    assert json.loads((tmp_path / "audit.json").read_text()) == report
    textual = report["sets"]["val:textual-cloze"]["probes"]
    assert textual["length"]["ci"][0] > 0.25 and textual["length"]["value"] > 0.9
    visual = report["sets"]["val:visual-cloze"]["probes"]
    assert visual["question_distance"]["value"] > 0.9 and visual["question_distance"]["ci"][0] > 0.25
    assert "colour-layout" in visual["choice_only"]["details"]["encoder"]
    elsewhere = _invoke(
        str(path),
        "--format",
        "recipeqa",
        "--images",
        str(tmp_path / "nowhere"),
        "--json",
        "--probes",
        "question_distance,answer_position",
        "--n-boot",
        "50",
        "--out",
        str(tmp_path / "x.json"),
    )
    assert elsewhere.exit_code == 0, elsewhere.output
    missing = json.loads(elsewhere.stdout)["sets"]["val:visual-cloze"]["probes"]
    assert missing["question_distance"]["value"] is None and "--images" in missing["question_distance"]["reason"]
    assert missing["answer_position"]["value"] is not None


def test_per_question_scores_and_the_context_reference(store: Path) -> None:
    import pyarrow.parquet as pq

    from procbench.audit.scores import SCORE_COLUMNS

    folder = store / "questions" / "textual-cloze" / "planted"
    result = _invoke(str(folder), "--n-boot", "100", "--probes", "partial_input,context_reference", "--per-question")
    assert result.exit_code == 0, result.output
    assert "shortcut_scores.parquet" in result.output
    table = pq.read_table(folder / "shortcut_scores.parquet")
    assert tuple(table.column_names) == SCORE_COLUMNS and table.num_rows == 90
    qset = pq.read_table(folder / "train.parquet")
    assert table["qid"].to_pylist() == qset["qid"].to_pylist()
    assert set(table["split"].to_pylist()) == {"train"} and table["chance"].to_pylist() == [0.25] * 90
    scores = np.array(table["shortcut_score"].to_pylist())
    assert ((scores > 0) & (scores < 1)).all()
    # the ensemble's probabilities of the answer are the mean of its probes'
    probes = np.array([table[name].to_pylist() for name in ("choice_only", "choice_contrast", "partial_input")])
    assert np.allclose(scores, probes.mean(axis=0))
    written = json.loads((folder / "audit.json").read_text())["sets"]["textual-cloze/planted"]["probes"]
    partial = written["partial_input"]
    assert partial["verdict"] == "above" and partial["flagged"] is True  # 70% of answers padded to be longest
    reference = written["context_reference"]
    assert reference["reference"] is True and reference["flagged"] is False
    assert reference["value"] > 0.5 and reference["details"]["context"] == "context step texts"
    first = (folder / "shortcut_scores.parquet").read_bytes()
    again = _invoke(str(folder), "--n-boot", "100", "--probes", "partial_input", "--per-question")
    assert again.exit_code == 0 and (folder / "shortcut_scores.parquet").read_bytes() == first

    pair = store / "questions" / "pair-order" / "default"
    labels = _invoke(str(pair), "--n-boot", "50", "--probes", "answer_position", "--per-question")
    assert labels.exit_code == 0 and "no shortcut scores" in labels.output
    assert not (pair / "shortcut_scores.parquet").exists()


def _png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width x height`` pixels (the data is not there: nothing may decode it)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )


def test_recipeqa_images_pass_ingests_checks(tmp_path: Path) -> None:
    """A decompression bomb, a FIFO and a name leading out of --images are not opened: those items go unembedded."""
    import os

    from procbench.audit.vectors import image_vectors

    images = tmp_path / "images"
    images.mkdir()
    for name in ("a.jpg", "b.jpg"):
        Image.new("RGB", (16, 16), (200, 10, 10)).save(images / name)
    (images / "bomb.png").write_bytes(_png_claiming(30_000, 30_000))
    os.mkfifo(images / "fifo.jpg")
    Image.new("RGB", (16, 16), (10, 200, 10)).save(tmp_path / "outside.jpg")
    names = ["a.jpg", "b.jpg", "bomb.png", "fifo.jpg", "../outside.jpg", str(tmp_path / "outside.jpg")]
    lookup, encoder = image_vectors(names, store=None, images=images, base=tmp_path)
    found = np.linalg.norm(np.asarray(lookup.get(names)), axis=1) > 0
    assert found.tolist() == [True, True, False, False, False, False] and "colour-layout" in encoder


def test_audit_refuses_non_question_sets_and_answers_out_of_range(store: Path, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    other = tmp_path / "other"
    other.mkdir()
    pq.write_table(pa.table({"id": ["a"], "x": [1]}), other / "test.parquet")
    copy = tmp_path / "copy"
    shutil.copytree(store / "questions" / "textual-cloze" / "planted", copy)
    split = max(copy.glob("*.parquet"), key=lambda p: pq.read_metadata(p).num_rows)
    table = pq.read_table(split)
    answers = table["answer"].to_pylist()
    answers[0] = 7
    column = table.schema.get_field_index("answer")
    field = table.schema.field(column)
    pq.write_table(table.set_column(column, field, pa.array(answers, type=field.type)), split)
    (tmp_path / "qa").mkdir()
    qa = _recipeqa_file(tmp_path / "qa")
    data = json.loads(qa.read_text())
    data["data"][2]["answer"] = -1
    qa.write_text(json.dumps(data))
    for args, message in (
        ([str(other)], "is not a procbench question set (no column"),
        ([str(copy)], "has answer 7, not one of its"),
        ([str(qa), "--format", "recipeqa"], "has answer -1, not one of its 4 choices"),
    ):
        result = _invoke(*args)
        assert result.exit_code == 2, result.output
        assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_outputs_that_cannot_be_written_are_bad_input_before_the_audit(store: Path, tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    folder = store / "questions" / "textual-cloze" / "planted"
    for args in (["--plots", str(afile / "plots")], ["--out", str(afile / "audit.json")], ["--plots", str(afile)]):
        result = _invoke(str(folder), *args)
        assert result.exit_code == 2, result.output
        assert "cannot write in" in result.output and len(result.output.strip().splitlines()) == 1
    assert not (folder / "audit.json").exists()


def test_a_verdict_line_per_set_and_the_bias_marker_read_without_colour(store: Path) -> None:
    folders = [str(store / "questions" / t) for t in ("textual-cloze/planted", "textual-cloze/none")]
    result = _invoke(*folders, "--n-boot", "100", "--probes", "length,answer_position")
    assert result.exit_code == 0, result.output
    assert "\x1b[" not in result.output  # piped: no colour, so the words carry the verdict
    lines = result.stdout.splitlines()
    planted = [line for line in lines if line.startswith("textual-cloze/planted: ")]
    none = [line for line in lines if line.startswith("textual-cloze/none: ")]
    assert len(planted) == len(none) == 1
    # the planted length shortcut (70% of answers longest): flagged in words, with its value and chance
    assert planted[0].startswith("textual-cloze/planted: BIASED (") and "length " in planted[0]
    assert "BIAS+ (chance 25.0%)" in planted[0]
    assert none[0] == "textual-cloze/none: no bias found (2 shortcut probes at chance)"
    assert "red and BIAS+ = a bias" in " ".join(result.output.split())  # the table's title, wrapped
    assert sum("BIAS+" in line for line in lines if line.startswith("│ length")) == 1  # the table's cell too
