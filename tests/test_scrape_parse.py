"""The pure parsers on fixture pages whose markup follows shared/notes/site-facts.md."""

from __future__ import annotations

import json

import pytest
from fixtures.scrape_site import fixture

from procbench.errors import ParseError
from procbench.scrape.html import first_sentence
from procbench.scrape.instructables import (
    NotAProject,
    parse_model_json,
    parse_project_html,
    parse_search_json,
    project_slug,
)
from procbench.scrape.wikihow import parse_article_html, parse_category_page, parse_categorymembers

W = "https://www.wikihow.com"


def shelf_image(n: int, h: str) -> list[str]:
    name = f"Build-a-Floating-Shelf-Step-{n}.jpg"
    return [f"{W}/images/thumb/{h[0]}/{h}/{name}/v4-460px-{name}"]


IB = "https://www.instructables.com"


def test_wikihow_single_method_article() -> None:
    p = parse_article_html(fixture("wikihow/Build-a-Floating-Shelf.html"), f"{W}/Build-a-Floating-Shelf")
    assert p.id == "wikihow:Build-a-Floating-Shelf" and p.source == "wikihow" and p.language == "en"
    assert p.title == "How to Build a Floating Shelf"
    assert p.category == ["Home and Garden", "Carpentry and Woodworking", "Shelving"]
    assert p.author == "Jordan Reyes"
    assert p.license == f"{W}/wikiHow:Creative-Commons"
    assert [s.title for s in p.steps] == [
        "Find the studs in the wall.",
        "Cut the cleat from a 2x4.",
        "Drill the support pegs.",
        "Mount the cleat to the studs with 3 inch screws.",  # no bold: split by wikiHow's first-sentence rule
        "Slide the shelf onto the pegs.",
        "Finish the shelf.",
    ]
    assert p.steps[0].text == "Run a stud finder along the wall at shelf height and mark each stud with a pencil."
    assert p.steps[1].text == (
        "Make it 2 inches shorter than the shelf.\nFor a 36 inch shelf, cut the cleat to 34 "
        "inches.\nCheck that the board is straight before you cut."
    )
    assert p.steps[2].text == "Drill holes every 8 inches."  # the ad inside the step is gone
    everything = " ".join(f"{s.title} {s.text}" for s in p.steps)
    for noise in (
        "[1]",
        "[2]",
        "Advertisement",
        "tip is not a step",
        "wires",
        "Stud finder",
        "drywall",
        "Hang Shelves",
        "WH.",
        "addScrollLoadItem",
        "licensing",
        "Play",
    ):
        assert noise not in everything
    images = [s.images for s in p.steps]
    assert images[0] == shelf_image(1, "1a")
    assert images[2] == shelf_image(3, "3c")
    assert images[3] == shelf_image(4, "4d")
    assert images[4] == []  # a step without a picture does not borrow the next one
    assert images[5] == shelf_image(6, "6f")
    assert {s.kind for s in p.steps} == {"step"} and {s.part for s in p.steps} == {None}


def test_wikihow_parts_keep_their_order_and_names_and_skip_samples() -> None:
    p = parse_article_html(
        fixture("wikihow/Decorate-a-Mantel-for-Christmas.html"), f"{W}/Decorate-a-Mantel-for-Christmas"
    )
    assert [s.part for s in p.steps] == ["Planning the Look"] * 3 + ["Adding Greenery"] * 2 + ["Finishing Touches"] * 3
    assert {s.kind for s in p.steps} == {"part"}
    assert p.steps[3].title == "Drape a garland along the mantel." and p.steps[4].images == []
    assert "Sample item" not in " ".join(s.text for s in p.steps) and "Keep candles" not in str(p.steps)
    assert p.category == ["Holidays and Traditions", "Christmas", "Christmas Decorations"]
    assert p.author == "wikiHow Staff"


