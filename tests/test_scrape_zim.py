"""`procbench scrape zim`: a small wikiHow ZIM built with libzim's writer, read back with no network."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from procbench.cli import app
from procbench.scrape import ZimOptions, scrape_zim
from procbench.store import Store

libzim_writer = pytest.importorskip("libzim.writer")


def _webp(color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (80, 60), color).save(out, format="WEBP")
    return out.getvalue()


def _article(title: str, crumbs: list[str], steps: list[tuple[str, str, str | None]], to_root: str = "./") -> str:
    """An article as wikihow2zim stores it: #content_wrapper content, images rewritten into the archive."""
    items = []
    for i, (head, body, image) in enumerate(steps, start=1):
        picture = (
            f'<div class="mwimg largeimage"><a class="image lightbox" href="#/Image:x.jpg">'
            f'<div class="content-spacer"><img class="whcdn content-fill" '
            f'src="{to_root}images/{image}.webp" alt="step {i}"/></div></a></div>'
            if image
            else ""
        )
        items.append(
            f'<li id="step-id-0{i - 1}"><div class="step_num">{i}</div>{picture}'
            f'<div class="step"><b class="whb">{head}</b> {body}</div><div class="clearall"></div></li>'
        )
    crumb_html = "".join(
        f'<li><a href="{to_root}Category:{c.replace(" ", "-")}" title="{c}">{c}</a></li>' for c in crumbs
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"/><title>{title} - wikiHow</title>'
        f'</head><body><div id="mw-mf-viewport"><div id="mw-mf-page-center">'
        f'<div id="content_wrapper" role="main">'
        f'<div class="pre-content"><h1 id="section_0" class="title_md"> {title} </h1></div>'
        f'<div class="content" id="bodyContent"><div class="section steps steps_first"><h2>'
        f'<span class="mw-headline">Steps</span></h2><div id="steps" class="section_text">'
        f'<ol class="steps_list_2">{"".join(items)}</ol></div></div></div></div>'
        f'<div id="footer"><div id="footer_crumbs"><ul class="breadcrumbs">{crumb_html}</ul></div>'
        f"</div></div></div></body></html>"
    )


class _Item(libzim_writer.Item):  # type: ignore[misc,name-defined]
    def __init__(self, path: str, title: str, content: bytes | str, mimetype: str) -> None:
        super().__init__()
        self.path, self.title, self.content, self.mimetype = path, title, content, mimetype

    def get_path(self) -> str:
        return self.path

    def get_title(self) -> str:
        return self.title

    def get_mimetype(self) -> str:
        return self.mimetype

    def get_contentprovider(self) -> object:
        return libzim_writer.StringProvider(self.content)

    def get_hints(self) -> dict[object, int]:
        return {libzim_writer.Hint.FRONT_ARTICLE: self.mimetype.startswith("text/html")}


def build_zim(path: Path) -> None:
    shelf = _article(
        "How to Build a Wall Shelf",
        ["Home and Garden", "Carpentry and Woodworking"],
        [
            ("Mark the studs.", "Find them with a stud finder.", "a1"),
            ("Cut the board.", "Measure twice and cut once.", "a2"),
            ("Screw the brackets on.", "Use two screws per bracket.", None),
            ("Set the board on top.", "Check it with a level.", "a4"),
        ],
    )
    wreath = _article(
        "How to Make a Christmas Wreath",
        ["Holidays and Traditions", "Christmas"],
        [
            ("Bend a hanger into a circle.", "Straighten the hook last.", "b1"),
            ("Attach the branches.", "Wire them in small bunches.", "b2"),
            ("Add a bow.", "Tie it at the top.", "b3"),
        ],
        to_root="./../",
    )
    with libzim_writer.Creator(str(path)).config_indexing(False, "eng") as creator:
        creator.set_mainpath("Main-Page")
        for key, value in (
            ("Name", "wikihow_en_test"),
            ("Title", "wikiHow test"),
            ("Language", "eng"),
            ("Date", "2024-02-01"),
            ("Creator", "wikiHow"),
            ("Publisher", "openZIM"),
            ("Description", "test archive"),
        ):
            creator.add_metadata(key, value)
        home = "<html><body><div id='content_wrapper'>Home</div></body></html>"
        creator.add_item(_Item("Main-Page", "wikiHow", home, "text/html"))
        category = "<html><body><div id='cat_all'></div></body></html>"
        creator.add_item(_Item("Category:Christmas", "Christmas", category, "text/html"))
        creator.add_item(_Item("Build-a-Wall-Shelf", "How to Build a Wall Shelf", shelf, "text/html"))
        creator.add_item(_Item("Crafts/Make-a-Christmas-Wreath", "How to Make a Wreath", wreath, "text/html"))
        for i, name in enumerate(("a1", "a2", "a4", "b1", "b2")):
            creator.add_item(_Item(f"images/{name}.webp", "", _webp((40 * i, 100, 200 - 30 * i)), "image/webp"))
        creator.add_item(_Item("images/b3.webp", "", b"broken image bytes", "image/webp"))


def test_zim_articles_are_read_with_their_images(tmp_path: Path) -> None:
    archive = tmp_path / "wikihow.zim"
    build_zim(archive)
    report = scrape_zim(tmp_path / "s", archive, ZimOptions(batch_size=1))
    assert report.added == 2 and len(report.image_failures) == 1 and report.images_stored == 5
    store = Store.open(tmp_path / "s")
    procedures = {r["id"]: r for r in store.table("procedures").to_pylist()}
    assert set(procedures) == {"wikihow:Build-a-Wall-Shelf", "wikihow:Crafts/Make-a-Christmas-Wreath"}
    shelf = procedures["wikihow:Build-a-Wall-Shelf"]
    assert shelf["title"] == "How to Build a Wall Shelf" and shelf["category"] == [
        "Home and Garden",
        "Carpentry and Woodworking",
    ]
    assert shelf["url"] == "https://www.wikihow.com/Build-a-Wall-Shelf"
    assert str(shelf["fetched_at"])[:10] == "2024-02-01"
    steps = [s for s in store.table("steps").to_pylist() if s["procedure_id"] == "wikihow:Build-a-Wall-Shelf"]
    assert [s["title"] for s in steps] == [
        "Mark the studs.",
        "Cut the board.",
        "Screw the brackets on.",
        "Set the board on top.",
    ]
    assert [len(s["image_ids"]) for s in steps] == [1, 1, 0, 1]
    urls = {i["url"] for i in store.table("images").to_pylist()}
    assert "zim:images/a1.webp" in urls and "zim:images/b2.webp" in urls  # the wreath's ./../ paths resolve too
    again = scrape_zim(tmp_path / "s", archive, ZimOptions(batch_size=1))
    assert again.added == 0 and again.skipped_done == 2


def test_zim_category_filter_and_cli(tmp_path: Path) -> None:
    archive = tmp_path / "wikihow.zim"
    build_zim(archive)
    result = CliRunner().invoke(
        app, ["scrape", "zim", str(archive), "-c", "Christmas", "--store", str(tmp_path / "s"), "--json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["added"] == 1 and out["outcomes"]["filtered_category"] == 1
    missing = CliRunner().invoke(app, ["scrape", "zim", str(tmp_path / "nope.zim"), "--store", str(tmp_path / "s")])
    assert missing.exit_code == 2
