"""Hardening: the report's embedded data cannot end its script block, and only http(s) URLs become links
(issue 34, items 3 and 7)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from procbench.cli import app
from procbench.errors import BadInput
from procbench.generate import generate
from procbench.ingest import ingest_file
from procbench.report import write_report
from procbench.report.data import copy_images
from procbench.report.html import script_json
from procbench.store import Store

from helpers import make_record, write_jsonl

HOSTILE_TITLE = "How to <!--<script> Build a </script><script>alert(1)</script> shed & more"


def test_script_json_has_no_markup_and_reads_back() -> None:
    data = {"title": HOSTILE_TITLE, "text": "a <!-- b --> c </SCRIPT > <sCrIpT \u2028"}
    text = script_json(data)
    assert not set(text) & {"<", ">", "&", "\u2028"}
    assert json.loads(text) == data


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-report")
    records = [make_record(f"proc-{i}", n_steps=6) for i in range(8)]
    records[0]["title"] = HOSTILE_TITLE
    records[0]["url"] = "javascript:alert(document.domain)"
    records[1]["url"] = " JavaScript:alert(1)"
    records[2]["url"] = "data:text/html,<script>alert(1)</script>"
    store = Store.open(root / "store", create=True)
    ingest_file(store, write_jsonl(root / "in.jsonl", records))
    generate(Store.open(root / "store"), "pair-order", seed=0)
    result = write_report(["pair-order"], root / "out", store=root / "store", runs=[])
    return result.pages["pair-order/default"]


def test_the_page_holds_the_data_in_one_intact_block(hostile_report: Path) -> None:
    html = hostile_report.read_text()
    blocks = re.findall(r'<script id="qset-data" type="application/json">(.*?)</script>', html, re.S)
    assert len(blocks) == 1 and "<" not in blocks[0]
    data = json.loads(blocks[0])
    assert HOSTILE_TITLE in {q["procedure"] for q in data["questions"]}
    assert html.count("<script") == 2  # the data block and report.js, nothing from the store


def _dump_dom(page: Path, tmp_path: Path) -> str:
    """The DOM headless Chromium renders from ``page`` (scripts run)."""
    return subprocess.run(
        [
            str(_chromium()),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    ).stdout


@pytest.mark.skipif(_chromium() is None, reason="no Chromium installed (apt-get install chromium)")
def test_a_hostile_title_renders_every_question_and_no_script_link(hostile_report: Path, tmp_path: Path) -> None:
    data = json.loads(
        re.search(r'type="application/json">(.*?)</script>', hostile_report.read_text(), re.S).group(1)  # type: ignore[union-attr]
    )
    dom = _dump_dom(hostile_report, tmp_path)
    rendered = dom.count('class="question"')
    assert rendered == min(20, len(data["questions"])) > 0
    hrefs = re.findall(r'href="([^"]*)"', dom)
    assert not [h for h in hrefs if not (h.startswith(("https://", "../")) or h == "../index.html")], hrefs


@pytest.mark.parametrize("planted", ["assets/report.js", "index.html", "sets"])
def test_the_report_never_writes_through_a_symlink_in_its_folder(
    hostile_report: Path, tmp_path: Path, planted: str
) -> None:
    """A report folder (e.g. a shared store's STORE/report) holding a symbolic link does not make the report
    overwrite the file it points to: one line, exit 2, the file outside untouched."""
    store = hostile_report.parents[2] / "store"
    out = tmp_path / "out"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("precious\n")
    link = out / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim if planted == "sets" else victim / "precious.txt")
    result = CliRunner().invoke(app, ["report", "pair-order", "--store", str(store), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output and len(result.output.strip().splitlines()) == 1
    assert [p.name for p in victim.iterdir()] == ["precious.txt"]
    assert (victim / "precious.txt").read_text() == "precious\n"


def test_images_are_not_copied_through_a_symlinked_folder(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "store", create=True)
    image_id = "ab" * 32
    (tmp_path / "store" / "images" / "ab").mkdir(parents=True)
    (tmp_path / "store" / "images" / "ab" / f"{image_id}.jpg").write_bytes(b"jpeg bytes")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    (out / "images").mkdir(parents=True)
    (out / "images" / "ab").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(BadInput, match="symbolic link"):
        copy_images(store, {image_id}, out)
    (out / "images" / "ab").unlink()
    (out / "images" / "ab").mkdir()
    (out / "images" / "ab" / f"{image_id}.jpg").symlink_to(elsewhere / "dangling.jpg")  # a dangling link
    with pytest.raises(BadInput, match="symbolic link"):
        copy_images(store, {image_id}, out)
    assert list(elsewhere.iterdir()) == []


@pytest.fixture(scope="module")
def hostile_sheet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report's answer mode on steps whose titles and texts hold ``<!--<script>``."""
    from procbench.readers.sheet import write_answer_page

    root = tmp_path_factory.mktemp("hostile-sheet")
    records = [make_record(f"proc-{i}", n_steps=6) for i in range(8)]
    for record in records:
        for step in record["steps"]:
            step["title"] = f"{HOSTILE_TITLE} {step.get('title') or ''}"
            step["text"] = f"{HOSTILE_TITLE} {step['text']}"
    store = Store.open(root / "store", create=True)
    ingest_file(store, write_jsonl(root / "in.jsonl", records))
    generate(Store.open(root / "store"), "pair-order", seed=0)
    result = write_answer_page(["pair-order"], root / "sheet", store=root / "store", n=4, split="all")
    return result.main


def test_the_answer_sheet_holds_its_data_in_one_intact_block(hostile_sheet: Path) -> None:
    html = hostile_sheet.read_text()
    blocks = re.findall(r'<script id="sheet-data" type="application/json">(.*?)</script>', html, re.S)
    assert len(blocks) == 1 and "<" not in blocks[0]
    assert HOSTILE_TITLE in json.dumps(json.loads(blocks[0]), ensure_ascii=False)
    assert html.count("<script") == 2  # the data block and answer.js, nothing from the store


@pytest.mark.skipif(_chromium() is None, reason="no Chromium installed (apt-get install chromium)")
def test_a_hostile_step_renders_every_answer_sheet_question(hostile_sheet: Path, tmp_path: Path) -> None:
    dom = _dump_dom(hostile_sheet, tmp_path)
    assert "question 1 of 4" in dom and dom.count('class="sheet-question"') >= 1


@pytest.mark.parametrize("planted", ["images", "packet.md", "images/Q01-A.png"])
def test_a_packet_is_never_written_or_removed_through_a_symlink(
    hostile_sheet: Path, tmp_path: Path, planted: str
) -> None:
    """``packet --overwrite`` on an earlier packet holding a symbolic link: one line, exit 2, nothing outside
    written or removed (a linked images/ was a traceback from rmtree)."""
    store = hostile_sheet.parents[1] / "store"
    out = tmp_path / "pk"
    args = ["packet", "pair-order", "--store", str(store), "--n", "3", "--split", "all", "--out", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.png").write_text("precious\n")
    link = out / planted
    if link.is_dir():
        shutil.rmtree(link)
    link.unlink(missing_ok=True)
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(victim if planted == "images" else victim / "keep.png")
    result = CliRunner().invoke(app, [*args, "--overwrite"])
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output and len(result.output.strip().splitlines()) == 1
    assert [p.name for p in victim.iterdir()] == ["keep.png"]
    assert (victim / "keep.png").read_text() == "precious\n"


def test_a_set_page_says_why_an_ordering_set_has_no_per_question_scores() -> None:
    """The audit cannot score an order choice by choice, so an ordering set's page does not send the user to
    ``procbench audit --per-question`` (which would print the same "no scores")."""
    from procbench.report.data import SetView
    from procbench.report.html import set_page

    def page(task: str) -> str:
        view = SetView(
            name=f"{task}/x", task=task, setting="x", slug="s", splits={"test": 0}, questions=[], total=0,
            audit=None, has_scores=False,
        )  # fmt: skip
        return set_page(view, instruction="")

    assert "orders of items" in page("visual-ordering") and "--per-question" not in page("visual-ordering")
    assert "procbench audit --per-question" in page("visual-cloze")