def test_wikihow_methods_and_jsonld_cross_check() -> None:
    p = parse_article_html(fixture("wikihow/Make-Fluffy-Pancakes.html"), f"{W}/Make-Fluffy-Pancakes")
    assert [s.part for s in p.steps] == ["Using a Blender"] * 3 + ["Mixing by Hand"] * 3
    assert {s.kind for s in p.steps} == {"method"}
    name = "Make-Fluffy-Pancakes-Step-6.jpg"
    assert p.steps[5].images == [f"{W}/images/thumb/c/cd/{name}/v4-460px-{name}"]
    assert p.steps[0].images[0].endswith("aid99-v4-460px-Make-Fluffy-Pancakes-Step-1.jpg")  # HTML wins where present
    assert p.license == "https://creativecommons.org/licenses/by-nc-sa/3.0/"
    assert p.category == ["Food and Entertaining", "Breakfast"]


def test_wikihow_jsonld_is_the_fallback_and_block_pages_are_refused() -> None:
    p = parse_article_html(fixture("wikihow/Sand-Wood-by-Hand.html"), f"{W}/Sand-Wood-by-Hand")
    assert [s.title for s in p.steps] == [
        "Pick the right grit.",
        "Wrap a sanding block.",
        "Sand with the grain.",
        "Move to finer grits.",
    ]
    assert p.steps[1].text == "Fold the paper tightly around a wooden block." and len(p.steps[3].images) == 1
    assert p.category == ["Hobbies and Crafts", "Woodworking"]
    with pytest.raises(ParseError, match="block page"):
        parse_article_html(fixture("wikihow/blocked.html"), f"{W}/Anything")
    with pytest.raises(ParseError, match="in review"):
        parse_article_html(b'<html><script>{"wgIsRestricted":true}</script></html>', f"{W}/X")
    with pytest.raises(ParseError):
        parse_article_html(b"<html><body><h1>How to Nothing</h1></body></html>", f"{W}/Nothing")


def test_wikihow_listings() -> None:
    v2 = {
        "continue": {"gcmcontinue": "page|X", "continue": "gcmcontinue||"},
        "query": {
            "pages": [
                {"ns": 0, "title": "Build a Floating Shelf", "pageid": 7, "fullurl": f"{W}/Build-a-Floating-Shelf"},
                {"ns": 0, "title": "Système Macintosh/Apple", "pageid": 8},
                {"ns": 14, "title": "Category:Shelving", "pageid": 9},
            ]
        },
    }
    articles, subcats, cont = parse_categorymembers(v2)
    assert articles == [f"{W}/Build-a-Floating-Shelf", f"{W}/Syst%C3%A8me-Macintosh/Apple"]
    assert cont == {"gcmcontinue": "page|X", "continue": "gcmcontinue||"} and subcats == []
    members = [{"ns": 14, "title": "Category:Shelving"}, {"ns": 14, "title": "Category:Wood Stains"}]
    v1 = {"query": {"categorymembers": members}}
    assert parse_categorymembers(v1)[1] == ["Shelving", "Wood-Stains"]
    with pytest.raises(ParseError, match="ratelimited"):
        parse_categorymembers({"error": {"code": "ratelimited", "info": "You've exceeded your rate limit."}})
    page = (
        b"<html><body><div id='content_wrapper'><div id='subcats'><ul><li><a href='/Category:Shelving'>Shelving"
        b"</a></li></ul></div><div id='cat_all'><div class='cat_grid'><div class='responsive_thumb'>"
        b"<a href='/Build-a-Floating-Shelf'>x</a></div><div class='responsive_thumb'><a href='/Special:Foo'>y</a>"
        b"</div></div></div><div id='large_pagination'><ul><li>1</li><li>2</li><li>3</li></ul></div></div>"
        b"</body></html>"
    )
    articles, subcats, pages = parse_category_page(page, f"{W}/Category:Carpentry-and-Woodworking")
    assert articles == [f"{W}/Build-a-Floating-Shelf"] and subcats == ["Shelving"] and pages == 3


def test_first_sentence_follows_wikihows_bolding_rule() -> None:
    assert first_sentence("Mix the dough. Knead it well.") == ("Mix the dough.", "Knead it well.")
    assert first_sentence("Heat to 3.5 bar: then wait.") == ("Heat to 3.5 bar:", "then wait.")
    assert first_sentence("One sentence only.") == (None, "One sentence only.")


def test_instructables_json_model() -> None:
    data = json.loads(fixture("instructables/model-Pallet-Wood-Workbench.json"))
    p = parse_model_json(data)
    assert p.id == "instructables:Pallet-Wood-Workbench" and p.url == f"{IB}/Pallet-Wood-Workbench/"
    assert p.title == "Pallet Wood Workbench" and p.author == "ShedBuilder42" and p.license is None
    assert p.category == ["Workshop", "Workbenches"]
    assert [(s.kind, s.title) for s in p.steps] == [
        ("intro", "Pallet Wood Workbench"),
        ("supplies", "Supplies"),
        ("step", "Take the Pallets Apart"),
        ("step", "Build the Frame"),
        ("step", "Attach the Top"),
        ("step", "Sand and Finish"),
    ]
    assert p.steps[1].text.startswith("Materials:\nFour pallets\n2x4 lumber")
    assert p.steps[2].images == [
        "https://content.instructables.com/FST/EP1A/AB2CCCCC/FSTEP1AAB2CCCCC.jpg",
        "https://content.instructables.com/FST/EP1B/AB2CCCCC/FSTEP1BAB2CCCCC.jpg",
    ]  # no video
    assert p.steps[3].images == ["https://content.instructables.com/FST/EP2A/AB2CCCCC/FSTEP2AAB2CCCCC.jpg"]  # no PDF
    assert len(p.steps[4].images) == 1 and p.steps[5].images == []
    with pytest.raises(NotAProject):
        parse_model_json(json.loads(fixture("instructables/model-collection.json")))


def test_instructables_generation_b_page_matches_the_api() -> None:
    api = parse_model_json(json.loads(fixture("instructables/model-Pallet-Wood-Workbench.json")))
    page = parse_project_html(fixture("instructables/Pallet-Wood-Workbench.html"), f"{IB}/Pallet-Wood-Workbench/")
    assert page.license == "https://creativecommons.org/licenses/by-nc-sa/4.0/"
    assert (page.id, page.title, page.author, page.category) == (api.id, api.title, api.author, api.category)
    assert [(s.kind, s.title, s.text) for s in page.steps] == [(s.kind, s.title, s.text) for s in api.steps]
    assert [s.images for s in page.steps[:3]] == [s.images for s in api.steps[:3]]  # broken queries stripped, deduped
    everything = " ".join(s.text for s in page.steps)
    for noise in ("Add Tip", "Follow", "More by the author", "Nice bench", "Be the First", "Sawhorse", "\\n"):
        assert noise not in everything
    assert all("F5EA4GKK0COWX1Z" not in i for s in page.steps for i in s.images)  # author avatar is not a step image


def test_instructables_generation_a_page() -> None:
    p = parse_project_html(fixture("instructables/String-Art-Coasters.html"), f"{IB}/id/String-Art-Coasters/")
    assert p.id == "instructables:String-Art-Coasters" and p.url == f"{IB}/String-Art-Coasters/"
    assert p.author == "KnotQueen" and p.category == ["Craft", "String Art"]
    assert p.license == "https://creativecommons.org/licenses/by-sa/4.0/"
    assert [s.kind for s in p.steps] == ["intro", "supplies", "step", "step", "step"]
    assert p.steps[2].title == "Cut the Cork" and p.steps[2].images == [
        "https://cdn.instructables.com/FS2/ABCD/JG2K3L4M/FS2ABCDJG2K3L4M.LARGE.jpg"
    ]
    with pytest.raises(NotAProject):
        parse_project_html(b"<html><head><title>Pending Review</title></head></html>", f"{IB}/X/")


def test_instructables_search_and_slugs() -> None:
    urls, found = parse_search_json(
        {
            "found": 120,
            "hits": [{"document": {"urlString": "Pallet-Wood-Workbench"}}, {"document": {"title": "no url"}}],
        }
    )
    assert urls == [f"{IB}/Pallet-Wood-Workbench/"] and found == 120
    assert project_slug(f"{IB}/id/String-Art-Coasters/") == "String-Art-Coasters"
    assert project_slug(f"{IB}/Pallet-Wood-Workbench/") == "Pallet-Wood-Workbench"
